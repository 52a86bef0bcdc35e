"""``autotile decide OP --shape n=300 [--dtype fp16]``: the learned unit choice."""

from __future__ import annotations

from autotile.cli.common import Merged, Once, check_chip_dtype, parse_shape, print_json
from autotile.cli.selector_args import kv, parse_inputs, trained_options, untrained
from autotile.errors import InputError
from autotile.hardware import load_profile
from autotile.kernels import registry
from autotile.models.crossover import grid_restriction

HELP = "which execution unit the trained model picks for a shape (run `autotile train` first)"


def add_arguments(p) -> None:
    p.add_argument("op")
    p.add_argument("--shape", required=True, action=Once, help="e.g. n=300")
    p.add_argument("--dtype", default="fp16")
    p.add_argument("--data", default="gm", choices=("gm", "on_chip"),
                   help="where the inputs live: gm (a real kernel, default) or on_chip (the published table)")
    p.add_argument("--inputs", default="", action=Merged,
                   help="the op's options as a spec's inputs: has them, e.g. kind=add; the model knows the defaults only")
    p.add_argument("--hw", default=None, help="hardware profile name or path")
    p.add_argument("--models", default=None, help="cache folder given to `autotile train -o`")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    from autotile.models import store

    try:
        info = registry.get(args.op)
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from None
    shape = parse_shape(args.shape)
    if set(shape) != set(info.dims):
        raise InputError(f"--shape: {args.op} needs positive {', '.join(info.dims)}, got {args.shape!r}")
    if args.dtype not in info.dtypes:
        raise InputError(f"op {args.op} has no dtype {args.dtype!r} (has {', '.join(info.dtypes)})")
    if args.data not in info.placements:
        raise InputError(f"--data: op {args.op} has no on-chip framing (its kernel always reads its inputs from "
                         f"GM); use --data gm")
    _has_selector(args.op)
    why = untrained(args.op, parse_inputs(args.op, args.inputs, "use --data"))
    if why:
        raise InputError(f"--inputs: {why}; compare the units for them with `autotile crossover {args.op} "
                         f"--inputs {args.inputs}` (simulated)")
    hw = load_profile(args.hw)
    check_chip_dtype(hw, args.dtype)
    sel = store.load_selector(args.op, hw, store.given_dir(args.models))
    unit, cycles = sel.decide(shape, args.dtype, args.data, hw=hw)
    options = trained_options(args.op)
    out = {"op": args.op, "shape": shape, "dtype": args.dtype, "data": args.data, "inputs": options, "unit": unit,
           "predicted_cycles": {u: round(c, 3) for u, c in sorted(cycles.items(), key=lambda item: item[1])},
           "excluded": {**sel.unrunnable(args.dtype, hw), **sel.unfit(shape, args.dtype, args.data, hw)},
           "confidence": _confidence(sel.confidence(cycles, args.data, shape)),
           "compared": _compared(args.op), "warning": None}
    far = sel.outside(shape, args.data)
    if far:
        out["warning"] = f"{far}; the prediction extrapolates"
    if args.json:
        print_json(out)
    else:
        pred = ", ".join(f"{u} {c:.1f}" for u, c in out["predicted_cycles"].items())
        print(f"{args.op} {args.dtype} {args.shape}{kv(options)}: {unit} (predicted cycles: {pred})")
        print(f"  {_sure(out['confidence'])}")
        if grid_restriction(args.op):
            print(f"  compared: {out['compared']}")
        for u, problem in out["excluded"].items():
            print(f"  {u} excluded: {problem}")
        if far:
            print(f"  warning: {out['warning']}")
    return 0


def _confidence(c: dict) -> dict:
    """``UnitSelector.confidence`` in percent, as decide prints it."""
    def pct(x):
        return None if x is None else round(100 * x, 2)

    return {"runner_up": c["runner_up"], "margin_pct": pct(c["margin"]), "error_pct": pct(c["error"]),
            "error_from": c["error_from"], "close_call": c["close_call"], "extrapolated": c["extrapolated"]}


def _sure(c: dict) -> str:
    """One line: the margin over the runner-up, against the model's error."""
    if c["runner_up"] is None and c["extrapolated"]:
        return ("close call: extrapolated: no other unit to compare, and the shape lies outside the training "
                "shapes, where the model's error is unknown: simulate to know the cycles")
    if c["runner_up"] is None:
        return "no other unit to compare"
    err = f"{c['error_pct']:.1f}%" + ("" if c["error_from"] == "held-out" else
                                      ", a default: the model records no held-out error")
    if c["extrapolated"]:
        return (f"close call: extrapolated: {c['margin_pct']:.1f}% ahead of {c['runner_up']} as predicted, but the "
                f"shape lies outside the training shapes, where the model's error ({err} inside them) is unknown: "
                f"{c['runner_up']} may be faster; simulate both to know")
    if c["close_call"]:
        return (f"close call: {c['margin_pct']:.1f}% ahead of {c['runner_up']}, within the model's error for the "
                f"two ({err}): {c['runner_up']} may be faster")
    return f"margin: {c['margin_pct']:.1f}% ahead of {c['runner_up']}, beyond the model's error for the two ({err})"


def _compared(op: str) -> str:
    """What each unit's predicted cycles stand for: its best tiling on the grid the model is trained
    on, and the choices that grid leaves out (sigmoid: the exact variant only, though a Scalar
    lut_nearest runs n = 3 in 12 cycles against the Vector's 14)."""
    why = grid_restriction(op)
    return "each unit at its best tiling on the simulator's grid" + (f"; {why}" if why else "")


def _has_selector(op: str) -> None:
    """An InputError for an op ``train`` builds no unit selector for (retraining would not help)."""
    from autotile.models.training import trainable

    if not trainable(op)["units"]:
        covered = [o for o in registry.OPS if trainable(o)["units"]]
        raise InputError(f"{op} has no unit selector (decide covers the 1-D ops with several units: "
                         f"{', '.join(covered)})")
