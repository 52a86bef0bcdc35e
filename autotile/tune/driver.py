"""``autotile tune``: every (shape, dtype, unit) study of a spec, then verification and outputs.

The flow: plan one study per (shape, dtype, unit) with the baseline enqueued as trial 0 and a
warm start from the nearest tuned shape; run the studies (in this process, or with N worker
processes sharing the storage); verify the best configurations in execute mode; write
``summary.json``, ``table.json`` and the report into the output folder, atomically.
"""

from __future__ import annotations

import math
import signal
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

import optuna

from autotile import __version__
from autotile.atomic import write_json
from autotile.kernels import registry
from autotile.space.spec import Spec, load_spec
from autotile.tune import exhaustive, runner
from autotile.tune.evaluate import make_evaluator
from autotile.tune.naming import parse_study_name, study_name
from autotile.tune.storage import make_storage
from autotile.tune.verify import gate

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


def default_out(spec: Spec) -> Path:
    return Path("results") / Path(spec.file).stem


def plans(spec: Spec, opts: Options, storage) -> list[runner.StudyPlan]:
    """One plan per (shape, dtype, unit), warm-started from the nearest tuned shape.

    The baseline is the kernel's default tiling; replayed specs have none.
    """
    kernel = registry.implementation(spec.op.name) if spec.backend != "replay" else None
    budget = opts.trials or spec.budget.trials or 100
    out = []
    for shape in spec.shapes:
        for dtype in spec.dtypes:
            for unit in spec.units:
                space = spec.space(shape, dtype, unit)
                name = study_name(spec.op.name, spec.hardware.name, dtype, space.shape, unit)
                base = _baseline(kernel, space) if kernel is not None else None
                warm = _warm(spec, space, name, storage) if opts.warm_start else ()
                out.append(runner.StudyPlan(
                    name=name, space=space, objectives=spec.objectives,
                    sampler=opts.sampler or spec.sampler, seed=opts.seed if opts.seed is not None else spec.seed,
                    budget=budget, timeout_s=spec.budget.timeout_s, baseline=base, warm=warm))
    return out


def _baseline(kernel, space) -> dict | None:
    """The kernel's default tiling in ``space``, or None if it is not feasible there."""
    base = kernel.default_params(space.shape, space.dtype, space.spec.hardware, space.unit)
    base = {k: v for k, v in base.items() if k in space.names}
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
    done.sort(key=lambda t: t.values[0])
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


def _install_sigint() -> None:
    def handler(signum, frame):
        if runner._Stop.requested:
            raise KeyboardInterrupt
        runner._Stop.requested = True

    signal.signal(signal.SIGINT, handler)


def _worker(spec_path: str, opts: Options, index: int, worker: int) -> runner.StudyOutcome:
    """One worker process on one study (re-loads the spec: plans hold compiled expressions)."""
    _install_sigint()
    spec = load_spec(spec_path)
    storage = make_storage(opts.storage, opts.out)
    plan = plans(spec, replace(opts, warm_start=False), storage)[index]
    return runner.run(plan, storage, worker=worker)


def tune(spec: Spec, opts: Options) -> dict:
    """Run every study of ``spec``; returns the summary (also written to ``summary.json``)."""
    t0 = time.monotonic()
    runner._Stop.requested = False
    _install_sigint()
    storage = make_storage(opts.storage, opts.out) if (opts.sampler or spec.sampler) != "exhaustive" else None
    study_plans = plans(spec, opts, storage)
    outcomes: dict[str, runner.StudyOutcome] = {}
    bar = _Progress(sum(p.budget for p in study_plans), opts.quiet)
    try:
        if study_plans and study_plans[0].sampler == "exhaustive":
            for plan in study_plans:
                outcomes[plan.name] = exhaustive.run(plan)
                bar.advance(plan.budget, outcomes[plan.name])
        elif opts.jobs <= 1:
            for plan in study_plans:
                if runner._Stop.requested:
                    break
                outcomes[plan.name] = runner.run(plan, storage, progress=bar.trial)
                bar.study_done(plan.budget)
        else:
            with ProcessPoolExecutor(max_workers=opts.jobs) as pool:
                futures = [(i, pool.submit(_worker, spec.file, opts, i, w))
                           for i in range(len(study_plans)) for w in range(opts.jobs)]
                for i, fut in futures:
                    fut.result()
                    plan = study_plans[i]
                    if plan.name not in outcomes:
                        bar.study_done(plan.budget)
                    outcomes[plan.name] = True
            for plan in study_plans:
                study = optuna.load_study(study_name=plan.name, storage=storage)
                outcomes[plan.name] = runner.summarize(study, plan, make_evaluator(plan.space, plan.objectives), 0.0)
    finally:
        bar.close()
    results = [_result(spec, plan, outcomes[plan.name], opts) for plan in study_plans if plan.name in outcomes]
    _mark_chosen_units(results)
    summary = {
        "schema": "autotile.summary/1",
        "op": spec.op.name,
        "hw": spec.hardware.name,
        "hw_hash": spec.hardware.content_hash(),
        "spec": str(spec.file),
        "spec_hash": spec.content_hash(),
        "autotile_version": __version__,
        "sampler": study_plans[0].sampler if study_plans else spec.sampler,
        "seed": study_plans[0].seed if study_plans else spec.seed,
        "budget": study_plans[0].budget if study_plans else None,
        "objectives": list(spec.objectives),
        "storage": opts.storage or str(opts.out / "studies.journal"),
        "interrupted": runner._Stop.requested,
        "elapsed_s": round(time.monotonic() - t0, 2),
        "results": results,
    }
    write_outputs(spec, summary, opts.out)
    return summary


