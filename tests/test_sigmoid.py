"""sigmoid: execute mode vs float64 on tails, published scalar costs, Vector exact, Pareto front."""

import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.hardware import load_profile
from autotile.kernels import dtype_emul
from autotile.kernels import sigmoid as S

HW = load_profile()
BOUND = {"exact": None, "poly": 0.0215, "lut_nearest": 0.0095, "lut_linear": 2e-3}


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 2000), tile=st.sampled_from([16, 100, 512]), cores=st.integers(1, 4),
       dtype=st.sampled_from(["fp16", "fp32", "bf16"]),
       uv=st.sampled_from([("vector", "exact"), ("vector", "poly"), ("scalar", "exact"), ("scalar", "poly"),
                           ("scalar", "lut_nearest"), ("scalar", "lut_linear")]))
def test_execute_within_variant_bounds(n, tile, cores, dtype, uv):
    unit, variant = uv
    p = {"tile_len": tile, "buffer_num": 2, "cores": min(cores, -(-n // 16)), "variant": variant}
    x = S.make_inputs({"n": n}, dtype, seed=n)
    y = S.execute(x, p, dtype, HW, unit=unit).astype(np.float64)
    ref = S.reference(x, dtype).astype(np.float64)
    rtol, atol = S.tolerance(dtype, {"n": n})
    bound = atol + rtol * np.abs(ref) + (0.0 if BOUND[variant] is None else BOUND[variant])
    assert np.all(np.abs(y - ref) <= bound)


def _verify(execute, dtype, unit, n=65536, seed=0):
    from autotile.tune.verify import verify_one

    kernel = types.SimpleNamespace(**{k: getattr(S, k) for k in dir(S) if not k.startswith("__")})
    kernel.execute = execute
    p = {**S.default_params({"n": n}, dtype, HW), "variant": "exact"}
    return verify_one(kernel, {"n": n}, p, dtype, HW, unit=unit, seed=seed)


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("unit", ["vector", "scalar"])
def test_exact_passes_its_relative_tolerance_with_margin(dtype, unit):
    """The exact variant's worst relative error is well inside rtol (2.4 u measured against 6 u
    where it computes in the output's dtype; 0 to 2 u against 3 u where fp32 is rounded once)."""
    for seed in range(3):
        v = _verify(S.execute, dtype, unit, seed=seed)
        assert v.passed and v.max_rel_error <= 0.5 * v.rtol, v


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
def test_outputs_near_zero_replaced_by_zero_fail(dtype):
    """Outputs near 0 are tiny: an absolute tolerance of a few eps let 30% (fp16) to 47% (bf16)
    of them be 0 (and those near 1 be 1). Zeroing only the outputs below 1e-3 must fail."""
    def zeroed(inputs, params, dt, hw, unit=None, options=None):
        y = S.execute(inputs, params, dt, hw, unit=unit, options=options).astype(np.float64)
        y[y < 1e-3] = 0.0
        return y

    v = _verify(zeroed, dtype, "vector")
    assert not v.passed, v


def test_poly_fit_reproduces_module_coefficients():
    a, b, c, err = S.fit_poly(grid=4001)
    assert abs(a - S.POLY_A) < 1e-3 and abs(b - S.POLY_B) < 1e-4 and abs(c - S.POLY_C) < 0.05
    assert 0.015 < err < 0.025  # the best clamped cubic is only good to ~2%


def _per_elem(unit, variant, dtype="fp32", n=1 << 14, on_chip=True):
    """Cycles an element on one core (on chip: fp32 x and y, 64 KiB each, fit UB up to n = 24,576)."""
    p = {"tile_len": 4096, "buffer_num": 2, "cores": 1, "variant": variant}
    r = S.simulate({"n": n}, p, dtype, HW, unit=unit, options={"data": "on_chip"} if on_chip else None)
    return r.cycles / n


def test_scalar_costs_in_published_order():
    exact, poly, lut = (_per_elem("scalar", v) for v in ("exact", "poly", "lut_nearest"))
    assert exact > poly > lut
    assert 15 / 2 <= exact <= 15 * 2 and 5 / 2 <= poly <= 5 * 2
    assert lut <= 2 * 3  # published ~2; measured 5.5 with the estimated scalar costs (see report)


def test_vector_exact_beats_every_scalar_variant_on_large_tensors():
    big = 1 << 20
    vec = S.simulate({"n": big}, {"tile_len": 8192, "buffer_num": 2, "cores": 8, "variant": "exact"}, "fp16", HW,
                     unit="vector").cycles
    for v in S.VARIANTS["scalar"]:
        sc = S.simulate({"n": big}, {"tile_len": 8192, "buffer_num": 2, "cores": 8, "variant": v}, "fp16", HW,
                        unit="scalar").cycles
        assert vec < sc


def test_pareto_front_of_cycles_and_error_holds_three_variants():
    points = []
    for unit, variants in S.VARIANTS.items():
        for v in variants:
            err = S.errors(v, unit, "fp16", HW, n=2048)["max_abs_error"]
            points.append(((unit, v), _per_elem(unit, v, "fp16", n=8192, on_chip=False), err))
    front = [a for a in points if not any(b[1] <= a[1] and b[2] <= a[2] and (b[1], b[2]) != (a[1], a[2])
                                          for b in points)]
    assert len(front) >= 3, front


def _every_value(dtype):
    """Every finite fp16 / bf16 value in [-8, 8]."""
    bits = np.arange(1 << 16, dtype=np.uint32)
    v = bits.astype(np.uint16).view(np.float16) if dtype == "fp16" else (bits << 16).view(np.float32)
    v = v[np.isfinite(v)]
    return v[np.abs(v) <= 8].astype(np.float64)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("unit", ["vector", "scalar"])
def test_exact_within_two_thirds_of_its_tolerance_on_every_input(dtype, unit):
    """Each unit's tolerance is 1.5x the worst case of how it computes ``dtype``: over every input
    make_inputs can draw, the exact variant stays within 2/3 of rtol."""
    x = _every_value(dtype)
    p = {"tile_len": 4096, "buffer_num": 2, "cores": 1, "variant": "exact"}
    y = S.execute((x,), p, dtype, HW, unit=unit).astype(np.float64)
    ref = S.reference((x,), dtype).astype(np.float64)
    rtol, atol = S.tolerance(dtype, {"n": len(x)}, p, unit)
    assert np.all(np.abs(y - ref) <= atol + (2 / 3) * rtol * np.abs(ref))


@pytest.mark.parametrize("unit", ["vector", "scalar"])
def test_bf16_output_off_by_one_and_a_half_percent_fails(unit):
    """bf16 is computed in fp32 and rounded once (its error is 0 to 1 ulp), yet its rtol was 6 u
    = 2.3%: every output 1.5% high passed. It is now 3 u (1.5x one ulp's 2 u)."""
    def high(inputs, params, dt, hw, unit=None, options=None):
        y = S.execute(inputs, params, dt, hw, unit=unit, options=options).astype(np.float64)
        return dtype_emul.round_to(y * 1.015, dt)

    assert _verify(S.execute, "bf16", unit).passed
    v = _verify(high, "bf16", unit)
    assert not v.passed, v


def test_bf16_vector_converts_128_elements_a_repeat_and_holds_an_fp32_tile():
    """A VCONV bf16 -> fp32 repeat reads 256 bytes (128 elements, the calibration's rows); it was
    issued at fp32's 64, twice its cost. The fp32 tile the math runs on counts in UB."""
    n = 4096
    p = {"tile_len": n, "buffer_num": 1, "cores": 1, "variant": "exact"}
    on = {"data": "on_chip"}
    b, f = (S.simulate({"n": n}, p, d, HW, options=on).cycles for d in ("bf16", "fp32"))
    vc = HW.vector["vconv"]
    conv = (vc["bf16_fp32"].startup + vc["bf16_fp32"].per_repeat * n / 128
            + vc["fp32_bf16"].startup + vc["fp32_bf16"].per_repeat * n / 64)
    assert b == pytest.approx(f + conv, abs=1.0)
    r = S.simulate({"n": n}, p, "bf16", HW, options=on)
    assert r.buffers["ub"]["used"] == 2 * n * 2 + 4 * n


@pytest.mark.parametrize("variant", ["lut_nearest", "lut_linear"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_tables_give_nan_for_nan_and_their_ends_for_infinities(variant, dtype):
    """NaN's table index was int(NaN), a read outside the 256 entries: lut_nearest gave 0.0 (or
    -inf), lut_linear NaN only through the garbage it read. NaN gives NaN, the infinities and
    huge values the table's end entries."""
    x = dtype_emul.round_to(np.array([np.nan, np.inf, -np.inf, 6e4, -6e4, 8.0, -8.0] + [0.0] * 9), dtype)
    y = S.execute((x,), {"tile_len": 16, "buffer_num": 1, "cores": 1, "variant": variant}, dtype, HW, unit="scalar")
    ends = dtype_emul.round_to(S.lut_table()[[-1, 0]], dtype)
    assert np.isnan(y[0]) and not np.isnan(y[1:]).any()
    assert list(y[1:7]) == [ends[0], ends[1]] * 3
