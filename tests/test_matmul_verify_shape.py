"""Matmul's reduced verification shape keeps the tiling's structure: two core blocks per dimension
and two L1 panels plus the K tail, and for a tiling that splits K, two K ranges, so the zeroed
fp32 target, the atomic adds of the partials and the cast are executed by the gate."""

from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.kernels import _common as C
from autotile.kernels import matmul as mm
from autotile.tune.verify import verify_one

SHAPE = {"m": 256, "n": 128, "k": 32768}
# what `tune` picked for SHAPE from studies/matmul.yaml (5 trials): 12 K ranges, the last 2496 long
PICK = {"base_k": 64, "base_m": 128, "base_n": 128, "db_l0a": 2, "db_l0b": 2, "db_l0c": 2, "depth_a1": 8,
        "depth_b1": 8, "iterate_order": "m_first", "single_core_k": 2752, "single_core_m": 128,
        "single_core_n": 128, "step_ka": 4, "step_kb": 4, "step_m": 1, "step_n": 1}


def _k_ranges(shape, params):
    return sorted({k for *_, k in mm.core_classes(shape, params)}, reverse=True)


def test_a_split_k_pick_is_verified_over_two_k_ranges_with_the_tail(hw):
    """It was verified at k=576, one K range: the split-K combine never ran and the result said
    verified. M gives up a core block instead, and K keeps a whole range and the 2496 tail."""
    small = mm.verify_shape(SHAPE, PICK)
    assert mm.splits(small, PICK)[2] == 2
    assert _k_ranges(small, PICK) == _k_ranges(SHAPE, PICK) == [2752, 2496]
    assert small["n"] == 128 and small["m"] == 128
    assert small["m"] * small["n"] * small["k"] <= mm.SPLIT_VERIFY_MACS


def test_the_gate_catches_a_combine_that_overwrites_the_partials(hw, monkeypatch):
    """A FixPipe write without SetAtomicAdd keeps only the last K range's partial: the gate on the
    reduced shape fails it (with one K range it could not)."""
    assert verify_one(mm, SHAPE, PICK, "fp16", hw).passed

    def overwrite(c, acc, m0, n0):
        c[m0:m0 + acc.shape[0], n0:n0 + acc.shape[1]] = acc

    monkeypatch.setattr(mm, "_atomic_add", overwrite)
    v = verify_one(mm, SHAPE, PICK, "fp16", hw)
    assert v.reduced and not v.passed and v.reason.startswith("max abs error")


@st.composite
def split_tilings(draw):
    """A shape above VERIFY_MACS and a tiling (only the fields verify_shape reads) that splits K."""
    bm, bn = draw(st.sampled_from([16, 64, 128, 256])), draw(st.sampled_from([16, 64, 128, 256]))
    bk = draw(st.sampled_from([16, 32, 64, 128, 256]))
    sck = bk * draw(st.integers(1, 512))
    k = sck * draw(st.integers(1, 24)) + draw(st.integers(1, sck))
    shape = {"m": draw(st.integers(1, 8192)), "n": draw(st.integers(1, 8192)), "k": k}
    params = {"base_m": bm, "base_n": bn, "base_k": bk, "step_ka": 1, "step_kb": 1, "single_core_k": sck,
              "single_core_m": bm * draw(st.integers(1, 16)), "single_core_n": bn * draw(st.integers(1, 16))}
    return shape, params


