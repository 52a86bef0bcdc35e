"""Matmul on the Vector unit: dispatch from matmul, execute mode against the reference, cube untouched."""

import dataclasses

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from autotile.hardware import load_profile
from autotile.kernels import matmul as mm
from autotile.kernels import matmul_vector as mv

HW = load_profile()


@settings(max_examples=25, deadline=None)
@given(m=st.integers(1, 20), n=st.integers(1, 40), k=st.integers(1, 24), tm=st.integers(1, 7),
       cores=st.integers(1, 6), buffer_num=st.integers(1, 2), dtype=st.sampled_from(["fp16", "fp32", "bf16"]))
def test_vector_execute_matches_reference(m, n, k, tm, cores, buffer_num, dtype):
    shape = {"m": m, "n": n, "k": k}
    p = {"tile_m": tm, "buffer_num": buffer_num, "cores": cores}
    assume(mm.simulate(shape, p, dtype, HW, unit="vector").feasible)
    inputs = mm.make_inputs(shape, dtype, seed=m * n + k)
    got = mm.execute(inputs, p, dtype, HW, unit="vector").astype(np.float64)
    ref = mm.reference(inputs, dtype).astype(np.float64)
    rtol, atol = mm.tolerance(dtype, shape, inputs=inputs)
    assert np.all(np.abs(got - ref) <= atol + rtol * np.abs(ref))


def test_dispatch_keeps_cube_default_and_adds_vector():
    shape = {"m": 16, "n": 16, "k": 16}
    assert "base_m" in mm.default_params(shape, "fp16", HW)
    vp = mm.default_params(shape, "fp16", HW, "vector")
    assert set(vp) == {"tile_m", "buffer_num", "cores"}
    r = mm.simulate(shape, vp, "fp16", HW, unit="vector")
    assert r.feasible and r.unit == "vector" and r.pipes["m"]["busy_cycles"] == 0 and r.pipes["v"]["busy_cycles"] > 0
    assert mm.verify_shape(shape, vp) == shape


def test_vector_cost_grows_with_k_sweeps():
    p = {"tile_m": 4, "buffer_num": 2, "cores": 4}
    short = mm.simulate({"m": 16, "n": 64, "k": 8}, p, "fp16", HW, unit="vector")
    long = mm.simulate({"m": 16, "n": 64, "k": 64}, p, "fp16", HW, unit="vector")
    assert long.pipes["v"]["busy_cycles"] > 6 * short.pipes["v"]["busy_cycles"]


def test_vector_rejects_int8_and_overflow():
    assert "supports" in mm.simulate({"m": 4, "n": 4, "k": 4}, {"tile_m": 4, "buffer_num": 1, "cores": 1}, "int8", HW,
                                     unit="vector").reason
    r = mm.simulate({"m": 64, "n": 512, "k": 512}, {"tile_m": 8, "buffer_num": 2, "cores": 8}, "fp16", HW, unit="vector")
    assert not r.feasible and "UB overflow" in r.reason


def _int8_spec(tmp_path, units="[cube, vector]"):
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "studies" / "matmul_small.yaml").read_text()
    text = text.replace("dtypes: [fp16]", "dtypes: [int8, fp16]").replace("units: [cube, vector]", f"units: {units}")
    path = tmp_path / "mm.yaml"
    path.write_text(text)
    return path


def test_int8_has_no_vector_kernel_and_no_vector_space(tmp_path):
    """The vector matmul computes in fp16/bf16/fp32 only: int8 pairs with the cube and nothing else,
    instead of a vector space whose every configuration fails in simulate."""
    import pytest

    from autotile.errors import InputError
    from autotile.space import load_spec
    from autotile.tune import driver

    spec = load_spec(str(_int8_spec(tmp_path)))
    assert spec.op.supports("cube", "int8") and not spec.op.supports("vector", "int8")
    with pytest.raises(InputError, match="matmul kernel on vector computes in fp16, bf16, fp32, not int8"):
        spec.space(spec.shapes[0], "int8", "vector")
    pairs = {(p.space.dtype, p.space.unit) for p in driver.plans(spec, driver.Options())}
    assert pairs == {("int8", "cube"), ("fp16", "cube"), ("fp16", "vector")}
    with pytest.raises(InputError, match=r"dtypes\[0\]: no unit of this spec computes matmul in int8"):
        load_spec(str(_int8_spec(tmp_path, units="[vector]")))


@pytest.mark.parametrize("shape, dtype, rows, depth", [
    ({"m": 64, "n": 16, "k": 1024}, "fp32", 4, 2),
    ({"m": 64, "n": 8, "k": 2900}, "fp16", 4, 2),
])
def test_the_default_halves_its_rows_until_ub_fits(shape, dtype, rows, depth):
    """Eight rows a tile whatever K: 64 x 16 x 1024 fp32 needed 198,144 bytes of UB (64 x 8 x
    2900 fp16: 232,512) and the default was that overflowing tiling."""
    p = mv.default_params(shape, dtype, HW)
    assert mv.simulate(shape, p, dtype, HW).feasible
    assert (p["tile_m"], p["buffer_num"]) == (rows, depth)


def test_the_default_single_buffers_as_a_last_resort():
    """B and its fp32 copy fill all but a row's double-buffered A and C: one buffer each fits."""
    shape = {"m": 64, "n": 16, "k": 1024}
    need = mv.check(shape, {"tile_m": 1, "buffer_num": 1, "cores": 48}, "fp32", HW)[1]["ub"]["used"]
    small = dataclasses.replace(HW, ub_bytes=need)
    p = mv.default_params(shape, "fp32", small)
    assert mv.simulate(shape, p, "fp32", small).feasible and (p["tile_m"], p["buffer_num"]) == (1, 1)
