"""What decides a change of the fastest unit at a size: each unit's fixed cost and growth per
element around it, or the step in one unit's cost there.

Kept apart from ``crossover`` (the search), whose source is part of the training data's
fingerprint (``dataset.fingerprint``): rewording an explanation must not make every trained model
stale. Each unit's cycles come from ``crossover.best``, read through the module so a test can
replace it.
"""

from __future__ import annotations

import re

from autotile.hardware import HardwareProfile
from autotile.kernels import registry
from autotile.models import crossover as cx
from autotile.words import count


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
        c1, p1 = cx.best(op, u, n, dtype, hw, on_chip, options)
        if c1 == float("inf"):  # no tiling of u holds n (on chip, past its buffers)
            top = cx.on_chip_limit(op, u, dtype, hw, options) if on_chip else None
            held = f": its buffers hold the data up to n={top:,}" if top is not None else ""
            return {"n": n, "from": before, "to": after, "why": f"{u} has no feasible tiling at n={n:,}{held}",
                    before: None, after: None}
        m = 2 * n
        c2, _ = cx.best(op, u, m, dtype, hw, on_chip, options)
        if c2 == float("inf") and n > 1:  # 2n past the on-chip limit: the step below n instead
            m = n // 2
            c2, _ = cx.best(op, u, m, dtype, hw, on_chip, options)
            halved.append(u)
        slope = (c2 - c1) / (m - n)
        bound = mod.simulate({"n": n}, p1, dtype, hw, unit=u, options=cx._options(op, options, on_chip)).bound if p1 else ""
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

    A cube past whole fractals: weighted_sum bf16 in GM at n = 16,129, while the Cube's GM loads were
    charged whole fractals, stepped from 944.8 to 953.8 cycles, past the Vector's 951.4, though the
    Vector has the less fixed cost but grows the faster (which would make it faster below 16,129 too,
    where the Cube won). weighted_sum fp16 on chip, n = 32,769: the Cube's trace form no longer fits L0A, and the naive
    form takes 13,991 cycles against 176 at 32,768 (the Vector's line, below the Cube's on both
    sides, was read as "grows more slowly").
    """
    prev = {u: cx.best(op, u, n - 1, dtype, hw, on_chip, options) for u in (before, after)}
    now = {u: cx.best(op, u, n, dtype, hw, on_chip, options) for u in (before, after)}
    up, down = now[before][0] - prev[before][0], prev[after][0] - now[after][0]
    u, other = (before, after) if up >= down else (after, before)
    was, got = prev[u][0], now[u][0]
    cause = ""
    gone = _lost(op, u, n, dtype, hw, on_chip, options, prev[u][1], now[u][1]) if got > was else ""
    if gone:
        cause = gone
    elif u == "cube" and got > was and (n - 1) % cx.FRACTAL == 0:
        cause = f": {n - 1:,} is {(n - 1) // cx.FRACTAL:,} whole 16 x 16 fractals, one element more needs another"
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
    opts = cx._options(op, options, on_chip)
    r = mod.simulate({"n": n}, was, dtype, hw, unit=unit, options=opts) if was else None
    if r is None or r.feasible:
        return ""
    reason = re.sub(r" \(inputs: .*\)$", "", r.reason)  # the kernel's hint at other inputs says nothing here
    cats = [k for k in cx.CATEGORICAL.get(op, {}).get(unit, {}) if was.get(k) != now.get(k)]
    same = [p for p in cx.candidate_params(op, unit, n, hw, on_chip) if all(p[k] == was[k] for k in cats)]
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
