"""elementwise: exact match with the reference on tails; Vector beats Scalar above ~1 KB."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.hardware import load_profile
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
