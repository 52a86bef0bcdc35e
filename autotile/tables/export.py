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


def region_mismatches(table, limit: int = 5) -> list[str]:
    """Probe shapes where an entry's region (what C checks) admits a tiling the spec rejects.

    The probes are every tuned shape and each region's lower corner. A non-empty answer means
    the op's region function is looser than this spec: the C lookup could return a tiling the
    Python lookup would refuse there.
    """
    from autotile.tables.lookup import Lookup

    look = Lookup(table)
    probes = {tuple(e.shape.values()) for e in look.table.entries} | {r.lo for r in look.regions}
    out = []
    for e, r in zip(look.table.entries, look.regions):
        for x in sorted(probes):
            shape = dict(zip(look.table.dims, x))
            if r.contains(x) and (why := look.reason(shape, look.served(e, shape), e.dtype, e.unit)) is not None:
                out.append(f"entry {e.shape} {e.dtype}: its region holds {shape} but {why}")
                if len(out) >= limit:
                    return out
    return out


def custom_rules(table) -> str | None:
    """One line when the table's spec has other rules for a unit than those the unit's region
    function is derived from (:mod:`autotile.tables.region_rules`): its entries on that unit then
    serve their tuned shapes only, in the C lookup and the Python lookup alike."""
    from autotile.tables.lookup import Lookup

    look = Lookup(table)
    if not look.custom:
        return None
    units = " and ".join(look.custom)
    why = "; ".join(f"{u}: {t}" if len(look.custom) > 1 else t for u, t in look.custom.items())
    return (f"custom rules: the C lookup serves tuned shapes only for {units} entries, as the Python lookup does "
            f"before its fallbacks (their validity region is derived from the bundled {look.table.op} spec's rules, "
            f"but {why})")


def export(source, fmt: str, out: str | Path) -> Path:
    """Render and write atomically to ``out``.

    >>> export("results/matmul", "c", "matmul_tiling.h")  # doctest: +SKIP
    PosixPath('matmul_tiling.h')
    """
    return write_text(out, render(source, fmt))
