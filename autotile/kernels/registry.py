"""The operator registry: static metadata, with the implementation module imported on demand.

Spec validation needs only the metadata (dimension names, units, dtypes), so loading a spec never
imports Numba. ``implementation(name)`` imports the kernel module when a simulation needs it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType


@dataclass(frozen=True)
class OpInfo:
    """What a spec may say about an operator."""

    name: str
    dims: tuple[str, ...]  # shape dimension names, in the order tables key them
    units: tuple[str, ...]  # execution units it has kernels for; the first is the default
    dtypes: tuple[str, ...]
    module: str  # autotile.kernels.<module>; "" for the generic replay op (no kernel)
    summary: str
    params: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (unit, params its kernel reads)

    def needs(self, unit: str) -> tuple[str, ...]:
        """The params the kernel on ``unit`` reads (its ``default_params`` keys; the kernel
        modules take their lists from here): a spec that simulates it must declare each one."""
        return dict(self.params).get(unit, ())

    @property
    def generic(self) -> bool:
        """True for an op with no kernel whose dims come from the spec's shapes (``replay``)."""
        return not self.module


_TILE = ("tile_len", "buffer_num", "cores")

OPS: dict[str, OpInfo] = {
    op.name: op
    for op in (
        OpInfo("matmul", ("m", "n", "k"), ("cube", "vector"), ("fp16", "bf16", "fp32", "int8"),
               "matmul", "C = A @ B, A MxK and B KxN row-major in GM",
               (("cube", ("base_m", "base_n", "base_k", "step_m", "step_n", "step_ka", "step_kb", "depth_a1",
                          "depth_b1", "db_l0a", "db_l0b", "db_l0c", "iterate_order", "single_core_m",
                          "single_core_n")),
                ("vector", ("tile_m", "buffer_num", "cores")))),
        OpInfo("copy", ("n",), ("vector",), ("int8", "fp16", "bf16", "fp32"),
               "copy", "out = x streamed GM -> UB -> GM (n elements; bytes for int8)",
               (("vector", ("block_dim", "tile_bytes", "depth")),)),
        OpInfo("weighted_sum", ("n",), ("vector", "cube", "scalar"), ("fp16", "fp32", "bf16"),
               "weighted_sum", "out = sum(w[i] * x[i])",
               (("vector", (*_TILE, "reduction", "acc_dtype")), ("cube", (*_TILE, "cube_form")),
                ("scalar", (*_TILE, "acc_dtype")))),
        OpInfo("global_sum", ("n",), ("vector", "cube", "scalar"), ("fp16", "fp32", "bf16"),
               "global_sum", "sum of a whole tensor",
               (("vector", (*_TILE, "acc_dtype", "combine")), ("cube", _TILE), ("scalar", _TILE))),
        OpInfo("sigmoid", ("n",), ("vector", "scalar"), ("fp32", "fp16", "bf16"),
               "sigmoid", "1 / (1 + exp(-x)), exact and approximate variants",
               (("vector", (*_TILE, "variant")), ("scalar", (*_TILE, "variant")))),
        OpInfo("elementwise", ("n",), ("vector", "scalar"), ("fp32", "fp16", "bf16"),
               "elementwise", "add, mul, relu", (("vector", _TILE), ("scalar", _TILE))),
        OpInfo("resize", ("n", "c", "h_in", "w_in", "h_out", "w_out"), ("vector",), ("fp32", "fp16"),
               "resize", "nearest / bilinear interpolation",
               (("vector", ("tile_h", "tile_w", "tile_c", "buffer_num", "cores")),)),
        OpInfo("roi_align", ("n", "c", "h", "w", "rois", "pooled_h", "pooled_w"), ("vector",),
               ("fp32", "fp16"), "roi_align", "ROI Align with average pooling",
               (("vector", ("tile_rois", "tile_bins", "tile_c", "buffer_num", "cores")),)),
        OpInfo("replay", (), ("default",), ("fp32", "fp16", "bf16", "int8"),
               "", "any kernel with recorded measurements (backend: replay); dims from the shapes"),
    )
}


def get(name: str) -> OpInfo:
    """Metadata of operator ``name``; KeyError names the valid ones."""
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}, expected one of {', '.join(OPS)}") from None


def implementation(name: str) -> ModuleType:
    """Import and return the kernel module of operator ``name``."""
    if not get(name).module:
        raise KeyError(f"op {name!r} has no kernel: it can only be replayed from measurements")
    return importlib.import_module(f"autotile.kernels.{get(name).module}")
