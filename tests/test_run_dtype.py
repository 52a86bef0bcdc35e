"""``run_with_table`` computes in the inputs' dtype: a table's first dtype applied to arrays of
another type turned 64x64 int8 matmuls of 100s into float16 inf (int32 holds 640,000) and ran
float32 inputs in fp16. Without ``dtype`` the arrays' NumPy type says it (float32 is fp32: bf16
is stored as float32 and is named); a dtype the table lacks or the arrays do not hold is an
InputError."""

from __future__ import annotations

import re

import numpy as np
import pytest
from tablekit import SMALL_SPEC, default_table

from autotile.errors import InputError
from autotile.kernels import matmul, resize
from autotile.tables.run import run_with_table

SHAPE = {"m": 64, "n": 64, "k": 64}


def _table(tmp_path, dtypes: str, name: str = "matmul_small.yaml", text: str | None = None) -> dict:
    text = text if text is not None else SMALL_SPEC.read_text()
    text = re.sub(r"(?m)^dtypes: .*$", f"dtypes: [{dtypes}]", text)
    text = re.sub(r"(?m)^shapes:\n(?:  - .*\n)+", "shapes: [{m: 64, n: 64, k: 64}]\n", text)
    spec = tmp_path / name
    spec.write_text(text)
    return default_table(spec)


@pytest.fixture(scope="module")
def fp16_int8(tmp_path_factory):
    return _table(tmp_path_factory.mktemp("t"), "fp16, int8")


def test_int8_inputs_compute_in_int8_without_a_dtype(fp16_int8):
    a = np.full((64, 64), 100, np.int8)
    c, m = run_with_table("matmul", (a, a), fp16_int8)
    assert m.dtype == "int8" and c.dtype == np.int32 and int(c[0, 0]) == 640_000
    assert matmul.run(a, a, table=fp16_int8)[5, 7] == 640_000


def test_float16_inputs_still_run_in_fp16(fp16_int8):
    a, b = matmul.make_inputs(SHAPE, "fp16", seed=2)
    c, m = run_with_table("matmul", (a, b), fp16_int8)
    assert m.dtype == "fp16" and c.dtype == np.float16
    np.testing.assert_array_equal(c, matmul.run(a, b, table=fp16_int8, dtype="fp16"))


@pytest.mark.parametrize("inputs, dtype, match", [
    # float32 data was computed in fp16 (the table's first dtype)
    (lambda: 2 * (np.ones((64, 64), np.float32),), None,
     r"^dtype: the inputs are float32, so fp32, which the table was not tuned for \(its dtypes: fp16, int8\)$"),
    (lambda: 2 * (np.ones((64, 64), np.float16),), "int8", r"^inputs: expected int8 arrays for dtype 'int8', got float16$"),
    (lambda: 2 * (np.ones((64, 64), np.int8),), "fp32", r"^dtype: expected one of the table's dtypes fp16, int8, got 'fp32'$"),
    (lambda: (np.ones((64, 64), np.float16), np.ones((64, 64), np.int8)), None,
     r"^inputs: expected arrays of one type, got float16 and int8$"),
    (lambda: 2 * (np.ones((64, 64)),), None, r"^inputs: expected float16 \(fp16\), .* or int8 arrays, got float64$"),
])
def test_a_dtype_the_table_or_the_arrays_lack_is_an_input_error(fp16_int8, inputs, dtype, match):
    with pytest.raises(InputError, match=match):
        run_with_table("matmul", inputs(), fp16_int8, dtype)


def test_bf16_is_float32_storage_named_by_dtype(tmp_path):
    table = _table(tmp_path, "bf16, fp16")
    a, b = matmul.make_inputs(SHAPE, "bf16", seed=3)
    with pytest.raises(InputError, match=r"fp32, which the table was not tuned for .* \(pass dtype='bf16' if they"):
        run_with_table("matmul", (a, b), table)
    c, m = run_with_table("matmul", (a, b), table, "bf16")
    assert m.dtype == "bf16" and c.dtype == np.float32
    a[0, 0] = np.float32(1.001)  # not a bf16 value
    with pytest.raises(InputError, match=r"^inputs: expected float32 values rounded to bf16 .* got 1 that bf16") as err:
        run_with_table("matmul", (a, b), table, "bf16")
    # the function it names can be reached by that name (it said "dtype_emul.round_to", no package)
    import importlib

    named = re.search(r"\(([\w.]+)\(x, 'bf16'\)\)", str(err.value)).group(1)
    module, func = named.rsplit(".", 1)
    a[0, 0] = getattr(importlib.import_module(module), func)(np.array([1.001]), "bf16")[0]
    assert run_with_table("matmul", (a, b), table, "bf16")[1].dtype == "bf16"


def test_resize_reads_the_dtype_from_x_not_its_sizes(tmp_path):
    """resize's second input holds two integer sizes: only x tells the dtype."""
    from pathlib import Path

    studies = Path(__file__).resolve().parents[1] / "studies"
    text = (studies / "resize.yaml").read_text().replace("dtypes: [fp16, fp32]", "dtypes: [fp32, fp16]")
    text = re.sub(r"(?m)^shapes:\n(?:  - .*\n)+", "shapes: [{n: 1, c: 4, h_in: 8, w_in: 8, h_out: 16, w_out: 16}]\n",
                  text)
    spec = tmp_path / "resize.yaml"
    spec.write_text(text)
    table = default_table(spec)
    shape = {"n": 1, "c": 4, "h_in": 8, "w_in": 8, "h_out": 16, "w_out": 16}
    x, sizes = resize.make_inputs(shape, "fp16", seed=0, options=table["spec"]["content"].get("inputs"))
    out, m = run_with_table("resize", (x, sizes), table, shape=shape)
    assert m.dtype == "fp16" and out.dtype == np.float16
