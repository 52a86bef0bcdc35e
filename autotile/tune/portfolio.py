"""An adaptive portfolio of samplers over one shared study history (an AUC bandit).

Each trial goes to one member sampler (TPE, a genetic search, CMA-ES where the space suits it,
random), chosen in ``before_trial`` by a multi-armed bandit in the manner of OpenTuner's AUC
bandit: a member's credit is the recency-weighted share of its last ``window`` trials that set a
new best (the first objective; with two objectives, a trial no earlier one dominates; the first
feasible trial improves on nothing), plus an
exploration bonus ``exploration * sqrt(2 ln N / n)`` so a slow starter still gets trials. The
chosen member answers every sampling call of that trial; its name is stored in the trial's
system attribute ``portfolio.member``.

The bandit state is a function of the study history only (members recorded in the trials, their
states and values, and the seed with the trial number for tie-breaks), so workers sharing a
study and a resumed run compute the same credit. Members learn from every trial, whoever
proposed it: TPE reads the whole study, and every trial joins the genetic search's population.
"""

from __future__ import annotations

import math
import warnings
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import optuna
from optuna.samplers import BaseSampler
from optuna.trial import FrozenTrial, TrialState

MEMBER_ATTR = "portfolio.member"
ENQUEUED = "enqueued"  # trials with fixed parameters (baseline, warm starts): no member, no credit
WINDOW = 24
EXPLORATION = 0.25
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


@dataclass
class _Ledger:
    """Credit state over the finalized prefix of the history (trials in number order)."""

    frontier: int = 0  # index of the first trial not yet finished
    front: list = field(default_factory=list)  # best values (one objective) or the Pareto front
    recent: dict = field(default_factory=dict)  # member -> deque of 0/1 (new best), oldest first
    uses: dict = field(default_factory=dict)  # member -> finished trials


def member_of(trial: FrozenTrial) -> str | None:
    """The portfolio member that proposed ``trial`` (None: not a portfolio trial)."""
    return trial.system_attrs.get(MEMBER_ATTR)


def feasible(trial: FrozenTrial) -> bool:
    """A complete trial whose constraints (``Trial.set_constraint``) all hold."""
    return trial.state == TrialState.COMPLETE and all(v <= 0 for v in trial.constraints.values())


def _improves(front: list, values: Sequence[float]) -> bool:
    """Whether ``values`` beat the best so far (one objective) or no point of ``front`` dominates
    them; the first feasible result improves on nothing."""
    if not front:
        return False
    if len(values) == 1:
        return values[0] < front[0][0]
    return not any(all(f <= v for f, v in zip(p, values)) for p in front)


def _add(front: list, values: Sequence[float]) -> None:
    values = tuple(values)
    if len(values) == 1:
        front[:] = [values]
        return
    front[:] = [p for p in front if not all(v <= f for v, f in zip(values, p))] + [values]


