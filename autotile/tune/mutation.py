"""Greedy mutation: local search around the best configuration found so far.

Each trial copies the incumbent (the best feasible trial; with two objectives, one of the Pareto
front) and moves one parameter to a neighbouring value: the next or previous value on its
integer grid, or another category. Among those single moves it picks, at random, one whose
configuration has not been tried yet (two moves when every single one has). A parameter whose
domain no longer holds the incumbent's value (its bounds depend on the moved one) takes the
nearest allowed value. Before the first feasible trial it samples at random.

OpenTuner's portfolio has such members (its greedy mutations); here it serves the portfolio's
lead once the lead starts proposing configurations it has already measured
(``autotile.tune.portfolio``), where a neighbour of the incumbent is the most useful new point.
"""

from __future__ import annotations

import numpy as np
import optuna
from optuna.distributions import BaseDistribution, CategoricalDistribution, IntDistribution
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

from autotile.tune.evaluate import config_key
from autotile.tune.suggest import suggest
from autotile.tune.trialseed import PerTrial

PAIR_DRAWS = 16


def neighbours(dist: BaseDistribution, value) -> list:
    """The values next to ``value`` in ``dist``: one integer step either way, or every other
    category; [] when the domain has one value."""
    if isinstance(dist, CategoricalDistribution):
        return [c for c in dist.choices if c != value]
    if isinstance(dist, IntDistribution):
        step = dist.step if not dist.log else 1
        return [v for v in (value - step, value + step) if dist.low <= v <= dist.high]
    lo, hi = dist.low, dist.high  # FloatDistribution: a tenth of the range either way
    d = (hi - lo) / 10
    return [v for v in (value - d, value + d) if lo <= v <= hi]


def nearest(dist: BaseDistribution, value):
    """``value`` if ``dist`` holds it, else the nearest value it holds (the first category)."""
    if isinstance(dist, CategoricalDistribution):
        return value if value in dist.choices else dist.choices[0]
    if isinstance(dist, IntDistribution):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return dist.low
        step = 1 if dist.log else dist.step
        k = round((min(max(value, dist.low), dist.high) - dist.low) / step)
        return int(dist.low + min(k, (dist.high - dist.low) // step) * step)
    return min(max(float(value), dist.low), dist.high)


class _PlanTrial:
    """Stands in for a trial in ``suggest``: answers each call from a planned set of Optuna
    values, moved into the call's domain as ``sample_independent`` moves them, so the
    configuration a plan becomes is known before any trial runs it."""

    def __init__(self, plan: dict):
        self.plan = plan

    def suggest_int(self, name, low, high, step=1, log=False):
        return nearest(IntDistribution(low, high, step=step, log=log), self.plan.get(name, low))

    def suggest_categorical(self, name, choices):
        return nearest(CategoricalDistribution(choices), self.plan.get(name, choices[0]))


class GreedyMutationSampler(BaseSampler):
    """One-parameter moves from the incumbent, unseen configurations first (module docstring).

    >>> s = GreedyMutationSampler(seed=0)
    >>> study = optuna.create_study(sampler=s)
    >>> study.optimize(lambda t: (t.suggest_int("x", 0, 20) - 7) ** 2, n_trials=30)
    >>> study.best_params
    {'x': 7}
    """

    def __init__(self, seed: int | None = None, space=None, config_attr: str | None = None) -> None:
        """``space`` (an ``autotile`` Space): judge a move by the configuration it makes
        (``suggest`` snaps filtered integers, so distinct Optuna values can make one
        configuration); without it, by the Optuna values. ``config_attr``: the user attribute in
        which the objective records a trial's configuration (the tuner's does), read for trials
        that ran instead of deriving it again."""
        self._seed = int(np.random.SeedSequence().entropy % 2**31) if seed is None else seed
        self._random = PerTrial(lambda s: optuna.samplers.RandomSampler(seed=s), seed)
        self._space = space
        self._plans: dict[int, dict | None] = {}  # trial id -> {param: value} to propose
        self._configs: dict[tuple, object] = {}  # Optuna values -> configuration (memo)
        self._config_attr = config_attr if space is not None else None

    def _config(self, values: dict):
        """The configuration that Optuna ``values`` make (with a space), else the values."""
        key = tuple(sorted(values.items()))
        if self._space is None:
            return key
        if key not in self._configs:
            params, reason = suggest(_PlanTrial(values), self._space)
            self._configs[key] = config_key(params) if reason is None else key
        return self._configs[key]

    def _seen(self, trial: FrozenTrial):
        """The configuration a finished trial ran: as recorded, else derived from its values."""
        recorded = trial.user_attrs.get(self._config_attr) if self._config_attr else None
        return recorded if recorded is not None else self._config(trial.params)

    def infer_relative_search_space(self, study, trial) -> dict:
        return {}

    def sample_relative(self, study, trial, search_space) -> dict:
        return {}

    def _plan(self, study: optuna.Study, trial: FrozenTrial) -> dict | None:
        """The configuration this trial proposes, by Optuna param name; None: sample at random."""
        if trial._trial_id in self._plans:
            return self._plans[trial._trial_id]
        rng = np.random.default_rng([self._seed, trial.number])
        done = study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True)
        good = [t for t in done if all(v <= 0 for v in t.constraints.values())]
        plan = None
        if good:
            if len(study.directions) == 1:
                sign = 1 if study.direction == optuna.study.StudyDirection.MINIMIZE else -1
                inc = min(good, key=lambda t: (sign * t.values[0], t.number))
            else:
                front = study.best_trials
                inc = front[int(rng.integers(len(front)))] if front else good[-1]
            seen = {self._seen(t) for t in study._get_trials(deepcopy=False, use_cache=True)
                    if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)}
            moves = [(k, v) for k, d in inc.distributions.items() for v in neighbours(d, inc.params[k])]
            fresh = [m for m in moves if self._config({**inc.params, m[0]: m[1]}) not in seen]
            plan = dict(inc.params)
            if fresh:
                k, v = fresh[int(rng.integers(len(fresh)))]
                plan[k] = v
            elif moves:  # every single move is measured: two, on different params (a few draws
                # for an unseen pair)
                for _ in range(PAIR_DRAWS):
                    k, v = moves[int(rng.integers(len(moves)))]
                    other = [m for m in moves if m[0] != k]
                    pair = {**inc.params, k: v}
                    if other:
                        k2, v2 = other[int(rng.integers(len(other)))]
                        pair[k2] = v2
                    if self._config(pair) not in seen:
                        break
                plan = pair
        self._plans[trial._trial_id] = plan
        return plan

    def sample_independent(self, study, trial, param_name, param_distribution):
        plan = self._plan(study, trial)
        if plan is None or param_name not in plan:
            return self._random.sample_independent(study, trial, param_name, param_distribution)
        return nearest(param_distribution, plan[param_name])

    def after_trial(self, study, trial, state, values) -> None:
        self._plans.pop(trial._trial_id, None)
        self._random.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self._seed = int(np.random.SeedSequence().entropy % 2**31)
        self._random.reseed_rng()
