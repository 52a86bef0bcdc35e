"""The verification record's max_rel_error: relative error only where the reference is above atol."""

import numpy as np
import pytest

from autotile.tune import verify


class _Residue:
    """A kernel whose reference holds interpolation residue (1e-30) where the output is off by 1e-3,
    under resize's fp16 tolerance (rtol 0, atol 0.00586)."""

    ref = np.array([1e-30, 0.5, 2.0, 0.0])

    def tolerance(self, dtype, shape, params, unit, inputs=None):
        return 0.0, 0.005859375

    def make_inputs(self, shape, dtype, seed, options=None):
        return ()

    def execute(self, inputs, params, dtype, hw, unit=None, options=None):
        return self.ref + np.array([1e-3, 1e-3, 4e-3, 0.0])

    def reference(self, inputs, dtype, options=None):
        return self.ref


def test_max_rel_error_ignores_references_within_atol():
    """resize's report showed "max rel error 2.44e+26" (1e-3 over a 1e-30 reference) for a
    configuration well inside its tolerance."""
    v = verify.verify_one(_Residue(), {"n": 4}, {}, "fp16", None)
    assert v.passed and v.max_abs_error == pytest.approx(4e-3)
    assert v.max_rel_error == pytest.approx(2e-3)  # 1e-3 / 0.5 and 4e-3 / 2.0; not 1e-3 / 1e-30


def test_max_rel_error_is_zero_when_no_reference_exceeds_atol():
    assert verify.rel_error(np.array([1e-3, 0.0]), np.array([1e-30, 0.0]), 0.005) == 0.0
    assert verify.rel_error(np.array([1e-3]), np.array([-0.25]), 0.0) == 0.004
