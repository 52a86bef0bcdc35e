"""Greedy mutation: local search around the best configuration found so far.

Each trial copies the incumbent (the best feasible trial; with two objectives, one of the Pareto
front) and moves one parameter to a neighbouring value: the next or previous value on its
integer grid, or another category. A parameter whose domain no longer holds the incumbent's
value (its bounds depend on the moved one) takes the nearest allowed value. Among the moves it
picks, at random, one whose configuration has not been tried yet; when every move of the
incumbent has been tried, it moves from the next best of the ``BASES`` best configurations, then
tries two single moves of the incumbent on different params, and else samples at random: it never
proposes a configuration measured before (re-measured neighbours of the incumbent only weighted a
portfolio's TPE towards a basin it had searched out: on the replayed convolution landscape 134 of
a run's ~250 mutation trials were repeats). Before the first feasible trial it samples at random.

With the space, a single move that disturbs the rest of the configuration (it breaks a
constraint, or a later parameter no longer fits its new domain and snaps to another value) also
brings its *repairs*: the pairs of that move and one more single move, on a parameter it did not
disturb, whose configuration is feasible and disturbs strictly fewer of the others (none needed
for an infeasible move). Spaces couple their parameters through bounds: in studies/matmul.yaml a
larger base_m shrinks base_n's bound unless db_l0c halves, so from the 4096^3 default every
single move was worse or no better after one step (889,912 cycles), while base_m up with db_l0c
down, then base_m and base_k, reached 762,921 (91.6% of peak). A move the space rejects is not
proposed (its trial would only be pruned).

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
BASES = 8  # configurations, best first, whose unmeasured neighbours a trial may move to


def param_of(name: str) -> str:
    """The space parameter an Optuna parameter sets (``suggest`` names powers of two ``p.log2``)."""
    return name.removesuffix(".log2")


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
        self._made: dict[tuple, tuple] = {}  # Optuna values -> (params, reason) (memo)
        self._config_attr = config_attr if space is not None else None

    def _make(self, values: dict) -> tuple[dict, str | None]:
        """The params Optuna ``values`` make in the space, and why they are infeasible (None:
        feasible by the space's domains and constraints)."""
        return self._made_of(values)[:2]

    def _made_of(self, values: dict) -> tuple:
        """(params, why infeasible, configuration) of Optuna ``values`` in the space (memo)."""
        key = tuple(sorted(values.items()))
        if key not in self._made:
            params, reason = suggest(_PlanTrial(values), self._space)
            config = config_key(params) if reason is None else key
            self._made[key] = (params, reason if reason is not None else self._space.check(params), config)
        return self._made[key]

    def _config(self, values: dict):
        """The configuration that Optuna ``values`` make (with a space), else the values."""
        if self._space is None:
            return tuple(sorted(values.items()))
        return self._made_of(values)[2]

    def _disturbed(self, values: dict, base: dict, move: dict) -> frozenset | None:
        """The params besides ``move``'s that ``move`` applied to ``values`` (which make
        ``base``) changes; None when the result is infeasible."""
        params, reason = self._make({**values, **move})
        if reason is not None:
            return None
        moved = {param_of(k) for k in move}
        return frozenset(n for n in base if n not in moved and params.get(n) != base[n])

    def _moves(self, inc: FrozenTrial) -> list[dict]:
        """Moves from the incumbent, as {Optuna param: value}: its single moves, and with a space
        each disturbing single move's repairs, less those the space rejects (module docstring)."""
        singles = [(k, v) for k, d in inc.distributions.items() for v in neighbours(d, inc.params[k])]
        if self._space is None:
            return [{k: v} for k, v in singles]
        base, reason = self._make(inc.params)
        if reason is not None:  # an incumbent outside the space (a changed spec): no repairs
            return [{k: v} for k, v in singles]
        moves = []
        for k, v in singles:
            hit = self._disturbed(inc.params, base, {k: v})
            if hit is not None:
                moves.append({k: v})
                if not hit:
                    continue
            for k2, v2 in singles:
                if k2 == k or (hit and param_of(k2) in hit):
                    continue
                after = self._disturbed(inc.params, base, {k: v, k2: v2})
                if after is not None and (hit is None or after < hit):
                    moves.append({k: v, k2: v2})
        return moves

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
                ranked = sorted(good, key=lambda t: (sign * t.values[0], t.number))
            else:
                front = study.best_trials
                ranked = [front[int(rng.integers(len(front)))]] if front else [good[-1]]
                ranked += [t for t in front if t is not ranked[0]]
            seen = {self._seen(t) for t in study._get_trials(deepcopy=False, use_cache=True)
                    if t.state in (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)}
            inc, plan = ranked[0], None
            for cand in self._bases(ranked):
                fresh = [m for m in self._moves(cand) if self._config({**cand.params, **m}) not in seen]
                if fresh:
                    plan = {**cand.params, **fresh[int(rng.integers(len(fresh)))]}
                    break
            moves = [(k, v) for k, d in inc.distributions.items() for v in neighbours(d, inc.params[k])]
            if plan is None and moves:  # every neighbour of the best few is measured: two moves
                # of the incumbent, on different params (a few draws for an unseen feasible pair;
                # none: sample at random rather than measure a configuration again)
                for _ in range(PAIR_DRAWS):
                    k, v = moves[int(rng.integers(len(moves)))]
                    other = [m for m in moves if m[0] != k]
                    pair = {**inc.params, k: v}
                    if other:
                        k2, v2 = other[int(rng.integers(len(other)))]
                        pair[k2] = v2
                    if self._config(pair) not in seen and (self._space is None or self._make(pair)[1] is None):
                        plan = pair
                        break
        self._plans[trial._trial_id] = plan
        return plan

    def _bases(self, ranked: list[FrozenTrial]):
        """The configurations to move from, best first: the incumbent, then the next of the
        ``BASES`` best distinct configurations when every move from it has been measured."""
        configs = set()
        for t in ranked:
            config = self._seen(t)
            if config in configs:
                continue
            configs.add(config)
            yield t
            if len(configs) >= BASES:
                return

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
