"""Crossover search: the smallest size from which one unit stays faster than another.

Each unit is taken at its best tiling for each size, found by exhaustive search over a small
deterministic grid (``candidate_params``): tile lengths in powers of two from 16 up to n (plus n
itself), buffer_num 1 or 2, core counts in powers of two and the whole chip (only 1 in the on-chip framing, which is
single-core by definition), and every value of the unit's categorical params; tiles longer than
a core's slice duplicate the shortest one that covers it and are not simulated (see ``best``). The crossover is
located on a log grid (``lo`` doubled up to ``hi``, and ``hi``), with probes added between near ties
(``densify``), and refined by integer bisection; a
crossover at either end of that range is flagged (``range_edge``), since the search saw nothing past it.
Only the probed sizes are simulated, so "stays faster from n" means faster at every probed size from
n on; where the two units are near a tie the lead can change sign between probes (``closest_lead``).
The op's options (a spec's ``inputs:``, e.g. elementwise's ``kind``) are passed to every simulation.
"""

from __future__ import annotations

import itertools

from autotile.errors import InputError
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
RESTRICTED = {"sigmoid": "for sigmoid only variant exact: the search compares precise sigmoids, as the decision "
                         "tree does (the polynomial and the lookup tables trade accuracy for cycles)"}


def grid_restriction(op: str) -> str:
    """Which choices the per-size grid leaves out for ``op`` and why ("" when it tries them all)."""
    return RESTRICTED.get(op, "")


def _pow2(lo: int, hi: int) -> list[int]:
    out, v = [], lo
    while v <= hi:
        out.append(v)
        v *= 2
    return out


def grid(lo: int, hi: int) -> list[int]:
    """The sizes probed first: ``lo`` doubled while it stays within ``hi``, then ``hi`` itself, so a
    range whose ends are not a power of two apart is still searched to its top."""
    out = _pow2(lo, hi)
    return out if out[-1] == hi else out + [hi]


def range_edge(n: int | None, lo: int, hi: int) -> str | None:
    """Whether a crossover ``n`` found on ``lo..hi`` sits where the search saw little around it.

    "floor": n is ``lo`` (above 1): the unit is already faster at the smallest size searched, so
    the change, if any, is at ``lo`` or below it, unsearched. "ceiling": n lies past the grid's
    last point below ``hi``: the unit is seen faster only in the top grid step, and whether it
    stays faster beyond ``hi`` is not checked. None otherwise, and for no crossover.

    >>> range_edge(16, 16, 16384), range_edge(15617, 16, 16384), range_edge(1153, 16, 16384)
    ('floor', 'ceiling', None)
    """
    if n is None:
        return None
    if n == lo and lo > 1:
        return "floor"
    g = grid(lo, hi)
    return "ceiling" if len(g) > 1 and n > g[-2] else None


