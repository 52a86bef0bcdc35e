"""``autotile export``: a table as JSON, a C99 header or an Ascend C tiling header."""

from __future__ import annotations

import json
from pathlib import Path

from autotile import words
from autotile.atomic import write_text
from autotile.tables import export_ascendc, export_c
from autotile.tables.cnames import DEFAULT_PREFIX
from autotile.tables.schema import load_table

FORMATS = ("json", "c", "ascendc")


def render(table, fmt: str, *, prefix: str = DEFAULT_PREFIX, op_type: str | None = None) -> str:
    """The text of ``table`` (a Table, path or dict) in ``fmt`` (json, c or ascendc). ``prefix``
    starts the headers' C names (``autotile``); ``op_type`` is the Ascend C OpType (the op's name)."""
    table = load_table(table)
    if fmt == "json":
        return json.dumps(table.to_json(), indent=2) + "\n"
    if fmt == "c":
        return export_c.render(table, prefix)
    if fmt == "ascendc":
        return export_ascendc.render(table, prefix, op_type)
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


def notices(table) -> list[str]:
    """What a kernel reading ``table`` should know, one line each: no entries at all, entries that
    were not verified, a table of an interrupted run, and cycles from another simulator than this
    autotile's."""
    table = load_table(table)
    out = []
    if not table.entries:
        out.append("the table has no entries (no study found a feasible configuration that passed "
                   "verification): the headers' lookup always returns NULL")
    elif (k := export_c.unverified_count(table)):
        unchecked = [e for e in table.entries if not e.verified and e.unverified]
        why = ([] if k == len(unchecked) else ["replayed measurements: no kernel to execute" if table.spec.backend == "replay"
                                              else "tuned with --no-verify"])
        if unchecked:  # the gate could not execute them: too large, out of memory
            why.append(f"{len(unchecked)} {words.lead(unchecked[0].unverified)}"
                       + (" or similar" if len({words.lead(e.unverified) for e in unchecked}) > 1 else ""))
        out.append(f"{k} of {len(table.entries)} entries not verified ({'; '.join(why)}); they carry verified: false "
                   f"(the C entry's verified = 0)")
    if (text := partial(table)) is not None:
        out.append(text)
    if (text := simulator_drift(table)) is not None:
        out.append(text)
    return out


def partial(table) -> str | None:
    """One line when the table comes from an interrupted run (some studies never ran or stopped
    short of their budget), else None."""
    cut = load_table(table).interrupted
    if cut is None:
        return None
    said = [words.count(cut["not_run"], "study") + " not run"] if cut["not_run"] else []
    said += [words.count(cut["cut_short"], "study") + " stopped short of the budget"] if cut["cut_short"] else []
    return (f"the table is partial: its tune was interrupted ({', '.join(said) or 'studies cut short'}); "
            f"resume the tune (the same command) to complete it")


def simulator_drift(table) -> str | None:
    """One line when the table's cycles come from another simulator than the running one (or it
    does not say which), else None. A replay table has no simulator."""
    from autotile.sim.fingerprint import simulator_fingerprint

    table = load_table(table)
    if table.spec.backend == "replay":
        return None
    now = simulator_fingerprint()
    if table.simulator == now:
        return None
    was = (f"was tuned with simulator {table.simulator}" if table.simulator else
           "does not record its simulator (made before tables did)")
    return (f"the table {was}, autotile {table.doc['autotile_version']}; this autotile's simulator is {now}: "
            f"its cycles and picks may differ from a tune now; re-tune to refresh it")


def export(source, fmt: str, out: str | Path, *, prefix: str = DEFAULT_PREFIX, op_type: str | None = None) -> Path:
    """Render and write atomically to ``out``.

    >>> export("results/matmul", "c", "matmul_tiling.h")  # doctest: +SKIP
    PosixPath('matmul_tiling.h')
    """
    return write_text(out, render(source, fmt, prefix=prefix, op_type=op_type))
