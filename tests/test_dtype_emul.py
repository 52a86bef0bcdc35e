"""Dtype emulation: NumPy-side rounding agrees with the kernels' scalar rounding (``_common.rnd``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.kernels import _common as C
from autotile.kernels import dtype_emul as D


def _same(a: np.ndarray, b: np.ndarray) -> bool:
    return bool(np.all((a == b) | (np.isnan(a) & np.isnan(b))))


def test_float64_rounds_once_to_bf16():
    # just below the tie between 2.921875 and 2.9375: through float32 it lands on the tie and goes up
    x = np.array([2.929687485098839, -2.929687485098839, 2.9296875])
    assert D.round_to(x, "bf16").tolist() == [2.921875, -2.921875, 2.9375]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True, width=64), min_size=1, max_size=20),
       st.integers(-40, 40))
def test_bf16_rounding_matches_the_kernels(values, shift):
    with np.errstate(over="ignore"):
        x = np.array(values) * 2.0 ** shift
        # near-ties: a bf16 midpoint nudged by one float64 ulp either way
        mids = np.array([C.rnd(v, C.BF16) for v in x if np.isfinite(v) and v != 0]) * (1 + 2.0 ** -9)
    x = np.concatenate([x, np.nextafter(mids, np.inf), np.nextafter(mids, -np.inf)])
    ours = D.round_to(x, "bf16").astype(np.float64)
    assert _same(ours, np.array([C.rnd(float(v), C.BF16) for v in x]))
    with np.errstate(over="ignore"):
        f = x.astype(np.float32)  # float32 input keeps its own path
    assert _same(D.round_to(f, "bf16").astype(np.float64), np.array([C.rnd(float(v), C.BF16) for v in f]))
