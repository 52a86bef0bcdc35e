"""Search-strategy benchmark (``autotile bench-search``): samplers x budgets x seeds on a spec.

For every (shape, dtype, unit) space of the spec the optimum is known: the best valid
measurement of a replay spec, or exhaustive simulation of a small simulator space. Each sampler
runs one study per seed through the tuner's own loop (``runner.run`` with a ``StudyPlan``, in
in-memory storage), with the largest budget; a smaller budget B is the prefix of that run where
the tuner would have stopped (B distinct feasible configurations, or the cap of
``runner.CAP_FACTOR`` x B trials), which is exactly what a run with budget B does, since a
seeded sampler's proposals do not depend on when the study will stop. A run stops early once it
has measured every feasible configuration (nothing is left to find; a budget at or above that
count is marked ``space_exhausted``).

Per sampler and budget: the median over seeds of the best found as a fraction of the optimum's
performance (optimum / found, 1.0 = found it, 0.0 = nothing feasible found), and the median
over seeds of the trials needed to come within ``within`` (5%) of the optimum, counted like
budgets (distinct feasible configurations); None when the median seed did not get there.
"""

from __future__ import annotations

import math
import statistics
import time
import warnings
from dataclasses import dataclass

import optuna
from optuna.trial import TrialState

from autotile.errors import InputError
from autotile.space.space import Space
from autotile.tune import exhaustive, runner
from autotile.tune.evaluate import make_evaluator
from autotile.tune.samplers import make_sampler, offset_seed

SCHEMA = "autotile.bench_search/1"
SAMPLERS = ("tpe", "random", "cmaes", "gp", "nsga2", "portfolio")
DEFAULT_SAMPLERS = ("tpe", "random", "gp", "cmaes", "portfolio")
DEFAULT_BUDGETS = (25, 50, 100, 200)
WITHIN = 0.05
MAX_SIMULATED = 20_000  # feasible configurations an exhaustive optimum may simulate


@dataclass(frozen=True)
class Optimum:
    """The best configuration of a space and how many feasible ones are near it."""

    params: dict
    value: float
    feasible: int
    near: int  # feasible configurations within ``within`` of the optimum


def optimum(space: Space, objective: str, within: float = WITHIN) -> Optimum:
    """The optimum of ``space``: from the measurements (replay) or by exhaustive simulation."""
    if space.spec.backend == "replay":
        from autotile.tune.replay import space_rows

        vals = [(r.params, r.value(objective)) for r in space_rows(space)]
    else:
        count = space.count()
        if count.feasible_size > MAX_SIMULATED:
            raise InputError(
                f"bench-search needs the optimum of {space.shape} by exhaustive simulation, but the "
                f"space has ~{count.feasible_size:,} feasible configurations (at most "
                f"{MAX_SIMULATED:,}); narrow the spec, or measure it and use backend: replay",
                file=space.spec.file)
        vals = [(p, v.get(objective)) for p, v in exhaustive.scores(space, (objective,))]
    vals = [(p, v) for p, v in vals if v is not None]
    if not vals:
        raise InputError(f"no feasible configuration of {space.shape} has a {objective}",
                         file=str(space.spec.measurements or space.spec.file))
    best_p, best_v = min(vals, key=lambda pv: pv[1])
    near = sum(1 for _, v in vals if v <= best_v * (1 + within))
    return Optimum(best_p, best_v, len(vals), near)


def trace(space: Space, sampler: str, seed: int, budget: int, objective: str, evaluator,
          feasible: int | None = None) -> list:
    """One seeded study with ``budget``: per trial, (distinct feasible configs, best so far).
    With ``feasible`` (the space's count) the study stops once it has measured every one."""
    storage = optuna.storages.InMemoryStorage()
    plan = runner.StudyPlan(name=f"bench/{sampler}/{seed}", space=space, objectives=(objective,),
                            sampler=sampler, seed=seed, budget=budget, timeout_s=None, baseline=None,
                            feasible=feasible, fill=False)  # the sampler's own search, not filled in
    with warnings.catch_warnings():  # CmaEsSampler: "constraints set but not used", every run
        warnings.simplefilter("ignore", UserWarning)
        runner.run(plan, storage, evaluator=evaluator)
    study = optuna.load_study(study_name=plan.name, storage=storage)
    seen, best, out = set(), math.inf, []
    for t in sorted(study.get_trials(deepcopy=False), key=lambda t: t.number):
        if t.state == TrialState.COMPLETE:
            seen.add(t.user_attrs.get(runner.CONFIG_ATTR, t.number))
            best = min(best, t.values[0])
        out.append((len(seen), best))
    return out


