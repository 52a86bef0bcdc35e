"""``autotile train [--ops ...] [--cost ...] [-o DIR]``: build the datasets and fit the learned models.

By default: the unit selector of every 1-D op with several units and matmul's cost regressor
(the one ``autotile lookup --models`` falls back to). ``--cost all`` adds the cost regressors
of the other ops with a study spec; naming ops with ``--ops`` trains everything they have.
"""

from __future__ import annotations

import sys
import time

from autotile.cli.common import MAX_JOBS, int_in, nonempty, print_json
from autotile.errors import InputError
from autotile.hardware import load_profile

HELP = "build datasets on the simulator and train the unit selectors and cost regressors"


def add_arguments(p) -> None:
    p.add_argument("--ops", default=None, help="comma-separated ops (default: every 1-D op with several units, "
                                               "for its unit selector, and matmul, for its cost regressor)")
    p.add_argument("--cost", default=None, help="cost regressors to train: all, none or comma-separated ops "
                                                "(default: matmul, or every op named by --ops; an op named here but not in --ops is trained too, for its cost regressor only); all of them "
                                                "take about 2.5 minutes on 2 cores instead of 1.5 (roi_align's "
                                                "simulations are slow)")
    p.add_argument("-o", "--out", default=None, help="cache folder for datasets and models (default "
                                                     "$AUTOTILE_CACHE or ~/.cache/autotile)")
    p.add_argument("--hw", default=None, help="hardware profile name or path")
    p.add_argument("--rebuild", action="store_true", help="rebuild the datasets even if the cache is current")
    p.add_argument("-j", "--jobs", type=int, default=None, help="worker processes, each training whole models "
                                                                "(default: one per available core; 1: none)")
    p.add_argument("--json", action="store_true", help="print JSON")


def _names(text, flag):
    """The op names of a comma-separated flag value; an empty list is an error, not 'all'."""
    names = [o.strip() for o in text.split(",") if o.strip()]
    if not names:
        raise InputError(f"{flag}: expected comma-separated op names, got {text!r}")
    return names


def run(args) -> int:
    from autotile.models import training

    nonempty(args.out, "-o", "a folder name")
    cost = args.cost if args.cost in (None, "all", "none") else _names(args.cost, "--cost")
    ops, cost_ops = training.selection(_names(args.ops, "--ops") if args.ops is not None else None, cost)
    hw = load_profile(args.hw)

    def log(op, entry):
        if not args.json:
            for kind, e in entry.items():
                if isinstance(e, dict) and not e.get("interrupted"):
                    print(f"{op} {kind}: {e['rows']} rows ({'built' if e['rebuilt'] else 'cached'} "
                          f"{e['data_s']}s, fit {e['fit_s']}s) -> {e['model']}", file=sys.stderr)

    if args.jobs is not None and args.jobs < 1:
        raise InputError(f"--jobs: expected a positive integer, got {args.jobs}")
    int_in(args.jobs, "--jobs", 1, MAX_JOBS)
    # a file in the way (or a read-only folder) is found now, not after minutes of datasets
    training.check_outputs(ops, hw, args.out, cost=cost_ops)
    t0 = time.monotonic()
    summary = training.train(ops, hw, args.out, cost=cost_ops, rebuild=args.rebuild, log=log, jobs=args.jobs)
    out = {"hw": hw.label, "profile_hash": hw.content_hash(), "ops": summary,
           "seconds": round(time.monotonic() - t0, 2), "model_seconds": round(training.total_seconds(summary), 2)}
    if training.interrupted(summary):
        return _interrupted(summary, out, args.json)
    if args.json:
        print_json(out)
    else:
        print(f"trained {', '.join(ops)} in {out['seconds']}s ({out['model_seconds']}s summed over the models)")
    return 0


def _interrupted(summary: dict, out: dict, as_json: bool) -> int:
    """Say what a stopped run kept (whole files) and what it did not train; 130 (SIGINT) or 143."""
    from autotile.models import training
    from autotile.tune.driver import interrupted_code

    kept = training.written(summary)
    cut = [f"{op} {kind}" for op, v in summary.items() for kind, e in v.items()
           if isinstance(e, dict) and e.get("interrupted")]
    if as_json:
        print_json({**out, "interrupted": True, "kept": kept})
    print(f"autotile: interrupted: not trained: {', '.join(cut)}; "
          f"{'written, whole: ' + ', '.join(kept) if kept else 'nothing written'} (rerun the command to "
          "finish: it reuses the finished datasets)", file=sys.stderr)
    return interrupted_code()
