"""The tiling-table schema ``autotile.table/1``: what a study leaves for kernels to read.

One entry per (shape, dtype): the chosen unit's verified tiling with its predicted cycles and
time, % of peak, the verified flag and the study and trial it came from.
"""

from __future__ import annotations

import datetime as _dt

from autotile import __version__

SCHEMA = "autotile.table/1"
SCHEMA_VERSION = 1


def build_table(spec, summary: dict) -> dict:
    """The table of a tune summary: the chosen unit per (shape, dtype)."""
    entries = []
    for r in summary["results"]:
        if not r.get("chosen") or r.get("params") is None:
            continue
        entries.append({
            "shape": r["shape"], "dtype": r["dtype"], "unit": r["unit"], "params": r["params"],
            "cycles": r["cycles"], "time_us": r["time_us"], "pct_of_peak": r["pct_of_peak"],
            "verified": bool(r.get("verified")), "study": r["study"], "trial": r.get("trial"),
        })
    return {
        "schema": SCHEMA,
        "op": spec.op.name,
        "hardware": {"name": spec.hardware.name, "hash": spec.hardware.content_hash()},
        "spec_hash": spec.content_hash(),
        "autotile_version": __version__,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "dims": list(spec.op.dims),
        "entries": entries,
    }