def at_budget(points: list, budget: int, feasible: int | None = None) -> tuple[float, list]:
    """Best so far where a run with ``budget`` stops (or once all ``feasible`` configurations
    are measured), and the points up to there."""
    cap = runner.CAP_FACTOR * budget
    goal = budget if feasible is None else min(budget, feasible)
    for i, (unique, best) in enumerate(points, 1):
        if unique >= goal or i >= cap:
            return best, points[:i]
    return (points[-1][1] if points else math.inf), points


def summarize(traces: list, budgets, opt: float, within: float, feasible: int | None = None) -> list[dict]:
    """Per budget: fractions of the optimum and trials to within ``within``, with medians;
    ``space_exhausted`` when the budget reaches the ``feasible`` count (runs stop there)."""
    out = []
    for b in budgets:
        fractions, reach = [], []
        for points in traces:
            best, prefix = at_budget(points, b, feasible)
            fractions.append(opt / best if best > 0 and math.isfinite(best) else 0.0 if best > 0 else 1.0)
            hit = next((u for u, v in prefix if v <= opt * (1 + within)), None)
            reach.append(hit)
        med = statistics.median([math.inf if r is None else r for r in reach])
        out.append({"budget": b, "median_fraction": round(statistics.median(fractions), 4),
                    "fractions": [round(f, 4) for f in fractions],
                    "median_trials_to_within": None if math.isinf(med) else med,
                    "trials_to_within": reach,
                    "reached": sum(r is not None for r in reach),
                    "space_exhausted": feasible is not None and b >= feasible})
    return out


def availability(name: str) -> str | None:
    """None if sampler ``name`` can run here, else why not (with the install hint)."""
    if name not in SAMPLERS:
        raise InputError(f"--samplers: unknown sampler {name!r}, expected some of {', '.join(SAMPLERS)}")
    try:
        make_sampler(name, 0)
    except InputError as exc:
        return exc.message
    return None


def bench(spec, samplers=DEFAULT_SAMPLERS, budgets=DEFAULT_BUDGETS, seeds: int = 10,
          within: float = WITHIN, progress=None) -> dict:
    """The benchmark of ``spec`` (every space); the JSON shape of ``bench-search --json``.

    >>> out = bench(load_spec("needle.yaml"), ("tpe", "random"), (50, 100), seeds=3)  # doctest: +SKIP
    >>> out["spaces"][0]["samplers"][0]["results"][1]["median_fraction"]  # doctest: +SKIP
    0.97
    """
    budgets = sorted(set(budgets))
    objective = spec.objectives[0]
    unavailable = {name: availability(name) for name in samplers}  # unknown names fail here
    spaces = []
    for shape in spec.shapes:
        for dtype in spec.dtypes:
            for unit in spec.units_for(dtype):
                space = spec.space(shape, dtype, unit)
                ev = make_evaluator(space, (objective,))
                opt = optimum(space, objective, within)
                rows = []
                for name in samplers:
                    reason = unavailable[name]
                    if reason is not None:
                        rows.append({"sampler": name, "available": False, "reason": reason})
                        continue
                    t0 = time.monotonic()
                    traces = []
                    for i in range(seeds):
                        traces.append(trace(space, name, offset_seed(spec.seed, i), budgets[-1], objective, ev,
                                            feasible=opt.feasible))
                        if progress is not None:
                            progress(name, i)
                    rows.append({"sampler": name, "available": True,
                                 "elapsed_s": round(time.monotonic() - t0, 2),
                                 "results": summarize(traces, budgets, opt.value, within, opt.feasible)})
                spaces.append({"shape": space.shape, "dtype": dtype, "unit": unit,
                               "optimum": {"params": opt.params, "value": opt.value},
                               "feasible_configs": opt.feasible, "near_optimal_configs": opt.near,
                               "samplers": rows})
    return {"schema": SCHEMA, "spec": str(spec.file), "op": spec.op.name, "backend": spec.backend,
            "objective": objective, "within": within, "budgets": budgets, "seeds": seeds,
            "spaces": spaces}
