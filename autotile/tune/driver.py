"""``autotile tune``: every (shape, dtype, unit) study of a spec, then verification and outputs.

The flow: plan one study per (shape, dtype, unit) with the baseline enqueued as trial 0 and a
warm start from the nearest tuned shape; run the studies (in this process, or with N worker
processes sharing the storage); verify the best configurations in execute mode; write
``summary.json``, ``table.json`` and the report into the output folder, atomically.
"""

from __future__ import annotations

import math
import os
import signal
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import optuna

from autotile import __version__
from autotile.atomic import (
    OutputError,
    check_outputs,
    json_bytes,
    output_set,
    write_bytes,
    write_json,
)
from autotile.errors import InputError, RunError, Terminated
from autotile.kernels import registry
from autotile.report.data import SUMMARY_SCHEMA, slug
from autotile.space import Spec
from autotile.space.loader import load_spec_text
from autotile.tune import drawn, exhaustive, identity, preflight, runner, workers
from autotile.tune.evaluate import make_evaluator
from autotile.tune.naming import parse_study_name, study_name
from autotile.tune.outputs import OUTPUT_FILES, OUTPUT_FOLDERS, report_outputs
from autotile.tune.storage import absolute_url, make_storage, quiet_heartbeat_failures, redact
from autotile.tune.verify import GateResult, gate
from autotile.words import count

WARM_CONFIGS = 3
REPLAY_SKIP = {"skipped": "replay backend: no kernel to execute"}


@dataclass(frozen=True)
class Options:
    """Command-line settings that override the spec."""

    trials: int | None = None
    sampler: str | None = None
    seed: int | None = None
    jobs: int = 1
    storage: str | None = None
    out: Path = Path("results")
    quiet: bool = False
    warm_start: bool = True
    verify: bool = True
    restart: bool = False  # delete stored studies of a changed spec instead of refusing


def default_out(spec: Spec) -> Path:
    return Path("results") / Path(spec.file).stem


def plans(spec: Spec, opts: Options) -> list[runner.StudyPlan]:
    """One plan per (shape, dtype, unit). The baseline is the kernel's default tiling (replayed
    specs have none); the warm start is added just before the study runs (``_warmed``)."""
    kernel = registry.implementation(spec.op.name) if spec.backend != "replay" else None
    budget = opts.trials or spec.budget.trials or 100
    out = []
    for shape in spec.shapes:
        for dtype in spec.dtypes:
            for unit in spec.units_for(dtype):
                space = spec.space(shape, dtype, unit)
                space.require_evaluable()
                name = study_name(spec.op.name, spec.hardware.name, dtype, space.shape, unit)
                base = _baseline(kernel, space) if kernel is not None else None
                out.append(runner.StudyPlan(
                    name=name, space=space, objectives=spec.objectives,
                    sampler=opts.sampler or spec.sampler, seed=opts.seed if opts.seed is not None else spec.seed,
                    budget=budget, timeout_s=spec.budget.timeout_s, baseline=base,
                    identity=identity.identity(space, spec.objectives)))
    return out


def _baseline(kernel, space) -> dict | None:
    """The kernel's default tiling moved onto ``space``'s domains, or None if it is not feasible there."""
    base = space.default_tiling()
    return base if space.check(base) is None else None


def _warm(spec: Spec, space, name: str, storage) -> tuple:
    """Best configurations of the nearest tuned shape (log-space) that fit this space."""
    try:
        summaries = optuna.get_all_study_summaries(storage, include_best_trial=False)
    except Exception:  # noqa: BLE001 - an empty or new storage
        return ()
    me = parse_study_name(name)
    best, best_d = None, math.inf
    for s in summaries:
        other = parse_study_name(s.study_name)
        if (other is None or s.study_name == name or s.n_trials == 0
                or any(other[k] != me[k] for k in ("op", "hw", "dtype", "unit"))
                or set(other["shape"]) != set(me["shape"])):
            continue
        d = math.dist([math.log2(v) for v in me["shape"].values()],
                      [math.log2(other["shape"][k]) for k in me["shape"]])
        if d < best_d:
            best, best_d = s.study_name, d
    if best is None:
        return ()
    import json

    study = optuna.load_study(study_name=best, storage=storage)
    done = [t for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))]
    done.sort(key=lambda t: (runner.rank(t.values), t.number))
    out, seen = [], set()
    for t in done:
        key = t.user_attrs.get(runner.CONFIG_ATTR)
        if not key or key in seen:
            continue
        seen.add(key)
        cfg = json.loads(key)
        if space.check(cfg) is None:
            out.append(cfg)
        if len(out) >= WARM_CONFIGS:
            break
    return tuple(out)


