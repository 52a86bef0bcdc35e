"""``autotile export``: a table as JSON, a C99 header or an Ascend C tiling header."""

from __future__ import annotations

import json
from pathlib import Path

from autotile.atomic import write_text
from autotile.tables import export_ascendc, export_c
from autotile.tables.schema import load_table

FORMATS = ("json", "c", "ascendc")


def render(table, fmt: str) -> str:
    """The text of ``table`` (a Table, path or dict) in ``fmt`` (json, c or ascendc)."""
    table = load_table(table)
    if fmt == "json":
        return json.dumps(table.to_json(), indent=2) + "\n"
    if fmt == "c":
        return export_c.render(table)
    if fmt == "ascendc":
        return export_ascendc.render(table)
    raise ValueError(f"unknown format {fmt!r}, expected one of {', '.join(FORMATS)}")


def export(source, fmt: str, out: str | Path) -> Path:
    """Render and write atomically to ``out``.

    >>> export("results/matmul", "c", "matmul_tiling.h")  # doctest: +SKIP
    PosixPath('matmul_tiling.h')
    """
    return write_text(out, render(source, fmt))
