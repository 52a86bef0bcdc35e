"""Number formatting shared by the sections.

>>> cycles(16271.6), pct(67.127), speedup(1.3245), sci(0.001178)
('16,272', '67.1%', '1.32x', '0.00118')
"""

from __future__ import annotations

import math


def _missing(v) -> bool:
    return v is None or (isinstance(v, float) and v != v)


def cycles(v) -> str:
    return "-" if _missing(v) else f"{v:,.0f}"


def pct(v, digits: int = 1) -> str:
    return "-" if _missing(v) else f"{v:.{digits}f}%"


def speedup(v) -> str:
    return "-" if _missing(v) else f"{v:.2f}x"


def faster(ratio: float) -> str:
    """How much faster a ratio of cycles (other / this) is, always as a ratio, with the decimals
    that give its excess over 1 two significant digits: "1.00x" hid a 0.3% win (1213 against 1217
    cycles), and a column mixed "9.0% faster" with "1.18x faster".

    >>> faster(1217 / 1213), faster(1.0), faster(1.09), faster(1.345), faster(0.5)
    ('1.0033x faster', 'as fast (tie)', '1.090x faster', '1.34x faster', '2.00x slower')
    """
    if ratio == 1:
        return "as fast (tie)"
    r = ratio if ratio > 1 else 1 / ratio
    places = max(2, 1 - math.floor(math.log10(r - 1)))
    return f"{r:.{places}f}x {'faster' if ratio > 1 else 'slower'}"


def traded(r: dict, objectives) -> list[tuple[str, float, float]]:
    """``(objective, the pick's value, the baseline's)`` for each objective beside time: what a
    speedup over the baseline may have traded (sigmoid's lut_nearest is 49x faster than the
    exact baseline at 32x its max_abs_error). Empty without a baseline or such an objective."""
    mine, base = r.get("values"), r.get("baseline_values")
    if not isinstance(mine, dict) or not isinstance(base, dict):
        return []
    return [(o, mine[o], base[o]) for o in objectives or () if o not in ("cycles", "time_us")
            and isinstance(mine.get(o), (int, float)) and isinstance(base.get(o), (int, float))]


def trade(r: dict, objectives) -> str:
    """The pick's error against the baseline's, to stand next to its speedup:
    ``max_abs_error 0.00781 (baseline 0.000244)``; "" when nothing was traded."""
    return ", ".join(f"{o} {sci(v)} (baseline {sci(b)})" for o, v, b in traded(r, objectives))


def detour(r: dict, objectives) -> str:
    """Why the pick is not the best configuration measured: ``pick is rank 7: the 6 faster
    candidates failed verification`` (and how many of them were rejected without running); "" when
    it is."""
    g = r.get("gate")
    rank = g.get("rank") if isinstance(g, dict) else None
    if not isinstance(rank, int) or rank <= 1:
        return ""
    better = "faster" if (objectives or ["cycles"])[0] in ("cycles", "time_us") else "better-ranked"
    text = (f"pick is rank 2: the {better} candidate failed verification" if rank == 2 else
            f"pick is rank {rank}: the {rank - 1} {better} candidates failed verification")
    unrun = g.get("not_executed") or 0
    if unrun:
        text += f" ({unrun} of them not executed, for the reason each gives)"
    return text


def us(v) -> str:
    """Microseconds spelled "us", as ``simulate`` and ``tune`` print them (ASCII: any terminal or log
    shows it) and as msprof and the ``time_us`` field name it."""
    return "-" if _missing(v) else (f"{v:,.1f} us" if v >= 100 else f"{v:.2f} us")


def rate(kind: str) -> str:
    """10**12 ``kind`` ("FLOP", "OP" or "(FL)OP") a second: TFLOP/s, T(FL)OP/s, or TOPS as
    integer peaks are quoted."""
    return "TOPS" if kind == "OP" else f"T{kind}/s"


def sci(v) -> str:
    """Errors and tolerances: 3 significant digits."""
    return "-" if _missing(v) else f"{v:.3g}"


def sig(v, digits: int = 3) -> str:
    """At least ``digits`` significant digits, never in e-notation, with thousands separators:
    ridge points (one of 7.58 FLOP/byte read "8" at no decimals).

    >>> sig(7.58), sig(236.4), sig(1234.5), sig(0.01234)
    ('7.58', '236', '1,234', '0.0123')
    """
    if _missing(v):
        return "-"
    places = max(0, digits - 1 - math.floor(math.log10(abs(v)))) if v else 0
    return f"{v:,.{places}f}"


def lead(v: float) -> str:
    """A unit's lead (a fraction of the slower unit's cycles) as a percentage: two decimals, or two
    significant digits below 1% ("0.00%" hid a 0.0026% lead, which then read as a tie).

    >>> lead(0.0123), lead(0.004), lead(0.000026), lead(0.0)
    ('1.23%', '0.40%', '0.0026%', '0%')
    """
    if _missing(v):
        return "-"
    return f"{v:.2%}" if abs(v) >= 0.01 else (sig(100 * v, 2) + "%" if v else "0%")


def budget(trials, timeout_s, configs: str = "configs") -> str:
    """A study's budget as the run applied it: a count of ``configs``, and a timeout if one was set.

    >>> budget(100, None), budget(100, 2)
    ('100 configs per study', '100 configs or 2 s per study, whichever comes first')
    """
    if _missing(timeout_s):
        return f"{trials} {configs} per study"
    return f"{trials} {configs} or {timeout_s:g} s per study, whichever comes first"


def params(p: dict | None) -> str:
    return "-" if not p else ", ".join(f"{k}={v}" for k, v in p.items())


def changes(p: dict | None, base: dict | None) -> str:
    """What the tuned configuration changes from the default: ``base_m 128->256, ...``."""
    if not p or not base:
        return "-"
    diff = [f"{k} {base.get(k, '-')}→{v}" for k, v in p.items() if base.get(k) != v]
    return ", ".join(diff) if diff else "none (the default was the best found)"