_FINISHING: dict = {"note": None}  # set once every study has run: what a first stop signal lets finish


def _install_stop_signals() -> dict:
    """SIGINT and SIGTERM (a scheduler's stop) stop the run after the current trial, a second
    one at once; returns the handlers they replace. A first one once every study has run (during
    verification) stops nothing, so it says what still happens: it was silently ignored."""
    def handler(signum, frame):
        if runner._Stop.requested:
            raise Terminated if signum == signal.SIGTERM else KeyboardInterrupt
        runner._Stop.signalled(signum)
        if _FINISHING["note"]:
            what = "SIGTERM" if signum == signal.SIGTERM else "Ctrl-C"
            try:
                sys.stderr.write(f"\nautotile: {what}: every study has run; {_FINISHING['note']} (a second "
                                 f"{what} stops at once, keeping the earlier outputs)\n")
                sys.stderr.flush()
            except (OSError, RuntimeError, ValueError):  # stderr closed, or in the middle of a write
                pass

    return {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}


def interrupted_code() -> int:
    """The exit code of an interrupted run: 143 after SIGTERM, else 130 (SIGINT)."""
    return 143 if runner._Stop.signum == signal.SIGTERM else 130


def _worker(spec_file: str, spec_text: str, opts: Options, index: int, worker: int,
            expect: tuple[str, dict | None]) -> runner.StudyOutcome | None:
    """One worker process on one study. It parses the text the main process loaded (plans hold
    compiled expressions, which do not pickle), not the file, which may have been edited since:
    a shape added at the front of ``shapes:`` made workers tune another study than the one
    scheduled. ``expect`` is the scheduled plan's name and identity: a hardware profile or
    measurements file (read again, relative to the spec's folder) that changed meanwhile is
    refused. ``worker`` tells the study's tasks apart (every worker has the plan's seed). Returns
    the study's outcome as this worker left it, for the progress line; None if it did not run."""
    if runner._Stop.is_set():  # stopped before this study started: leave it unrun
        return None
    quiet_heartbeat_failures()
    spec = load_spec_text(spec_text, spec_file)
    storage = make_storage(opts.storage, opts.out)
    todo = plans(spec, opts)
    plan = todo[index] if index < len(todo) else None
    if plan is None or (plan.name, plan.identity) != expect:
        why = "" if plan is None or plan.name != expect[0] else \
            f" ({', '.join(identity.changes(expect[1] or {}, plan.identity or {}))})"
        raise InputError(f"a file the spec reads (its hardware profile or measurements) changed during "
                         f"the run{why}; study {expect[0]} is no longer what the run scheduled: rerun",
                         file=spec_file)
    return runner.run(plan, storage)


@dataclass
class _Job:
    """One spec's run: its options, storage, plans, what its studies gave, and the seconds this
    run spent on each study (``spent``: a queue's specs run one after another, so a spec's time
    is its own studies', not the queue's)."""

    spec: Spec
    opts: Options
    storage: object
    plans: list
    outcomes: dict
    spent: dict = field(default_factory=dict)


def _check(spec: Spec, opts: Options, jobs: int) -> list[runner.StudyPlan]:
    """The plans of one spec once its options fit it; raises InputError before anything is
    written, so a refused run (of any spec in the queue) leaves no output folder or storage."""
    from autotile.tune.samplers import make_sampler

    spec.require_kernel_params()
    sampler = opts.sampler or spec.sampler
    if sampler != "exhaustive":  # unknown, not installed, or single-objective with two objectives
        make_sampler(sampler, 0, n_objectives=len(spec.objectives))
    if sampler == "exhaustive":
        if opts.storage:  # it would be recorded in the summary but never hold a trial
            raise InputError("--storage: the exhaustive sampler simulates every configuration in one batch "
                             "and keeps no Optuna study; drop --storage")
        if jobs > 1:
            raise InputError("--jobs: the exhaustive sampler runs in one process; drop --jobs")
    todo = plans(spec, opts)
    preflight.check_costs(todo)
    if spec.backend == "replay":  # the measurements hold every space, objective and limit
        for plan in todo:
            make_evaluator(plan.space, plan.objectives)
    return todo