def _result(spec: Spec, plan: runner.StudyPlan, oc: runner.StudyOutcome, opts: Options) -> dict:
    """The summary record of one study, after the verification gate."""
    sp = plan.space
    replay = spec.backend == "replay"
    rec = {"shape": sp.shape, "dtype": sp.dtype, "unit": sp.unit, "study": plan.name,
           "trials": oc.trials, "complete": oc.complete, "unique_configs": oc.unique,
           "simulated": oc.simulated, "infeasible": oc.infeasible, "failed": oc.failed,
           "infeasible_pct": round(100.0 * oc.infeasible / oc.trials, 1) if oc.trials else 0.0,
           "elapsed_s": round(oc.elapsed_s, 2), "history": oc.history}
    if not oc.best:
        rec.update(params=None, cycles=None, verified=False, reason="no feasible configuration found")
        return rec
    candidates = [b[0] for b in oc.best]
    chosen, rank, ver = candidates[0], 0, None
    rejected = []
    if opts.verify and not replay:
        kernel = registry.implementation(spec.op.name)
        g = gate(kernel, sp.shape, candidates, sp.dtype, spec.hardware, unit=sp.unit, options=spec.inputs)
        rejected = [{"params": p, **v.to_json()} for p, v in g.rejected]
        if g.params is not None:
            chosen, rank, ver = g.params, g.rank, g.verification
    res = make_evaluator(sp, plan.objectives).score(chosen).result
    params, values, number = oc.best[rank]
    rec.update(params=chosen, trial=number, values=values, cycles=res.cycles, time_us=res.time_us,
               **{k: getattr(res, k, None) for k in ("pct_of_peak", "pct_of_bandwidth", "bound", "msprof")},
               verified=ver is not None and ver.passed,
               verification=ver.to_json() if ver else (dict(REPLAY_SKIP) if replay else None),
               rejected=rejected)
    if oc.baseline is not None:
        base_cycles = oc.baseline[1].get("cycles")
        rec.update(baseline_params=oc.baseline[0], baseline_cycles=base_cycles,
                   speedup_vs_baseline=(base_cycles / res.cycles) if base_cycles else None)
    else:
        rec.update(baseline_params=None, baseline_cycles=None, speedup_vs_baseline=None)
    if len(plan.objectives) > 1:
        rec["pareto"] = oc.pareto
    return rec


def _mark_chosen_units(results: list[dict]) -> None:
    """Per (shape, dtype): each unit's best cycles side by side, and which unit wins."""
    groups: dict = {}
    for r in results:
        groups.setdefault((tuple(r["shape"].items()), r["dtype"]), []).append(r)
    for rs in groups.values():
        units = {r["unit"]: r.get("cycles") for r in rs}
        ok = [r for r in rs if r.get("cycles") is not None and r.get("verified", False)] or \
             [r for r in rs if r.get("cycles") is not None]
        best = min(ok, key=lambda r: r["cycles"]) if ok else None
        for r in rs:
            r["unit_cycles"] = units
            r["chosen"] = r is best


def write_outputs(spec: Spec, summary: dict, out: Path) -> None:
    """summary.json, table.json and the report, each written atomically."""
    from autotile.tables.schema import build_table

    write_json(out / "summary.json", summary)
    write_json(out / "table.json", build_table(spec, summary))
    try:
        from autotile.report import render
    except ImportError:
        return
    render.write_report(out)


class _Progress:
    """A tqdm bar over all studies' budgets with the best so far and trials/s."""

    def __init__(self, total: int, quiet: bool):
        self.bar = None
        self.done_before = 0
        self.current = 0
        if not quiet:
            from tqdm import tqdm

            self.bar = tqdm(total=total, unit="cfg", dynamic_ncols=True, leave=False)

    def trial(self, study, trial, done: int) -> None:
        if self.bar is None:
            return
        self.current = done
        self.bar.n = self.done_before + done
        try:
            best = study.best_trial.values[0] if len(study.directions) == 1 else None
        except ValueError:
            best = None
        self.bar.set_description(study.study_name.split("/", 3)[-1][:40])
        if best is not None:
            self.bar.set_postfix_str(f"best {best:,.0f}")
        self.bar.refresh()

    def study_done(self, budget: int) -> None:
        self.done_before += budget
        if self.bar is not None:
            self.bar.n = self.done_before
            self.bar.refresh()

    def advance(self, budget, outcome) -> None:
        self.study_done(budget)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
