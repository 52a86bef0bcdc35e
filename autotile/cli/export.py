"""``autotile export DIR --format json|c|ascendc -o FILE``: tables from a study."""

from __future__ import annotations

from autotile.atomic import refuse_input
from autotile.cli.common import given, nonempty

HELP = "export a tune output's table as JSON, a C99 header or an Ascend C tiling header"


def add_arguments(p) -> None:
    p.add_argument("table", metavar="DIR", type=given("a folder or table file"), help="a tune output folder (holding table.json) or a table file")
    p.add_argument("--format", choices=("json", "c", "ascendc"), default="json", help="output format (default json)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="file to write (atomically)")


def run(args) -> int:
    import sys

    from autotile.tables.export import custom_rules, export, region_mismatches
    from autotile.tables.schema import load_table

    nonempty(args.output, "-o")
    table = load_table(args.table)
    refuse_input("-o", args.output, {f"the table this export reads ({table.file})": table.file},
                 "write the export to another file")  # the atomic write would replace it
    if args.format in ("c", "ascendc"):
        if (text := custom_rules(table)) is not None:
            print(f"autotile: warning: {text}", file=sys.stderr)
        for text in region_mismatches(table):
            print(f"autotile: warning: C lookup region looser than the spec: {text}", file=sys.stderr)
    path = export(table, args.format, args.output)
    print(f"wrote {path} ({args.format})")
    return 0