def _refuse_shared(specs: list[Spec], opts: list[Options], todos: list[list]) -> None:
    """Refuse a queue in which two specs would tune one study into one storage with different
    specs (the same name, another identity): the later one was refused only once the earlier
    had tuned it, and its outputs summarized the earlier one's trials. With --restart too: the
    later spec would delete the studies the earlier one had just tuned."""
    seen: dict = {}  # (storage, study name) -> (spec, plan) that tunes it first
    for spec, o, todo in zip(specs, opts, todos):
        if (o.sampler or spec.sampler) == "exhaustive":  # keeps no study
            continue
        where = o.storage or os.path.abspath(o.out)
        for plan in todo:
            first = seen.setdefault((where, plan.name), (spec, plan))
            if first[0] is spec or first[1].identity == plan.identity:
                continue
            why = ", ".join(identity.changes(first[1].identity or {}, plan.identity or {}))
            place = f"the storage {redact(o.storage)}" if o.storage else f"the output folder {o.out}"
            again = ("; --restart would have the later delete the studies the earlier tunes, so it is refused "
                     "too") if o.restart else ""
            raise InputError(f"{first[0].file} and {spec.file} would both tune study {plan.name} in {place}, "
                             f"with different specs ({why} differs): tune them into separate "
                             f"{'--storage' if o.storage else '--out'} locations{again}")


def _start(spec: Spec, opts: Options, todo: list[runner.StudyPlan]) -> _Job:
    """The job of one spec; refuses (or with --restart, clears) stored studies of a changed spec."""
    exhaustive_run = (opts.sampler or spec.sampler) == "exhaustive"
    storage = None if exhaustive_run else make_storage(opts.storage, opts.out)
    if storage is not None:
        _reconcile(spec, opts, storage, todo)
    return _Job(spec, opts, storage, todo, {})


def _reconcile(spec: Spec, opts: Options, storage, todo: list) -> None:
    from autotile.errors import StorageError
    from autotile.tune import storage as storage_mod

    where = redact(opts.storage) if opts.storage else str(opts.out)
    elsewhere = "another --storage" if opts.storage else "a new --out"
    try:
        gone = identity.reconcile(todo, storage, where, elsewhere,
                                  restart=opts.restart, adopt_unrecorded=_same_spec_ran(spec, opts.out))
    except storage_mod.storage_errors() as exc:
        raise StorageError(storage_mod.describe_failure(opts.storage, exc)) from None
    if gone:
        print(f"autotile: note: --restart deleted {len(gone)} stud{'y' if len(gone) == 1 else 'ies'} of a changed "
              f"spec from {where}: {', '.join(gone)}", file=sys.stderr)


def _check_storage(spec: Spec, opts: Options) -> None:
    """An InputError when ``opts.out``'s summary.json records another study storage than this run
    would use: run without the ``--storage`` of the first run, a resume started from zero in a new
    journal and repointed the summary, so the report no longer saw the first storage's trials.
    --restart tunes in this run's storage anyway (the recorded one is left as it is)."""
    import json

    from autotile.tune.storage import moved_storage

    if opts.restart or (opts.sampler or spec.sampler) == "exhaustive":  # it keeps no storage
        return
    try:
        recorded = json.loads((opts.out / "summary.json").read_text(encoding="utf-8")).get("storage")
    except (OSError, ValueError, AttributeError):
        return
    this = moved_storage(recorded, opts.storage, opts.out)
    if this is None:
        return
    default = "://" not in recorded and not recorded.startswith("journal:")  # the journal in its --out
    resume = "drop --storage to resume there" if default else f"pass `--storage {recorded}` to resume there"
    raise InputError(f"{opts.out / 'summary.json'}: records the study storage {recorded}, but this run would use "
                     f"{this}; {resume}, or add --restart to tune in {this} instead (what {recorded} holds is "
                     "left as it is)")


def _same_spec_ran(spec: Spec, out: Path) -> bool:
    """Whether ``out``'s summary was written for this very spec (content hash)."""
    import json

    try:
        return json.loads((out / "summary.json").read_text()).get("spec_hash") == spec.content_hash()
    except (OSError, ValueError, AttributeError):
        return False


def tune(spec: Spec, opts: Options) -> dict:
    """Run every study of ``spec``; returns the summary (also written to ``summary.json``)."""
    return tune_many([spec], [opts], opts.jobs, opts.quiet)[0]


