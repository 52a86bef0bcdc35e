"""Crossover search: the smallest size from which one unit stays faster than another.

Each unit is taken at its best tiling for each size, found by exhaustive search over a small
deterministic grid (``candidate_params``): tile lengths in powers of two from 16 up to n (plus n
itself), buffer_num 1 or 2, core counts in powers of two and the whole chip (only 1 in the on-chip framing, which is
single-core by definition), and every value of the unit's categorical params; tiles longer than
a core's slice duplicate the shortest one that covers it and are not simulated (see ``best``). The crossover is
located on a log grid (``lo`` doubled up to ``hi``, and ``hi``) and refined by integer bisection; a
crossover at either end of that range is flagged (``range_edge``), since the search saw nothing past it.
Only the probed sizes are simulated, so "stays faster from n" means faster at every probed size from
n on; where the two units are near a tie the lead can change sign between probes (``closest_lead``).
The op's options (a spec's ``inputs:``, e.g. elementwise's ``kind``) are passed to every simulation.
"""

from __future__ import annotations

import itertools
import re

from autotile.errors import InputError
from autotile.hardware import HardwareProfile
from autotile.kernels import registry
from autotile.words import count

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
                aligned: bool = True) -> tuple[int, dict]:
    """(largest n up to ``hi`` at which every one of ``units`` holds its data on chip, {unit:
    ``on_chip_limit``}). ``aligned=False``: the largest n whose ``unaligned`` size still fits."""
    limits = {u: on_chip_limit(op, u, dtype, hw, options) for u in units}
    top = min(hi, *limits.values())
    if not aligned and unaligned(top) > min(limits.values()):
        top -= 16  # a multiple of FRACTAL at the limit itself: its unaligned probe is 16 past it
    return top, limits


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

    >>> # crossover("weighted_sum", "fp16", load_profile())["n"]  # doctest: +SKIP
    """
    limits: dict = {}
    if on_chip:
        hi, limits = on_chip_top(op, dtype, hw, (small_unit, large_unit), hi, options, aligned)
        if hi < lo:
            return {"n": None, "windows": [], "grid": [], "edge": None, "closest": None, "top": None,
                    "limits": limits}
    table = []

    def wins(n: int) -> bool:
        if not aligned:
            n = unaligned(n)
        a, _ = best(op, small_unit, n, dtype, hw, on_chip, options)
        b, _ = best(op, large_unit, n, dtype, hw, on_chip, options)
        table.append({"n": n, small_unit: a, large_unit: b})
        return b < a

    spans = windows(wins, lo, hi)
    n = stays_from(spans, hi)
    edge = range_edge(n, lo, hi)
    if not aligned:  # name the sizes actually simulated
        n = None if n is None else unaligned(n)
        spans = [[unaligned(a), b if b == hi else unaligned(b)] for a, b in spans]
    table = sorted(table, key=lambda r: r["n"])
    return {"n": n, "windows": spans, "grid": table, "edge": edge,
            "closest": closest_lead(table, n, small_unit, large_unit), "top": hi, "limits": limits}


CLOSE = 0.01  # a lead under 1% of the slower unit's cycles: uneven splits over cores or tiles move the
# best cycles of either unit by about that much from one size to the next (weighted_sum in GM near
# n = 90,000: the Cube 0.05% ahead at 89,857, the Vector 1.1% ahead at 95,000, between two probes)


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


def stays_from(spans: list[list[int]], hi: int = 16384) -> int | None:
    """The start of the last range of ``windows`` if it reaches ``hi`` (from there the unit stays faster)."""
    return spans[-1][0] if spans and spans[-1][1] == hi else None


def windows(wins, lo: int = 16, hi: int = 16384) -> list[list[int]]:
    """The size ranges [first, last] in which ``wins(n)`` holds: log2 ``grid(lo, hi)``, every edge
    refined by integer bisection.

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


