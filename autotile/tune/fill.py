"""Untried configurations for a study whose sampler has stopped finding new ones.

A sampler that has converged keeps proposing configurations already measured (TPE and the
greedy mutation on small discrete spaces): answered from the cache, such trials do not count
toward the budget, so the study used to run into its trial cap short of the budget (the shipped
16x16x16 vector matmul: 32 of its budget of 60 configurations in 300 trials, 117 of them one
configuration). For a space small enough to enumerate, the tuner then queues the untried
configuration nearest the incumbent (each param's sorted values spread over 0..1, seeded ties), an
ever wider ring around the best found, so every stall costs a few trials, not the budget. The
choice depends on the study history and seed only, never on the budget: a run with a budget one
larger makes the same trials and then one more configuration, so its result is never worse.
"""

from __future__ import annotations

import json

import numpy as np
from optuna.trial import TrialState

from autotile.errors import InputError
from autotile.tune.evaluate import config_key

STUCK = 2  # trials in a row without a new configuration before one is queued (one for the sampler's own escape)


class Table:
    """The feasible configurations of a space: their keys, and each param's value as its
    position among that param's sorted values, scaled to 0..1 (so each param's whole range
    weighs the same in the distance between configurations, however many values it has)."""

    def __init__(self, space):
        table = space.enumerate()
        self.keys = [config_key(table.row(i)) for i in range(len(table))]
        self.index = {k: i for i, k in enumerate(self.keys)}
        cols = []
        for name in table.names:
            levels, pos = np.unique(np.asarray(table.columns[name]), return_inverse=True)
            cols.append(pos.reshape(-1) / max(len(levels) - 1, 1))
        self.steps = np.stack(cols, axis=1) if cols else np.zeros((len(self.keys), 0))


_TABLES: dict[int, tuple] = {}  # id(space) -> (space, Table or None when it is too large)


def table(space) -> Table | None:
    """The space's Table, built once per space in a process; None when its working table would be
    too large to enumerate."""
    known = _TABLES.get(id(space))
    if known is None or known[0] is not space:
        try:
            built = Table(space)
        except InputError:
            built = None
        known = _TABLES[id(space)] = (space, built)
    return known[1]


def stale(trials, config_attr: str, in_space_attr: str) -> int:
    """Finished trials at the end of the history that found no configuration of the space not
    tried before (repeats, and proposals outside the space)."""
    seen, run = set(), 0
    for t in trials:
        if t.state not in (TrialState.COMPLETE, TrialState.PRUNED):
            continue
        key = t.user_attrs.get(config_attr)
        tried = t.state == TrialState.COMPLETE or t.user_attrs.get(in_space_attr)
        if key is not None and tried and key not in seen:
            seen.add(key)
            run = 0
        else:
            run += 1
    return run


def nearest_untried(tab: Table, tried: set, anchor: str | None, seed: int) -> dict | None:
    """The untried configuration nearest ``anchor`` (a config key; None or unknown: the first in
    a seeded order), ties broken in that seeded order; None when every one was tried."""
    n = len(tab.keys)
    free = np.ones(n, dtype=bool)
    for key in tried:
        i = tab.index.get(key)
        if i is not None:
            free[i] = False
    if not free.any():
        return None
    order = np.empty(n, dtype=np.int64)
    order[np.random.default_rng(seed).permutation(n)] = np.arange(n)
    a = tab.index.get(anchor) if anchor is not None else None
    dist = np.zeros(n) if a is None else np.abs(tab.steps - tab.steps[a]).sum(axis=1).round(9)
    pick = np.flatnonzero(free)[np.lexsort((order[free], dist[free]))[0]]
    return dict(json.loads(tab.keys[int(pick)]))