def tune_many(specs: list[Spec], opts: list[Options], jobs: int, quiet: bool) -> list[dict]:
    """Tune a queue of specs (each with its own options) with ``jobs`` worker processes in all."""
    from autotile.tune import storage as storage_mod

    runner._Stop.requested, runner._Stop.signum = False, None
    saved = _install_stop_signals()
    try:
        quiet_heartbeat_failures()
        todos = [_check(spec, o, jobs) for spec, o in zip(specs, opts)]  # all before any output folder
        _refuse_shared(specs, opts, todos)
        for spec, o in zip(specs, opts):  # a resume that would not see the recorded storage's trials
            _check_storage(spec, o)
        for o, todo in zip(opts, todos):  # else an output would fail only after every trial ran (and after the others were replaced)
            check_outputs(o.out, OUTPUT_FILES + report_outputs(_slugs(todo)), OUTPUT_FOLDERS)
        queue = [_start(spec, o, todo) for spec, o, todo in zip(specs, opts, todos)]
        bar = _Progress(sum(p.budget for job in queue for p in job.plans), quiet,
                        studies=sum(len(job.plans) for job in queue))
        failed = None
        try:
            if jobs <= 1:
                for job in queue:
                    _run_here(job, bar)
            else:
                _run_pool(queue, jobs, bar)
        except Exception as exc:  # noqa: BLE001 - re-raised once the outputs of what finished are written
            if _storage_failed(exc):  # the storage cannot be read for them: rerunning resumes
                raise
            failed = exc
            runner._Stop.requested = True  # so the studies it cut short read as interrupted
        finally:
            bar.close()
        _FINISHING["note"] = ("verification of their best configurations finishes, then the outputs are written"
                              if any(o.verify for o in opts) else "the outputs are written")
        try:
            summaries = [_finish(job) for job in queue]
        except Exception:
            # a worker's own error is the one to report; writing the outputs failed as a consequence
            # (the storage that failed it) or not at all before it (a storage that went away)
            if failed is None or isinstance(failed, RunError):
                raise
            raise failed from None
        finally:
            if failed is not None:
                runner._Stop.requested = False
        if failed is not None:
            raise failed
        return summaries
    except KeyError as exc:  # warm starts, study creation: the worker's and _collect's name the study
        if storage_mod.study_gone(exc):
            raise storage_mod.deleted(None) from None
        raise
    finally:
        _FINISHING["note"] = None
        for sig, old in saved.items():
            signal.signal(sig, old)


def _storage_failed(exc: BaseException) -> bool:
    """Whether ``exc`` means the study storage failed or lost a study (no outputs then)."""
    from autotile.errors import StorageError
    from autotile.tune import storage as storage_mod

    return isinstance(exc, StorageError) or storage_mod.study_gone(exc) or storage_mod.storage_cause(exc) is not None


def _slugs(todo: list[runner.StudyPlan]) -> list[str]:
    """The trace names of the report of ``todo``'s results: one per study (a superset of the exported)."""
    return [slug({"shape": p.space.shape, "dtype": p.space.dtype, "unit": p.space.unit}) for p in todo]


def _warmed(job: _Job, plan: runner.StudyPlan) -> runner.StudyPlan:
    """``plan`` with its warm start from what the storage holds now."""
    if not job.opts.warm_start or job.storage is None:
        return plan
    return replace(plan, warm=_warm(job.spec, plan.space, plan.name, job.storage))


def _run_here(job: _Job, bar) -> None:
    """The studies one after another, each warm-started just before it runs, so a shape can
    start from one tuned earlier in the same run."""
    for plan in job.plans:
        if runner._Stop.requested:
            break
        t0 = time.monotonic()
        try:
            if plan.sampler == "exhaustive":
                job.outcomes[plan.name] = exhaustive.run(plan)
            else:
                job.outcomes[plan.name] = runner.run(_warmed(job, plan), job.storage, progress=bar.trial)
        finally:
            job.spent[plan.name] = time.monotonic() - t0
        bar.study_done(plan.budget, plan.name, job.outcomes[plan.name])