class PortfolioSampler(BaseSampler):
    """A bandit over member samplers that share one study; see the module docstring.

    >>> s = PortfolioSampler({"tpe": optuna.samplers.TPESampler(seed=0),
    ...                       "random": optuna.samplers.RandomSampler(seed=0)}, seed=0)
    >>> study = optuna.create_study(sampler=s)
    >>> study.optimize(lambda t: t.suggest_float("x", -1, 1) ** 2, n_trials=5)
    >>> sorted({t.system_attrs["portfolio.member"] for t in study.trials})
    ['random', 'tpe']
    """

    def __init__(self, members: dict[str, BaseSampler], *, seed: int | None = None,
                 window: int = WINDOW, exploration: float = EXPLORATION, genetic: str | None = None,
                 needs_numeric: Sequence[str] = ()) -> None:
        if not members:
            raise ValueError("a portfolio needs at least one member")
        if ENQUEUED in members:
            raise ValueError(f"{ENQUEUED!r} is reserved")
        if genetic is not None and genetic not in members:
            raise ValueError(f"genetic member {genetic!r} is not in the portfolio")
        self.members = dict(members)
        self._seed = int(np.random.SeedSequence().entropy % 2**31) if seed is None else seed
        self._window = window
        self._exploration = exploration
        self._genetic = genetic
        self._needs_numeric = tuple(needs_numeric)  # members that only model int/float params (CMA-ES)
        self._fallback = optuna.samplers.RandomSampler(seed=seed)
        self._ledger = _Ledger()
        self._ledger_study: int | None = None
        self._assigned: dict[int, str] = {}  # trial id -> member, this process's trials
        self._suits: tuple = (None, set())  # ((study id, completed trials), members the space suits)

    # -- the bandit ------------------------------------------------------------------------
    def credit(self, study: optuna.Study, *, _snapshot: bool = False) -> dict[str, dict]:
        """Per member: ``{uses, credit, score}`` from the study history (``uses`` counts running trials).

        Inside a trial (``_snapshot``) the history is the study's per-trial snapshot, which
        ``Study.ask`` has just refreshed; otherwise it is read from the storage.
        """
        trials = study._get_trials(deepcopy=False, use_cache=_snapshot)
        recent, uses = self._tally(study, trials)
        total = max(1, sum(uses.values()))
        out = {}
        for name in self.members:
            n = uses.get(name, 0)
            auc = _auc(recent.get(name, ()))
            bonus = math.inf if n == 0 else self._exploration * math.sqrt(2 * math.log(total) / n)
            out[name] = {"uses": n, "credit": auc, "score": auc + bonus}
        return out

    def _tally(self, study, trials) -> tuple[dict, dict]:
        """Recent new-best flags and uses per member: the finalized prefix incrementally, the rest afresh."""
        if self._ledger_study != study._study_id or self._ledger.frontier > len(trials):
            self._ledger, self._ledger_study = _Ledger(), study._study_id
        led = self._ledger
        i = led.frontier
        while i < len(trials) and trials[i].state in _FINISHED:
            self._account(led.front, led.recent, led.uses, trials[i])
            i += 1
        led.frontier = i
        if i == len(trials):
            return led.recent, led.uses
        front = list(led.front)
        recent = {k: deque(v, maxlen=self._window) for k, v in led.recent.items()}
        uses = dict(led.uses)
        for t in trials[i:]:
            if t.state in _FINISHED:
                self._account(front, recent, uses, t)
            elif t.state == TrialState.RUNNING:  # pending: counts as a use, not yet as credit
                name = member_of(t)
                if name is not None and name != ENQUEUED:
                    uses[name] = uses.get(name, 0) + 1
        return recent, uses

    def _account(self, front: list, recent: dict, uses: dict, t: FrozenTrial) -> None:
        name = member_of(t)
        good = feasible(t)
        hit = good and _improves(front, t.values)
        if good and (hit or not front):
            _add(front, t.values)
        if name is None or name == ENQUEUED or name not in self.members:
            return
        uses[name] = uses.get(name, 0) + 1
        recent.setdefault(name, deque(maxlen=self._window)).append(1 if hit else 0)

    def choose(self, study: optuna.Study, trial: FrozenTrial) -> str:
        """The member for ``trial``: best bandit score; ties broken by (seed, trial number)."""
        scores = self.credit(study, _snapshot=True)
        eligible = self._eligible(study, trial)
        best = max(scores[n]["score"] for n in eligible)
        tied = [n for n in eligible if scores[n]["score"] >= best - 1e-12]
        if len(tied) == 1:
            return tied[0]
        rng = np.random.default_rng([self._seed, trial.number])
        return tied[int(rng.integers(len(tied)))]

    def _eligible(self, study, trial) -> list[str]:
        """Members that suit the space: CMA-ES-like members need at least two numeric parameters
        in the relative search space, covering most parameters of the latest complete trial."""
        if not self._needs_numeric:
            return list(self.members)
        done = study._get_trials(deepcopy=False, states=(TrialState.COMPLETE,), use_cache=True)
        key = (study._study_id, len(done))
        if self._suits[0] != key:
            suits = set()
            if done:
                n_params = len(done[-1].params)
                for name in self._needs_numeric:
                    space = self.members[name].infer_relative_search_space(study, trial)
                    if len(space) >= 2 and 2 * len(space) >= n_params:
                        suits.add(name)
            self._suits = (key, suits)
        names = [n for n in self.members if n not in self._needs_numeric or n in self._suits[1]]
        return names or list(self.members)

    # -- the sampler interface: the trial's member answers ---------------------------------
    def _member(self, study, trial: FrozenTrial) -> BaseSampler:
        name = self._assigned.get(trial._trial_id) or member_of(trial)
        if name is None:  # a trial this process did not start (another worker's): ask the storage
            name = study._storage.get_trial_system_attrs(trial._trial_id).get(MEMBER_ATTR)
        return self.members.get(name, self._fallback)

    def before_trial(self, study: optuna.Study, trial: FrozenTrial) -> None:
        name = member_of(trial)
        if name is None:
            name = ENQUEUED if trial.system_attrs.get("fixed_params") else self.choose(study, trial)
            study._storage.set_trial_system_attr(trial._trial_id, MEMBER_ATTR, name)
            trial.system_attrs[MEMBER_ATTR] = name
        self._assigned[trial._trial_id] = name
        if self._genetic is not None:  # every trial joins the genetic search's population
            ga = self.members[self._genetic]
            trial.system_attrs[ga._get_generation_key()] = ga.get_trial_generation(study, trial)
        self.members.get(name, self._fallback).before_trial(study, trial)

    def infer_relative_search_space(self, study, trial):
        return self._member(study, trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        return self._member(study, trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._member(study, trial).sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study, trial, state, values) -> None:
        member = self._member(study, trial)
        self._assigned.pop(trial._trial_id, None)
        with warnings.catch_warnings():  # CmaEsSampler: "constraints set but not used", every trial;
            # the portfolio uses them (an infeasible trial earns no credit)
            warnings.filterwarnings("ignore", message="Constraints have been set", category=UserWarning)
            member.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        self._seed = int(np.random.SeedSequence().entropy % 2**31)
        self._fallback.reseed_rng()
        for m in self.members.values():
            m.reseed_rng()


def _auc(flags) -> float:
    """Recency-weighted share of new-best flags (oldest first): OpenTuner's AUC credit."""
    n = len(flags)
    if n == 0:
        return 0.0
    return sum((i + 1) * f for i, f in enumerate(flags)) / (n * (n + 1) / 2)


def member_stats(trials: Sequence[FrozenTrial]) -> list[dict]:
    """Per member of a portfolio study: trials, feasible ones, new bests and the best value found.

    >>> member_stats([])
    []
    """
    rows: dict[str, dict] = {}
    front: list = []
    for t in sorted(trials, key=lambda t: t.number):
        name = member_of(t)
        good = feasible(t)
        hit = good and _improves(front, t.values)
        if good and (hit or not front):
            _add(front, t.values)
        if name is None:
            continue
        r = rows.setdefault(name, {"member": name, "trials": 0, "feasible": 0, "improvements": 0,
                                   "best": None})
        r["trials"] += 1
        r["feasible"] += good
        r["improvements"] += hit
        if good and (r["best"] is None or t.values[0] < r["best"]):
            r["best"] = t.values[0]
    return sorted(rows.values(), key=lambda r: (r["member"] == ENQUEUED, -r["trials"], r["member"]))
