"""An adaptive portfolio of samplers over one shared study history (an AUC bandit).

Each trial goes to one member sampler (TPE, a genetic search, CMA-ES where the space suits it,
random), chosen in ``before_trial`` by a multi-armed bandit in the manner of OpenTuner's AUC
bandit. A member's credit is the recency-weighted mean (AUC weights) over its last ``window``
trials of the gain each trial made: with one objective, the relative improvement of the best
value (``(best - value) / |best|``, 0 when it is no new best), so small gains count for less
than big ones; with two objectives, 1 for a trial no earlier one dominates; the first feasible
trial improves on nothing. A member's bandit score is its credit plus an exploration bonus
``exploration * sqrt(2 ln N / n)`` so a slow starter still gets trials.

Without a ``lead`` every trial goes to the best score. With a ``lead`` (``make_sampler``: TPE,
the strongest generalist in ``bench/portfolio.py``):

- the first ``warmup`` member trials are shared exploration: they go to the ``explorer`` (by
  default the lead: TPE's own random start-up, as CMA-ES's and the genetic search's would be);
  they earn no credit (their luck says nothing about a member);
- after that the challengers (the other members) share a decaying minority quota of
  ``share * sqrt(n)`` of the ``n`` trials since the warmup, given by the bandit score among
  them; with a ``patience`` they use it only while the search is stalled (``patience`` member
  trials of configurations not measured before since the best last improved: a repeated one,
  which the tuner answers from its cache, says nothing about a stall), so a lead that keeps
  improving is not interrupted
  (``make_sampler`` gives TPE the portfolio's seed: until the first stall a portfolio run is
  exactly that TPE run); every other trial goes to the lead unless a challenger with at least
  ``min_uses`` trials, a gain in its last ``min_uses``, has a credit above ``margin`` x the
  lead's and above ``floor``: then it takes the trial, until it stops finding gains;
- a member in ``late`` (``make_sampler``: the genetic search and CMA-ES) is a challenger only once ``late_after`` member
  trials have finished, when the history is big enough for it to be more than random;
- with a ``local`` member (``make_sampler``: the greedy mutation of ``autotile.tune.mutation``),
  the trial after a lead trial that repeated a measured configuration goes to it: a lead that
  re-proposes what it has measured has concentrated on the incumbent (TPE does this on small
  discrete spaces, most of its trials after a few dozen configurations), and an unmeasured
  neighbour of the incumbent is the new point it was after. The local member is a challenger
  too: TPE seldom repeats on a large space (matmul 4096^3 at 150 configurations: 8 mutation
  trials of 164, the default never beaten, 77.6% of peak; as a challenger, 12-18 trials and
  78.6-91.7% over seeds 0-2);
- a trial's configuration, for repeats, is its ``config_attr`` user attribute when the objective
  records one (the tuner's does), else its parameter values.

The chosen member answers every sampling call of that trial; its name is stored in the trial's
system attribute ``portfolio.member``.

The bandit state is a function of the study history only (members recorded in the trials, their
states and values, and the seed with the trial number for tie-breaks), so workers sharing a
study and a resumed run compute the same credit; the members draw from (seed, trial number) too
(``autotile.tune.trialseed``), so a resumed run proposes what an uninterrupted one does. Members learn from every trial, whoever
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

from autotile.tune.trialseed import PerTrial

MEMBER_ATTR = "portfolio.member"
ENQUEUED = "enqueued"  # trials with fixed parameters (baseline, warm starts): no member, no credit
WINDOW = 24
EXPLORATION = 0.25
SHARE = 1.0  # with a lead: challengers' quota, share * sqrt(trials since the warmup)
MARGIN = 2.0  # ... and a challenger takes over while its credit > margin x the lead's
FLOOR = 0.002  # ... and > floor (a mean relative gain per trial)
MIN_USES = 4  # ... once it has had this many trials
_FINISHED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.FAIL)


@dataclass
class _Ledger:
    """Credit state over the finalized prefix of the history (trials in number order)."""

    frontier: int = 0  # index of the first trial not yet finished
    front: list = field(default_factory=list)  # best values (one objective) or the Pareto front
    recent: dict = field(default_factory=dict)  # member -> deque of gains, oldest first
    uses: dict = field(default_factory=dict)  # member -> finished trials after the warmup
    seen: int = 0  # member trials so far (the first ``warmup`` are shared exploration)
    quiet: int = 0  # finished member trials after the warmup, new configs, since the last new best
    configs: set = field(default_factory=set)  # configurations of the finished trials (``config_attr``)
    last: tuple = (None, False)  # (member, repeated a measured config) of the latest finished member trial

    def fork(self) -> _Ledger:
        """A copy to add unfinished trials to, leaving this one as it is."""
        return _Ledger(self.frontier, list(self.front),
                       {k: deque(v, maxlen=v.maxlen) for k, v in self.recent.items()},
                       dict(self.uses), self.seen, self.quiet, set(self.configs), self.last)


def member_of(trial: FrozenTrial) -> str | None:
    """The portfolio member that proposed ``trial`` (None: not a portfolio trial)."""
    return trial.system_attrs.get(MEMBER_ATTR)


def feasible(trial: FrozenTrial) -> bool:
    """A complete trial whose constraints (``Trial.set_constraint``) all hold."""
    return trial.state == TrialState.COMPLETE and all(v <= 0 for v in trial.constraints.values())


def _improves(front: list, values: Sequence[float]) -> bool:
    """Whether ``values`` beat the best so far (one objective) or no point of ``front`` dominates
    them; the first feasible result improves on nothing."""
    return _gain(front, values) > 0


def _gain(front: list, values: Sequence[float]) -> float:
    """How much ``values`` improve on ``front``: the relative gain of the best value in [0, 1]
    (one objective), 1 or 0 (two: whether any point of the front dominates them); 0 for the
    first feasible result."""
    if not front:
        return 0.0
    if len(values) == 1:
        best, v = front[0][0], values[0]
        if not v < best:
            return 0.0
        return min(1.0, (best - v) / abs(best)) if best != 0 else 1.0
    return 0.0 if any(all(f <= v for f, v in zip(p, values)) for p in front) else 1.0


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
                 needs_numeric: Sequence[str] = (), lead: str | None = None, explorer: str | None = None,
                 warmup: int = 0, share: float = SHARE, margin: float = MARGIN, floor: float = FLOOR,
                 min_uses: int = MIN_USES, late: Sequence[str] = (), late_after: int = 0,
                 patience: int | None = None, local: str | None = None, config_attr: str | None = None) -> None:
        if not members:
            raise ValueError("a portfolio needs at least one member")
        if ENQUEUED in members:
            raise ValueError(f"{ENQUEUED!r} is reserved")
        for role, name in (("genetic", genetic), ("lead", lead), ("explorer", explorer), ("local", local),
                           *(("late", n) for n in late)):
            if name is not None and name not in members:
                raise ValueError(f"{role} member {name!r} is not in the portfolio")
        if warmup and lead is None:
            raise ValueError("a warmup needs a lead")
        self._lead = lead
        self._explorer = explorer or lead
        self._warmup = warmup if lead is not None else 0
        self._share, self._margin, self._floor, self._min_uses = share, margin, floor, min_uses
        self._late, self._late_after = tuple(late), late_after
        self._patience = patience
        self._local = local if lead is not None else None
        # a trial's configuration: this user attribute when the objective records one (the
        # tuner's does: filtered integers snap, so different values can make one configuration)
        self._config_attr = config_attr
        self.members = dict(members)
        self._seed = int(np.random.SeedSequence().entropy % 2**31) if seed is None else seed
        self._window = window
        self._exploration = exploration
        self._genetic = genetic
        self._needs_numeric = tuple(needs_numeric)  # members that only model int/float params (CMA-ES)
        self._fallback = PerTrial(lambda s: optuna.samplers.RandomSampler(seed=s), seed)
        self._ledger = _Ledger()
        self._ledger_study: int | None = None
        self._assigned: dict[int, str] = {}  # trial id -> member, this process's trials
        self._suits: tuple = (None, set())  # ((study id, completed trials), members the space suits)

    # -- the bandit ------------------------------------------------------------------------
    def credit(self, study: optuna.Study, *, _snapshot: bool = False) -> dict[str, dict]:
        """Per member: ``{uses, credit, score, since_gain}`` from the study history (``uses``
        counts running trials, not warmup ones; ``since_gain``: its trials since its last gain
        in the window, None without one).

        Inside a trial (``_snapshot``) the history is the study's per-trial snapshot, which
        ``Study.ask`` has just refreshed; otherwise it is read from the storage.
        """
        return self._credit(study, _snapshot)[0]

    def quiet(self, study: optuna.Study) -> int:
        """Finished member trials after the warmup, of configurations not measured before,
        since the best value last improved."""
        return self._tally(study, study._get_trials(deepcopy=False, use_cache=False))[0].quiet

    def _credit(self, study, snapshot: bool) -> tuple[dict, _Ledger, int]:
        """``credit``, with the tally it comes from and the finished member trials."""
        trials = study._get_trials(deepcopy=False, use_cache=snapshot)
        led, done = self._tally(study, trials)
        total = max(1, sum(led.uses.values()))
        out = {}
        for name in self.members:
            n = led.uses.get(name, 0)
            gains = led.recent.get(name, ())
            auc = _auc(gains)
            bonus = math.inf if n == 0 else self._exploration * math.sqrt(2 * math.log(total) / n)
            since = next((k for k, g in enumerate(reversed(gains)) if g > 0), None)
            out[name] = {"uses": n, "credit": auc, "score": auc + bonus, "since_gain": since}
        return out, led, done

    def _tally(self, study, trials) -> tuple[_Ledger, int]:
        """The ledger of the whole history (running trials count as uses, not yet as credit) and
        the finished member trials: the finalized prefix kept incrementally, the rest afresh."""
        if self._ledger_study != study._study_id or self._ledger.frontier > len(trials):
            self._ledger, self._ledger_study = _Ledger(), study._study_id
        led = self._ledger
        i = led.frontier
        while i < len(trials) and trials[i].state in _FINISHED:
            self._account(led, trials[i])
            i += 1
        led.frontier = i
        if i == len(trials):
            return led, led.seen
        cur = led.fork()
        done = led.seen
        for t in trials[i:]:
            if t.state in _FINISHED:
                before = cur.seen
                self._account(cur, t)
                done += cur.seen - before
            elif t.state == TrialState.RUNNING:  # pending: counts as a use, not yet as credit
                name = member_of(t)
                if name is not None and name != ENQUEUED:
                    if cur.seen >= self._warmup:
                        cur.uses[name] = cur.uses.get(name, 0) + 1
                    cur.seen += 1
        return cur, done

    def _account(self, led: _Ledger, t: FrozenTrial) -> None:
        """Add finished trial ``t`` to ``led``."""
        name = member_of(t)
        good = feasible(t)
        gain = _gain(led.front, t.values) if good else 0.0
        if good and (gain > 0 or not led.front):
            _add(led.front, t.values)
        config = t.user_attrs.get(self._config_attr) if self._config_attr else None
        if config is None:
            config = tuple(sorted(t.params.items()))
        again = config in led.configs
        led.configs.add(config)
        if name is None or name == ENQUEUED or name not in self.members:
            return
        led.last = (name, again)
        if led.seen >= self._warmup:  # warmup trials are shared exploration: no credit
            led.uses[name] = led.uses.get(name, 0) + 1
            led.recent.setdefault(name, deque(maxlen=self._window)).append(gain)
            led.quiet = 0 if gain > 0 else led.quiet + (not again)
        led.seen += 1

    def choose(self, study: optuna.Study, trial: FrozenTrial) -> str:
        """The member for ``trial`` (see the module docstring); ties broken by (seed, trial number)."""
        scores, led, done = self._credit(study, True)
        seen, quiet = led.seen, led.quiet
        eligible = self._eligible(study, trial)
        if self._lead is None:
            return self._best(scores, eligible, "score", trial)
        if seen < self._warmup:
            return self._explorer
        if self._local is not None and led.last == (self._lead, True):
            return self._local
        challengers = [n for n in eligible if n != self._lead
                       and (n not in self._late or done >= self._late_after)]
        if not challengers:
            return self._lead
        n = sum(scores[m]["uses"] for m in self.members)
        stalled = self._patience is None or quiet >= self._patience
        if stalled and sum(scores[m]["uses"] for m in challengers) < self._share * math.sqrt(n):
            return self._best(scores, challengers, "score", trial)
        ready = [m for m in challengers if scores[m]["uses"] >= self._min_uses
                 and scores[m]["since_gain"] is not None and scores[m]["since_gain"] < self._min_uses]
        if ready:
            top = self._best(scores, ready, "credit", trial)
            c = scores[top]["credit"]
            if c > self._floor and c > self._margin * scores[self._lead]["credit"]:
                return top
        return self._lead

    def _best(self, scores: dict, names: list, key: str, trial: FrozenTrial) -> str:
        best = max(scores[n][key] for n in names)
        tied = [n for n in names if scores[n][key] >= best - 1e-12]
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
            ga = getattr(ga, "template", ga)  # a PerTrial's sampler class and population size
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


def _auc(gains) -> float:
    """Recency-weighted mean of gains (oldest first), OpenTuner's AUC credit; with 0/1 gains,
    the weighted share of new bests."""
    n = len(gains)
    if n == 0:
        return 0.0
    return sum((i + 1) * g for i, g in enumerate(gains)) / (n * (n + 1) / 2)


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
