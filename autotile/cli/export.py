"""``autotile export DIR --format json|c|ascendc -o FILE``: tables from a study."""

from __future__ import annotations

HELP = "export a tune output's table as JSON, a C99 header or an Ascend C tiling header"


def add_arguments(p) -> None:
    p.add_argument("table", metavar="DIR", help="a tune output folder (holding table.json) or a table file")
    p.add_argument("--format", choices=("json", "c", "ascendc"), default="json", help="output format (default json)")
    p.add_argument("-o", "--output", required=True, metavar="FILE", help="file to write (atomically)")


def run(args) -> int:
    from autotile.tables.export import export

    path = export(args.table, args.format, args.output)
    print(f"wrote {path} ({args.format})")
    return 0