def candidate_params(op: str, unit: str, n: int, hw: HardwareProfile, on_chip: bool) -> list[dict]:
    """The deterministic grid of tilings searched for one unit at size n."""
    tiles = sorted(set(_pow2(16, max(16, n)) + [-(-n // 16) * 16]))
    cores = core_counts(n, hw.cube_cores if unit == "cube" else hw.vector_cores, on_chip)
    cats = CATEGORICAL.get(op, {}).get(unit, {})
    out = []
    for t, b, c in itertools.product(tiles, (1, 2), cores):
        for combo in itertools.product(*cats.values()):
            out.append({"tile_len": t, "buffer_num": b, "cores": c, **dict(zip(cats, combo))})
    return out


def core_counts(n: int, max_cores: int, on_chip: bool) -> list[int]:
    """The core counts the grid tries at size n: powers of two and the whole chip, each with at
    least one 16-element block (the split's granule) per core; only 1 on chip."""
    if on_chip:
        return [1]
    return [c for c in sorted(set(_pow2(1, max_cores) + [max_cores])) if c <= max(1, n // 16)]


def covering_tile(n: int, cores: int, tiles) -> int | None:
    """The smallest of ``tiles`` that holds a whole core's slice of n (16-element granules)."""
    per = -(-n // cores)
    per = -(-per // 16) * 16
    return min((t for t in tiles if t >= per), default=None)


def best(op: str, unit: str, n: int, dtype: str, hw: HardwareProfile, on_chip: bool,
         options: dict | None = None) -> tuple[float, dict]:
    """(cycles, params) of the fastest feasible tiling in the grid for one unit at size n, for
    the op's ``options`` (its ``data`` set by ``on_chip``).

    A tile longer than the smallest grid tile that already covers a core's whole slice runs the
    same single tile per core (the kernels clamp the tile to the slice), so it simulates to the
    same cycles and, coming later in the grid, could never be picked: it is skipped, which
    saves about a third of the simulations (``tests/test_models.py`` checks the clamp).
    """
    if on_chip and "on_chip" not in registry.get(op).placements:
        raise InputError(f"op {op} has no on-chip framing: its kernel always reads its inputs from GM")
    mod = registry.implementation(op)
    options = _options(op, options, on_chip)
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


_LIMITS: dict = {}  # (op, unit, dtype, profile hash, options) -> on_chip_limit


def on_chip_limit(op: str, unit: str, dtype: str, hw: HardwareProfile, options: dict | None = None) -> int:
    """The largest n whose data one core of ``unit`` holds in its buffers: the top of the sizes the
    on-chip framing describes (0 when none). Found from the kernel's own check, on the tiling
    that needs least beside the data (16-element tiles, one buffer, one core) in each of the
    grid's categorical choices; doubling from 16, then integer bisection (what a core must hold
    grows with n)."""
    key = (op, unit, dtype, hw.content_hash(), repr(sorted((options or {}).items())))
    if key not in _LIMITS:
        mod = registry.implementation(op)
        opts = _options(op, options, True)
        cats = CATEGORICAL.get(op, {}).get(unit, {})
        tilings = [{"tile_len": 16, "buffer_num": 1, "cores": 1, **dict(zip(cats, c))}
                   for c in itertools.product(*cats.values())]

        def fits(n: int) -> bool:
            return any(mod.simulate({"n": n}, p, dtype, hw, unit=unit, options=opts).feasible for p in tilings)

        lo, hi = 0, 16
        while hi <= 1 << 30 and fits(hi):
            lo, hi = hi, 2 * hi
        while hi - lo > 1:
            m = (lo + hi) // 2
            lo, hi = (m, hi) if fits(m) else (lo, m)
        _LIMITS[key] = lo
    return _LIMITS[key]


def on_chip_top(op: str, dtype: str, hw: HardwareProfile, units, hi: int, options: dict | None = None,
                aligned: bool = True, lo: int = 1) -> tuple[int, dict]:
    """(largest n up to ``hi`` at which every one of ``units`` holds its data on chip, {unit:
    ``on_chip_limit``}). ``aligned=False``: the largest n whose ``unaligned`` size still fits, and
    lies within ``hi`` (``unaligned_top``, at least ``lo`` where it can)."""
    limits = {u: on_chip_limit(op, u, dtype, hw, options) for u in units}
    top = min(hi, *limits.values())
    return (top if aligned else unaligned_top(top, min(hi, *limits.values()), lo)), limits


def unaligned_top(top: int, most: int, lo: int = 1) -> int:
    """The top of an unaligned search: ``top`` unless its ``unaligned`` probe would pass ``most``
    (the requested --high, or a buffer limit), then 16 below it, a size that is itself unaligned
    (1 below when that leaves ``lo``). weighted_sum fp32 on chip to 16,384 probed n = 16,400, past
    both --high and the Cube's trace form in L0A (13,992 cycles against the Vector's 1,036; at
    16,368 the Cube wins, 176 against 1,030), so the unaligned search said the Cube stays faster
    nowhere.

    >>> unaligned_top(16384, 16384), unaligned_top(16383, 16384), unaligned_top(16384, 20000), unaligned_top(256, 256, 250)
    (16368, 16383, 16384, 255)
    """
    if unaligned(top) <= most:
        return top
    return top - 16 if top - 16 >= lo else top - 1


def _options(op: str, options: dict | None, on_chip: bool) -> dict | None:
    """What the kernel is given: ``options`` in the framing (an op without ``data`` gets none)."""
    if "on_chip" not in registry.get(op).placements:
        return dict(options) if options else None
    return {**(options or {}), "data": "on_chip" if on_chip else "gm"}


WIDTH = ("scalar", "vector", "cube")  # units from the narrowest to the widest


def default_units(op: str) -> tuple[str, str]:
    """(small_unit, large_unit) when none are given: vector and cube for the ops that have both,
    else the op's two units narrower first (scalar, then vector), so the answer is the size from
    which the wider unit stays faster, the question the seed's decision tree asks."""
    units = registry.get(op).units
    if "cube" in units and "vector" in units:
        return "vector", "cube"
    a, b = sorted(units, key=WIDTH.index)[:2]
    return a, b


FRACTAL = 256  # elements of one 16 x 16 Cube fractal: sizes that are multiples of it leave no partial one


def unaligned(n: int) -> int:
    """``n`` itself unless it is a multiple of ``FRACTAL``; then n + 16 (one 16-element row past it)."""
    return n + 16 if n % FRACTAL == 0 else n


def crossover(op: str, dtype: str, hw: HardwareProfile, *, small_unit: str = "vector", large_unit: str = "cube",
              on_chip: bool = True, lo: int = 16, hi: int = 16384, aligned: bool = True,
              options: dict | None = None) -> dict:
    """Smallest n from which ``large_unit`` stays faster than ``small_unit`` up to ``hi`` (None if it
    does not), with ``edge``: that n's ``range_edge`` (at the search's floor or ceiling, or None).

    ``aligned=False`` asks every probed size that is a multiple of ``FRACTAL`` at ``unaligned(n)``
    instead: the grid's powers of two are all whole fractals, so the plain search would say nothing
    of sizes that leave the Cube a partial last fractal (and the Vector a partial last repeat).

    On chip, the search stops at ``on_chip_top``: past it a unit's buffers cannot hold the data,
    so the framing describes nothing there. ``top`` is the largest n searched (None when even
    ``lo`` does not fit: nothing is searched), ``limits`` each unit's ``on_chip_limit`` ({} in GM).

    >>> crossover("weighted_sum", "fp16", load_profile())["n"]  # doctest: +SKIP
    1153
    """
    limits: dict = {}
    if on_chip:
        hi, limits = on_chip_top(op, dtype, hw, (small_unit, large_unit), hi, options, aligned, lo)
        if hi < lo:
            return {"n": None, "windows": [], "grid": [], "edge": None, "closest": None, "closest_windows": [],
                    "top": None,
                    "limits": limits}
    elif not aligned:
        hi = unaligned_top(hi, hi, lo)
    table, lead = [], {}

    def wins(n: int) -> bool:
        m = n if aligned else unaligned(n)
        a, _ = best(op, small_unit, m, dtype, hw, on_chip, options)
        b, _ = best(op, large_unit, m, dtype, hw, on_chip, options)
        table.append({"n": m, small_unit: a, large_unit: b})
        lead[n] = abs(1 - b / a) if 0 < a < float("inf") and b < float("inf") else 1.0
        return b < a

    spans = windows(wins, lo, hi, near=lambda n: lead[n] < NEAR)
    n = stays_from(spans, hi)
    edge = range_edge(n, lo, hi)
    if not aligned:  # name the sizes actually simulated
        n = None if n is None else unaligned(n)
        spans = [[unaligned(a), b if b == hi else unaligned(b)] for a, b in spans]
    table = sorted(table, key=lambda r: r["n"])
    return {"n": n, "windows": spans, "grid": table, "edge": edge,
            "closest": closest_lead(table, n, small_unit, large_unit),
            "closest_windows": window_leads(table, spans, small_unit, large_unit), "top": hi, "limits": limits}


CLOSE = 0.01  # a lead under 1% of the slower unit's cycles: uneven splits over cores or tiles move the
# best cycles of either unit by about that much from one size to the next (weighted_sum in GM near
# n = 90,000: the Cube 0.05% ahead at 89,857, the Vector 0.2% ahead at 92,160, between two probes)


def closest_lead(table: list[dict], n: int | None, small_unit: str, large_unit: str) -> dict | None:
    """The probed size from ``n`` on where ``large_unit`` leads ``small_unit`` least: {"n", "lead"}
    (the lead a fraction of ``small_unit``'s cycles), or None without a crossover. Only probed sizes
    are known: a lead under ``CLOSE`` says sizes between probes may well go the other way.

    >>> closest_lead([{"n": 8, "v": 10.0, "c": 11.0}, {"n": 16, "v": 10.0, "c": 9.0},
    ...               {"n": 32, "v": 20.0, "c": 19.9}], 16, "v", "c")
    {'n': 32, 'lead': 0.005}
    """
    if n is None:
        return None
    leads = [(1 - r[large_unit] / r[small_unit], r["n"]) for r in table if r["n"] >= n]
    if not leads:
        return None
    lead, at = min(leads)
    return {"n": at, "lead": round(lead, 6)}


def window_leads(table: list[dict], spans: list[list[int]], small_unit: str, large_unit: str) -> list[dict]:
    """Per window [a, b] of ``spans``, the probed size in it where ``large_unit`` leads least:
    {"window", "n", "lead"} (as ``closest_lead``, which sees only the window reaching the top). A
    window is as much an answer as a crossover (weighted_sum fp32 in GM: the Cube from 193 to
    7,806, by only 0.0027% at 7,806), so its lead gets the same ``CLOSE`` check.

    >>> window_leads([{"n": 8, "v": 10.0, "c": 9.0}, {"n": 16, "v": 10.0, "c": 9.99}, {"n": 32, "v": 1.0, "c": 2.0}],
    ...              [[8, 16]], "v", "c")
    [{'window': [8, 16], 'n': 16, 'lead': 0.001}]
    """
    out = []
    for a, b in spans:
        leads = [(1 - r[large_unit] / r[small_unit], r["n"]) for r in table if a <= r["n"] <= b]
        if leads:
            lead, at = min(leads)
            out.append({"window": [a, b], "n": at, "lead": round(lead, 6)})
    return out


def stays_from(spans: list[list[int]], hi: int = 16384) -> int | None:
    """The start of the last range of ``windows`` if it reaches ``hi`` (from there the unit stays faster)."""
    return spans[-1][0] if spans and spans[-1][1] == hi else None


NEAR = 0.03  # a probed lead under this calls for a probe between it and the next probe on the same side
NEAR_PROBES = 32  # at most this many such probes per search (each simulates both units' grids)


def densify(sizes: list[int], ask, near, most: int = NEAR_PROBES) -> list[int]:
    """``sizes`` with midpoints added between neighbours that ``ask`` puts on the same side where
    either is ``near`` a tie, repeated down to 16 apart (``most`` at most): a near tie at both probes
    can hide a short range of the other unit (weighted_sum fp32 in GM, while the Cube's GM loads were
    charged whole fractals: the Cube 1.1% ahead at 256 and 11% at 512, the Vector faster at n = 258..296).

    >>> densify([16, 32, 64], lambda n: n < 60 or n > 62, lambda n: n > 16)
    [16, 32, 48, 64]
    """
    out, i, added = list(sizes), 0, 0
    while i < len(out) - 1 and added < most:
        a, b = out[i], out[i + 1]
        if b - a > 16 and ask(a) == ask(b) and (near(a) or near(b)):
            out.insert(i + 1, (a + b) // 2)
            added += 1
        else:
            i += 1
    return out


def windows(wins, lo: int = 16, hi: int = 16384, near=None) -> list[list[int]]:
    """The size ranges [first, last] in which ``wins(n)`` holds: log2 ``grid(lo, hi)``, every edge
    refined by integer bisection; with ``near`` (n -> whether the probe at n is near a tie, asked
    after ``wins(n)``), ``densify`` adds probes between near ties first.

    A unit can win only in a middle range (the Cube end to end: its fixed costs lose below it, and
    above it the Vector's larger core count wins once data movement dominates); ``locate`` then
    finds nothing that *stays*, and these ranges say where the win is.

    >>> windows(lambda n: 100 <= n <= 3000, 16, 8192), windows(lambda n: n >= 9000, 16, 10000)
    ([[100, 3000]], [[9000, 10000]])
    """
    cache: dict[int, bool] = {}

    def ask(n: int) -> bool:  # each n asked at most once: a simulated ``wins`` is the expensive part
        if n not in cache:
            cache[n] = bool(wins(n))
        return cache[n]

    sizes = grid(lo, hi)
    for n in sizes:
        ask(n)
    if near is not None:
        sizes = densify(sizes, ask, near)
    flags = [ask(n) for n in sizes]
    out: list[list[int]] = []
    start = sizes[0] if flags[0] else None
    for i in range(1, len(sizes)):
        a, b = sizes[i - 1], sizes[i]
        if flags[i] == flags[i - 1]:
            continue
        # bisect the edge: ask(a) != ask(b); find the first n in (a, b] with ask(n) == flags[i]
        x, y = a, b
        while y - x > 1:
            m = (x + y) // 2
            if ask(m) == flags[i]:
                y = m
            else:
                x = m
        if flags[i]:
            start = y
        else:
            out.append([start, x])
            start = None
    if start is not None:
        out.append([start, hi])
    return out


def runs(ns, flags) -> list[list[int]]:
    """The ranges [first, last] of consecutive sizes ``ns`` whose ``flags`` hold: ``windows`` for
    a ``wins`` asked at every size (cheap for a model, not for the simulator).

    >>> runs(range(10, 20), [n in (11, 12, 15) for n in range(10, 20)])
    [[11, 12], [15, 15]]
    """
    out: list[list[int]] = []
    for n, f in zip(ns, flags):
        if f and out and out[-1][1] == n - 1:
            out[-1][1] = n
        elif f:
            out.append([n, n])
    return out


def locate(wins, lo: int = 16, hi: int = 16384) -> int | None:
    """Smallest n from which ``wins(n)`` stays true up to ``hi``: ``grid(lo, hi)``, then integer bisection.

    The start of the last of ``windows`` if it reaches ``hi``: the simulated and the learned
    crossovers come from the same probing.

    >>> locate(lambda n: n >= 1000, 16, 4096)
    1000
    """
    return stays_from(windows(wins, lo, hi), hi)
