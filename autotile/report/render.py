"""Write a run's report: ``DIR/report.html``, ``DIR/report.md`` + ``DIR/report_files/*.png``, ``DIR/traces/``.

``autotile tune`` calls ``write_report(out_dir)`` after writing the summary; ``autotile report DIR``
calls it again. Every file is written atomically; plots and traces of an earlier render that
this one no longer has are removed (only names a render gives its files: others are left alone). A section that fails to build is replaced by a
visible note (and a warning on stderr) so one broken plot never costs the run its report.

>>> # write_report("results/matmul")  # -> {"html": Path(...), "markdown": Path(...), ...}
"""

from __future__ import annotations

import sys
import time
import traceback
from pathlib import Path

from autotile.atomic import check_outputs, output_set, remove, write_bytes, write_text
from autotile.report import data as data_mod
from autotile.report import html, markdown, perf, search, sections
from autotile.report.data import slug
from autotile.report.doc import Para, Report, Section
from autotile.tune.outputs import REPORT_PLOTS, report_outputs

FILES = "report_files"


def build(data: data_mod.ReportData, traces: dict) -> Report:
    """The report document of a loaded run."""
    builders = [
        ("Best configurations", lambda: sections.best(data)),
        ("Unit choice", lambda: sections.units(data)),
        ("Optimization history", lambda: search.history(data)),
        ("Parameter importance", lambda: search.importance(data)),
        ("Pareto front", lambda: search.pareto(data)),
        ("Roofline", lambda: perf.roofline(data, traces)),
        ("Pipe utilization and traces", lambda: perf.pipes(data, traces)),
        ("Cycles against size per unit", lambda: perf.crossover(data)),
        ("Verification", lambda: sections.verification(data)),
        ("Reproduce", lambda: sections.reproduce(data)),
    ]
    out = []
    for name, make in builders:
        try:
            sec = make()
        except Exception as exc:  # noqa: BLE001 - keep the rest of the report
            print(f"autotile report: section {name!r} failed: {exc}", file=sys.stderr)
            traceback.print_exc(file=sys.stderr)
            sec = Section(name, [Para(f"This section could not be rendered: {type(exc).__name__}: {exc}", note=True)],
                          name.lower().replace(" ", "-"))
        if sec is not None:
            out.append(sec)
    summary = sections.highlights(data)
    if data.storage_note:
        summary.append(data.storage_note)
    if data.foreign_note:
        summary.append(data.foreign_note)
    if data.mismatch_note:
        summary.append(data.mismatch_note)
    return Report(sections.title(data), sections.facts(data), summary, out)


def write_report(out_dir: str | Path, storage: str | None = None) -> dict:
    """Render the report of the run in ``out_dir`` (its files as one set, see ``atomic.output_set``);
    returns the paths written and the time taken."""
    from autotile.report.traces import prune_traces, write_traces

    t0 = time.monotonic()
    out_dir = Path(out_dir)
    data = data_mod.load(out_dir, storage)
    # before any file: a report.html (or a trace) that is a folder would fail after report.md (or
    # another trace) was replaced
    check_outputs(out_dir, ("report.html", "report.md", *report_outputs(slug(r) for r in data.exported)),
                  (FILES, "traces"))
    with output_set():  # renamed into place together: a full disk leaves the earlier report whole
        traces = write_traces(data)
        prune_traces(out_dir, traces)  # those of shapes, dtypes or units this run no longer has
        rep = build(data, traces)
        files = out_dir / FILES
        pngs = []
        for plot in markdown.plots(rep):
            pngs.append(write_bytes(files / f"{plot.name}.png", plot.png))
        keep = {p.name for p in pngs}
        for name in REPORT_PLOTS:  # plots of an earlier render that this one no longer has; no other file
            old = files / f"{name}.png"
            if f"{name}.png" not in keep and old.is_file():
                remove(old)
        md = write_text(out_dir / "report.md", markdown.render(rep, FILES))
        page = write_text(out_dir / "report.html", html.render(rep))
    return {"html": page, "markdown": md, "plots": pngs,
            "traces": [out_dir / t["path"] for t in traces.values() if "path" in t],
            "seconds": time.monotonic() - t0}
