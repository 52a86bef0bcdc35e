"""Dtype emulation: rounding float64/float32 values to fp16, bf16 or fp32 as the hardware does."""

from __future__ import annotations

import numpy as np

BF16_OVERFLOW = 3.3961775292304e38  # the largest bf16 plus half its spacing: from here on, inf


def round_bf16(x: np.ndarray) -> np.ndarray:
    """Round to the nearest bf16 (ties to even), returned as float32 values.

    Wider input is rounded once, straight to bf16: going through float32 first would round
    twice and move values just below a bf16 tie onto it (2.929687485 -> 2.9375, not 2.921875)."""
    a = np.asarray(x)
    if a.dtype != np.float32:
        return _round_bf16_wide(a.astype(np.float64))
    f = np.ascontiguousarray(a)
    bits = f.view(np.uint32).astype(np.uint64)
    rounding = 0x7FFF + ((bits >> 16) & 1)
    out = ((bits + rounding) >> 16) << 16
    out = out.astype(np.uint32).view(np.float32)
    return np.where(np.isnan(f), f, out)


def _round_bf16_wide(v: np.ndarray) -> np.ndarray:
    """float64 values to the nearest bf16 (8 significant bits, fp32's exponent range), as float32."""
    ax = np.abs(v)
    with np.errstate(invalid="ignore", over="ignore"):
        _, e = np.frexp(ax)
        spacing = np.ldexp(1.0, np.maximum(e - 1, -126) - 7)
        out = np.copysign(np.rint(ax / spacing) * spacing, v)
        out = np.where(ax >= BF16_OVERFLOW, np.copysign(np.inf, v), out)
    out = np.where((v == 0) | np.isnan(v), v, out)
    return out.astype(np.float32)


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
