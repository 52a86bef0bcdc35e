"""A core's GM reads through L2: misses pass L2 too, so more hits never make reads slower, and
no read beats the core's L2 rate or its copy path, whatever the profile and the cores sharing
HBM. With few cores a core's HBM share (833 B/cycle alone on the 910B2) exceeds its L2 read
rate (110): misses used to stream at that share (up to the GM->L1 path's 146) and hits at 110."""

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

PROFILES = {name: load_profile(name) for name in bundled_names()}
GM_READS = [i for i, path in enumerate(E.PATH_NAMES) if path.startswith("gm_")]


@st.composite
def chips(draw):
    """A bundled profile, its HBM and L2 read rates scaled so either can be the faster."""
    hw = PROFILES[draw(st.sampled_from(sorted(PROFILES)))]
    return dataclasses.replace(
        hw, hbm_bytes_per_cycle=hw.hbm_bytes_per_cycle * draw(st.floats(0.05, 20.0)),
        l2_read_bytes_per_cycle=hw.l2_read_bytes_per_cycle * draw(st.floats(0.05, 20.0)))


@st.composite
def sharing(draw, hw):
    """(active cores, possibly fractional like hbm_streams' average, write share, HBM load)."""
    top = max(hw.cube_cores, hw.vector_cores)
    cores = draw(st.integers(1, top) | st.floats(1.0, float(top)))
    return cores, draw(st.none() | st.floats(0.0, 1.0)), draw(st.floats(0.0, 1.0))


@settings(max_examples=400, deadline=None)
@given(data=st.data(), hw=chips(), hits=st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)))
def test_more_hits_never_slow_reads_down(data, hw, hits):
    cores, write_share, load = data.draw(sharing(hw))
    lo, hi = sorted(hits)
    read_lo = gm_rates(hw, cores, lo, write_share, load)[0]
    read_hi = gm_rates(hw, cores, hi, write_share, load)[0]
    assert read_hi >= read_lo * (1 - 1e-12)
    fewer, more = (cost_vector(hw, "fp16", active_cores=cores, l2_hit=h, write_share=write_share,
                               hbm_load=load) for h in (lo, hi))
    for i in GM_READS:
        assert more[3 * i] >= fewer[3 * i] * (1 - 1e-12), E.PATH_NAMES[i]


@settings(max_examples=400, deadline=None)
@given(data=st.data(), hw=chips(), hit=st.floats(0.0, 1.0))
def test_reads_stay_under_the_l2_rate_and_the_path(data, hw, hit):
    cores, write_share, load = data.draw(sharing(hw))
    assert gm_rates(hw, cores, hit, write_share, load)[0] <= hw.l2_read_bytes_per_cycle * (1 + 1e-12)
    cost = cost_vector(hw, "fp16", active_cores=cores, l2_hit=hit, write_share=write_share, hbm_load=load)
    for i in GM_READS:
        cap = min(hw.copy[E.PATH_NAMES[i]].bytes_per_cycle, hw.l2_read_bytes_per_cycle)
        assert cost[3 * i] <= cap * (1 + 1e-12), E.PATH_NAMES[i]


@settings(max_examples=400, deadline=None)
@given(data=st.data(), hw=chips(), hit=st.floats(0.0, 1.0))
def test_an_hbm_share_below_the_l2_rate_reads_as_before(data, hw, hit):
    """Where a core's HBM share is below its L2 rate (the full 910B2: 833 / 24 = 35 < 110) the
    rate is the plain harmonic mix of the two, as it always was."""
    cores, write_share, load = data.draw(sharing(hw))
    share = hw.hbm_bytes_per_cycle / cores * hbm_split(write_share, load).read
    if share > hw.l2_read_bytes_per_cycle:
        return
    mix = 1.0 / ((1.0 - hit) / share + hit / hw.l2_read_bytes_per_cycle)
    assert gm_rates(hw, cores, hit, write_share, load)[0] == pytest.approx(mix, rel=1e-12)


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
    a 1 MiB one 50%. With misses at the core's whole HBM share the bigger L2 ran slower,
    144,585 cycles against 142,311."""
    shape = {"m": 256, "n": 256, "k": 4096}
    small = dataclasses.replace(hw, l2_bytes=1 << 20)
    big_run, small_run = (mm.simulate(shape, TILING, "fp16", h) for h in (hw, small))
    assert big_run.feasible and small_run.feasible
    assert big_run.block_dim == small_run.block_dim == 1

    def hit(r):
        return r.bytes["l2_hit"] / r.bytes["gm_read"]

    assert hit(big_run) > hit(small_run) + 0.2
    assert big_run.cycles <= small_run.cycles
