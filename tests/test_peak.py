"""% of peak is a share of what the unit can do: no tiling of any kernel exceeds 100."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.hardware import bundled_names, load_profile
from autotile.kernels import registry

ONE_D = {  # op -> option sets worth covering
    "elementwise": [{"kind": k} for k in ("add", "mul", "relu")],
    "sigmoid": [{}],
    "weighted_sum": [{}],
    "global_sum": [{}],
}
PROFILES = {name: load_profile(name) for name in bundled_names()}


def _options(op, extra, on_chip):
    info = registry.get(op)
    opts = {k: v for k, v in extra.items() if v is not None and any(o.name == k for o in info.options)}
    if on_chip and "on_chip" in info.placements:
        opts["data"] = "on_chip"
    return opts or None


@settings(max_examples=150, deadline=None)
@given(op=st.sampled_from(sorted(ONE_D)), data=st.data(), n=st.integers(1, 1 << 21), on_chip=st.booleans(),
       hw_name=st.sampled_from(sorted(PROFILES)))
def test_one_d_kernels_stay_at_or_under_peak(op, data, n, on_chip, hw_name):
    hw = PROFILES[hw_name]
    info = registry.get(op)
    mod = registry.implementation(op)
    unit = data.draw(st.sampled_from(info.units))
    dtype = data.draw(st.sampled_from(info.dtypes))
    extra = data.draw(st.sampled_from(ONE_D[op]))
    params = mod.default_params({"n": n}, dtype, hw, unit)
    params["cores"] = data.draw(st.integers(1, hw.cube_cores if unit == "cube" else hw.vector_cores))
    params["tile_len"] = data.draw(st.sampled_from([16, 64, 256, 1024, 4096]))
    res = mod.simulate({"n": n}, params, dtype, hw, unit=unit, options=_options(op, extra, on_chip))
    if res.feasible:
        assert 0 <= res.pct_of_peak <= 100.0 + 1e-9, (res.pct_of_peak, params)


@pytest.mark.parametrize("shape,params", [
    ({"m": 1000, "n": 48, "k": 64}, {"tile_m": 2, "cores": 48, "buffer_num": 2}),
    ({"m": 1000, "n": 48, "k": 64}, None),
    ({"m": 64, "n": 64, "k": 64}, None),
])
@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_vector_matmul_stays_under_peak(shape, params, dtype):
    from autotile.kernels import matmul_vector

    hw = load_profile()
    p = params or matmul_vector.default_params(shape, dtype, hw)
    res = matmul_vector.simulate(shape, p, dtype, hw)
    assert res.feasible and 0 < res.pct_of_peak <= 100.0


def test_vector_peak_is_the_fastest_arithmetic_instruction():
    hw = load_profile()
    lanes = hw.vector_bytes_per_repeat // 2
    vadds = hw.vector["vadds"]["fp16_fp16_fp16"].per_repeat
    per_core_cycle = hw.peak_flops("vector", "fp16") / (hw.vector_cores * hw.clock_ghz * 1e9)
    assert per_core_cycle == pytest.approx(lanes / vadds)


@pytest.mark.parametrize("name", sorted(n for n, hw in PROFILES.items() if "bf16" in hw.dtypes))
def test_bf16_vector_peak_is_the_fp32_rate_it_computes_at(name):
    """The vector has no bf16 arithmetic (it converts bf16 to fp32): bf16's peak was taken as
    128 lanes at a guessed 2 FLOPs a cycle, 22.1 TFLOP/s on the 910B2, twice fp16's 11.4, which
    halved every bf16 % of peak. Where a profile converts bf16, its peak is fp32's (5.5 on the 910B2)."""
    hw = PROFILES[name]
    assert hw.vector_compute_dtype("bf16") == "fp32"
    assert hw.peak_flops("vector", "bf16") == hw.peak_flops("vector", "fp32")
    assert hw.peak_flops("vector", "bf16") < hw.peak_flops("vector", "fp16")


SCALAR_KERNELS = [("sigmoid", {"variant": v}, {}) for v in ("exact", "poly", "lut_nearest", "lut_linear")] \
    + [("elementwise", {}, {"kind": k}) for k in ("add", "mul", "relu")] \
    + [("weighted_sum", {}, {}), ("global_sum", {}, {})]


@pytest.mark.parametrize("op,extra,option", SCALAR_KERNELS)
@pytest.mark.parametrize("on_chip", [False, True])
def test_scalar_kernels_stay_under_peak_when_compares_and_memory_ops_are_cheap(op, extra, option, on_chip):
    """The scalar peak was one add or multiply a cycle: with compares at 0.25 cycles and loads and
    stores at 0.1, the table sigmoid (two compares, a multiply and an add) reached 129.9% of it and
    a relu (one compare) 400%. The peak is now the cheapest ALU op's rate, which bounds them all."""
    from dataclasses import replace

    base = load_profile()
    hw = replace(base, scalar={**base.scalar, "cmp": 0.25, "load": 0.1, "store": 0.1})
    info = registry.get(op)
    mod = registry.implementation(op)
    ran = 0
    for dtype in info.dtypes:
        for n in (4096, 65536):
            params = {**mod.default_params({"n": n}, dtype, hw, "scalar"), **extra}
            for cores, tile in ((hw.vector_cores, 1024), (1, 4096), (8, 256)):
                p = {**params, "cores": cores, "tile_len": tile}
                res = mod.simulate({"n": n}, p, dtype, hw, unit="scalar", options=_options(op, option, on_chip))
                if res.feasible:  # on chip, 65,536 elements do not fit one core's UB
                    ran += 1
                    assert 0 < res.pct_of_peak <= 100.0 + 1e-9, (dtype, n, p, res.pct_of_peak)
    assert ran >= 3 * len(info.dtypes)


@pytest.mark.parametrize("name", sorted(PROFILES))
def test_scalar_peak_is_the_cheapest_alu_op(name):
    """Loads and stores issue beside the ALU, so they do not set the peak; div and exp count."""
    from dataclasses import replace

    hw = PROFILES[name]
    cheap = replace(hw, scalar={**hw.scalar, "load": 0.01, "store": 0.01, "div": 0.5})
    per_core_cycle = cheap.peak_flops("scalar", "fp32") / (hw.vector_cores * hw.clock_ghz * 1e9)
    assert per_core_cycle == pytest.approx(2.0)
