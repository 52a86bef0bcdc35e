"""``autotile tune SPEC``: the main job (studies, verification, table, report)."""

from __future__ import annotations

import os
from pathlib import Path

from autotile.atomic import refuse_input
from autotile.cli.common import MAX_JOBS, MAX_SEED, given, int_in, nonempty, print_json, spec_inputs
from autotile.errors import InputError
from autotile.report.fmt import detour, trade
from autotile.tune.drawn import resumed_note
from autotile.words import count

HELP = "tune a spec's tiling parameters: one Optuna study per shape, dtype and unit"


def add_arguments(p) -> None:
    p.add_argument("spec", nargs="+", type=given("a spec file"),
                   help="spec files, or bundled studies by name, e.g. matmul (several: a queue)")
    p.add_argument("--trials", type=int, help="budget of distinct feasible configurations per study")
    p.add_argument("--sampler", help="tpe, random, cmaes, gp, nsga2, portfolio or exhaustive (default: the spec's)")
    p.add_argument("--seed", type=int, help="sampler seed (default: the spec's)")
    p.add_argument("--jobs", type=int, default=1, help="worker processes in all (default 1)")
    p.add_argument("--storage", help="journal:FILE, sqlite:///FILE or postgresql://... (default: a journal file in --out)")
    p.add_argument("--out", help="output folder (default results/<spec name>; with several specs, "
                                 "OUT/<spec name>)")
    p.add_argument("--no-warm-start", action="store_true", help="do not seed studies from the nearest tuned shape")
    p.add_argument("--no-verify", action="store_true", help="skip the execute-mode verification gate")
    p.add_argument("--restart", action="store_true", help="delete stored studies whose spec has changed and "
                                                          "tune them afresh (without it, such a rerun is refused)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr (neither the bar nor, off a terminal, its lines)")
    p.add_argument("--json", action="store_true", help="print the summary as JSON (no progress on stderr, as with --quiet)")


def run(args) -> int:
    from autotile.space import load_spec
    from autotile.space.loader import MAX_TRIALS
    from autotile.tune.driver import Options, default_out, interrupted_code, tune_many
    from autotile.tune.storage import absolute_url

    int_in(args.trials, "--trials", 1, MAX_TRIALS)
    int_in(args.jobs, "--jobs", 1, MAX_JOBS)
    int_in(args.seed, "--seed", 0, MAX_SEED)
    nonempty(args.out, "--out", "a folder name")
    nonempty(args.storage, "--storage", "a storage URL")
    specs = [load_spec(path) for path in args.spec]
    stems = [Path(s.file).stem for s in specs]
    if len(set(stems)) < len(stems):
        first = next(s for s in specs if stems.count(Path(s.file).stem) > 1)
        other = next(s for s in specs[specs.index(first) + 1:] if Path(s.file).stem == Path(first.file).stem)
        if os.path.realpath(first.file) == os.path.realpath(other.file):
            raise InputError(f"tune: {first.file} is given twice; expected each spec once")
        raise InputError(f"tune: {first.file} and {other.file} share a file name; their output folders would "
                         "collide (rename one, or tune them separately)")
    opts = []
    for spec in specs:
        if args.out is not None:
            out = Path(args.out) / Path(spec.file).stem if len(specs) > 1 else Path(args.out)
        else:
            out = default_out(spec)
        opts.append(Options(trials=args.trials, sampler=args.sampler, seed=args.seed, jobs=args.jobs,
                            storage=absolute_url(args.storage), out=out, quiet=args.quiet or args.json,
                            warm_start=not args.no_warm_start, verify=not args.no_verify,
                            restart=args.restart))
    for o in opts:
        _not_an_input(o, specs)
    summaries = tune_many(specs, opts, args.jobs, args.quiet or args.json)
    if args.json:
        slim = [s | {"results": [{k: v for k, v in r.items() if k not in ("history", "history_trials")}
                                 for r in s["results"]]}
                for s in summaries]
        print_json(slim[0] if len(slim) == 1 else slim)
    else:
        print("\n".join(format_summary(s, o.out) for s, o in zip(summaries, opts)))
    return interrupted_code() if any(s["interrupted"] for s in summaries) else 0