def explain(op: str, dtype: str, hw: HardwareProfile, on_chip: bool, n: int, before: str, after: str,
            options: dict | None = None) -> dict:
    """What decides a change of the fastest unit at size ``n`` (``before`` wins below, ``after`` from n).

    Each unit at its best tiling at n and at 2n (n/2 where 2n does not fit on chip): the growth per element between the two and the
    fixed part it implies (cycles(n) - growth * n), with the best tiling's core count and the
    result's bound. The sentence names the side that pays off.
    """
    mod = registry.implementation(op)
    info, halved = {}, []
    for u in (before, after):
        c1, p1 = best(op, u, n, dtype, hw, on_chip, options)
        if c1 == float("inf"):  # no tiling of u holds n (on chip, past its buffers)
            top = on_chip_limit(op, u, dtype, hw, options) if on_chip else None
            held = f": its buffers hold the data up to n={top:,}" if top is not None else ""
            return {"n": n, "from": before, "to": after, "why": f"{u} has no feasible tiling at n={n:,}{held}",
                    before: None, after: None}
        m = 2 * n
        c2, _ = best(op, u, m, dtype, hw, on_chip, options)
        if c2 == float("inf") and n > 1:  # 2n past the on-chip limit: the step below n instead
            m = n // 2
            c2, _ = best(op, u, m, dtype, hw, on_chip, options)
            halved.append(u)
        slope = (c2 - c1) / (m - n)
        bound = mod.simulate({"n": n}, p1, dtype, hw, unit=u, options=_options(op, options, on_chip)).bound if p1 else ""
        info[u] = {"cycles": round(c1, 1), "fixed_cycles": round(c1 - slope * n, 1),
                   "cycles_per_element": round(slope, 4), "cores": p1.get("cores", 1), "bound": bound}
    a, b = info[before], info[after]
    slopes = pair(b["cycles_per_element"], a["cycles_per_element"])
    if b["cycles_per_element"] < a["cycles_per_element"] and b["fixed_cycles"] >= a["fixed_cycles"]:
        why = (f"{after} costs more up front ({fixed_pair(b['fixed_cycles'], a['fixed_cycles'], after, before)}) "
               f"but grows more slowly ({slopes} cycles per element), so it pays off from n≈{n:,}")
    else:  # the lines favour one unit on both sides of n (``after`` with the less fixed cost and growth,
        # weighted_sum on chip at n = 32,769): they cannot explain the change, a step at n does
        why = step(op, dtype, hw, on_chip, n, before, after, options, info, halved)
    if a["cores"] != b["cores"]:
        why += f"; best tilings use {count(b['cores'], after + ' core')} against {count(a['cores'], before + ' core')}"
    return {"n": n, "from": before, "to": after, "why": why, before: a, after: b}


def pair(x: float, y: float, places: int = 3) -> str:
    """``x against y`` with ``places`` decimals, or as many more (up to 6) as it takes to tell them
    apart: "grows more slowly (0.005 against 0.005 cycles per element)" compared 0.0048 with 0.0054.

    >>> pair(0.028, 0.176), pair(0.0048, 0.0054), pair(0.005, 0.005)
    ('0.028 against 0.176', '0.0048 against 0.0054', '0.005 against 0.005')
    """
    for d in range(places, 7):
        a, b = f"{x:.{d}f}", f"{y:.{d}f}"
        if a != b:
            return f"{a} against {b}"
    return f"{x:.{places}f} against {y:.{places}f}"


def fixed_pair(x: float, y: float, ux: str, uy: str) -> str:
    """``x against y cycles`` of fixed cost, a negative one (a line's intercept below zero, which
    ``explain``'s JSON keeps) shown as ~0 and named: a unit pays no negative cycles up front.

    >>> fixed_pair(115.3, -0.8, "cube", "vector")
    "115 against ~0 cycles; ~0: vector's line meets n = 0 at -0.8 cycles"
    """
    def show(v: float) -> str:
        return f"{v:.0f}" if v >= 0 else "~0"

    below = [f"{u}'s line meets n = 0 at {v:.1f} cycles" for u, v in ((ux, x), (uy, y)) if v < 0]
    return f"{show(x)} against {show(y)} cycles" + (f"; ~0: {' and '.join(below)}" if below else "")


