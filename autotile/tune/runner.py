"""One study: the Optuna loop for one (op, hardware, dtype, shape, unit), resumable.

Budget: the study runs until it holds ``budget`` completed trials with distinct feasible
configurations (duplicates are answered from the cache and infeasible configurations are pruned,
so neither eats the budget), with a hard cap of ``CAP_FACTOR`` x budget trials in all, or until
it has tried every configuration of a space whose feasible size is known exactly (exhausted:
once a sampler repeats itself and the configurations left fit the budget, they are queued, as
the exhaustive sampler would run them; it is checked after each infeasible proposal too, so
a space of exactly 0 feasible configurations runs no trial). In such a space a sampler that keeps repeating itself
gets an untried configuration queued (``autotile.tune.fill``), so the budget is spent on
distinct configurations rather than the cap on repeats. Running
the same study again continues from what the storage holds. With several workers on one study,
each checks the count before a trial, so the study ends with between budget and
budget + workers - 1 completed configurations.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections import Counter
from dataclasses import dataclass, field

import optuna
from optuna.trial import TrialState

from autotile.space.space import Space
from autotile.tune import drawn, fill, identity
from autotile.tune import storage as storage_mod
from autotile.tune.evaluate import Evaluator, Outcome, config_key, make_evaluator
from autotile.tune.portfolio import MEMBER_ATTR, member_stats
from autotile.tune.suggest import suggest

CAP_FACTOR = 5
CONFIG_ATTR = "config"
BASELINE_ATTR = "baseline"
WARM_ATTR = "warm_start"
REASON_ATTR = "infeasible"
IN_SPACE_ATTR = "in_space"  # an infeasible trial whose configuration satisfies the spec (the kernel refused it)
ENUMERATE_MAX = 100_000  # the unmeasured configurations of a space up to this size may be queued


def rank(values, objectives=None) -> tuple:
    """How configurations rank, best first: lexicographically by the objectives in order, so
    among ties on the first objective the second decides and a pick from a two-objective study
    is never dominated. ``values`` is a trial's value list, or a dict read in ``objectives``
    order (an objective it lacks ranks last)."""
    if objectives is None:
        return tuple(values)
    return tuple(values.get(o, math.inf) for o in objectives)


@dataclass(frozen=True)
class StudyPlan:
    """What to run: the space, how to score it, and the search settings."""

    name: str
    space: Space
    objectives: tuple[str, ...]
    sampler: str
    seed: int
    budget: int
    timeout_s: float | None
    baseline: dict | None
    warm: tuple = ()  # configurations to enqueue after the baseline
    feasible: int | None = None  # feasible configurations, if known: none is left after that many
    identity: dict | None = None  # what trial values depend on (tune.identity), recorded on the study
    fill: bool = True  # queue the untried configurations once they fit the budget (not when comparing samplers)


@dataclass
class StudyOutcome:
    """What a finished (or interrupted) study gives back."""

    name: str
    best: list = field(default_factory=list)  # [(params, values, trial number)] best first
    baseline: tuple | None = None  # (params, values)
    trials: int = 0
    complete: int = 0
    infeasible: int = 0
    failed: int = 0
    unique: int = 0
    simulated: int = 0
    elapsed_s: float = 0.0
    history: list = field(default_factory=list)  # first objective per complete trial, in order
    history_trials: list = field(default_factory=list)  # the Optuna trial number of each history entry
    pareto: list = field(default_factory=list)  # two objectives: [{params, values, trial}]
    members: list = field(default_factory=list)  # portfolio sampler: per member trials, new bests
    interrupted: bool = False  # a stop was requested while it was short of its budget
    cap_reached: bool = False  # ended by the CAP_FACTOR x budget trial cap, short of its budget
    exhausted: bool = False  # short of its budget, but every configuration of the space was tried
    feasible_size: int | None = None  # the space's exact feasible size, when it was needed (exhausted)
    infeasible_reasons: list = field(default_factory=list)  # [{reason, count}], most frequent first
    drawn: list = field(default_factory=list)  # [{sampler, seed, trials}] that ran its trials (tune.drawn)


def optuna_params(space: Space, params: dict) -> dict:
    """The Optuna parameter values that make ``suggest`` reproduce ``params`` (for enqueue)."""
    out = {}
    for p in space.params:
        if p.name not in params or p.kind == "fixed":
            continue
        v = params[p.name]
        if p.kind == "int" and getattr(p, "pow2", False):
            out[f"{p.name}.log2"] = int(v).bit_length() - 1
        else:
            out[p.name] = v
    return out


class _Stop:
    """Stop after the current trial: ``requested`` is set by this process's SIGINT or SIGTERM
    handler (``signum`` says which); ``shared`` (a lock-free multiprocessing byte) is how the
    parent of ``--jobs`` workers tells them, and how a worker stopped by a signal of its own
    tells the run (it holds the signal's number, else 1); a worker also stops once its
    ``parent`` is gone."""

    requested = False
    signum = None
    shared = None
    parent = None

    @classmethod
    def is_set(cls) -> bool:
        return cls.requested or (cls.shared is not None and bool(cls.shared.value)) or cls.orphaned()

    @classmethod
    def orphaned(cls) -> bool:
        """A worker whose parent died (it was re-parented)."""
        return cls.parent is not None and os.getppid() != cls.parent

    @classmethod
    def signalled(cls, signum: int) -> None:
        """A first stop signal: remember which (the exit code) and stop after the current trial."""
        cls.signum = signum
        cls.request()

    @classmethod
    def request(cls) -> None:
        cls.requested = True
        if cls.shared is not None:
            cls.shared.value = cls.signum or 1


def prepare(plan: StudyPlan, storage, sampler=None) -> optuna.Study:
    """Create or load the study; a new one gets the baseline (trial 0) and warm-start configs.

    The plan's identity is recorded on the study (before any trial, so a peer never sees trials
    without it); a study recorded with another identity is refused. Trials left RUNNING by a
    dead owner are marked failed first, so they do not count.
    """
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(study_name=plan.name, storage=storage, sampler=sampler,
                                directions=["minimize"] * len(plan.objectives), load_if_exists=True)
    if plan.identity is not None:
        _check_identity(study, plan)
    storage_mod.fail_stale_trials(study)
    if not study.get_trials(deepcopy=False):
        if plan.baseline is not None:
            study.enqueue_trial(optuna_params(plan.space, plan.baseline), user_attrs={BASELINE_ATTR: True},
                                skip_if_exists=True)
        for cfg in plan.warm:
            study.enqueue_trial(optuna_params(plan.space, cfg), user_attrs={WARM_ATTR: True},
                                skip_if_exists=True)
    return study


def _check_identity(study: optuna.Study, plan: StudyPlan) -> None:
    from autotile.errors import InputError

    attrs = study.user_attrs
    if identity.IDENTITY_ATTR not in attrs:  # new, or made before identities (the driver checked)
        identity.stamp(study, plan.identity)
    elif (why := identity.mismatch(attrs, plan.identity)) is not None:
        raise InputError(f"study {plan.name} in the storage was tuned with a different spec ({why})")


def run(plan: StudyPlan, storage, *, evaluator: Evaluator | None = None, progress=None) -> StudyOutcome:
    """Run (or resume) one study until its budget, its timeout or a stop request.

    Every worker on a study has the plan's seed: its samplers draw from (seed, trial number)
    (``autotile.tune.trialseed``), so workers never repeat each other's draws, and which worker
    takes a trial does not change what it proposes.

    A failure of the storage itself (a database that went away) raises StorageError: every
    completed trial is already saved there, and running again resumes. A study another process
    deleted meanwhile raises StudyDeleted (a StorageError).
    """
    from autotile.tune.samplers import make_sampler

    evaluator = evaluator or make_evaluator(plan.space, plan.objectives)
    sampler = storage_mod.OwnedSampler(make_sampler(plan.sampler, plan.seed, n_objectives=len(plan.objectives),
                                                    space=plan.space))
    try:
        study = prepare(plan, storage, sampler)
        _prime_cache(study, evaluator)
        outcome = _optimize(study, plan, evaluator, progress)
    except Exception as exc:  # noqa: BLE001 - re-raised unless the storage itself failed
        failure = storage_mod.storage_failure(exc, getattr(storage, "url", None), plan.name)
        if failure is None:
            raise
        raise failure from None
    return outcome


def _optimize(study: optuna.Study, plan: StudyPlan, evaluator: Evaluator, progress) -> StudyOutcome:
    start = time.monotonic()
    cap = CAP_FACTOR * plan.budget
    goal = _goal(plan)
    state = {"queued": False}

    def objective(trial: optuna.Trial):
        trial.set_user_attr(drawn.ATTR, [plan.sampler, plan.seed])  # a resume may run under other settings
        params, reason = suggest(trial, plan.space)
        out = evaluator.score(params) if reason is None else Outcome(params, False, reason)
        trial.set_user_attr(CONFIG_ATTR, config_key(out.params))
        if not out.feasible:
            trial.set_user_attr(REASON_ATTR, out.reason)
            if reason is None and plan.space.check(out.params) is None:
                trial.set_user_attr(IN_SPACE_ATTR, True)
            trial.set_constraint("feasible", 1.0)
            raise optuna.TrialPruned(out.reason)
        trial.set_constraint("feasible", 0.0)
        res = out.result
        if res is not None and hasattr(res, "pct_of_peak"):
            trial.set_user_attr("pct_of_peak", float(res.pct_of_peak))
        trial.set_user_attr("values", out.values)
        vals = [out.values[o] for o in plan.objectives]
        return vals[0] if len(vals) == 1 else vals

    def callback(study: optuna.Study, trial) -> None:
        done = _unique_complete(study)
        if progress is not None:
            progress(study, trial, done)
        trials = study.get_trials(deepcopy=False)
        held = _held(trials)
        if done >= goal or held >= cap:
            study.stop()
        # what the history decides (a queued configuration) is done before a stop request or
        # the timeout ends the run, so a resumed run finds it queued, as one run would
        elif _repeated(trials, trial) and _exhausted_or_queue(study, plan, done, state, cap - held):
            study.stop()
        elif _spent(trials, trial, plan):
            study.stop()
        elif _Stop.is_set() or (plan.timeout_s is not None and time.monotonic() - start >= plan.timeout_s):
            study.stop()

    for _ in range(cap + 1):  # each lost race is a trial another worker finished: it is held
        # queued trials (baseline, warm start) run within n_trials, so they are not held yet
        held = _held(study.get_trials(deepcopy=False))
        # without a feasible baseline the space may be empty: counted before the first trial
        if (_unique_complete(study) >= goal or held >= cap or _Stop.is_set()
                or ((held or plan.baseline is None) and _exhausted(study.get_trials(deepcopy=False), plan))):
            break
        try:
            study.optimize(objective, n_trials=cap - held, callbacks=[callback], catch=(), gc_after_trial=False)
            break
        except (optuna.exceptions.UpdateFinishedTrialError, ValueError) as exc:
            if not lost_race(exc):
                raise
    return summarize(study, plan, evaluator, time.monotonic() - start)


def lost_race(exc: BaseException) -> bool:
    """Whether ``exc`` says this worker updated a trial another worker had finished: both took the
    same queued trial (a storage whose queue does not exclude), and the other told its result
    first. The trial is the other's; this worker goes on with the next one."""
    if isinstance(exc, optuna.exceptions.UpdateFinishedTrialError):
        return True
    return isinstance(exc, ValueError) and re.fullmatch(r"Cannot tell an? \w+ trial\.", str(exc)) is not None


