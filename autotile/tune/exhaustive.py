"""The exhaustive oracle: every feasible configuration of a small space, simulated in batch.

It runs outside Optuna's per-trial loop (no sampler overhead), so it can afford the whole space
and tell how close a search came to the true optimum.
"""

from __future__ import annotations

import time

from autotile.errors import InputError
from autotile.tune import runner
from autotile.tune.evaluate import make_evaluator

MAX_CONFIGS = 300_000


def scores(space, objectives=("cycles",), *, limit: int = MAX_CONFIGS, evaluator=None) -> list:
    """(params, values) of every feasible configuration, in enumeration order."""
    count = space.count()
    if count.feasible_size > limit:
        raise InputError(
            f"exhaustive: {space.spec.file}: the space of {space.shape} has ~{count.feasible_size:,} "
            f"feasible configurations (at most {limit:,}); narrow the spec or use another sampler")
    ev = evaluator or make_evaluator(space, objectives)
    table = space.enumerate()
    out = []
    for i in range(len(table)):
        o = ev.score(table.row(i))
        if o.feasible:
            out.append((o.params, o.values))
    return out


def front(rows: list, objectives, ranked: list[int]) -> list[int]:
    """Indices of the rows no other row dominates (no worse in both objectives, better in one),
    from ``ranked``, the rows in lexicographic order: a row is on the front when its second
    objective beats every row before it, or ties the front row with the same first objective."""
    first, second = objectives[:2]
    out: list[int] = []
    best = None  # (first, second) of the last row that lowered the second objective
    for i in ranked:
        a, b = rows[i][1][first], rows[i][1][second]
        if best is None or b < best[1] or (a, b) == best:
            out.append(i)
            best = (a, b)
    return out


def run(plan: runner.StudyPlan) -> runner.StudyOutcome:
    """Simulate every feasible configuration of ``plan``'s space; best first."""
    t0 = time.monotonic()
    ev = make_evaluator(plan.space, plan.objectives)
    rows = scores(plan.space, plan.objectives, evaluator=ev)
    first = plan.objectives[0]
    ranked = sorted(range(len(rows)), key=lambda i: runner.rank(rows[i][1], plan.objectives))
    out = runner.StudyOutcome(name=plan.name, trials=len(rows), complete=len(rows), unique=len(rows),
                              simulated=ev.simulated, elapsed_s=time.monotonic() - t0)
    out.best = [(rows[i][0], rows[i][1], i) for i in ranked]
    out.history = [v[first] for _, v in rows]
    out.history_trials = list(range(len(rows)))  # the numbers ``best`` gives
    if len(plan.objectives) > 1:
        out.pareto = [{"params": rows[i][0], "values": {o: rows[i][1][o] for o in plan.objectives}, "trial": i}
                      for i in sorted(front(rows, plan.objectives, ranked))]
    if plan.baseline is not None:
        base = ev.score(plan.baseline)
        if base.feasible:
            out.baseline = (base.params, base.values)
    return out
