"""``autotile export DIR --format json|c|ascendc -o FILE``: tables from a study."""

from __future__ import annotations

from pathlib import Path

from autotile.atomic import check_output_file, is_stdout, refuse_input
from autotile.cli.common import given, nonempty
from autotile.tune.outputs import refuse_owned

HELP = "export a tune output's table as JSON, a C99 header or an Ascend C tiling header"


def add_arguments(p) -> None:
    p.add_argument("table", metavar="DIR", type=given("a folder or table file"), help="a tune output folder (holding table.json) or a table file")
    p.add_argument("--format", choices=("json", "c", "ascendc"), default="json", help="output format (default json)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="file to write (atomically)")
    p.add_argument("--prefix", metavar="NAME", help="c and ascendc: start the header's C names with NAME instead of "
                   "autotile (NAME_<op>_lookup, NAME_<OP>_ENTRIES) and, in ascendc, its functions' names "
                   "(optiling::NAME_<Op>TilingFromTable), so two tables of one op (two SoCs) fit in one translation "
                   "unit; the <Op>TilingData class they share is defined once (if their fields differ, that is an "
                   "#error: give one another --op-type)")
    p.add_argument("--op-type", metavar="NAME", help="ascendc: the OpType the TilingData registers under, also the "
                   "prefix of its class and functions (default: the op's name in camel case, e.g. Matmul)")


def run(args) -> int:
    import sys

    from autotile.errors import InputError
    from autotile.tables.cnames import DEFAULT_PREFIX, prefix_problem
    from autotile.tables.export import custom_rules, export, notices, region_mismatches
    from autotile.tables.export_ascendc import core_notes
    from autotile.tables.schema import load_table
    from autotile.tune.outputs import set_mismatch

    nonempty(args.output, "-o")
    for flag, value, formats in (("--prefix", args.prefix, ("c", "ascendc")), ("--op-type", args.op_type, ("ascendc",))):
        if value is None:
            continue
        if args.format not in formats:
            raise InputError(f"{flag}: applies to --format {' or '.join(formats)} only, not {args.format}")
        if (want := prefix_problem(value)) is not None:
            raise InputError(f"{flag}: expected {want}, got {value!r}")
    table = load_table(args.table)
    refuse_input("-o", args.output, {f"the table this export reads ({table.file})": table.file},
                 "write the export to another file")  # the atomic write would replace it
    if table.file is not None and Path(table.file).name == "table.json":  # the name tune writes
        refuse_owned("-o", args.output, Path(table.file).parent, "write the export to another file")
    if not is_stdout(args.output):
        check_output_file("-o", args.output)  # a folder is bad input (exit 2), found before the export
    if table.file is not None and Path(table.file).name == "table.json" \
            and (text := set_mismatch(Path(table.file).parent)) is not None:
        print(f"autotile: warning: {text}", file=sys.stderr)
    for text in notices(table):
        print(f"autotile: warning: {text}", file=sys.stderr)
    if args.format in ("c", "ascendc"):
        if (text := custom_rules(table)) is not None:
            print(f"autotile: warning: {text}", file=sys.stderr)
        for text in region_mismatches(table):
            print(f"autotile: warning: C lookup region looser than the spec: {text}", file=sys.stderr)
    if args.format == "ascendc":
        for text in core_notes(table):
            print(f"autotile: warning: {text}", file=sys.stderr)
    path = export(table, args.format, args.output, prefix=args.prefix or DEFAULT_PREFIX, op_type=args.op_type)
    print(f"wrote {path} ({args.format})", file=sys.stderr if is_stdout(args.output) else sys.stdout)
    return 0