_FEASIBLE: dict[int, tuple] = {}  # id(space) -> (space, exact feasible size or None)


def feasible_size(plan: StudyPlan) -> int | None:
    """The number of configurations of the plan's space that satisfy the spec: the plan's, or
    the space's exact count (computed once per space in a process; None when it is only an
    estimate). Zero is a count too: such a study stops before its first trial, space exhausted."""
    if plan.feasible is not None:
        return plan.feasible
    known = _FEASIBLE.get(id(plan.space))
    if known is None or known[0] is not plan.space:
        from autotile.errors import InputError

        try:
            count = plan.space.count()
            size = count.feasible_size if count.method == "exact" else None
        except InputError:
            size = None
        known = _FEASIBLE[id(plan.space)] = (plan.space, size)
    return known[1]


def _held(trials) -> int:
    """Trials that count against the cap: all but the queued ones not yet taken (WAITING), which
    have run nothing."""
    return sum(1 for t in trials if t.state != TrialState.WAITING)


def _tried(trials) -> set:
    """The configurations of the space the trials have tried: completed ones, and those the
    kernel (or a limit) found infeasible although they satisfy the spec."""
    return {t.user_attrs.get(CONFIG_ATTR) for t in trials
            if t.state == TrialState.COMPLETE or (t.state == TrialState.PRUNED and t.user_attrs.get(IN_SPACE_ATTR))}


