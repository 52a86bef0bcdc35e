"""``autotile report DIR``: render a run's report again from its summary and study storage."""

from __future__ import annotations

from pathlib import Path

from autotile.cli.common import nonempty, print_json

HELP = "(re)render DIR/report.html and DIR/report.md from DIR/summary.json and the study storage"


def add_arguments(p) -> None:
    p.add_argument("dir", help="an output folder of `autotile tune` (holds summary.json)")
    p.add_argument("--storage", help="study storage URL (default: DIR/studies.journal, else the one the run recorded)")
    p.add_argument("--json", action="store_true", help="print the files written as JSON")


def run(args) -> int:
    from autotile.report.render import write_report

    nonempty(args.storage, "--storage", "a storage URL")
    out = write_report(Path(args.dir), storage=args.storage)
    if args.json:
        print_json({"html": str(out["html"]), "markdown": str(out["markdown"]),
                    "plots": [str(p) for p in out["plots"]], "traces": [str(p) for p in out["traces"]],
                    "seconds": round(out["seconds"], 2)})
    else:
        print(f"wrote {out['html']} and {out['markdown']} ({len(out['plots'])} plots, "
              f"{len(out['traces'])} traces) in {out['seconds']:.1f} s")
    return 0
