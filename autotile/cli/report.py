"""``autotile report DIR``: render a run's report again from its summary and study storage."""

from __future__ import annotations

import sys
from pathlib import Path

from autotile.atomic import refuse_input
from autotile.cli.common import given, nonempty, print_json
from autotile.words import count

HELP = "(re)render DIR/report.html and DIR/report.md from DIR/summary.json and the study storage"


def add_arguments(p) -> None:
    p.add_argument("dir", type=given("a folder"), help="an output folder of `autotile tune` (holds summary.json)")
    p.add_argument("--storage", help="study storage URL (default: DIR/studies.journal, else the one the run recorded)")
    p.add_argument("--json", action="store_true", help="print the files written as JSON")


def run(args) -> int:
    from autotile.report.render import write_report
    from autotile.tune.outputs import set_mismatch

    nonempty(args.storage, "--storage", "a storage URL")
    _not_an_input(Path(args.dir), args.storage)
    out = write_report(Path(args.dir), storage=args.storage)
    if (text := set_mismatch(args.dir)) is not None:
        print(f"autotile: warning: {text}", file=sys.stderr)
    if args.json:
        print_json({"html": str(out["html"]), "markdown": str(out["markdown"]),
                    "plots": [str(p) for p in out["plots"]], "traces": [str(p) for p in out["traces"]],
                    "seconds": round(out["seconds"], 2)})
    else:
        print(f"wrote {out['html']} and {out['markdown']} ({count(len(out['plots']), 'plot')}, "
              f"{count(len(out['traces']), 'trace')}) in {out['seconds']:.1f} s")
    return 0


def _not_an_input(folder: Path, storage: str | None) -> None:
    """Refuse a report file (the pages, a plot or trace) that is (a link to) a file the report
    reads: the summary, the table or the study storage would be replaced by it."""
    from autotile.tune.outputs import report_files
    from autotile.tune.storage import JOURNAL_NAME, sqlite_file

    inputs = {f"the {name} this report reads": folder / name for name in ("summary.json", "table.json")}
    url = storage or ""
    store = url[len("journal:"):] if url.startswith("journal:") else (sqlite_file(url) if url else None)
    inputs["the study storage this report reads"] = store or folder / JOURNAL_NAME
    for path in [folder / "report.html", folder / "report.md", *report_files(folder)]:
        refuse_input("report:", path, inputs, "expected a file of its own (remove the link)")
