"""Dtype emulation: rounding float64/float32 values to fp16, bf16 or fp32 as the hardware does."""

from __future__ import annotations

import numpy as np


def round_bf16(x: np.ndarray) -> np.ndarray:
    """Round to the nearest bf16 (ties to even), returned as float32 values."""
    f = np.ascontiguousarray(x, dtype=np.float32)
    bits = f.view(np.uint32).astype(np.uint64)
    rounding = 0x7FFF + ((bits >> 16) & 1)
    out = ((bits + rounding) >> 16) << 16
    out = out.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), f, out)


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """Values of ``x`` rounded to ``dtype``, stored as that dtype (bf16 as float32)."""
    if dtype == "fp16":
        return np.asarray(x).astype(np.float16)
    if dtype == "bf16":
        return round_bf16(x)
    if dtype == "fp32":
        return np.asarray(x).astype(np.float32)
    if dtype == "int8":
        return np.clip(np.rint(x), -128, 127).astype(np.int8)
    raise KeyError(dtype)


def to_output(c: np.ndarray, dtype: str) -> np.ndarray:
    """Convert an L0C accumulator to the output dtype (int8 inputs give int32 outputs)."""
    if dtype == "int8":
        return np.asarray(c).astype(np.int32)
    return round_to(c, dtype)
