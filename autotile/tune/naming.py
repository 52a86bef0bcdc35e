"""Names of studies and shapes: one study per (op, hardware, dtype, shape, unit)."""

from __future__ import annotations


def shape_text(shape: dict) -> str:
    """``m=1024,n=2048,k=512``: the form the command line takes."""
    return ",".join(f"{k}={v}" for k, v in shape.items())


def study_name(op: str, hw: str, dtype: str, shape: dict, unit: str) -> str:
    """``matmul/ascend910b2/fp16/m=1024,n=2048,k=512/cube``: says exactly what it tunes."""
    return f"{op}/{hw}/{dtype}/{shape_text(shape)}/{unit}"


def parse_study_name(name: str) -> dict | None:
    """The parts of a name made by ``study_name``; None for other studies in the storage."""
    parts = name.split("/")
    if len(parts) != 5:
        return None
    op, hw, dtype, shape, unit = parts
    dims = {}
    for item in shape.split(","):
        key, _, value = item.partition("=")
        # a dimension study_name writes: ASCII digits (str.isdigit() also takes "¹", which int()
        # refuses), at most 2**31-1 (so int() never sees thousands of digits), never 0
        if not key or not (value.isascii() and value.isdigit()) or len(value) > 10 or not 0 < int(value) < 2**31:
            return None
        dims[key] = int(value)
    return {"op": op, "hw": hw, "dtype": dtype, "shape": dims, "unit": unit}
