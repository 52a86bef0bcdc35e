"""``autotile lookup TABLE --shape m=..,n=..,k=..``: the tiling a kernel would get."""

from __future__ import annotations

from autotile.cli.common import parse_shape, print_json

HELP = "look a shape up in a tiling table (exact, nearest, model or default)"


def add_arguments(p) -> None:
    p.add_argument("table", metavar="TABLE", help="a table file or a tune output folder")
    p.add_argument("--shape", required=True, help="e.g. m=1000,n=2000,k=512")
    p.add_argument("--dtype", help="default: the spec's first dtype")
    p.add_argument("--models", help="folder of trained models (default: autotile train's cache); "
                                    "the cost model answers shapes no tuned tiling fits")
    p.add_argument("--json", action="store_true", help="print {shape, matched_shape, match, unit, params} (and how, and a warning when "
                                                          "the shape is outside the model's training shapes, for a model answer)")


def run(args) -> int:
    from autotile.tables.lookup import lookup
    from autotile.tables.model_hook import regressor_hook
    from autotile.tables.schema import load_table

    table = load_table(args.table)
    from autotile.models.store import given_dir

    model = regressor_hook(table, given_dir(args.models))
    m = lookup(table, parse_shape(args.shape), args.dtype, model=model)
    if args.json:
        print_json(m.to_json())
        return 0
    shape = ",".join(f"{k}={v}" for k, v in m.shape.items())
    via = f" from {','.join(f'{k}={v}' for k, v in m.matched_shape.items())}" if m.matched_shape else ""
    print(f"{shape} {m.dtype}: {m.match}{via}, unit {m.unit}")
    print("  " + ", ".join(f"{k}={v}" for k, v in m.params.items()))
    if m.how:
        print(f"  chosen as {m.how}")
    if m.warning:
        print(f"  warning: {m.warning}")
    return 0
