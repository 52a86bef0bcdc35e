"""The files a tune run owns in its output folder, so another command's output never replaces them.

``export DIR -o DIR/studies.journal`` exited 0 and replaced the journal, with every trial, by the
exported table; only ``table.json`` (the file export reads) was guarded. Kept free of Optuna so
that light commands can ask.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

from autotile.atomic import same_file
from autotile.errors import InputError

OUTPUT_FILES = ("summary.json", "table.json", "report.html", "report.md")  # what a run writes in its --out
OUTPUT_FOLDERS = ("report_files", "traces")
JOURNAL_NAME = "studies.journal"  # the default study storage, in the output folder
# report_files/<name>.png: every plot the report draws; a render writes these names and prunes only them
REPORT_PLOTS = ("history", "portfolio", "importance", "pareto", "units", "roofline", "pipes", "crossover")


SUMMARY_DIGEST = "summary_sha256"  # table.json's record of the summary.json written with it


def summary_digest(data: bytes) -> str:
    """The digest table.json records of its summary.json's bytes."""
    return hashlib.sha256(data).hexdigest()


def set_mismatch(folder: str | Path) -> str | None:
    """One warning line when ``folder``'s table.json was written with another summary.json than
    the one beside it (a copied or edited file, or outputs of autotile before they were written
    as a set): export reads table.json, the report summary.json, so the two would disagree. None
    when they match or either (or the record, in an older table) is missing."""
    folder = Path(folder)
    try:
        recorded = json.loads((folder / "table.json").read_text(encoding="utf-8")).get(SUMMARY_DIGEST)
        summary = (folder / "summary.json").read_bytes()
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(recorded, str) or recorded == summary_digest(summary):
        return None
    return (f"{folder / 'table.json'} was not written with the {folder / 'summary.json'} beside it (copied or "
            "edited?): export reads the table's configurations, the report the summary's; rerun the tune to "
            "write them together")


def report_outputs(traces=()) -> tuple[str, ...]:
    """The files a report may write in its subfolders, relative to the output folder: every plot
    and ``traces/<slug>.json`` for each slug in ``traces`` (the results it may trace)."""
    return (*(f"report_files/{name}.png" for name in REPORT_PLOTS), *(f"traces/{name}.json" for name in traces))


def trace_name_pattern() -> re.Pattern:
    """The names the report gives its traces (``slug`` of a result of any op), and no others."""
    from autotile.kernels import registry  # metadata only: no Numba

    alts = []
    for op in registry.OPS:
        info = registry.get(op)
        if info.generic or not info.dims:
            continue
        dims = "_".join(re.escape(d) + r"\d+" for d in info.dims)
        alts.append(f"{dims}_({'|'.join(map(re.escape, info.dtypes))})_({'|'.join(map(re.escape, info.units))})")
    return re.compile(rf"(?:{'|'.join(alts)})\.json")


def report_files(folder: str | Path) -> list[Path]:
    """The files in ``folder``'s subfolders that a report may replace or delete: every plot's,
    and each file in ``traces/`` with a trace's name (written, or an earlier render's, pruned)."""
    folder = Path(folder)
    paths = [folder / name for name in report_outputs()]
    traces = folder / "traces"
    if traces.is_dir():
        pattern = trace_name_pattern()
        paths += [p for p in sorted(traces.glob("*.json")) if pattern.fullmatch(p.name)]
    return paths


def owned_files(folder: str | Path) -> dict[str, Path]:
    """What the tune run in ``folder`` owns there (how an error names it -> its path): its outputs,
    the journal and its lock file, and the study storage its summary.json records elsewhere."""
    folder = Path(folder)
    out = {f"the {name} of the tune run in {folder}": folder / name for name in OUTPUT_FILES}
    out[f"the study journal of the tune run in {folder}"] = folder / JOURNAL_NAME
    out[f"the study journal's lock file of the tune run in {folder}"] = folder / (JOURNAL_NAME + ".lock")
    store = _recorded_storage(folder / "summary.json")
    if store is not None:
        out[f"the study storage of the tune run in {folder}"] = Path(store)
    return out


def refuse_owned(flag: str, output: str | Path, folder: str | Path, advice: str) -> None:
    """An InputError when ``output`` (given as ``flag``) is a file the tune run in ``folder`` owns
    (through a link or another spelling too) or lies in one of its output folders."""
    for label, path in owned_files(folder).items():
        if same_file(output, path):
            raise InputError(f"{flag} {output}: is {label}; {advice}")
    real = Path(os.path.realpath(output))
    for name in OUTPUT_FOLDERS:
        sub = Path(os.path.realpath(Path(folder) / name))
        if real != sub and sub in real.parents:
            raise InputError(f"{flag} {output}: is in {name}/ of the tune run in {folder}, a folder the "
                             f"run's report writes; {advice}")


def _recorded_storage(summary: Path) -> str | None:
    """The journal or SQLite file a summary.json records as its study storage, if it names one."""
    try:
        url = json.loads(summary.read_text(encoding="utf-8")).get("storage")
    except (OSError, ValueError, AttributeError):
        return None
    if not isinstance(url, str) or not url:
        return None
    if url.startswith("journal:"):
        return url[len("journal:"):] or None
    if url.startswith("sqlite"):
        from autotile.tune.storage import sqlite_file  # Optuna's import only for this case

        return sqlite_file(url)
    return url if os.path.isabs(url) and "://" not in url else None  # the default: the journal's path
