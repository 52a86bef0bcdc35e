"""Verification checks enough values: a small shape runs again on more seeded inputs, and sigmoid
is checked beyond make_inputs' [-8, 8] too, so no inexact variant is verified as exact."""

import types

import numpy as np

from autotile.hardware import load_profile
from autotile.kernels import global_sum as G
from autotile.kernels import sigmoid as S
from autotile.tune import verify

HW = load_profile()


def _p(variant: str, n: int, cores: int = 1) -> dict:
    return {"tile_len": min(n, 1024), "buffer_num": 2, "cores": cores, "variant": variant}


def test_a_one_element_sigmoid_is_checked_on_many_seeds():
    """n = 1 bf16 Scalar poly (~2% off, bf16 fails 1.5%) passed on its one drawn element (0.0078 off)."""
    v = verify.verify_one(S, {"n": 1}, _p("poly", 1), "bf16", HW, unit="scalar")
    assert not v.passed and v.executed
    exact = verify.verify_one(S, {"n": 1}, _p("exact", 1), "bf16", HW, unit="scalar")
    assert exact.passed and exact.runs == verify.MAX_RUNS


def test_small_shapes_check_min_checked_values_and_large_ones_run_once():
    v = verify.verify_one(S, {"n": 1009}, _p("exact", 1009), "fp16", HW, unit="vector")
    assert v.passed and (v.runs - 1) * 1009 < verify.MIN_CHECKED <= v.runs * 1009
    g = verify.verify_one(G, {"n": 1}, G.default_params({"n": 1}, "fp32", HW, "vector"), "fp32", HW, unit="vector")
    assert g.passed and g.runs == verify.MAX_RUNS  # one value a run: a sum is checked on 1024 inputs
    big = verify.verify_one(G, {"n": 8192}, G.default_params({"n": 8192}, "fp32", HW, "vector"), "fp32", HW,
                            unit="vector")
    assert big.passed and big.runs == 1


def test_a_kernel_wrong_on_rare_inputs_fails_at_a_small_shape():
    """Off only where x > 7.9 (0.6% of make_inputs' draws): the one element of n = 1 missed it."""
    def execute(inputs, params, dtype, hw, **kw):
        y = S.execute(inputs, params, dtype, hw, **kw).astype(np.float64)
        return np.where((inputs[0] > 7.9) & (inputs[0] <= 8), 0.5, y)

    kernel = types.SimpleNamespace(**{k: getattr(S, k) for k in dir(S) if not k.startswith("__")})
    kernel.execute = execute
    v = verify.verify_one(kernel, {"n": 1}, _p("exact", 1), "fp32", HW, unit="vector")
    assert not v.passed and "seed" in v.reason


def test_lut_linear_fails_as_exact_on_the_tails_its_table_clamps():
    """Within 2 u over [-8, 8] in fp16 and bf16, but 3.35e-4 at x = -10 where sigmoid is 4.5e-5."""
    for dtype in ("fp16", "bf16"):
        for n in (4096, 1 << 20):
            v = verify.verify_one(S, {"n": n}, _p("lut_linear", n, 8), dtype, HW, unit="scalar")
            assert not v.passed and "(tails)" in v.reason and v.runs == 2, (dtype, n, v)


def test_the_exact_variants_pass_the_tails():
    """fp16 on the Vector: exp(-x) overflows below x ~ -11 and y is 0, under 1.7e-5 off (atol 6.1e-5)."""
    (x,) = S.tail_inputs({"n": 4096}, "fp16", 1)
    assert x.min() < -15 and x.max() > 15 and np.all(np.abs(x) >= 8)
    for dtype in ("fp32", "fp16", "bf16"):
        for unit in S.UNITS:
            v = verify.verify_one(S, {"n": 4096}, _p("exact", 4096, 4), dtype, HW, unit=unit)
            assert v.passed and v.runs == 2, (dtype, unit, v)


def _recorded(params, n, dtype):
    (x,) = S.make_inputs({"n": n}, dtype, 0)
    got = S.execute((x,), params, dtype, HW, unit="scalar").astype(np.float64)
    return float(np.abs(got - S.reference((x,), dtype)).max())


def test_a_claimed_error_holds_on_the_tails_with_what_saturating_at_8_costs():
    """A variant admitted on its error (recorded over [-8, 8]) may lose sigmoid(-8) more beyond
    +-8, no more; an exact one is not held to the 0 it recorded on one element."""
    for variant in ("lut_linear", "lut_nearest", "poly"):
        p = _p(variant, 4096, 4)
        err = _recorded(p, 4096, "fp16")
        v = verify.verify_one(S, {"n": 4096}, p, "fp16", HW, unit="scalar", claimed_abs_error=err,
                              recorded_abs_error=err)
        assert v.passed and v.claimed == err and v.runs == 2, (variant, v)

    def execute(inputs, params, dtype, hw, **kw):  # garbage past the table: 1e-3 off
        y = S.execute(inputs, params, dtype, hw, **kw).astype(np.float64)
        return np.where(np.abs(inputs[0]) > 8, y + 1e-3, y)

    kernel = types.SimpleNamespace(**{k: getattr(S, k) for k in dir(S) if not k.startswith("__")})
    kernel.execute = execute
    p = _p("lut_linear", 4096, 4)
    err = _recorded(p, 4096, "fp16")
    v = verify.verify_one(kernel, {"n": 4096}, p, "fp16", HW, unit="scalar", claimed_abs_error=err)
    assert not v.passed and "(tails)" in v.reason
    one = verify.verify_one(S, {"n": 1}, _p("exact", 1), "fp32", HW, unit="scalar", claimed_abs_error=0.0)
    assert one.passed and one.max_abs_error > 0
