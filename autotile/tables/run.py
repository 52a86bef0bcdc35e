"""Kernels reading tables: look the tiling up and run the kernel in execute mode.

``run_with_table`` is the path a deployed kernel takes: the shape comes from the inputs, the
tiling from the table's lookup (exact, nearest, model or default; never an infeasible one), and
the kernel runs through ``execute``, the same call the verification gate makes. The dtype is the
inputs' (``input_dtype``) unless given, and must be theirs: a table's first dtype applied to arrays
of another type computed int8 data in fp16 (inf where int32 holds 640000).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autotile.errors import InputError
from autotile.kernels import dtype_emul, registry
from autotile.tables.lookup import Lookup, Match


def shape_of(op: str, inputs: tuple) -> dict:
    """The op's shape dict from its input arrays (``kernel.shape_of`` when the kernel has one)."""
    kernel = registry.implementation(op)
    if hasattr(kernel, "shape_of"):
        return kernel.shape_of(inputs)
    dims = registry.get(op).dims
    if dims == ("n",):
        return {"n": int(np.asarray(inputs[0]).size)}
    raise InputError(f"{op}: cannot tell the shape from the inputs; pass shape=")


# the NumPy type an input of each dtype is stored as (bf16: float32 values rounded to bf16)
STORAGE = {"fp16": "float16", "fp32": "float32", "bf16": "float32", "int8": "int8"}
STORED = "float16 (fp16), float32 (fp32, or bf16 when dtype='bf16' says so) or int8"


def input_dtype(op: str, inputs: tuple, dtype: str | None, dtypes: tuple[str, ...]) -> str:
    """The dtype ``op`` computes ``inputs`` in: ``dtype`` when given, else the one their NumPy type
    stores (float32 is fp32: bf16 shares its storage, so only ``dtype="bf16"`` says so). An
    InputError when it is not among the table's ``dtypes`` or not what the value inputs hold."""
    n = registry.get(op).value_inputs
    arrays = [np.asarray(x) for x in tuple(inputs)[:n]]
    if not arrays:
        raise InputError("expected the input arrays, got none", field="inputs")
    types = list(dict.fromkeys(a.dtype.name for a in arrays))
    if len(types) > 1:
        raise InputError(f"expected arrays of one type, got {' and '.join(types)}", field="inputs")
    store = types[0]
    if dtype:
        if dtype not in dtypes:
            raise InputError(f"expected one of the table's dtypes {', '.join(dtypes)}, got {dtype!r}", field="dtype")
        if STORAGE.get(dtype) != store:
            raise InputError(f"expected {STORAGE.get(dtype)} arrays for dtype {dtype!r}, got {store}", field="inputs")
    else:
        dtype = next((d for d, s in STORAGE.items() if s == store), None)
        if dtype is None:
            raise InputError(f"expected {STORED} arrays, got {store}", field="inputs")
        if dtype not in dtypes:
            hint = " (pass dtype='bf16' if they hold bf16 values)" if dtype == "fp32" and "bf16" in dtypes else ""
            raise InputError(f"the inputs are {store}, so {dtype}, which the table was not tuned for (its dtypes: "
                             f"{', '.join(dtypes)}){hint}", field="dtype")
    if dtype == "bf16":
        bad = sum(int(np.count_nonzero((dtype_emul.round_bf16(a) != a) & ~np.isnan(a))) for a in arrays)
        if bad:
            raise InputError(f"expected float32 values rounded to bf16 for dtype 'bf16' (autotile.kernels."
                             f"dtype_emul.round_to(x, 'bf16')), got {bad} that bf16 cannot hold", field="inputs")
    return dtype


def run_with_table(op: str, inputs: tuple, table, dtype: str | None = None, *, shape: dict | None = None,
                   model: Callable | None = None) -> tuple[np.ndarray, Match]:
    """Run ``op`` on ``inputs`` with the tiling ``table`` gives; returns (output, match). ``dtype``
    defaults to the inputs' (``input_dtype``).

    >>> out, m = run_with_table("matmul", (a, b), "results/matmul")  # doctest: +SKIP
    >>> m.match  # doctest: +SKIP
    'nearest'
    """
    look = table if isinstance(table, Lookup) else Lookup(table, model)
    if look.table.op != op:
        raise InputError(f"the table is for {look.table.op}, not {op}", file=look.table.file)
    shape = shape or shape_of(op, inputs)
    m = look.find(shape, input_dtype(op, inputs, dtype, look.table.dtypes))
    spec = look.table.spec
    out = registry.implementation(op).execute(inputs, m.params, m.dtype, spec.hardware, unit=m.unit,
                                              options=dict(spec.inputs or {}))
    return out, m
