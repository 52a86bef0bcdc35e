"""Which profile constants a set of calibration rows can determine.

A fit has as many solutions as the rows leave directions free: one isolated Mmad measures
``issue + latency + MACs / rate`` together and none of the three alone, one repeat count of a
vector instruction does not separate its startup from its per-repeat cost. Fitting such a
constant anyway replaces the profile's value with an arbitrary one, so the fitter frees only
the constants the rows determine and keeps the others (``fitting.fit``).
"""

from __future__ import annotations

import numpy as np

CUBE_NAMES = ("issue_cycles", "latency_cycles", "macs_per_cycle")
VECTOR_NAMES = ("startup", "per_repeat", "min_cycles")
TIE = 0.01  # a row whose line and floor are within 1% of each other informs both


def determined(design) -> list[bool]:
    """Per column of a linear model's design matrix (one row per measurement): whether that
    coefficient alone is fixed by the rows (its unit vector lies in their row space)."""
    a = np.atleast_2d(np.asarray(design, float))
    scale = np.abs(a).max(axis=0)
    a = a / np.where(scale > 0, scale, 1.0)
    rank = np.linalg.matrix_rank(a, tol=1e-9)
    eye = np.eye(a.shape[1])
    return [bool(np.linalg.matrix_rank(np.vstack([a, eye[j]]), tol=1e-9) == rank) for j in range(a.shape[1])]


def cube_design(rows, padded_macs, dtypes) -> np.ndarray:
    """The Mmad rows as a linear model in (issue, latency, 1 / MACs per cycle of each of
    ``dtypes``): a back-to-back row's steady state is ``issue + P / rate``, an isolated series of
    r Mmads ends at ``r (issue + P / rate) + latency`` (P: the row's padded MACs,
    ``padded_macs(row)``; rate: its dtype's). Issue and latency are one pair for every dtype."""
    col = {d: 2 + i for i, d in enumerate(dtypes)}
    out = np.zeros((len(rows), 2 + len(dtypes)))
    for i, r in enumerate(rows):
        p = padded_macs(r)
        if r.series == "back_to_back":
            out[i, 0], out[i, col[r.dtype]] = 1.0, p
        else:
            rep = r.repeat or 1
            out[i, 0], out[i, 1], out[i, col[r.dtype]] = rep, 1.0, rep * p
    return out


def vector_determined(repeats, startup: float, per_repeat: float, min_cycles: float) -> list[bool]:
    """(startup, per_repeat, min_cycles) of ``max(min, startup + per_repeat * repeat)`` fitted
    to rows at ``repeats``: the line's two constants need rows at two or more repeat counts on
    it, the floor a row the line alone cannot explain (the line at least 1% below it); a
    floor that only touches the line at the shortest row could be lower. One repeat count
    determines nothing: the rows cannot tell whether they lie on the line or on the floor."""
    reps = np.asarray(repeats, float)
    if len(set(reps)) < 2:
        return [False, False, False]
    line = startup + per_repeat * reps
    on_line = line >= min_cycles * (1 - TIE)
    both = len(set(reps[on_line])) >= 2
    return [both, both, bool((~on_line).any())]
