"""A core's GM reads through L2: a hit is never slower than a miss, so more hits never make reads
slower; no read beats the core's copy path; one core alone reaches the path's measured plateau
(GM->L1 146 B/cycle on the 910B2, above the .ini's L2 read rate of 110, which is a core's share
of L2 when the whole chip reads); and with the whole chip reading, a core whose HBM share is
below the L2 rate reads at the harmonic mix it always did. Misses used to stream at the HBM
share (up to 146 with few cores) and hits at 110, so a hit could be the slower; then every read
was held to 110, below the measured plateau of a core alone."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.hardware import load_profile
from autotile.hardware.profile import bundled_names
from autotile.kernels import matmul as mm
from autotile.models import features
from autotile.sim import engine as E
from autotile.sim.costs import cost_vector, gm_rates, hbm_split
from autotile.sim.micro import micro

PROFILES = {name: load_profile(name) for name in bundled_names()}
GM_READS = [i for i, path in enumerate(E.PATH_NAMES) if path.startswith("gm_")]


@st.composite
def chips(draw):
    """A bundled profile, its HBM and L2 read rates scaled so either can be the faster."""
    hw = PROFILES[draw(st.sampled_from(sorted(PROFILES)))]
    return dataclasses.replace(
        hw, hbm_bytes_per_cycle=hw.hbm_bytes_per_cycle * draw(st.floats(0.05, 20.0)),
        l2_read_bytes_per_cycle=hw.l2_read_bytes_per_cycle * draw(st.floats(0.05, 20.0)))


def core_counts(hw):
    """Cores sharing HBM or L2: whole, or fractional like hbm_streams' average."""
    top = max(hw.cube_cores, hw.vector_cores)
    return st.integers(1, top) | st.floats(1.0, float(top))


@st.composite
def sharing(draw, hw):
    """gm_rates' sharing arguments: active cores, write share, HBM load, L2 readers."""
    return {"active_cores": draw(core_counts(hw)), "write_share": draw(st.none() | st.floats(0.0, 1.0)),
            "hbm_load": draw(st.floats(0.0, 1.0)), "l2_readers": draw(st.none() | core_counts(hw))}


def read(hw, hit, how):
    return gm_rates(hw, l2_hit=hit, **how)[0]


@settings(max_examples=400, deadline=None)
@given(data=st.data(), hw=chips(), hits=st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)))
def test_more_hits_never_slow_reads_down(data, hw, hits):
    how = data.draw(sharing(hw))
    lo, hi = sorted(hits)
    assert read(hw, hi, how) >= read(hw, lo, how) * (1 - 1e-12)
    fewer, more = (cost_vector(hw, "fp16", l2_hit=h, **how) for h in (lo, hi))
    for i in GM_READS:
        assert more[3 * i] >= fewer[3 * i] * (1 - 1e-12), E.PATH_NAMES[i]


@settings(max_examples=400, deadline=None)
@given(data=st.data(), hw=chips())
def test_a_hit_is_never_slower_than_a_miss(data, hw):
    how = data.draw(sharing(hw))
    assert read(hw, 1.0, how) >= read(hw, 0.0, how) * (1 - 1e-12)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), hw=chips(), hit=st.floats(0.0, 1.0), readers=st.tuples(st.floats(1.0, 48.0), st.floats(1.0, 48.0)))
def test_fewer_l2_readers_never_slow_reads_down(data, hw, hit, readers):
    how = data.draw(sharing(hw))
    few, many = sorted(readers)
    assert read(hw, hit, {**how, "l2_readers": few}) >= read(hw, hit, {**how, "l2_readers": many}) * (1 - 1e-12)


@settings(max_examples=400, deadline=None)
@given(data=st.data(), hw=chips(), hit=st.floats(0.0, 1.0))
def test_reads_stay_under_the_path(data, hw, hit):
    cost = cost_vector(hw, "fp16", l2_hit=hit, **data.draw(sharing(hw)))
    for i in GM_READS:
        assert cost[3 * i] <= hw.copy[E.PATH_NAMES[i]].bytes_per_cycle * (1 + 1e-12), E.PATH_NAMES[i]


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(sorted(PROFILES)), hit=st.floats(0.0, 1.0))
def test_one_core_alone_reaches_its_paths_plateau(name, hit):
    """A core alone reads every GM path at the profile's measured plateau, whatever its hits."""
    hw = PROFILES[name]
    cost = cost_vector(hw, "fp16", l2_hit=hit)
    for i in GM_READS:
        assert cost[3 * i] == hw.copy[E.PATH_NAMES[i]].bytes_per_cycle, E.PATH_NAMES[i]


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_micro_copy_gm_l1_reports_the_measured_plateau(name):
    """``autotile micro copy path=gm_l1``: 146 B/cycle (msKPP ~260-280 GB/s), not the .ini's 110."""
    res = micro("copy", {"path": "gm_l1", "bytes": 1 << 18}, None, PROFILES[name]).to_json()  # fits every L1
    assert res["plateau_bytes_per_cycle"] == 146.0