def _repeated(trials, trial) -> bool:
    """``trial`` ran a configuration an earlier finished trial ran (as the study history says,
    so a resumed run and workers sharing the study judge it alike)."""
    key = trial.user_attrs.get(CONFIG_ATTR)
    return key is not None and any(
        t.number < trial.number and t.state in (TrialState.COMPLETE, TrialState.PRUNED)
        and t.user_attrs.get(CONFIG_ATTR) == key for t in trials)


def _exhausted(trials, plan: StudyPlan) -> bool:
    """The study is short of its budget and has tried every configuration of its space."""
    done = len({t.user_attrs.get(CONFIG_ATTR, t.number) for t in trials if t.state == TrialState.COMPLETE})
    if done >= plan.budget:
        return False
    size = feasible_size(plan)
    return size is not None and len(_tried(trials)) >= size


def _spent(trials, trial, plan: StudyPlan) -> bool:
    """The study has tried every configuration of its space: checked after an infeasible trial
    (counting the space then, once), and after any trial once the count is known. A sampler
    that has tried them all proposes configurations outside the space, no repeats, which ran
    it to the trial cap."""
    known = plan.feasible is not None or _FEASIBLE.get(id(plan.space), (None,))[0] is plan.space
    return (known or trial.state == TrialState.PRUNED) and _exhausted(trials, plan)


