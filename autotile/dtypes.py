"""Data types the kernels and simulator understand, with their sizes and cube fractal width."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class DType:
    """One element type: its name, size in bytes, cube fractal width C0 and accumulator.

    ``c0`` is how many elements fill the 32-byte fractal row of the cube (16 for fp16/bf16,
    8 for fp32, 32 for int8). ``acc`` is the L0C accumulation type the cube uses for it.
    """

    name: str
    bytes: int
    c0: int
    acc: str
    is_float: bool
    unit_roundoff: float = 0.0  # u: the largest relative error of one rounding to nearest (0: integers)

    @property
    def acc_bytes(self) -> int:
        """Bytes of one L0C accumulator element (4: fp32 for floats, int32 for int8)."""
        return _ACC_BYTES[self.acc]

    @property
    def numpy(self) -> np.dtype:
        """NumPy storage dtype (bf16 is stored as float32 values rounded to bf16)."""
        return np.dtype(_NUMPY[self.name])


_ACC_BYTES = {"fp32": 4, "int32": 4}
_NUMPY = {"fp32": "float32", "fp16": "float16", "bf16": "float32", "int8": "int8", "int32": "int32"}

DTYPES: dict[str, DType] = {
    "fp32": DType("fp32", 4, 8, "fp32", True, 2.0 ** -24),
    "fp16": DType("fp16", 2, 16, "fp32", True, 2.0 ** -11),
    "bf16": DType("bf16", 2, 16, "fp32", True, 2.0 ** -8),
    "int8": DType("int8", 1, 32, "int32", False),
}


def get(name: str) -> DType:
    """The DType called ``name``; KeyError lists the valid names."""
    try:
        return DTYPES[name]
    except KeyError:
        raise KeyError(f"unknown dtype {name!r}, expected one of {', '.join(DTYPES)}") from None
