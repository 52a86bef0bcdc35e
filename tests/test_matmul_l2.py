"""Matmul's L2 hits follow what is live at once (the cores' panels, a re-read's reuse window), not
the kernel's whole footprint: a footprint past L2 with a tiling whose working set fits keeps its
hits, and the tiling decides how much a small L2 holds."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.kernels import matmul as mm

TILING = {"base_m": 128, "base_n": 128, "base_k": 64, "step_m": 1, "step_n": 1, "step_ka": 4, "step_kb": 4,
          "depth_a1": 8, "depth_b1": 8, "db_l0a": 2, "db_l0b": 2, "db_l0c": 2, "iterate_order": "m_first"}


def _hit(res):
    return res.bytes["l2_hit"] / res.bytes["gm_read"]


def _unique(shape, dtype="fp16"):
    return (shape["m"] * shape["k"] + shape["k"] * shape["n"]) * mm.get_dtype(dtype).bytes


@pytest.mark.parametrize("split", [(2048, 1408), (1408, 2048), (2816, 1024), (1024, 2816)])
def test_a_footprint_past_l2_keeps_the_hits_of_a_working_set_that_fits(hw, split):
    """8192^3 fp16 (384 MiB against 192 MiB of L2): each split re-reads A and B strips whose
    reuse windows fit in L2, so HBM moves little beyond the compulsory 256 MiB. With the
    footprint model every split hit 0.49, moved 8.1 GiB and ran at ~38% of peak."""
    shape = {"m": 8192, "n": 8192, "k": 8192}
    p = TILING | {"single_core_m": split[0], "single_core_n": split[1]}
    res = mm.simulate(shape, p, "fp16", hw)
    assert res.feasible, res.reason
    assert res.bytes["hbm_read"] <= 1.1 * _unique(shape)
    assert res.pct_of_peak > 70


def test_the_tiling_decides_whether_the_reuse_window_fits(hw):
    """With an L2 that holds all of A and B's strips of one core's sweep but not the footprint,
    the loop order that re-reads the smaller operand over the long window keeps more hits:
    m_first re-reads A (M x K = 2 MiB) after a whole sweep of M, n_first re-reads B (8 MiB) after
    one of N. The footprint model gave both the same share."""
    small = dataclasses.replace(hw, l2_bytes=6 << 20)
    shape = {"m": 1024, "n": 4096, "k": 1024}
    p = TILING | {"single_core_m": 256, "single_core_n": 768}
    hits = {o: mm.simulate(shape, p | {"iterate_order": o}, "fp16", small) for o in mm.ORDERS}
    hits = {o: _hit(r) for o, r in hits.items()}
    assert hits["m_first"] > hits["n_first"] + 0.05, hits


@st.composite
def cases(draw):
    shape = {d: draw(st.integers(16, 3000)) for d in mm.DIMS}
    bm, bn = draw(st.sampled_from([16, 64, 128])), draw(st.sampled_from([16, 64, 128]))
    bk = draw(st.sampled_from([16, 32, 64]))
    sk = draw(st.sampled_from([1, 2, 4]))
    sm, sn = draw(st.integers(1, 2)), draw(st.integers(1, 2))
    cm = draw(st.integers(1, max(1, -(-shape["m"] // bm))))
    cn = draw(st.integers(1, max(1, -(-shape["n"] // bn))))
    p = {"base_m": bm, "base_n": bn, "base_k": bk, "step_m": sm, "step_n": sn, "step_ka": sk, "step_kb": sk,
         "depth_a1": sm * sk * draw(st.integers(1, 2)), "depth_b1": sn * sk * draw(st.integers(1, 2)),
         "db_l0a": 1, "db_l0b": 1, "db_l0c": 1, "iterate_order": draw(st.sampled_from(mm.ORDERS)),
         "single_core_m": bm * cm * sm, "single_core_n": bn * cn * sn}
    return shape, p, draw(st.sampled_from([1 << 16, 1 << 20, 4 << 20, 192 << 20]))


@settings(max_examples=80, deadline=None)
@given(cases())
def test_hits_stay_physical(hw, case):
    """Whatever the L2 and tiling: the hit share is in [0, 1], HBM moves at least the
    compulsory bytes, and a smaller L2 never hits more."""
    shape, p, l2 = case
    runs = [mm.simulate(shape, p, "fp16", dataclasses.replace(hw, l2_bytes=b)) for b in (l2, 2 * l2)]
    if not runs[0].feasible:
        return
    for res in runs:
        assert 0.0 <= _hit(res) <= 1.0
        assert res.bytes["hbm_read"] >= _unique(shape) * (1 - 1e-9)
    assert _hit(runs[0]) <= _hit(runs[1]) + 1e-12



@pytest.mark.parametrize("shape,dtype", [({"m": 1024, "n": 2048, "k": 512}, "fp16"),
                                         ({"m": 1000, "n": 1000, "k": 1000}, "fp32")])
def test_an_output_that_stays_in_l2_is_written_whatever_hbm(hw, shape, dtype):
    """C fits in L2 (no HBM writes during the kernel): FixPipe writes at the L2 write rate, so
    its busy time does not depend on HBM. At 50 B/cycle of HBM the writes got the cores' HBM
    share: 1024x2048x512 fp16 ran 114,680 cycles bound by l0c_gm, 76,440 at the L2 rate."""
    params = mm.default_params(shape, dtype, hw)
    runs = [mm.simulate(shape, params, dtype, dataclasses.replace(hw, hbm_bytes_per_cycle=bw))
            for bw in (50.0, 200.0, hw.hbm_bytes_per_cycle)]
    assert all(r.bytes["hbm_write"] == 0.0 for r in runs)
    fix = [r.pipes["fix"]["busy_cycles"] for r in runs]
    assert fix == pytest.approx([fix[-1]] * 3, rel=1e-12)
    assert runs[0].bound != "memory:l0c_gm"


@pytest.mark.parametrize("k,sck,first", [(64, None, 9216), (256, 128, 5504)])
def test_cycles_grow_smoothly_as_the_output_overflows_l2(hw, k, sck, first):
    """L2 is write-back: past its size it evicts only the writes that do not fit beside A and B.
    Charging every write to HBM once the footprint passed L2 made m = n = 9,984, k = 64 fp16 run
    2.47x the cycles of 9,472 (105,764 -> 260,947 with default tilings), and with K split over two
    ranges (fp32 zero-init, atomic adds and cast) the step over L2 cost 1.26x for 2% more work and
    charged the 464 MB of repeated writes, not the 3.6 MB that overflow."""
    prev = None
    crossed = False
    for m in range(first, first + 16 * 64, 64):
        shape = {"m": m, "n": m, "k": k}
        p = TILING | {"step_ka": 1, "step_kb": 1, "depth_a1": 2, "depth_b1": 2,
                      "single_core_m": mm._align(mm._cdiv(m, 4), 128), "single_core_n": mm._align(mm._cdiv(m, 6), 128)}
        if sck:
            p |= {"single_core_k": sck, "single_core_m": mm._align(mm._cdiv(m, 3), 128),
                  "single_core_n": mm._align(mm._cdiv(m, 4), 128)}
        res = mm.simulate(shape, p, "fp16", hw)
        assert res.feasible, res.reason
        distinct = m * m * (6 if sck else 2)  # C, and with K split the fp32 workspace
        over = max(0.0, _unique(shape) + distinct - hw.l2_bytes)
        assert res.bytes["hbm_write"] == pytest.approx(over, abs=64 * m * 4)  # rows padded to 32 B
        crossed |= over > 0 and prev is not None and prev[2] == 0
        if prev:  # no more than the work's growth plus what a whole base block more per core adds
            assert res.cycles <= prev[0] * (m / prev[1]) ** 2 * 1.15, (m, res.cycles, prev)
        prev = (res.cycles, m, over)
    assert crossed


def test_the_report_says_an_output_overflowing_l2_is_partly_counted(hw):
    """The roofline table marked an output as counted or not: past L2 only what overflows is."""
    from autotile.report.perf import _output_bytes
    from autotile.report.traces import writes_in_l2

    shapes = ({"m": 1024, "n": 2048, "k": 512}, {"m": 10240, "n": 10240, "k": 64}, {"m": 8192, "n": 8192, "k": 8192})
    words = [_output_bytes(writes_in_l2(mm.simulate(s, mm.default_params(s, "fp16", hw), "fp16", hw).bytes))
             for s in shapes]
    assert words == ["not counted: stays in L2 during the kernel", "partly counted: what overflows L2", "counted"]
