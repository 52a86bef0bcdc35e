"""``autotile simulate SPEC --shape ...``: one configuration through the simulator."""

from __future__ import annotations

import math
import sys

from autotile.atomic import check_output_file, refuse_input
from autotile.cli.common import (
    Merged,
    Once,
    check_dtype,
    given,
    interruptible,
    nonempty,
    parse_kv,
    parse_shape,
    print_json,
    spec_inputs,
)
from autotile.errors import InputError

HELP = "simulate one tiling of a spec's operator (default: the heuristic tiling)"
TRACE_CAPACITY = 2_000_000  # operations per core class: a whole long schedule would take gigabytes
SLOW_S = 0.5  # a simulation estimated longer runs in a child process that SIGINT stops at once
NOTE_S = 10.0  # one estimated longer is announced on stderr first: it ran for minutes without a word


def add_arguments(p) -> None:
    p.add_argument("spec", type=given("a spec file"), help="a spec file, or a bundled study's name (e.g. matmul)")
    p.add_argument("--shape", required=True, action=Once, help="e.g. m=1024,n=2048,k=512 (one shape)")
    p.add_argument("--dtype", help="default: the spec's first dtype")
    p.add_argument("--unit", help="default: the spec's first unit that computes the dtype on its chip")
    p.add_argument("--set", dest="set_", default="", action=Merged,
                   help="params, e.g. base_m=128,base_n=256 (others: the default tiling; may be repeated, "
                        "a param given twice must have one value). A value of the "
                        "wrong kind (not an integer, or beyond 2**62, for an integer param, not one of a choice "
                        "param's choices) is an error (exit 2); an integer outside its domain, or a constraint "
                        "it breaks, is answered as infeasible (exit 0)")
    p.add_argument("--trace", help="write a Chrome trace / Perfetto JSON file of the schedule (its first "
                                   f"{TRACE_CAPACITY:,} operations per core class; a longer schedule's trace "
                                   "is cut there, with a warning on stderr and the figures in its otherData)")
    p.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args) -> int:
    from autotile.kernels import registry
    from autotile.sim.result import infeasible
    from autotile.sim.trace import coverage, write_chrome_trace
    from autotile.space import load_spec

    nonempty(args.trace, "--trace")
    spec = load_spec(args.spec)
    refuse_input("--trace", args.trace, spec_inputs(spec))  # the trace would replace the file it ran
    if args.trace is not None:
        check_output_file("--trace", args.trace)  # before the simulation, not after it
    shape = parse_shape(args.shape)
    check_dtype(spec, args.dtype)
    unit = args.unit or next(iter(spec.units_for(args.dtype or spec.dtypes[0])), None)  # None: the error says why
    space = spec.space(shape, args.dtype, unit)
    if (bad := spec.op.shape_problem(space.shape)) is not None:  # before the time note: it will not run
        raise InputError(bad[1], field=f"shape.{bad[0]}")
    space.require_evaluable()
    spec.require_kernel_params(space.unit)
    try:
        kernel = registry.implementation(spec.op.name)
    except InputError as exc:
        raise exc.located(file=args.spec) from None
    params = space.default_tiling()
    given = parse_kv(args.set_, what="--set")
    unknown = [k for k in given if k not in space.names]
    if unknown:
        from autotile.yamlsrc import suggest

        raise InputError(f"--set: unknown param {unknown[0]!r} of {spec.op.name} ({space.unit})"
                         + suggest(unknown[0], space.names))
    params.update({k: _typed(space.param(k), v) for k, v in given.items()})
    reason = space.check(params)
    want = args.trace is not None
    if reason is not None:  # outside the spec: not simulated, like any infeasible configuration
        res, traces = infeasible(spec.op.name, space.unit, space.dtype, space.shape, params, reason), None
    else:
        from autotile.models.sim_budget import estimate_seconds

        est = estimate_seconds(spec.op.name, space.shape, space.dtype, space.unit, params, spec.backend,
                               spec.inputs or {})
        if est > NOTE_S:
            print(f"autotile: note: simulating {spec.op.name} at this shape may take {_duration(est)} (a rough "
                  "estimate from its size); Ctrl-C stops it", file=sys.stderr, flush=True)
        out = interruptible(lambda: kernel.simulate(
            space.shape, params, space.dtype, spec.hardware, unit=space.unit, options=spec.inputs,
            trace_capacity=TRACE_CAPACITY if want else 0, want_traces=want), slow=est > SLOW_S)
        res, traces = out if want else (out, None)
    label = spec.hardware.label  # an edited copy of a bundled profile is not the shipped chip
    data = {**res.to_json(), "hw": label, "hw_hash": spec.hardware.content_hash()}
    if want and res.feasible:  # an infeasible configuration has no schedule to show
        meta = {"op": spec.op.name, "shape": space.shape, "dtype": space.dtype, "unit": space.unit,
                "params": params, "inputs": spec.op.check_options(spec.inputs), "cycles": res.cycles}
        write_chrome_trace(args.trace, traces, spec.hardware, meta)  # the report's traces record the same
        data["trace"] = args.trace
        cut = coverage(traces)
        if cut is not None:  # said, not silent: the file ends before the schedule does
            data["trace_coverage"] = {k: v for k, v in cut.items() if k != "trace_truncated"}
            print(f"autotile: warning: trace truncated at {cut['events_kept']:,} events ({TRACE_CAPACITY:,} per "
                  f"core class; {cut['events_dropped']:,} more not recorded): {args.trace} covers the schedule "
                  f"up to cycle {math.floor(cut['complete_until_cycle']):,} of {res.cycles:,.0f}", file=sys.stderr)
    if args.json:
        if want and not res.feasible:  # said, as the text answer does: a file already there is an older run's
            print(f"autotile: note: no trace written to {args.trace} (infeasible)", file=sys.stderr)
        print_json(data)
    elif not data["feasible"]:
        print(f"infeasible: {data['reason']} (on {label}" + (f"; no trace written to {args.trace})" if want else ")"))
    else:
        print(f"{spec.op.name} {space.unit} {space.dtype} {space.shape} on {label}: {res.cycles:,.0f} cycles, "
              f"{res.time_us:.2f} us, {res.pct_of_peak:.1f}% of peak, bound by {res.bound}")
        print("pipes: " + ", ".join(f"{k} {v['ratio']:.2f}" for k, v in res.pipes.items()))
        if want:
            print(f"trace: {args.trace} (open in chrome://tracing or ui.perfetto.dev)")
    return 0  # an infeasible configuration is an answer (feasible: false, reason), not an error