def _run_pool(queue: list[_Job], jobs: int, bar) -> None:
    """The studies one after another, as without --jobs, each with ``jobs`` worker tasks
    (``workers.run_pool``: ``jobs`` processes take them; a worker that dies is replaced).

    A study is created (baseline and warm start enqueued) here just before its workers start
    on it, once the studies before it have finished: it is warm-started from them, as without
    --jobs, and a resumed run gives it the warm start one run would have.
    """
    from autotile.errors import StorageError
    from autotile.tune import storage as storage_mod

    began: dict = {}  # (spec, plan) -> when it began; its tasks' last end is its own end

    def begin(study) -> None:
        if runner._Stop.is_set():  # a stop keeps it from starting: not created (no stale warm start)
            return
        began[study] = time.monotonic()
        job = queue[study[0]]  # no exhaustive plan here: ``_check`` refused it with --jobs
        try:
            runner.prepare(_warmed(job, job.plans[study[1]]), job.storage)
        except storage_mod.storage_errors() as exc:
            raise StorageError(storage_mod.describe_failure(job.opts.storage, exc)) from None

    returned: dict = {}  # (spec, plan) -> what its finished tasks returned
    told = set()

    def tell(study) -> None:
        told.add(study)
        plan = queue[study[0]].plans[study[1]]
        bar.study_done(plan.budget, plan.name, _furthest(returned[study]))

    def done(key, outcome) -> None:
        # a study is over once all its tasks are: one stopped short (or never started) by a
        # signal used to be logged "done" as soon as any task of it returned
        if key[:2] in began:  # one study runs at a time: its span is its tuning time
            queue[key[0]].spent[queue[key[0]].plans[key[1]].name] = time.monotonic() - began[key[:2]]
        returned.setdefault(key[:2], []).append(outcome)
        if len(returned[key[:2]]) == jobs:
            tell(key[:2])

    tasks = [((n, i, w), (job.spec.file, job.spec.source, job.opts, i, w, (p.name, p.identity)))
             for n, job in enumerate(queue) for i, p in enumerate(job.plans) for w in range(jobs)]
    workers.run_pool(tasks, jobs, _worker, done, stage=lambda key: key[:2], begin=begin)
    for study in sorted(set(returned) - told):  # tasks a dead worker took, left unrun after a stop
        tell(study)


def _furthest(outcomes: list) -> runner.StudyOutcome | None:
    """Of one study's worker outcomes, the one that saw it furthest (None if none ran)."""
    ran = [oc for oc in outcomes if oc is not None]
    return max(ran, key=lambda oc: (oc.unique, oc.trials)) if ran else None


def _collect(job: _Job) -> list[runner.StudyPlan]:
    """Summarize from the storage every plan that did not run here but has trials there (the
    workers' studies, and on an interrupted resume the studies not reached this time); returns
    the plans that have never run (as this spec: a study another spec tuned is not its result)."""
    from autotile.tune import storage as storage_mod

    never = []
    for plan in job.plans:
        if plan.name in job.outcomes:
            continue
        try:
            study = _stored(plan.name, job.storage)
            if study is None or _foreign(study, plan):
                never.append(plan)
                continue
            job.outcomes[plan.name] = runner.summarize(study, plan, make_evaluator(plan.space, plan.objectives),
                                                       job.spent.get(plan.name, 0.0))
        except Exception as exc:  # noqa: BLE001 - re-raised unless the storage failed
            failure = storage_mod.storage_failure(exc, job.opts.storage, plan.name)
            if failure is None:
                raise
            raise failure from None
    return never


def _foreign(study: optuna.Study, plan: runner.StudyPlan) -> bool:
    """Whether ``study`` holds another spec's trials (its recorded identity is not the plan's): a
    peer tuned it meanwhile, and this run's workers were refused on it. It is not this spec's
    result. One without a record passed the check before the run (``_reconcile``)."""
    attrs = study.user_attrs
    return (plan.identity is not None and identity.IDENTITY_ATTR in attrs
            and identity.mismatch(attrs, plan.identity) is not None)


def _stored(name: str, storage) -> optuna.Study | None:
    """The study if it holds a finished trial (not only the enqueued baseline and warm start)."""
    if storage is None:
        return None
    try:
        study = optuna.load_study(study_name=name, storage=storage)
    except KeyError:
        return None
    return study if any(t.state.is_finished() for t in study.get_trials(deepcopy=False)) else None


