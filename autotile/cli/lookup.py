"""``autotile lookup TABLE --shape m=..,n=..,k=..``: the tiling a kernel would get."""

from __future__ import annotations

from autotile.cli.common import Once, given, parse_shape, print_json
from autotile.words import lead

HELP = "look a shape up in a tiling table (exact, nearest, model with --models, or default)"


# how the text output says where the answer's cycles come from (Match.cycles_from)
CYCLES_TEXT = {"table": "{:,.0f} cycles (the table entry's)", "simulator": "{:,.0f} cycles on the simulator",
               "model": "~{:,.0f} cycles predicted by the cost model (not simulated)"}


def add_arguments(p) -> None:
    p.add_argument("table", metavar="TABLE", type=given("a table file or folder"), help="a table file or a tune output folder")
    p.add_argument("--shape", required=True, action=Once, help="e.g. m=1000,n=2000,k=512")
    p.add_argument("--dtype", help="default: the spec's first dtype")
    p.add_argument("--models", metavar="DIR", help="the cache folder given to `autotile train -o` (a plain "
                   "`autotile train` writes to $AUTOTILE_CACHE, else ~/.cache/autotile): its cost model answers "
                   "shapes no tuned tiling fits. Without it no model is read, as for a kernel reading the table")
    p.add_argument("--json", action="store_true", help="print {shape, matched_shape, match, unit, params, verified, "
                   "cycles, cycles_from} (verified: the table entry passed the verification gate; false for a model "
                   "or default answer; values: the entry's recorded error objectives, e.g. max_abs_error, and "
                   "verified_within: the max abs error the gate allowed it beyond the dtype's tolerance, when its study traded accuracy and an element needed it; cycles: the answer's at this shape when known, cycles_from: table, simulator "
                   "or model (predicted), else both null), and how, and a warning when the shape is outside the "
                   "model's training shapes or the model's best was not faster than the default tiling; unverified: why the "
                   "gate could not check the entry (too large to execute, out of memory), when it could not)")


def run(args) -> int:
    import sys

    from autotile.tables.export import simulator_drift
    from autotile.tables.lookup import lookup
    from autotile.tables.model_hook import regressor_hook
    from autotile.tables.schema import load_table

    table = load_table(args.table)
    from autotile.models.store import given_dir

    # only a folder given here: the answer depends on the arguments alone, as run_with_table's does
    model = regressor_hook(table, given_dir(args.models)) if args.models is not None else None
    m = lookup(table, parse_shape(args.shape), args.dtype, model=model)
    if (text := simulator_drift(table)) is not None:
        print(f"autotile: warning: {text}", file=sys.stderr)
    if args.json:
        print_json(m.to_json())
        return 0
    shape = ",".join(f"{k}={v}" for k, v in m.shape.items())
    # an exact match's entry is the shape asked for; a nearest one names the entry it took
    via = f" from {','.join(f'{k}={v}' for k, v in m.matched_shape.items())}" \
        if m.matched_shape and m.match != "exact" else ""
    why = f" ({lead(m.unverified)})" if m.unverified else ""  # too large to execute, ...
    ver = (", verified" if m.verified else f", NOT verified{why}") if m.entry is not None else ""
    print(f"{shape} {m.dtype}: {m.match}{via}, unit {m.unit}{ver}")
    print("  " + ", ".join(f"{k}={v}" for k, v in m.params.items()))
    if m.cycles is not None:
        print(f"  {CYCLES_TEXT[m.cycles_from].format(m.cycles)}")
    if m.entry is not None and (acc := table.entries[m.entry].accuracy()):
        at = "" if m.match == "exact" else f" at {','.join(f'{k}={v}' for k, v in m.matched_shape.items())}"
        print(f"  {acc} (the table entry's, recorded by its study{at})")
    if m.entry is not None and m.verified_within is not None:
        print(f"  {table.entries[m.entry].held_to()}")
    if m.how:
        print(f"  chosen as {m.how}")
    if m.warning:
        print(f"  warning: {m.warning}")
    return 0