def step(op: str, dtype: str, hw: HardwareProfile, on_chip: bool, n: int, before: str, after: str,
         options: dict | None, info: dict, halved=()) -> str:
    """What turns the lead between n - 1 and n when fixed cost and growth from n to 2n do not (they
    favour ``after`` below n as well, or nowhere): the unit whose best cycles move most towards the
    change there, by how much, and why when its best tiling at n - 1 no longer fits at n, it is a
    cube past a whole number of fractals, or its core count changes.

    weighted_sum bf16 in GM, n = 16,129: the Cube's cycles step from 944.8 to 953.8 as its trace form
    needs a 64th 16 x 16 fractal, past the Vector's 951.4, while the Vector has the less fixed cost
    but grows the faster (which would make it faster below 16,129 too, where the Cube wins).
    weighted_sum fp16 on chip, n = 32,769: the Cube's trace form no longer fits L0A, and the naive
    form takes 13,991 cycles against 176 at 32,768 (the Vector's line, below the Cube's on both
    sides, was read as "grows more slowly").
    """
    prev = {u: best(op, u, n - 1, dtype, hw, on_chip, options) for u in (before, after)}
    now = {u: best(op, u, n, dtype, hw, on_chip, options) for u in (before, after)}
    up, down = now[before][0] - prev[before][0], prev[after][0] - now[after][0]
    u, other = (before, after) if up >= down else (after, before)
    was, got = prev[u][0], now[u][0]
    cause = ""
    gone = _lost(op, u, n, dtype, hw, on_chip, options, prev[u][1], now[u][1]) if got > was else ""
    if gone:
        cause = gone
    elif u == "cube" and got > was and (n - 1) % FRACTAL == 0:
        cause = f": {n - 1:,} is {(n - 1) // FRACTAL:,} whole 16 x 16 fractals, one element more needs another"
    elif prev[u][1].get("cores") != now[u][1].get("cores"):
        cause = f": its best tiling moves from {prev[u][1].get('cores')} to {now[u][1].get('cores')} cores"
    a, b = info[before], info[after]
    lines = (f" ({' and '.join(halved)}: from n/2 to n, {'its' if len(halved) == 1 else 'their'} data at 2n "
             f"does not fit)" if halved else "")

    def than(x: float, y: float, more: str, less: str) -> str:
        return more if x > y else less if x < y else "as much"

    return (f"{u}'s cost steps {'up' if got > was else 'down'} at n={n:,}: {was:,.1f} cycles at {n - 1:,}, "
            f"{got:,.1f} at {n:,} ({got - was:+,.1f}{cause}), {'past' if u == before else 'below'} {other}'s "
            f"{now[other][0]:,.1f}; a step, not a trend: from n to 2n{lines} {after} has "
            f"{than(b['fixed_cycles'], a['fixed_cycles'], 'more', 'less')} fixed cost "
            f"({fixed_pair(b['fixed_cycles'], a['fixed_cycles'], after, before)}) and grows "
            f"{than(b['cycles_per_element'], a['cycles_per_element'], 'faster', 'more slowly').replace('as much', 'as fast')} "
            f"({b['cycles_per_element']:.4f} against {a['cycles_per_element']:.4f} cycles per element)")


def _lost(op: str, unit: str, n: int, dtype: str, hw: HardwareProfile, on_chip: bool, options: dict | None,
          was: dict, now: dict) -> str:
    """Why ``unit``'s best tiling at n - 1 (``was``) is not its best at n (``now``) when it no
    longer fits there: ": cube_form=trace no longer fits (...)" when no grid tiling of its
    categorical choices fits at n, else ": its best tiling at n - 1 no longer fits (...)"; "" while
    it fits (the best moved for cost, not room)."""
    mod = registry.implementation(op)
    opts = _options(op, options, on_chip)
    r = mod.simulate({"n": n}, was, dtype, hw, unit=unit, options=opts) if was else None
    if r is None or r.feasible:
        return ""
    reason = re.sub(r" \(inputs: .*\)$", "", r.reason)  # the kernel's hint at other inputs says nothing here
    cats = [k for k in CATEGORICAL.get(op, {}).get(unit, {}) if was.get(k) != now.get(k)]
    same = [p for p in candidate_params(op, unit, n, hw, on_chip) if all(p[k] == was[k] for k in cats)]
    if cats and not any(mod.simulate({"n": n}, p, dtype, hw, unit=unit, options=opts).feasible for p in same):
        form = ", ".join(f"{k}={was[k]}" for k in cats)
        return f": {form} no longer fits ({reason}), {', '.join(f'{k}={now.get(k)}' for k in cats)} is its best"
    return f": its best tiling at {n - 1:,} no longer fits ({reason})"


def edges(op: str, dtype: str, hw: HardwareProfile, on_chip: bool, spans: list[list[int]], small_unit: str,
          large_unit: str, lo: int = 16, hi: int = 16384, options: dict | None = None) -> list[dict]:
    """``explain`` at every edge of the ranges where ``large_unit`` wins (``windows``)."""
    out = []
    for a, b in spans:
        if a > lo:
            out.append(explain(op, dtype, hw, on_chip, a, small_unit, large_unit, options))
        if b < hi:
            out.append(explain(op, dtype, hw, on_chip, b + 1, large_unit, small_unit, options))
    return out
