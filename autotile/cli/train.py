"""``autotile train [--ops ...] [-o DIR]``: build the datasets and fit the learned models."""

from __future__ import annotations

import sys

from autotile.cli.common import print_json
from autotile.errors import InputError
from autotile.hardware import load_profile
from autotile.kernels import registry

HELP = "build datasets on the simulator and train the unit selector and cost regressor"


def add_arguments(p) -> None:
    p.add_argument("--ops", default=None, help="comma-separated ops (default: every op with something to train)")
    p.add_argument("-o", "--out", default=None, help="cache folder for datasets and models (default "
                                                     "$AUTOTILE_CACHE or ~/.cache/autotile)")
    p.add_argument("--hw", default=None, help="hardware profile name or path")
    p.add_argument("--rebuild", action="store_true", help="rebuild the datasets even if the cache is current")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    from autotile.models import training

    if args.ops:
        ops = [o.strip() for o in args.ops.split(",") if o.strip()]
        for op in ops:
            try:
                registry.get(op)
            except KeyError as exc:
                raise InputError(f"--ops: {exc.args[0]}") from None
            if not any(training.trainable(op).values()):
                raise InputError(f"--ops: nothing to train for {op} (no kernel module, or one unit and no "
                                 f"studies/{op}.yaml)")
    else:
        ops = [op for op in registry.OPS if any(training.trainable(op).values())]
    hw = load_profile(args.hw)

    def log(op, entry):
        if not args.json:
            for kind, e in entry.items():
                if isinstance(e, dict):
                    print(f"{op} {kind}: {e['rows']} rows ({'built' if e['rebuilt'] else 'cached'} "
                          f"{e['data_s']}s, fit {e['fit_s']}s) -> {e['model']}", file=sys.stderr)

    summary = training.train(ops, hw, args.out, rebuild=args.rebuild, log=log)
    out = {"hw": hw.name, "profile_hash": hw.content_hash(), "ops": summary,
           "seconds": round(training.total_seconds(summary), 2)}
    if args.json:
        print_json(out)
    else:
        print(f"trained {', '.join(ops)} in {out['seconds']}s")
    return 0
