"""Kernels reading tables: look the tiling up and run the kernel in execute mode.

``run_with_table`` is the path a deployed kernel takes: the shape comes from the inputs, the
tiling from the table's lookup (exact, nearest, model or default; never an infeasible one), and
the kernel runs through ``execute``, the same call the verification gate makes.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from autotile.errors import InputError
from autotile.kernels import registry
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


def run_with_table(op: str, inputs: tuple, table, dtype: str | None = None, *, shape: dict | None = None,
                   model: Callable | None = None) -> tuple[np.ndarray, Match]:
    """Run ``op`` on ``inputs`` with the tiling ``table`` gives; returns (output, match).

    >>> out, m = run_with_table("matmul", (a, b), "results/matmul")  # doctest: +SKIP
    >>> m.match  # doctest: +SKIP
    'nearest'
    """
    look = table if isinstance(table, Lookup) else Lookup(table, model)
    if look.table.op != op:
        raise InputError(f"the table is for {look.table.op}, not {op}", file=look.table.file)
    shape = shape or shape_of(op, inputs)
    m = look.find(shape, dtype)
    spec = look.table.spec
    out = registry.implementation(op).execute(inputs, m.params, m.dtype, spec.hardware, unit=m.unit,
                                              options=dict(spec.inputs or {}))
    return out, m