def _finish(job: _Job) -> dict:
    """Verify, summarize and write the outputs of one spec's run. A study that never ran (the run
    was interrupted first) is listed under ``not_run``, not among the results."""
    spec, opts = job.spec, job.opts
    t0 = time.monotonic()
    never = _collect(job)
    results = [_result(spec, plan, job.outcomes[plan.name], opts) for plan in job.plans
               if plan.name in job.outcomes]
    _mark_chosen_units(results, spec.objectives)
    first = job.plans[0] if job.plans else None
    summary = {
        "schema": SUMMARY_SCHEMA,
        "op": spec.op.name,
        "hw": spec.hardware.name,
        "hw_hash": spec.hardware.content_hash(),
        # the file the run read, absolute as the spec's: the report's commands pass it as --hw (a
        # custom profile's name is no --hw, and an edited copy may keep a bundled one's name)
        "hw_path": spec.hardware.path and os.path.abspath(spec.hardware.path),
        "spec": os.path.abspath(spec.file),  # the report may be rendered from another folder
        "spec_hash": spec.content_hash(),
        "autotile_version": __version__,
        "sampler": first.sampler if first else spec.sampler,
        "seed": first.seed if first else spec.seed,
        "budget": first.budget if first else None,
        "timeout_s": spec.budget.timeout_s,
        "objectives": list(spec.objectives),
        "backend": spec.backend,
        "verify": opts.verify,  # --no-verify and --no-warm-start, for the report's Reproduce command
        "warm_start": opts.warm_start,
        "jobs": opts.jobs,  # the trials' order, and so the search, depends on it
        # none for the exhaustive sampler: it keeps no Optuna study (no journal is written)
        "storage": None if job.storage is None else
        opts.storage and redact(absolute_url(opts.storage)) or os.path.abspath(opts.out / "studies.journal"),
        "interrupted": runner._Stop.requested and (bool(never) or any(
            job.outcomes[p.name].interrupted for p in job.plans if p.name in job.outcomes)),
        # its studies' tuning and its verification (in a queue, not the other specs')
        "elapsed_s": round(sum(job.spent.values()) + time.monotonic() - t0, 2),
        "results": results,
        "not_run": [{"shape": p.space.shape, "dtype": p.space.dtype, "unit": p.space.unit, "study": p.name}
                    for p in never],
    }
    write_outputs(spec, summary, opts.out)
    return summary


def no_feasible_reason(oc: runner.StudyOutcome) -> str:
    """Why a study has no result: with its infeasible trials, their most frequent reason (the
    kernel check every trial failed, not only "no feasible configuration found"); a space the
    spec's constraints leave empty, counted exactly, says so (its study stopped at once)."""
    if oc.exhausted and oc.feasible_size == 0:
        ran = "no trial ran" if not oc.trials else f"it stopped after {count(oc.trials, 'trial')}"
        return (f"space exhausted: the space has no feasible tiling (the spec's constraints allow none of "
                f"its configurations, counted exactly as autotile space counts), so {ran}")
    text = "no feasible configuration found"
    if oc.infeasible and oc.infeasible_reasons:
        top = oc.infeasible_reasons[0]
        if oc.infeasible == oc.trials:
            which = "the one trial was" if oc.trials == 1 else f"all {oc.trials} trials were"
        else:
            which = f"{oc.infeasible} of {count(oc.trials, 'trial')} {'was' if oc.infeasible == 1 else 'were'}"
        varying = ", numbers varying" if top.get("wordings", 1) > 1 else ""
        text += (f": {which} infeasible; the most frequent reason "
                 f"({top['count']} of them{varying}): {top['reason']}")
    return text


def failed_verification_reason(g: GateResult) -> str:
    """Why a study whose every verified candidate failed has no result (and no table entry)."""
    n = len(g.rejected)
    if g.capped:
        which = (f"the {n} best of its {g.candidates} candidates (the gate stops after {g.limit} "
                 f"runs or {g.considered} candidates)")
    else:
        which = "its one candidate" if n == 1 else f"all {n} of its candidates"
    unrun = n - g.executed
    unrun = f", {unrun} of them not executed (see their reasons)" if unrun else ""
    return (f"FAILED verification: {which} disagreed with the reference{unrun} (the first: "
            f"{g.rejected[0][1].reason}); no table entry, so a lookup falls back for this shape")


