"""Validity regions: the shapes a tuned tiling still fits, in a form C can check.

A spec's constraints are expressions that C cannot evaluate in general, so each table entry
also carries a :class:`Region`, a closed form over the queried shape ``x`` (dims in table order):

    lo[d] <= x[d] <= hi[d]                                    for every dim d
    prod over d with split[d] > 0 of ceil(x[d] / split[d]) <= max_blocks

Both the C lookup and the Python lookup require the region; Python additionally re-checks the
spec's constraints and the kernel's own check, so it never answers an infeasible tiling. The two
agree whenever the region implies those checks. A region function guarantees it for the rules it
is derived from (:mod:`autotile.tables.region_rules`; tests check it on random shapes), so the
lookup uses it only for a spec with those rules for the unit: with custom rules an entry serves
its own shape only, and an entry Python refuses even there gets an empty region.

Regions are per (op, unit): entries of one table may run on different units with different params.

* ``matmul`` on ``cube``: the L0/L1 capacity rules do not depend on the shape; what does is the
  core count, ``ceil(m/single_core_m) * ceil(n/single_core_n) * ceil(k/single_core_k) <= cube
  cores`` (the last factor 1 for a tiling that did not split k), and the lower ends of the spec's
  shape-dependent domains (``base_m <= align_up(m, 16)``, ``single_core_m <= align_up(m, base_m)``,
  ``single_core_k <= align_up(k, base_k)``, ``step_ka <= ceil(k / base_k)``, ...), which become ``lo``.
* ``matmul`` on ``vector``: ``tile_m <= m`` and ``cores <= ceil(m / tile_m)`` bound m from below;
  UB must hold B (k x n) twice plus the A / C tiles, which grows with n and k but is not a box, so
  the box stops at the largest multiple ``s * (n, k)`` of the tuned n and k that the kernel's
  own check still accepts (every shape below that corner needs less UB).
* anything else: the entry serves its own shape only (``lo == hi == shape``) until a region
  function is written for it.

Feasible is not enough: a tiling serving a shape far from its own can be several times slower
than the default heuristic (the lookup's fallback), so a region also keeps only the shapes where
the tiling does per core what it did at the tuned shape, bounds C can check without a simulator:

* cube, m and n: a dim the tuned shape split over several core blocks does not shrink below its
  tuned size (the largest block stays ``single_core_m`` while the shape's work shrinks, so cores
  idle or run a sliver: 300x600x200 on the tiling tuned for 1024x2048x512 used 3 of 24 cores,
  2.8x the default's cycles). Both may grow: that adds core blocks, none larger, up to the
  core limit.
* cube, k: a k the tuned shape split over several core K ranges does not shrink below its tuned
  size either (as m and n); a tiling that kept k whole keeps it whole at any k (its
  single_core_k is served as all of k rounded up to base_k, up to the largest such k that fits
  the headers' int32). When one L1 k panel (``base_k * max(step_ka, step_kb)``) covered the tuned k, the
  tuner could not pick a longer one, so k stays within it (a 16x16x16 tiling, base_k 16, ran k=256
  at 3.5x the default's cycles); otherwise k does not shrink below its tuned size (the last
  panel's padding grows: k=250 on the 1000^3 tiling was 10% slower).
* vector, m: the busiest core's rows (``ceil(ceil(m / tile_m) / cores) * tile_m``, the kernel
  gives each core a run of whole tiles) stay at most what they were at the tuned m, since the
  tuned ``cores`` does not grow with m (the 4x4x16 tiling, 4 cores of 1-row tiles, ran 256x16x181
  at 12x the default's cycles), and when that is several tiles m stays at or above the tuned m.

``bench/lookup_regions.py`` measures it: the share of region answers slower than the default.
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


def _matmul_cube(shape: dict, params: dict, dtype: str, hw) -> Region:
    p = params
    c0k = max(16, get_dtype(dtype).c0)
    bm, bn, bk = p["base_m"], p["base_n"], p["base_k"]
    scm, scn = p["single_core_m"], p["single_core_n"]
    m, n, k = shape["m"], shape["n"], shape["k"]
    panel_k = max(p["step_ka"], p["step_kb"]) * bk
    # the spec's domains, then no shrinking of a dim spread over several core blocks / k panels
    lo_m = max(1, bm - 15, scm - bm + 1, m if m > scm else 1)
    lo_n = max(1, bn - 15, scn - bn + 1, n if n > scn else 1)
    # a tiling that split k: k no smaller than tuned and within single_core_k's domain; one that
    # did not (or from before single_core_k) keeps k whole at any k (see kernels.matmul.served)
    sck = p.get("single_core_k", k)
    split_k = sck < k
    lo_k = max(1, bk - c0k + 1, (max(p["step_ka"], p["step_kb"]) - 1) * bk + 1, k if k > panel_k else 1,
               k if split_k else 1)
    # one k panel held the tuned k: no longer k than that panel; k kept whole is served as
    # single_core_k = k rounded up to base_k, which must fit the headers' int32 (a k within base_k
    # of 2**31 was served 2**31: C held -2**31)
    hi_k = panel_k if k <= panel_k else MAX_DIM if split_k or "single_core_k" not in p else MAX_DIM // bk * bk
    lo, hi = {"m": lo_m, "n": lo_n, "k": lo_k}, {"m": MAX_DIM, "n": MAX_DIM, "k": hi_k}
    split = {"m": scm, "n": scn, "k": sck if split_k else 0}
    dims = tuple(shape)
    return Region(tuple(lo[d] for d in dims), tuple(hi[d] for d in dims), tuple(split[d] for d in dims),
                  hw.cube_cores)


def _matmul_vector(shape: dict, params: dict, dtype: str, hw) -> Region:
    from autotile.errors import InfeasibleConfig
    from autotile.kernels import matmul_vector

    tm, cores = params["tile_m"], params["cores"]
    m, n, k = shape["m"], shape["n"], shape["k"]
    tiles = -(-m // tm)
    per = -(-tiles // cores) * tm  # rows of the busiest core at the tuned m
    # the spec's domains, then: the busiest core's rows no more than that, and m no smaller
    # when that is several tiles
    lo_m = max(1, tm, (cores - 1) * tm + 1, m if per > tm else 1)
    hi_m = cores * per

    def fits(s: int) -> bool:
        try:
            matmul_vector.check({"m": lo_m, "n": s * n, "k": s * k}, params, dtype, hw)
        except (InfeasibleConfig, KeyError, ValueError, TypeError):
            return False
        return True

    if not fits(1):  # not even the tuned shape: an empty box, the C lookup never picks it
        return empty(len(shape))
    good, bad = 1, MAX_DIM // max(n, k) + 1  # fits(good), not fits(bad) (or past MAX_DIM)
    while bad - good > 1:
        mid = (good + bad) // 2
        good, bad = (mid, bad) if fits(mid) else (good, mid)
    lo, hi = {"m": lo_m, "n": 1, "k": 1}, {"m": hi_m, "n": good * n, "k": good * k}
    dims = tuple(shape)
    return Region(tuple(lo[d] for d in dims), tuple(hi[d] for d in dims), (0,) * len(dims), 0)


def exact(shape: dict) -> Region:
    """The region of ``shape`` alone."""
    s = tuple(shape.values())
    return Region(s, s, (0,) * len(s), 0)


def empty(ndims: int) -> Region:
    """A region holding no shape (lo above hi)."""
    return Region((1,) * ndims, (0,) * ndims, (0,) * ndims, 0)


def _exact(shape: dict, params: dict, dtype: str, hw) -> Region:
    return exact(shape)


REGIONS: dict[tuple[str, str], Callable] = {("matmul", "cube"): _matmul_cube, ("matmul", "vector"): _matmul_vector}

RULES = {
    ("matmul", "cube"): "lo <= shape (from the spec's shape-dependent domains) and "
                        "ceil(m/single_core_m) * ceil(n/single_core_n) * ceil(k/single_core_k) <= cube cores "
                        "(k kept whole by a tiling that did not split it); m, n and k no smaller than tuned "
                        "where that spanned several core blocks; k no smaller "
                        "than tuned where that spanned several L1 k panels (base_k * max(step_ka, step_kb)), else "
                        "at most one panel",
    ("matmul", "vector"): "m >= tile_m and ceil(m/tile_m) >= cores; the busiest core's rows no more than at the "
                          "tuned m, and m no smaller than tuned where those were several tiles; n and k at most "
                          "the largest multiple of the tuned (n, k) whose B and tiles still fit in UB",
}
EXACT_RULE = "no region is known: an entry serves its own shape only"
CUSTOM_RULE = "the spec's rules are not those the region is derived from: an entry serves its own shape only"


def region_of(op: str, unit: str, shape: dict, params: dict, dtype: str, hw) -> Region:
    """The region of the tiling ``params`` tuned on ``unit`` for ``shape`` (dims in table order),
    by the op's region function whatever the spec (:class:`~autotile.tables.lookup.Lookup` knows
    when it applies).

    >>> r = region_of("matmul", "cube", {"m": 1024, "n": 2048, "k": 512}, params, "fp16", hw)  # doctest: +SKIP
    >>> r.contains((1000, 2000, 500))  # doctest: +SKIP
    True
    """
    return REGIONS.get((op, unit), _exact)(shape, params, dtype, hw)


def describe_rule(op: str, units, custom=()) -> str:
    """How entries of ``op`` on each of ``units`` generalize (one line, for generated headers);
    ``custom``: the units whose rules differ from those their region is derived from."""
    rules = [CUSTOM_RULE if u in custom else RULES.get((op, u), EXACT_RULE) for u in units]
    if len(set(rules)) == 1:
        return rules[0]
    return "; ".join(f"{u} entries: {r}" for u, r in zip(units, rules))