def _not_an_input(opts, specs) -> None:
    """Refuse a run whose outputs (or study storage) would replace or delete a file it reads: a
    spec, its profile or measurements (e.g. a spec named summary.json in --out, or saved as a
    trace's name in --out/traces/, or --storage journal:SPEC)."""
    from autotile.tune.outputs import OUTPUT_FILES, report_files
    from autotile.tune.storage import JOURNAL_NAME, sqlite_file

    inputs = {}
    for spec in specs:
        inputs.update(spec_inputs(spec))
    url = opts.storage or ""
    store = url[len("journal:"):] if url.startswith("journal:") else (sqlite_file(url) if url else None)
    refuse_input("--storage", store, inputs)
    if store is not None:
        inputs[f"the study storage {store}"] = store
    outputs = [opts.out / name for name in OUTPUT_FILES] + report_files(opts.out)
    if not opts.storage:
        outputs.append(opts.out / JOURNAL_NAME)
    for path in outputs:
        refuse_input("--out", path, inputs, "expected an output folder that holds none of the run's inputs")


def format_summary(summary: dict, out: Path) -> str:
    """A short human summary: one line per study."""
    from autotile.hardware.profile import label_of

    if summary["sampler"] == "exhaustive":
        budget = "none: every feasible configuration"
    elif summary.get("timeout_s") is None:
        budget = summary["budget"]
    else:
        budget = f"{count(summary['budget'], 'config')} or {summary['timeout_s']:g} s per study"
    hw = label_of(summary["hw"], summary.get("hw_hash"))  # an edited copy of a bundled profile says so
    resumed = resumed_note(summary)  # trials another sampler or seed drew, kept by a resume
    lines = [f"{summary['op']} on {hw} ({summary['sampler']}, budget {budget}, "
             f"seed {summary['seed']}{'; ' + resumed if resumed else ''}): {summary['elapsed_s']:.1f} s"]
    for r in summary["results"]:
        shape = ",".join(f"{k}={v}" for k, v in r["shape"].items())
        if r.get("cycles") is None:
            lines.append(f"  {shape} {r['dtype']} {r['unit']}: {r.get('reason')}")
            continue
        speed = f"{r['speedup_vs_baseline']:.2f}x vs baseline" if r.get("speedup_vs_baseline") else "no baseline"
        traded = trade(r, summary.get("objectives")) if r.get("speedup_vs_baseline") else ""
        if traded:  # a speedup may cost accuracy
            speed += f" at {traded}"
        why = (r.get("verification") or {}).get("unverified")  # too large to execute, out of memory
        ver = "verified" if r.get("verified") else (
            "not verified (replay)" if (r.get("verification") or {}).get("skipped") else
            f"NOT verified ({why})" if why else "NOT verified")
        if detour(r, summary.get("objectives")):  # faster configurations computed wrong results
            ver += f" ({detour(r, summary.get('objectives'))})"
        peak = f"{r['pct_of_peak']:.1f}% of peak" if r.get("pct_of_peak") is not None \
            else f"{r['time_us']:,.3f} us"
        if (r.get("pct_of_bandwidth") or 0) > (r.get("pct_of_peak") or 0):  # left of the ridge point
            peak += f" ({r['pct_of_bandwidth']:.1f}% of HBM bandwidth, its roof)"
        skipped = f" (+{count(r['infeasible'], 'infeasible proposal')} skipped)" if r["infeasible"] else ""
        short = ", interrupted short of the budget" if r.get("interrupted") else ""
        if r.get("cap_reached"):
            short = f", trial cap reached ({count(r['trials'], 'trial')}) short of the budget {summary['budget']}"
        elif r.get("space_exhausted"):
            short = (f", space exhausted ({_all_configs(r.get('feasible_configs'))} the spec allows "
                     f"{'was' if r.get('feasible_configs') == 1 else 'were'} tried) short of the budget {summary['budget']}")
        lines.append(f"  {shape} {r['dtype']} {r['unit']}: {r['cycles']:,.0f} cycles, {peak}, "
                     f"{speed}, {count(r['unique_configs'], 'config')} measured{skipped}{short}, {ver}")
    for r in summary.get("not_run", []):
        lines.append(f"  {','.join(f'{k}={v}' for k, v in r['shape'].items())} {r['dtype']} {r['unit']}: "
                     "not run (interrupted)")
    lines.append(f"outputs in {out}/ (summary.json, table.json, report.html)")
    return "\n".join(lines)


def _all_configs(n) -> str:
    """``all 12 configurations``, or ``the one configuration``."""
    return "the one configuration" if n == 1 else f"all {n} configurations"