def _exhausted_or_queue(study: optuna.Study, plan: StudyPlan, done: int, state: dict, room: int) -> bool:
    """After a repeated configuration: True when the space is exhausted. Else, for a space small
    enough to enumerate: once, when the configurations left untried fit in what is left of the
    budget, queue them all (seeded order), as the exhaustive sampler would run them, or the first
    ``room`` of them (the trials left under the cap: a queued one past it would never run); otherwise,
    when ``fill.STUCK`` trials in a row found nothing new, queue the untried configuration
    nearest the incumbent (``autotile.tune.fill``), so a converged sampler does not spend the
    trial cap on repeats short of its budget."""
    trials = study.get_trials(deepcopy=False)
    if _exhausted(trials, plan):
        return True
    size = feasible_size(plan)
    if not plan.fill or size is None or size > ENUMERATE_MAX:
        return False
    if any(t.state == TrialState.WAITING for t in trials):  # a queued configuration runs next
        return False
    tab = fill.table(plan.space)
    if tab is None:  # its working table would be too large: the sampler goes on alone
        return False
    tried = _tried(trials)
    if not state["queued"] and size - len(tried) <= plan.budget - done:
        state["queued"] = True
        import random

        left = [k for k in tab.keys if k not in tried]
        random.Random(plan.seed).shuffle(left)
        for key in left[:room]:
            study.enqueue_trial(optuna_params(plan.space, json.loads(key)), skip_if_exists=True)
    elif room > 0 and fill.stale(trials, CONFIG_ATTR, IN_SPACE_ATTR) >= fill.STUCK:
        cfg = fill.nearest_untried(tab, tried, _incumbent(trials), plan.seed)
        if cfg is not None:
            study.enqueue_trial(optuna_params(plan.space, cfg), skip_if_exists=True)
    return False


def _incumbent(trials) -> str | None:
    """The configuration key of the best completed trial (the earliest on a tie)."""
    complete = [t for t in trials if t.state == TrialState.COMPLETE and t.user_attrs.get(CONFIG_ATTR)]
    if not complete:
        return None
    return min(complete, key=lambda t: (rank(t.values), t.number)).user_attrs[CONFIG_ATTR]


def _goal(plan: StudyPlan) -> int:
    """Distinct feasible configurations that end the study."""
    return plan.budget if plan.feasible is None else min(plan.budget, plan.feasible)


