"""Validity regions: the shapes a tuned tiling still fits, in a form C can check.

A spec's constraints are expressions that C cannot evaluate in general, so each table entry
also carries a :class:`Region`, a closed form over the queried shape ``x`` (dims in table order):

    lo[d] <= x[d] <= hi[d]                                    for every dim d
    prod over d with split[d] > 0 of ceil(x[d] / split[d]) <= max_blocks

Both the C lookup and the Python lookup require the region; Python additionally re-checks the
spec's constraints and the kernel's own check, so it never answers an infeasible tiling. The two
agree whenever the region implies those checks, which is what a region function must guarantee
for the op's bundled spec (tests check it on random shapes).

* ``matmul``: the L0/L1 capacity rules do not depend on the shape; what does is the core count,
  ``ceil(m/single_core_m) * ceil(n/single_core_n) <= cube cores``, and the lower ends of the
  spec's shape-dependent domains (``base_m <= align_up(m, 16)``, ``single_core_m <=
  align_up(m, base_m)``, ``step_ka <= ceil(k / base_k)``, ...), which become ``lo``.
* any other op: the entry serves its own shape only (``lo == hi == shape``) until a region
  function is written for it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from autotile.dtypes import get as get_dtype

MAX_DIM = 2**31 - 1


@dataclass(frozen=True)
class Region:
    """Shapes (dims in table order) a tiling fits: a box plus a core-count limit."""

    lo: tuple[int, ...]
    hi: tuple[int, ...]
    split: tuple[int, ...]  # per dim block size of the core split; 0: the dim is not split
    max_blocks: int  # 0: no limit

    def blocks(self, shape: tuple[int, ...]) -> int:
        """Core blocks the split makes of ``shape``."""
        out = 1
        for x, s in zip(shape, self.split):
            if s > 0:
                out *= -(-x // s)
        return out

    def contains(self, shape: tuple[int, ...]) -> bool:
        """True when ``shape`` is inside the box and within the core limit."""
        if any(not lo <= x <= hi for x, lo, hi in zip(shape, self.lo, self.hi)):
            return False
        return self.max_blocks == 0 or self.blocks(shape) <= self.max_blocks


def _matmul(shape: dict, params: dict, dtype: str, hw) -> Region:
    p = params
    c0k = max(16, get_dtype(dtype).c0)
    bm, bn, bk = p["base_m"], p["base_n"], p["base_k"]
    scm, scn = p["single_core_m"], p["single_core_n"]
    lo_m = max(1, bm - 15, scm - bm + 1)
    lo_n = max(1, bn - 15, scn - bn + 1)
    lo_k = max(1, bk - c0k + 1, (max(p["step_ka"], p["step_kb"]) - 1) * bk + 1)
    lo = {"m": lo_m, "n": lo_n, "k": lo_k}
    split = {"m": scm, "n": scn, "k": 0}
    dims = tuple(shape)
    return Region(tuple(lo[d] for d in dims), (MAX_DIM,) * len(dims), tuple(split[d] for d in dims),
                  hw.cube_cores)


def _exact(shape: dict, params: dict, dtype: str, hw) -> Region:
    s = tuple(shape.values())
    return Region(s, s, (0,) * len(s), 0)


REGIONS: dict[str, Callable] = {"matmul": _matmul}


def region_of(op: str, shape: dict, params: dict, dtype: str, hw) -> Region:
    """The region of the tiling ``params`` tuned for ``shape`` (dims in table order).

    >>> r = region_of("matmul", {"m": 1024, "n": 2048, "k": 512}, params, "fp16", hw)  # doctest: +SKIP
    >>> r.contains((1000, 2000, 500))  # doctest: +SKIP
    True
    """
    return REGIONS.get(op, _exact)(shape, params, dtype, hw)


def describe_rule(op: str) -> str:
    """One line saying how entries of ``op`` generalize (for generated headers)."""
    if op == "matmul":
        return ("lo <= shape (from the spec's shape-dependent domains) and "
                "ceil(m/single_core_m) * ceil(n/single_core_n) <= cube cores")
    return "no region is known for this op: an entry serves its own shape only"