def _duration(seconds: float) -> str:
    """``seconds`` as a person reads a wait: about 40 s, 3 minutes, 5 hours, 12 days, 9 years."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("hours", 3600), ("minutes", 60)):
        if seconds >= 2 * size:
            return f"about {seconds / size:,.0f} {unit}"
    return f"about {seconds:.0f} s"


def _typed(param, value):
    """``value`` as ``param`` takes it: an integer for an int param (whether it lies in the
    domain is the simulation's question), one of the choices for a choice param."""
    from autotile.space import IntParam
    from autotile.space.expr import CAP
    from autotile.yamlsrc import scalar_text

    if isinstance(param, IntParam):
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if number and abs(value) > CAP:  # as a spec's integers: 1e300 is no tiling to simulate
            text = repr(value) if len(repr(value)) <= 30 else f"an integer of {len(str(abs(value)))} digits"
            raise InputError(f"--set {param.name}: expected an integer of at most 2**62 in magnitude, got {text}")
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise InputError(f"--set {param.name}: expected an integer, got {value!r}")
    for choice in param.choices:
        if isinstance(choice, str) and str(value) == choice:
            return choice
        if not isinstance(choice, str) and isinstance(value, bool) == isinstance(choice, bool) and value == choice:
            return choice
    raise InputError(f"--set {param.name}: expected one of {', '.join(scalar_text(c) for c in param.choices)}, "
                     f"got {value!r}")