@settings(max_examples=400, deadline=None)
@given(split_tilings())
def test_a_split_k_always_keeps_two_k_ranges(case):
    """Whatever M and N give up, K keeps a whole single_core_k and a second range ending on the
    real K's remainder of base_k; the tail range itself wherever the MAC budget allows it."""
    shape, p = case
    small = mm.verify_shape(shape, p)
    assert all(small[d] <= shape[d] for d in "mnk")
    if shape["m"] * shape["n"] * shape["k"] <= mm.VERIFY_MACS:
        assert small == shape
        return
    assert mm.splits(small, p)[2] == 2
    assert small["k"] % p["base_k"] == shape["k"] % p["base_k"]
    tail = _k_ranges(shape, p)[-1]
    fits = small["m"] * small["n"] * (p["single_core_k"] + tail) <= mm.SPLIT_VERIFY_MACS
    if fits:
        assert _k_ranges(small, p)[-1] == tail
    for d in "mn":  # a dimension cut below two core blocks keeps the last one, or whole base blocks of it
        block, base = p[f"single_core_{d}"], p[f"base_{d}"]
        last = shape[d] - (-(-shape[d] // block) - 1) * block
        assert small[d] in (mm._keep(shape[d], block), last, mm._keep(last, base))


def test_a_tiling_that_keeps_k_whole_keeps_two_core_blocks_and_two_panels(hw):
    """The 4096^3 default: two core blocks in M and N (one full, one tail when there is one) and
    K cut to two L1 panels plus its last base_k step, as before split K had its own rule."""
    shape = {"m": 4096, "n": 4096, "k": 4096}
    p = mm.default_params(shape, "fp16", hw)
    assert p["single_core_k"] >= 4096
    small = mm.verify_shape(shape, p)
    panel = p["base_k"] * max(p["step_ka"], p["step_kb"])
    last = {d: 4096 - (-(-4096 // p[f"single_core_{d}"]) - 1) * p[f"single_core_{d}"] for d in "mn"}
    assert small == {"m": p["single_core_m"] + last["m"], "n": p["single_core_n"] + last["n"],
                     "k": 2 * panel + p["base_k"]}


def test_huge_core_blocks_give_up_core_blocks_within_the_execute_limits(hw):
    """65536 x 128 x 65536's default (21888 x 8192 core blocks) kept 43648 x 16384 of C: 723M
    elements, an out-of-memory error after every study had run, and minutes per candidate. The
    larger dimension gives up core blocks; N keeps its two, M whole base blocks of its last one."""
    shape = {"m": 65536, "n": 65536, "k": 128}
    p = mm.default_params(shape, "fp16", hw)
    small = mm.verify_shape(shape, p)
    assert mm.io_elements(small) <= C.MAX_IO_ELEMENTS and small["m"] * small["n"] * small["k"] <= mm.NARROW_MACS
    last_m = 65536 - (-(-65536 // p["single_core_m"]) - 1) * p["single_core_m"]
    assert small == {"m": mm._keep(last_m, p["base_m"]), "n": mm._keep(65536, p["single_core_n"]), "k": 128}
    v = verify_one(mm, shape, p, "fp16", hw)
    assert v.passed and v.reduced and v.shape == small


@st.composite
def whole_k_tilings(draw):
    """A huge shape and a tiling (only the fields verify_shape reads) that keeps K whole."""
    bm, bn = draw(st.sampled_from([16, 64, 128, 256])), draw(st.sampled_from([16, 64, 128, 256]))
    shape = {"m": draw(st.integers(1, 1 << 20)), "n": draw(st.integers(1, 1 << 20)), "k": draw(st.integers(1, 1 << 16))}
    params = {"base_m": bm, "base_n": bn, "base_k": draw(st.sampled_from([16, 32, 64, 128, 256])),
              "step_ka": draw(st.integers(1, 8)), "step_kb": draw(st.integers(1, 8)), "single_core_k": shape["k"],
              "single_core_m": bm * draw(st.integers(1, 1 << 12)), "single_core_n": bn * draw(st.integers(1, 1 << 12))}
    return shape, params


@settings(max_examples=400, deadline=None)
@given(whole_k_tilings())
def test_a_reduced_shape_stays_within_the_execute_limits(case):
    """Whatever the core blocks, the reduced shape is one the gate executes, in M and N the two
    core blocks, the last one or whole base blocks of it, and the K of two panels and the tail."""
    shape, p = case
    small = mm.verify_shape(shape, p)
    if shape["m"] * shape["n"] * shape["k"] <= mm.VERIFY_MACS:
        assert small == shape
        return
    assert mm.io_elements(small) <= C.MAX_IO_ELEMENTS
    assert small["m"] * small["n"] * small["k"] <= mm.NARROW_MACS
    for d in "mn":
        block, base = p[f"single_core_{d}"], p[f"base_{d}"]
        last = shape[d] - (-(-shape[d] // block) - 1) * block
        assert small[d] in (mm._keep(shape[d], block), last, mm._keep(last, base))
    assert small["k"] % p["base_k"] == shape["k"] % p["base_k"]


def test_a_split_k_range_too_large_to_hold_is_not_executed(hw):
    """Two K ranges of 2^28 on a 1 x 1 C: no narrowing brings it under 2^27 elements, and matmul's
    io_elements keeps the gate from executing it (it had none, so nothing did)."""
    shape = {"m": 1, "n": 1, "k": 1 << 29}
    p = {**mm.default_params({"m": 1, "n": 1, "k": 4096}, "fp16", hw), "single_core_k": 1 << 28}
    v = verify_one(mm, shape, p, "fp16", hw)
    assert not v.passed and not v.executed and v.shape["k"] > C.MAX_IO_ELEMENTS
    assert v.unverified.startswith("too large to execute in verification: inputs and output hold")