def _result(spec: Spec, plan: runner.StudyPlan, oc: runner.StudyOutcome, opts: Options) -> dict:
    """The summary record of one study, after the verification gate."""
    sp = plan.space
    replay = spec.backend == "replay"
    rec = {"shape": sp.shape, "dtype": sp.dtype, "unit": sp.unit, "study": plan.name,
           # what the study's trials depend on: a report tells a study another spec tuned since by it
           "identity": identity.digest(plan.identity) if plan.identity is not None else None,
           "trials": oc.trials, "complete": oc.complete, "unique_configs": oc.unique,
           "simulated": oc.simulated, "infeasible": oc.infeasible, "failed": oc.failed,
           "infeasible_pct": round(100.0 * oc.infeasible / oc.trials, 1) if oc.trials else 0.0,
           "elapsed_s": round(oc.elapsed_s, 2), "interrupted": oc.interrupted, "cap_reached": oc.cap_reached,
           "space_exhausted": oc.exhausted,
           "history": oc.history, "history_trials": oc.history_trials}
    if oc.exhausted:
        rec["feasible_configs"] = oc.feasible_size
    if oc.members:
        rec["members"] = oc.members
    if drawn.differs(oc.drawn, plan.sampler, plan.seed):  # a resume under another sampler or seed
        rec["drawn_by"] = oc.drawn
    if oc.infeasible_reasons:
        rec["infeasible_reasons"] = oc.infeasible_reasons
    # the default heuristic (trial 0) whatever became of the study: a study that failed verification
    # still had one, and the report read its absence as "no feasible default"
    base_params, base_values = oc.baseline if oc.baseline is not None else (None, None)
    rec.update(baseline_params=base_params, baseline_values=base_values,
               baseline_cycles=(base_values or {}).get("cycles"), speedup_vs_baseline=None)
    if not oc.best:
        rec.update(params=None, cycles=None, verified=False, reason=no_feasible_reason(oc))
        return rec
    candidates = [b[0] for b in oc.best]
    chosen, rank, ver = candidates[0], 0, None
    rejected = []
    if opts.verify and not replay:
        kernel = registry.implementation(spec.op.name)
        # the error each candidate's study measured (on the gate's own inputs), when it measured one;
        # a study that trades accuracy holds each candidate to it, others may reject on it unrun
        recorded = [b[1].get("max_abs_error") for b in oc.best]
        metrics = (*plan.objectives, *dict(spec.limits))
        claimed = recorded if "max_abs_error" in metrics or "max_rel_error" in metrics else None
        g = gate(kernel, sp.shape, candidates, sp.dtype, spec.hardware, unit=sp.unit, options=spec.inputs,
                 claimed=claimed, recorded=recorded if any(e is not None for e in recorded) else None)
        rejected = [{"params": p, **v.to_json()} for p, v in g.rejected]
        rec["gate"] = g.to_json()
        if g.params is None:  # a tiling that computed wrong results must not reach the table
            rec.update(params=None, cycles=None, verified=False, rejected=rejected,
                       reason=failed_verification_reason(g))
            return rec
        chosen, rank, ver = g.params, g.rank, g.verification
        if ver.unverified:  # too large to execute, or out of memory: the entry says so (one line here too)
            print(f"autotile: warning: {plan.name.split('/', 2)[-1]}: best configuration NOT verified "
                  f"({ver.unverified}); its table entry carries verified: false", file=sys.stderr, flush=True)
    res = make_evaluator(sp, plan.objectives).score(chosen).result
    params, values, number = oc.best[rank]
    rec.update(params=chosen, trial=number, values=values, cycles=res.cycles, time_us=res.time_us,
               **{k: getattr(res, k, None) for k in ("pct_of_peak", "pct_of_bandwidth", "bound", "msprof")},
               verified=ver is not None and ver.passed,
               verification=ver.to_json() if ver else (dict(REPLAY_SKIP) if replay else None),
               rejected=rejected)
    # the baseline's values beside the pick's: with a second objective (an error) the speedup
    # can trade accuracy, and the printout and report say at what error
    if rec["baseline_cycles"]:
        rec["speedup_vs_baseline"] = rec["baseline_cycles"] / res.cycles
    if plan.sampler == "exhaustive" or oc.exhausted:  # every configuration measured: the best is the optimum
        # the report draws it as the optimum line and lists the gap to it
        # ``optimum`` is in the first objective's own unit (what ``history`` holds, so the report's
        # gap compares like with like); ``optimum_cycles`` is that configuration's cycles
        rec["optimum"] = oc.best[0][1].get(plan.objectives[0])
        rec["optimum_cycles"] = oc.best[0][1].get("cycles")
    if len(plan.objectives) > 1:
        rec["pareto"] = oc.pareto
    return rec


def _mark_chosen_units(results: list[dict], objectives=("cycles",)) -> None:
    """Per (shape, dtype): each unit's best cycles side by side, and which unit wins: the best
    by the objectives in order (ties on the first go to the second, as within a study), then
    the fewest cycles; a verified configuration before an unverified one."""
    groups: dict = {}
    for r in results:
        groups.setdefault((tuple(r["shape"].items()), r["dtype"]), []).append(r)
    for rs in groups.values():
        units = {r["unit"]: r.get("cycles") for r in rs}
        ok = [r for r in rs if r.get("cycles") is not None and r.get("verified", False)] or \
             [r for r in rs if r.get("cycles") is not None]
        best = min(ok, key=lambda r: (_unit_rank(r, objectives), r["cycles"])) if ok else None
        for r in rs:
            r["unit_cycles"] = units
            r["chosen"] = r is best


def _unit_rank(r: dict, objectives) -> tuple:
    """A result's objective values in order (its own ``cycles``/``time_us`` if ``values`` lacks them)."""
    vals = {k: r[k] for k in ("cycles", "time_us") if r.get(k) is not None}
    return runner.rank({**vals, **(r.get("values") or {})}, objectives)


