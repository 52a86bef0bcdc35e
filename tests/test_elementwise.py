"""elementwise: exact match with the reference on tails; Vector beats Scalar above ~1 KB."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.hardware import load_profile
from autotile.kernels import dtype_emul
from autotile.kernels import elementwise as EW

HW = load_profile()


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 3000), tile=st.sampled_from([16, 80, 1024]), cores=st.integers(1, 4),
       kind=st.sampled_from(["add", "mul", "relu"]), unit=st.sampled_from(["vector", "scalar"]),
       dtype=st.sampled_from(["fp16", "fp32", "bf16"]))
def test_execute_matches_reference(n, tile, cores, kind, unit, dtype):
    opts = {"kind": kind}
    x = EW.make_inputs({"n": n}, dtype, seed=n, options=opts)
    p = {"tile_len": tile, "buffer_num": 2, "cores": min(cores, -(-n // 16))}
    np.testing.assert_array_equal(EW.execute(x, p, dtype, HW, unit=unit, options=opts), EW.reference(x, dtype, options=opts))


def test_double_buffering_overlaps_copies():
    p = {"tile_len": 2048, "cores": 1}
    one = EW.simulate({"n": 1 << 16}, {**p, "buffer_num": 1}, "fp16", HW).cycles
    two = EW.simulate({"n": 1 << 16}, {**p, "buffer_num": 2}, "fp16", HW).cycles
    assert two < one


SPECIAL = [float("nan"), float("inf"), -float("inf"), -0.0, 0.0]


@settings(max_examples=40, deadline=None)
@given(data=st.data(), kind=st.sampled_from(["add", "mul", "relu"]), unit=st.sampled_from(["vector", "scalar"]),
       dtype=st.sampled_from(["fp16", "fp32", "bf16"]), tile=st.sampled_from([16, 48]), cores=st.integers(1, 3))
def test_nan_inf_and_signed_zero_agree_with_the_reference(data, kind, unit, dtype, tile, cores):
    """NaN, +-inf and -0.0 give the reference's answer bit for bit on both units and every dtype:
    relu propagates NaN (as np.maximum and torch.relu do; the kernel used to return 0), add and
    mul follow IEEE (inf - inf and 0 * inf are NaN, overflow is inf)."""
    n = data.draw(st.integers(1, 100), label="n")
    value = st.one_of(st.sampled_from(SPECIAL), st.floats(-7e4, 7e4, allow_nan=False))
    nin = EW.KINDS[kind][0]
    opts = {"kind": kind}
    p = {"tile_len": tile, "buffer_num": 2, "cores": min(cores, -(-n // 16))}
    with np.errstate(all="ignore"):  # overflow to inf and NaN results are the point here
        x = tuple(dtype_emul.round_to(np.array(data.draw(st.lists(value, min_size=n, max_size=n))), dtype)
                  for _ in range(nin))
        got = np.asarray(EW.execute(x, p, dtype, HW, unit=unit, options=opts))
        want = np.asarray(EW.reference(x, dtype, options=opts))
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))


def test_relu_keeps_nan():
    x = np.array([np.nan, -np.inf, np.inf, -0.0, -1.0, 2.0] + [1.0] * 10, dtype=np.float32)
    y = EW.execute((x,), {"tile_len": 16, "buffer_num": 1, "cores": 1}, "fp32", HW, options={"kind": "relu"})
    assert np.isnan(y[0]) and list(y[1:6]) == [0.0, np.inf, 0.0, 0.0, 2.0] and not np.signbit(y[3])


def test_bf16_is_converted_to_fp32_around_the_arithmetic():
    """bf16 VADDs were costed as fp16 ones (the profile's only other signature): identical
    cycles. On chip, one core: a VCONV per input (128 bf16 a repeat), the fp32 op (64 lanes) and
    a VCONV back (64 a repeat), 1024 cycles for n = 16384 where fp16 takes 256 (the most fp32's
    a, b and y, 64 KiB each, that UB holds on chip)."""
    from autotile.sim.costs import vector_table

    n, ON = 16384, {"data": "on_chip"}
    p = {"tile_len": 4096, "buffer_num": 2, "cores": 1}
    cyc = {d: EW.simulate({"n": n}, p, d, HW, options=ON).cycles for d in ("fp16", "fp32", "bf16")}
    tiles = n // 4096
    per = lambda op, sig, reps: max(HW.vector[op][sig].min_cycles,  # noqa: E731
                                    HW.vector[op][sig].startup + HW.vector[op][sig].per_repeat * reps)
    conv = tiles * (2 * per("vconv", "bf16_fp32", 4096 // 128) + per("vconv", "fp32_bf16", 4096 // 64))
    assert cyc["bf16"] == pytest.approx(cyc["fp32"] + conv, abs=1.0)
    assert cyc["bf16"] > 3 * cyc["fp16"]
    with pytest.raises(KeyError):
        vector_table(HW, [("vadd", "bf16_bf16_bf16")])