def _unique_complete(study: optuna.Study) -> int:
    trials = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    return len({t.user_attrs.get(CONFIG_ATTR, t.number) for t in trials})


def _prime_cache(study: optuna.Study, evaluator: Evaluator) -> None:
    """Put the values of trials already in the storage into the duplicate cache (resume)."""
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        key = t.user_attrs.get(CONFIG_ATTR)
        values = t.user_attrs.get("values")
        if key and values and key not in evaluator.cache:
            evaluator.cache[key] = Outcome(json.loads(key), True, None, values)


def infeasible_reasons(reasons: list, top: int = 3) -> list[dict]:
    """The most frequent reasons among infeasible trials: [{reason, count, wordings}], most frequent first.

    Reasons that differ only in their numbers (``need 417792 bytes`` / ``need 425984 bytes``) are
    one reason; it is shown by its most frequent wording (the earliest on a tie), ``wordings``
    says how many it stands for.
    """
    groups: dict[str, Counter] = {}
    for text in reasons:
        if text:
            groups.setdefault(re.sub(r"\d+(\.\d+)?", "#", text), Counter())[text] += 1
    ranked = sorted(groups.values(), key=lambda c: -c.total())
    return [{"reason": c.most_common(1)[0][0], "count": c.total(), "wordings": len(c)} for c in ranked[:top]]


def summarize(study: optuna.Study, plan: StudyPlan, evaluator: Evaluator, elapsed: float) -> StudyOutcome:
    """Counts, best configurations and history of a study from its storage."""
    trials = study.get_trials(deepcopy=False)
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    out = StudyOutcome(name=plan.name, trials=_held(trials), complete=len(complete),
                       infeasible=sum(1 for t in trials if t.state == TrialState.PRUNED),
                       failed=sum(1 for t in trials if t.state == TrialState.FAIL),
                       unique=len({t.user_attrs.get(CONFIG_ATTR, t.number) for t in complete}),
                       simulated=evaluator.simulated, elapsed_s=elapsed)
    first = plan.objectives[0]
    seen, ranked = set(), []
    for t in sorted(complete, key=lambda t: (rank(t.values), t.number)):
        key = t.user_attrs.get(CONFIG_ATTR)
        if key in seen or key is None:
            continue
        seen.add(key)
        ranked.append((json.loads(key), t.user_attrs.get("values", {first: t.values[0]}), t.number))
    out.best = ranked
    out.infeasible_reasons = infeasible_reasons(
        [t.user_attrs.get(REASON_ATTR) for t in trials if t.state == TrialState.PRUNED])
    out.exhausted = _exhausted(trials, plan)
    if out.exhausted:
        out.feasible_size = feasible_size(plan)
    out.cap_reached = out.unique < _goal(plan) and out.trials >= CAP_FACTOR * plan.budget and not out.exhausted
    out.interrupted = _Stop.is_set() and out.unique < _goal(plan) and not out.cap_reached and not out.exhausted
    if any(MEMBER_ATTR in t.system_attrs for t in trials):
        out.members = member_stats(trials)
    out.drawn = drawn.record(trials)
    for t in complete:
        out.history.append(t.values[0])
        out.history_trials.append(t.number)
        if t.user_attrs.get(BASELINE_ATTR) and out.baseline is None:
            out.baseline = (json.loads(t.user_attrs[CONFIG_ATTR]), t.user_attrs.get("values", {}))
    if len(plan.objectives) > 1 and complete:
        front = set()
        for t in sorted(study.best_trials, key=lambda t: t.number):
            key = t.user_attrs[CONFIG_ATTR]
            if key not in front:
                front.add(key)
                out.pareto.append({"params": json.loads(key),
                                   "values": dict(zip(plan.objectives, t.values)), "trial": t.number})
    if out.baseline is None and plan.baseline is not None:
        base = evaluator.score(plan.baseline)
        if base.feasible:
            out.baseline = (base.params, base.values)
    return out


def trials_to_within(history: list, optimum: float, frac: float) -> int | None:
    """1-based trial count at which best-so-far first came within ``frac`` of ``optimum``."""
    best = math.inf
    for i, v in enumerate(history, 1):
        best = min(best, v)
        if best <= optimum * (1 + frac):
            return i
    return None