def write_outputs(spec: Spec, summary: dict, out: Path) -> None:
    """summary.json, table.json and the report, written as one set (``atomic.output_set``): a
    file that cannot be written (a full disk) leaves every earlier output as it was, so table.json
    never exports other configurations than summary.json and the report show."""
    from autotile.tables.schema import build_table
    from autotile.tune.outputs import SUMMARY_DIGEST, summary_digest

    try:
        with output_set():
            written = json_bytes(summary)
            write_bytes(out / "summary.json", written)
            # so report and export can tell a table.json and summary.json that were not written together
            write_json(out / "table.json", {**build_table(spec, summary), SUMMARY_DIGEST: summary_digest(written)})
            try:
                from autotile.report import render
            except ImportError:
                return
            render.write_report(out)
    except OutputError as exc:
        raise OutputError(f"{exc}; the earlier outputs in {out} are kept as they were (none was replaced): once "
                          "there is room, rerun the same command to write them (its completed trials are saved)") from None


class _Progress:
    """A tqdm bar of the configurations measured, with the best so far and the rate. When
    stderr is not a terminal (a log file, CI), a plain line per finished study and at most one
    every ``LOG_EVERY_S`` seconds in between, instead of a frame per trial.

    Both count what was measured: a study that ends short of its budget (space exhausted, only
    infeasible trials, interrupted) takes what it did not measure off the total, so a study that
    measured nothing no longer reads "10/10 configs ... done". A study cut short by a stop reads
    "interrupted", one a stop kept from starting "not run (interrupted)".
    """

    LOG_EVERY_S = 10.0

    def __init__(self, total: int, quiet: bool, stream=None, studies: int = 1):
        self.bar = None
        self.log = None
        self.total = total
        self.studies = studies
        self.studies_done = 0
        self.done_before = 0
        self.current = 0
        self.last = time.monotonic()
        self.name = ""
        self.best = None
        if quiet:
            return
        stream = stream or sys.stderr
        if _is_tty(stream):
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="cfg", dynamic_ncols=True, leave=False, file=stream)
        else:
            self.log = stream

    def _line(self, what: str) -> None:
        best = f", best {self.best:,.0f}" if self.best is not None else ""
        print(f"autotile: {what}{best}", file=self.log, flush=True)
        self.last = time.monotonic()

    def trial(self, study, trial, done: int) -> None:
        if self.bar is None and self.log is None:
            return
        self.current = done
        try:
            best = study.best_trial.values[0] if len(study.directions) == 1 else None
        except ValueError:
            best = None
        self.name = study.study_name.split("/", 2)[-1]  # dtype/shape/unit: op and hw are the run's
        self.best = best
        if self.log is not None:
            if time.monotonic() - self.last >= self.LOG_EVERY_S:
                self._line(f"study {self.studies_done + 1}/{self.studies}: {self.name}, "
                           f"{count(done, 'config')} measured so far")
            return
        self.bar.n = self.done_before + done
        self.bar.set_description(self.name.split("/", 1)[-1][:40])
        if best is not None:
            self.bar.set_postfix_str(f"best {best:,.0f}")
        self.bar.refresh()

    def study_done(self, budget: int, name: str = "", outcome=None) -> None:
        """A study ended: ``outcome`` (a StudyOutcome) says what it measured; None, that a stop
        kept it from starting."""
        measured = 0 if outcome is None else min(budget, outcome.unique)
        self.total -= budget - measured
        self.done_before += measured
        self.studies_done += 1
        self.current = 0
        name = name.split("/", 2)[-1] if name else self.name or "a study"
        if self.log is not None:
            if outcome is None:
                what = f"not run (interrupted): {name}"
            else:
                state = "interrupted" if getattr(outcome, "interrupted", False) else "done"
                what = f"{state}: {name}, {_measured(outcome)}"
            self._line(f"study {self.studies_done}/{self.studies} {what}")
            self.best = None
        if self.bar is not None:
            self.bar.total = self.total
            self.bar.n = self.done_before
            self.bar.refresh()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _measured(oc: runner.StudyOutcome) -> str:
    """What a finished study measured, for the progress line: ``12 configs measured``, or
    ``no config measured (28 trials, all infeasible)``."""
    if oc.unique:
        return f"{count(oc.unique, 'config')} measured"
    if oc.trials and oc.infeasible == oc.trials:
        return f"no config measured ({count(oc.trials, 'trial')}, {'all ' if oc.trials > 1 else ''}infeasible)"
    return f"no config measured ({count(oc.trials, 'trial')})"


def _is_tty(stream) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False