@settings(max_examples=400, deadline=None)
@given(data=st.data(), hw=chips(), hit=st.floats(0.0, 1.0))
def test_the_full_chip_reads_as_before_below_the_l2_rate(data, hw, hit):
    """Every cube core reading, HBM share below the L2 rate (the 910B2: 833 / 24 = 35 < 110): the
    plain harmonic mix of the two, as it always was."""
    how = {**data.draw(sharing(hw)), "active_cores": hw.cube_cores, "l2_readers": None}
    share = hw.hbm_bytes_per_cycle / hw.cube_cores * hbm_split(how["write_share"], how["hbm_load"]).read
    if share > hw.l2_read_bytes_per_cycle:
        return
    mix = 1.0 / ((1.0 - hit) / share + hit / hw.l2_read_bytes_per_cycle)
    assert read(hw, hit, how) == pytest.approx(mix, rel=1e-12)


TILING = {"base_m": 64, "base_n": 64, "base_k": 64, "step_m": 1, "step_n": 1, "step_ka": 4, "step_kb": 4,
          "depth_a1": 8, "depth_b1": 8, "db_l0a": 2, "db_l0b": 2, "db_l0c": 2, "iterate_order": "m_first",
          "single_core_m": 256, "single_core_n": 256}


@pytest.mark.parametrize("name", sorted(PROFILES))
@pytest.mark.parametrize("m,n", [(256, 256), (512, 512), (1024, 1024), (1024, 1536)])
def test_the_models_features_read_at_the_simulators_rate(name, m, n):
    """``features.matmul_physics`` estimates MTE2 at the simulator's GM->L1 rate for its core
    count and hit share (1, 4, 16 and 24 cores here)."""
    hw = PROFILES[name]
    f = features.matmul_physics({"m": m, "n": n, "k": 4096}, "fp16", TILING, hw.cube_cores,
                                features.hw_constants(hw))
    cost = cost_vector(hw, "fp16", active_cores=int(f["mm.cores"]), l2_hit=f["mm.l2_hit"])
    assert 2.0 ** f["mm.read_rate.log2"] == pytest.approx(cost[3 * E.PATH_NAMES.index("gm_l1")], rel=1e-9)


def test_a_one_core_matmul_is_not_slower_for_hitting_l2_more(hw):
    """256x256x4096 fp16 on one core, memory-bound: the 192 MiB L2 keeps 75% of its reads as hits,
    a 1 MiB one 50%. With misses at the core's whole HBM share and hits at the L2 rate the bigger
    L2 ran slower, 144,585 cycles against 142,311; with misses held to the L2 rate both ran
    175,430. Both now read at the GM->L1 path's 146 B/cycle: 142,311."""
    shape = {"m": 256, "n": 256, "k": 4096}
    small = dataclasses.replace(hw, l2_bytes=1 << 20)
    big_run, small_run = (mm.simulate(shape, TILING, "fp16", h) for h in (hw, small))
    assert big_run.feasible and small_run.feasible
    assert big_run.block_dim == small_run.block_dim == 1

    def hit(r):
        return r.bytes["l2_hit"] / r.bytes["gm_read"]

    assert hit(big_run) > hit(small_run) + 0.2
    assert big_run.cycles <= small_run.cycles


@settings(max_examples=200, deadline=None)
@given(data=st.data(), hw=chips(), hit=st.floats(0.0, 1.0))
def test_writes_that_stay_in_l2_go_at_its_write_rate(data, hw, hit):
    """Never slower than writes that go on to HBM, and unaffected by HBM's share."""
    how = data.draw(sharing(hw))
    stay = gm_rates(hw, l2_hit=hit, writes_in_l2=True, **how)[1]
    assert stay == hw.l2_write_bytes_per_cycle
    assert stay >= gm_rates(hw, l2_hit=hit, **how)[1]
