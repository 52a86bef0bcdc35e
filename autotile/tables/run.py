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
from autotile.tables.lookup import Lookup, Match, positive_int


def shape_of(op: str, inputs: tuple, options: dict | None = None) -> dict:
    """The op's shape dict from its input arrays: ``kernel.shape_of`` when the kernel has one
    (given the table's ``options`` where it takes them: resize's layout orders x's dims), else
    a 1-D op's n, the first input's size."""
    found = _found(op, inputs, options)
    if not found:
        raise InputError(f"{op}: cannot tell the shape from the inputs; pass shape=")
    return found


def _found(op: str, inputs: tuple, options: dict | None) -> dict:
    """``shape_of``'s dims, or {} for an op whose kernel cannot read them off its inputs."""
    kernel = registry.implementation(op)
    if hasattr(kernel, "shape_of"):
        return kernel.shape_of(tuple(inputs), options=options)
    if registry.get(op).dims == ("n",):
        return {"n": int(np.asarray(inputs[0]).size)}
    return {}


def agreed(given: dict, found: dict) -> dict:
    """``given`` (``run_with_table``'s shape=) where it agrees with the inputs' ``found`` dims,
    else an InputError naming the first dim they disagree on: a lookup of another shape than
    the arrays' answered another entry's tiling (``exact`` for the wrong shape). A dim the
    inputs do not determine is taken from ``given``; its missing or bad values are the lookup's
    to name."""
    if not isinstance(given, dict):
        return given
    for d, v in found.items():
        if d in given and positive_int(given[d]) and int(given[d]) != v:
            raise InputError(f"shape= gives {d}={given[d]}, but the inputs have {d}={v}", field=f"shape.{d}")
    return given


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
    defaults to the inputs' (``input_dtype``), the shape to theirs (``shape_of``); a ``shape``
    given must name every dim and agree with the inputs (``agreed``), or it is an InputError, as is
    an input the entry's tiling cannot run (roi_align: a ROI larger than the ``roi_max`` it was
    tuned for, whose sampling grid its UB cannot hold; tune with a larger ``roi_max``).

    >>> out, m = run_with_table("matmul", (a, b), "results/matmul")  # doctest: +SKIP
    >>> m.match  # doctest: +SKIP
    'nearest'
    """
    look = table if isinstance(table, Lookup) else Lookup(table, model)
    if look.table.op != op:
        raise InputError(f"the table is for {look.table.op}, not {op}", file=look.table.file)
    spec = look.table.spec
    options = dict(spec.inputs or {})
    dtype = input_dtype(op, inputs, dtype, look.table.dtypes)
    if shape is None:
        shape = shape_of(op, inputs, options)
    else:
        shape = agreed(shape, _found(op, inputs, options))
    m = look.find(shape, dtype)
    out = registry.implementation(op).execute(inputs, m.params, m.dtype, spec.hardware, unit=m.unit,
                                              options=options)
    return out, m
