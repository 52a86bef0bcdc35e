"""Crossover search: the smallest size from which one unit stays faster than another.

Each unit is taken at its best tiling for each size, found by exhaustive search over a small
deterministic grid (``candidate_params``): tile lengths in powers of two from 16 up to n (plus n
itself), buffer_num 1 or 2, core counts in powers of two and the whole chip (only 1 in the on-chip framing, which is
single-core by definition), and every value of the unit's categorical params; tiles longer than
a core's slice duplicate the shortest one that covers it and are not simulated (see ``best``). The crossover is
located on a log grid (powers of two from ``lo`` to ``hi``) and refined by integer bisection.
"""

from __future__ import annotations

import itertools

from autotile.hardware import HardwareProfile
from autotile.kernels import registry

CATEGORICAL = {  # op -> unit -> {param: choices}
    "weighted_sum": {"vector": {"reduction": ("tree", "vmla"), "acc_dtype": ("fp16", "fp32")},
                     "scalar": {"acc_dtype": ("fp16", "fp32")},
                     "cube": {"cube_form": ("trace", "naive")}},
    "global_sum": {"vector": {"acc_dtype": ("fp16", "fp32"), "combine": ("scalar", "vector")},
                   "scalar": {}, "cube": {}},
    "elementwise": {"vector": {}, "scalar": {}},
    "sigmoid": {"vector": {"variant": ("exact",)}, "scalar": {"variant": ("exact",)}},  # precise only
}


def _pow2(lo: int, hi: int) -> list[int]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out


def candidate_params(op: str, unit: str, n: int, hw: HardwareProfile, on_chip: bool) -> list[dict]:
    """The deterministic grid of tilings searched for one unit at size n."""
    tiles = sorted(set(_pow2(16, max(16, n)) + [-(-n // 16) * 16]))
    max_cores = hw.cube_cores if unit == "cube" else hw.vector_cores
    cores = [1] if on_chip else [c for c in sorted(set(_pow2(1, max_cores) + [max_cores])) if c <= max(1, n // 16)]
    cats = CATEGORICAL.get(op, {}).get(unit, {})
    out = []
    for t, b, c in itertools.product(tiles, (1, 2), cores):
        for combo in itertools.product(*cats.values()):
            out.append({"tile_len": t, "buffer_num": b, "cores": c, **dict(zip(cats, combo))})
    return out


def covering_tile(n: int, cores: int, tiles) -> int | None:
    """The smallest of ``tiles`` that holds a whole core's slice of n (16-element granules)."""
    per = -(-n // cores)
    per = -(-per // 16) * 16
    return min((t for t in tiles if t >= per), default=None)


def best(op: str, unit: str, n: int, dtype: str, hw: HardwareProfile, on_chip: bool) -> tuple[float, dict]:
    """(cycles, params) of the fastest feasible tiling in the grid for one unit at size n.

    A tile longer than the smallest grid tile that already covers a core's whole slice runs the
    same single tile per core (the kernels clamp the tile to the slice), so it simulates to the
    same cycles and, coming later in the grid, could never be picked: it is skipped, which
    saves about a third of the simulations (``tests/test_models.py`` checks the clamp).
    """
    mod = registry.implementation(op)
    options = {"data": "on_chip"} if on_chip else None
    top = (float("inf"), {})
    cands = candidate_params(op, unit, n, hw, on_chip)
    tiles = sorted({p["tile_len"] for p in cands})
    cover = {c: covering_tile(n, c, tiles) for c in {p["cores"] for p in cands}}
    for p in cands:
        if cover[p["cores"]] is not None and p["tile_len"] > cover[p["cores"]]:
            continue
        r = mod.simulate({"n": n}, p, dtype, hw, unit=unit, options=options)
        if r.feasible and r.cycles < top[0]:
            top = (r.cycles, p)
    return top


def crossover(op: str, dtype: str, hw: HardwareProfile, *, small_unit: str = "vector", large_unit: str = "cube",
              on_chip: bool = True, lo: int = 16, hi: int = 16384) -> dict:
    """Smallest n from which ``large_unit`` stays faster than ``small_unit`` (None if never on the grid).

    >>> # crossover("weighted_sum", "fp16", load_profile())["n"]  # doctest: +SKIP
    """
    table = []

    def wins(n: int) -> bool:
        a, _ = best(op, small_unit, n, dtype, hw, on_chip)
        b, _ = best(op, large_unit, n, dtype, hw, on_chip)
        table.append({"n": n, small_unit: a, large_unit: b})
        return b < a

    n = locate(wins, lo, hi)
    return {"n": n, "grid": sorted(table, key=lambda r: r["n"])}


def locate(wins, lo: int = 16, hi: int = 16384) -> int | None:
    """Smallest n from which ``wins(n)`` stays true: log2 grid ``lo..hi``, then integer bisection.

    Shared by the simulated crossover and the learned one (``wins`` then asks a model), so both
    probe sizes the same way. Each n is asked at most once.

    >>> locate(lambda n: n >= 1000, 16, 4096)
    1000
    """
    cache: dict[int, bool] = {}

    def ask(n: int) -> bool:
        if n not in cache:
            cache[n] = bool(wins(n))
        return cache[n]

    grid = _pow2(lo, hi)
    flags = [ask(n) for n in grid]
    g = None
    for i in range(len(grid) - 1, -1, -1):
        if not flags[i]:
            break
        g = i
    if g is None:
        return None
    if g == 0:
        return grid[0]
    a, b = grid[g - 1], grid[g]  # wins(a) false, wins(b) true
    while b - a > 1:
        m = (a + b) // 2
        if ask(m):
            b = m
        else:
            a = m
    return b
