"""The tiling-table schema ``autotile.table/1``: what a study leaves for kernels to read.

A table is JSON::

    {"schema": "autotile.table/1", "op": "matmul",
     "hardware": {"name", "hash", "profile": {...values...}},
     "spec": {"path", "hash", "content": {...spec.to_dict()...}}, "spec_hash",
     "autotile_version", "simulator", "created", "dims": ["m", "n", "k"],
     "entries": [{"shape", "dtype", "unit", "params", "cycles", "time_us", "pct_of_peak",
                  "verified", "study", "trial", "values"?, "verified_within"?, "unverified"?}, ...],
     "interrupted": {"not_run": 2, "cut_short": 1},   # only in a table of an interrupted run
     "summary_sha256": "..."}   # a tune's table: the digest of the summary.json written with it

One entry per (shape, dtype): the chosen unit's tiling with its predicted cycles and time,
% of peak, the verified flag (false: tuned with ``--no-verify``, or replayed, or a shape the gate
could not execute, whose ``unverified`` says why: ``too large to execute in verification: ...``;
a tiling that failed verification never enters) and the study and trial it came from. A study that trades accuracy
(an objective or limit beside cycles and time, such as ``max_abs_error``) also records the entry's
``values`` of those (``{"max_abs_error": 0.021}``), and ``verified_within`` the max abs error the
gate allowed it beyond the dtype's tolerance (its recorded error) when an element needed it; both
absent otherwise, and from
tables made before they were recorded. ``simulator`` is the
fingerprint of the kernels and cost model that predicted the cycles (null for replay, absent
from tables made before it was recorded). ``interrupted`` marks the table of a run stopped
(SIGINT, SIGTERM) before every study reached its budget: how many studies never ran and how many
stopped short; absent from a complete run's table, and from tables made before it was recorded
(they load as complete). The embedded profile and
spec make a table self-contained: lookup re-checks feasibility with them (see ``lookup``).
:func:`load_table` validates everything and raises InputError naming the file and field.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from autotile import __version__
from autotile.atomic import pending, write_json
from autotile.errors import InputError
from autotile.space.loader import MAX_DIM
from autotile.tables.embedded import profile_dict, profile_from_dict, spec_from_dict
from autotile.yamlsrc import load_text

SCHEMA = "autotile.table/1"
SCHEMA_NAME, SCHEMA_VERSION = "autotile.table", 1


@dataclass(frozen=True)
class Entry:
    """One tuned (shape, dtype): the tiling a kernel should run there."""

    shape: dict
    dtype: str
    unit: str
    params: dict
    cycles: float | None = None
    time_us: float | None = None
    pct_of_peak: float | None = None
    verified: bool = False
    study: str | None = None
    trial: int | None = None
    # the study's other objective and limit values for this tiling ({"max_abs_error": 0.021}), or
    # None: a lossy variant's accuracy, which a kernel developer must see beside its cycles
    values: dict | None = None
    # the max abs error the gate allowed beyond the dtype's tolerance (the error the study
    # recorded for the tiling) where an element needed it, or None: verified then means "as
    # accurate as recorded", not exact
    verified_within: float | None = None
    # why the gate could not check an unverified entry (too large to execute, out of memory), or
    # None: --no-verify, replay, verified, or a table made before it was recorded
    unverified: str | None = None

    def to_json(self) -> dict:
        out = {"shape": dict(self.shape), "dtype": self.dtype, "unit": self.unit,
               "params": dict(self.params), "cycles": self.cycles, "time_us": self.time_us,
               "pct_of_peak": self.pct_of_peak, "verified": self.verified, "study": self.study,
               "trial": self.trial}
        if self.values is not None:  # absent, as in tables made before they were recorded
            out["values"] = dict(self.values)
        if self.verified_within is not None:
            out["verified_within"] = self.verified_within
        if self.unverified is not None:
            out["unverified"] = self.unverified
        return out

    def accuracy(self) -> str:
        """``max_abs_error 0.021`` (the recorded values, 3 significant digits), or ""."""
        return ", ".join(f"{k} {v:.3g}" for k, v in (self.values or {}).items())

    def held_to(self) -> str:
        """How the gate held a verified entry that trades accuracy, or "": ``verified within its
        recorded max abs error 0.021, not the fp16 tolerance``."""
        if not self.verified or self.verified_within is None:
            return ""
        return f"verified within its recorded max abs error {self.verified_within:.3g}, not the {self.dtype} tolerance"


@dataclass(frozen=True)
class Table:
    """A validated table. ``spec`` and ``hardware`` are rebuilt from the embedded copies."""

    op: str
    dims: tuple[str, ...]
    entries: tuple[Entry, ...]
    doc: dict  # the JSON document as loaded (or built)
    file: str | None = None

    @cached_property
    def hardware(self):
        """The HardwareProfile the table was tuned for."""
        return profile_from_dict(self.doc["hardware"]["profile"], file=self.file)

    @cached_property
    def spec(self):
        """The Spec the table was tuned with (its constraints decide feasibility)."""
        return spec_from_dict(self.doc["spec"]["content"], self.hardware, file=self.file)

    @property
    def simulator(self) -> str | None:
        """The fingerprint of the simulator that tuned the table (None: replay, or not recorded)."""
        return self.doc.get("simulator")

    @property
    def interrupted(self) -> dict | None:
        """``{"not_run", "cut_short"}`` (studies) for the table of an interrupted run, else None."""
        return self.doc.get("interrupted")

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The spec's dtypes, the first being the default of lookups."""
        return tuple(self.spec.dtypes)

    def to_json(self) -> dict:
        return self.doc


def build_table(spec, summary: dict, *, created: str | None = None) -> dict:
    """The table (a JSON-ready dict) of a tune summary: the chosen unit per (shape, dtype).

    >>> table = build_table(load_spec("studies/matmul.yaml"), summary)  # doctest: +SKIP
    >>> table["entries"][0]["params"]["base_m"]  # doctest: +SKIP
    128
    """
    from autotile.sim.fingerprint import simulator_fingerprint

    entries = []
    for r in summary["results"]:
        if not r.get("chosen") or r.get("params") is None:
            continue
        entries.append(Entry(
            shape={d: r["shape"][d] for d in spec.op.dims}, dtype=r["dtype"], unit=r["unit"],
            params=dict(r["params"]), cycles=r.get("cycles"), time_us=r.get("time_us"),
            pct_of_peak=r.get("pct_of_peak"), verified=bool(r.get("verified")),
            study=r.get("study"), trial=r.get("trial"), values=traded_values(spec, r),
            verified_within=verified_within(r),
            unverified=None if r.get("verified") else (r.get("verification") or {}).get("unverified")).to_json())
    doc = {
        "schema": SCHEMA,
        "op": spec.op.name,
        "hardware": {"name": spec.hardware.name, "hash": spec.hardware.content_hash(),
                     "profile": profile_dict(spec.hardware)},
        "spec": {"path": str(spec.file), "hash": spec.content_hash(), "content": spec.to_dict()},
        "spec_hash": spec.content_hash(),
        "autotile_version": __version__,
        # the studies' identity holds the same: a study of another simulator is never resumed
        "simulator": None if spec.backend == "replay" else simulator_fingerprint(),
        "created": created or _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "dims": list(spec.op.dims),
        "entries": entries,
    }
    if summary.get("interrupted"):  # partial: the studies a resume would still run or finish
        doc["interrupted"] = {"not_run": len(summary.get("not_run") or ()),
                              "cut_short": sum(1 for r in summary["results"] if r.get("interrupted"))}
    return doc


def traded_values(spec, r: dict) -> dict | None:
    """The values a result recorded for the spec's objectives and limits beside cycles and time
    (``{"max_abs_error": 0.021}``), in the spec's order, or None when it has none."""
    names = [m for m in (*spec.objectives, *dict(spec.limits)) if m not in ("cycles", "time_us")]
    got = {m: (r.get("values") or {}).get(m) for m in dict.fromkeys(names)}
    got = {m: v for m, v in got.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
           and math.isfinite(v)}
    return got or None


def verified_within(r: dict) -> float | None:
    """The max abs error the gate allowed a verified result beyond the dtype's tolerance (the
    error its study recorded: ``claimed``) when some element needed it (``beyond_tolerance``: it was
    off by more than atol + rtol x |ref|), or None when the tolerance decided: no recorded error, or
    every element within the tolerance (an exact variant, whose recorded 0.000488 exceeds fp16's
    atol but not rtol x |ref|, was labelled as held to it), or a recorded error of 0, which admits
    nothing. A summary from before ``beyond_tolerance`` was recorded: whether the recorded error
    exceeds ``atol``."""
    v = r.get("verification") or {}
    claimed = v.get("claimed")
    if (not r.get("verified") or not isinstance(claimed, (int, float)) or not math.isfinite(claimed)
            or claimed <= 0):
        return None
    if isinstance(v.get("beyond_tolerance"), bool):
        return float(claimed) if v["beyond_tolerance"] else None
    return float(claimed) if claimed > (v.get("atol") or 0.0) else None


def write_table(path: str | Path, table: dict | Table) -> Path:
    """Write a table atomically (a crash leaves the old file or the new one, never half)."""
    doc = table.to_json() if isinstance(table, Table) else table
    return write_json(path, doc)


def table_path(path: str | Path) -> Path:
    """``DIR`` (a tune output folder) -> ``DIR/table.json``; a file path is kept."""
    p = Path(path)
    return p / "table.json" if p.is_dir() else p


def load_table(source, *, check_hashes: bool = True) -> Table:
    """A validated Table from a path (file, or tune folder), a JSON dict or a Table.

    Raises InputError naming the file and field: invalid JSON, a wrong type, another schema
    than this autotile reads, an embedded spec or profile that does not match its hash, a
    param outside its domain or a configuration that breaks the spec's constraints.
    """
    if isinstance(source, Table):
        return source
    if isinstance(source, dict):
        return _validate(source, None, check_hashes)
    p = table_path(source)
    try:
        text = pending(p).read_text(encoding="utf-8")  # a tune's table.json not renamed into place yet
    except FileNotFoundError:
        raise InputError("file not found (expected a table.json or a tune output folder)", file=str(p)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read: {getattr(exc, 'strerror', None) or exc}", file=str(p)) from None
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"invalid JSON: {exc.msg}", file=str(p), line=exc.lineno, col=exc.colno) from None
    except RecursionError:  # [[[[...]]]] thousands deep: the decoder recurses once per level
        raise InputError("invalid JSON: nesting too deep", file=str(p)) from None
    try:
        return _validate(doc, str(p), check_hashes)
    except InputError as exc:
        raise _located(exc, text, str(p)) from None


_FIELD_PART = re.compile(r"\[(\d+)\]|([^.\[\]]+)")


def _located(exc: InputError, text: str, file: str) -> InputError:
    """``exc`` with the line and column of its field in the table's text (JSON is YAML, whose
    parser keeps positions; ``json`` does not). Unchanged when it names no field of this file
    or the text does not parse as YAML (a tab as indentation, say)."""
    if exc.line is not None or exc.field is None or exc.file != file:
        return exc
    path = tuple(int(i) if i else key for i, key in _FIELD_PART.findall(exc.field))
    try:  # YAML refuses tab indentation; a JSON tab is whitespace between tokens (never inside a
        # string), so a space in its place keeps every line and column
        line, col = load_text(text.replace("\t", " "), file).where(path)
    except (InputError, RecursionError):
        return exc
    return InputError(exc.message, file=file, line=line, col=col, field=exc.field)


# -- validation ----------------------------------------------------------------------------

class _Check:
    """Type checks that raise InputError(file, field, expected ..., got ...)."""

    def __init__(self, file):
        self.file = file

    def fail(self, field, message):
        return InputError(message, file=self.file, field=field)

    def get(self, obj, key, field, kinds, what, *, optional=False):
        if key not in obj:
            if optional:
                return None
            raise self.fail(field, f"missing field {key!r}")
        value = obj[key]
        if value is None and optional:
            return None
        ok = isinstance(value, kinds) and not (isinstance(value, bool) and bool not in _tuple(kinds))
        if isinstance(value, float) and not math.isfinite(value):
            ok = False
        if not ok:
            raise self.fail(f"{field}.{key}" if field else key, f"expected {what}, got {_show(value)}")
        return value


def _tuple(kinds):
    return kinds if isinstance(kinds, tuple) else (kinds,)


def _show(v) -> str:
    if isinstance(v, (dict, list)):
        return {dict: "a mapping", list: "a list"}[type(v)]
    if v is None:
        return "null"
    return json.dumps(v)


def _validate(doc, file, check_hashes) -> Table:
    c = _Check(file)
    if not isinstance(doc, dict):
        raise InputError(f"expected a table (a JSON object), got {_show(doc)}", file=file)
    schema = c.get(doc, "schema", "", str, "a schema name like " + repr(SCHEMA))
    name, _, version = schema.rpartition("/")
    # ASCII digits only: str.isdigit() also takes "¹" and "٣", which int() refuses
    if name != SCHEMA_NAME or not (version.isascii() and version.isdigit()):
        raise c.fail("schema", f"expected {SCHEMA!r}, got {schema!r}")
    # more digits than ours is a newer version (and int() refuses past 4300 digits)
    if len(version.lstrip("0")) > len(str(SCHEMA_VERSION)) or int(version) > SCHEMA_VERSION:
        raise c.fail("schema", f"table schema {schema} is newer than this autotile {__version__} reads "
                               f"({SCHEMA}); upgrade autotile or re-export the table")
    if schema != SCHEMA:
        raise c.fail("schema", f"expected {SCHEMA!r}, got {schema!r}")
    op = c.get(doc, "op", "", str, "an op name")
    hw = c.get(doc, "hardware", "", dict, "a mapping {name, hash, profile}")
    c.get(hw, "name", "hardware", str, "a profile name")
    hw_hash = c.get(hw, "hash", "hardware", str, "a hash")
    c.get(hw, "profile", "hardware", dict, "the profile's values (a mapping)")
    spec = c.get(doc, "spec", "", dict, "a mapping {path, hash, content}")
    c.get(spec, "path", "spec", str, "the spec's path")
    spec_hash = c.get(spec, "hash", "spec", str, "a hash")
    content = c.get(spec, "content", "spec", dict, "the normalized spec (a mapping)")
    # the spec parser would default a missing list, and the default may even hash the same
    dtypes = c.get(content, "dtypes", "spec.content", list, "a list of dtype names")
    if not dtypes or not all(isinstance(d, str) for d in dtypes):
        raise c.fail("spec.content.dtypes", "expected a non-empty list of dtype names")
    c.get(doc, "autotile_version", "", str, "a version")
    c.get(doc, "simulator", "", str, "a simulator fingerprint or null", optional=True)
    c.get(doc, "created", "", str, "an ISO time")
    dims = c.get(doc, "dims", "", list, "a list of dimension names")
    if not dims or not all(isinstance(d, str) for d in dims):
        raise c.fail("dims", "expected a non-empty list of dimension names")
    if content.get("op") != op:
        raise c.fail("spec.content.op", f"expected {op!r} (the table's op), got {_show(content.get('op'))}")
    if (cut := c.get(doc, "interrupted", "", dict, "a mapping {not_run, cut_short} or null", optional=True)) is not None:
        for key in ("not_run", "cut_short"):
            v = c.get(cut, key, "interrupted", int, "a count of studies")
            if v < 0:
                raise c.fail(f"interrupted.{key}", f"expected a count of studies (0 or more), got {v}")
    raw = c.get(doc, "entries", "", list, "a list of entries")
    entries = tuple(_entry(c, e, f"entries[{i}]", dims) for i, e in enumerate(raw))
    table = Table(op=op, dims=tuple(dims), entries=entries, doc=doc, file=file)
    if check_hashes:
        if table.hardware.content_hash() != hw_hash:
            raise c.fail("hardware.profile", f"the profile's values do not match hardware.hash {hw_hash} "
                                             f"(they hash to {table.hardware.content_hash()})")
        if table.spec.content_hash() != spec_hash:
            raise c.fail("spec.content", f"the spec does not match spec.hash {spec_hash} "
                                         f"(it hashes to {table.spec.content_hash()})")
    if tuple(table.spec.op.dims) != tuple(dims):
        raise c.fail("dims", f"expected {list(table.spec.op.dims)} for {op}, got {dims}")
    _check_params(c, table)
    return table


def _entry(c: _Check, e, field, dims) -> Entry:
    if not isinstance(e, dict):
        raise c.fail(field, f"expected an entry (a mapping), got {_show(e)}")
    shape = c.get(e, "shape", field, dict, "a mapping of dimension sizes")
    if sorted(shape) != sorted(dims):
        raise c.fail(f"{field}.shape", f"expected the dimensions {', '.join(dims)}, got {', '.join(shape)}")
    for d in dims:  # the bounds of a spec's shapes and --shape: the headers hold them as int64,
        v = shape[d]  # and the Ascend C TilingData as int32
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise c.fail(f"{field}.shape.{d}", f"expected a positive integer, got {_show(v)}")
        if v > MAX_DIM:
            raise c.fail(f"{field}.shape.{d}", f"expected at most {MAX_DIM}, got {v}")
    return Entry(
        shape={d: shape[d] for d in dims},
        dtype=c.get(e, "dtype", field, str, "a dtype name"),
        unit=c.get(e, "unit", field, str, "a unit name"),
        params=c.get(e, "params", field, dict, "a mapping of parameter values"),
        cycles=_performance(c, e, "cycles", field, 0.0, None),
        time_us=_performance(c, e, "time_us", field, 0.0, None),
        pct_of_peak=_performance(c, e, "pct_of_peak", field, 0.0, 100.0),
        verified=c.get(e, "verified", field, bool, "true or false"),
        study=c.get(e, "study", field, str, "a study name", optional=True),
        trial=_trial(c, e, field),
        values=_values(c, e, field),
        verified_within=_within(c, e, field),
        unverified=_unverified(c, e, field),
    )


def _values(c: _Check, e: dict, field: str) -> dict | None:
    """An entry's recorded objective values: a mapping of names to finite numbers, or null."""
    values = c.get(e, "values", field, dict, "a mapping of objective values or null", optional=True)
    for k, v in (values or {}).items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            raise c.fail(f"{field}.values.{k}", f"expected a finite number, got {_show(v)}")
    return values


def _trial(c: _Check, e: dict, field: str) -> int | None:
    """The number of the study's trial an entry came from (Optuna counts from 0), or null."""
    v = c.get(e, "trial", field, int, "a trial number (0 or more)", optional=True)
    if v is not None and v < 0:
        raise c.fail(f"{field}.trial", f"expected a trial number (0 or more), got {v}")
    return v


def _unverified(c: _Check, e: dict, field: str) -> str | None:
    """Why the gate could not check an entry (text, only beside ``verified: false``), or null."""
    v = c.get(e, "unverified", field, str, "a reason (text) or null", optional=True)
    if v is not None and e.get("verified") is True:
        raise c.fail(f"{field}.unverified", "expected null for a verified entry (it says why one was not checked)")
    return v


def _within(c: _Check, e: dict, field: str) -> float | None:
    """The max abs error the gate allowed an entry (0 or more), or null."""
    v = c.get(e, "verified_within", field, (int, float), "a max abs error (0 or more) or null", optional=True)
    if v is not None and v < 0:
        raise c.fail(f"{field}.verified_within", f"expected a max abs error (0 or more), got {_show(v)}")
    return v


# what % of peak may exceed 100 by in tune's own arithmetic (the simulator's shares round)
PCT_ROUNDING = 1e-6


def _performance(c: _Check, e: dict, key: str, field: str, low: float, high: float | None) -> float | None:
    """A prediction of an entry (null where there is none): finite, above ``low`` (cycles and
    time), or from ``low`` to ``high`` (% of peak); the headers print it in comments."""
    what = "a number above 0" if high is None else f"a number from {low:g} to {high:g}"
    v = c.get(e, key, field, (int, float), what, optional=True)
    if v is None:
        return None
    try:
        x = float(v)
    except OverflowError:  # an integer beyond any float
        x = math.inf
    if not math.isfinite(x) or (x <= low if high is None else not low <= x <= high + PCT_ROUNDING):
        raise c.fail(f"{field}.{key}", f"expected {what}, got {_show(v)}")
    return v


def _check_params(c: _Check, table: Table) -> None:
    """Each entry's dtype, unit and params fit the spec (names, value types, domains, constraints)."""
    spec = table.spec
    seen = set()
    for i, e in enumerate(table.entries):
        f = f"entries[{i}]"
        if e.dtype not in spec.dtypes:
            raise c.fail(f"{f}.dtype", f"expected one of the spec's dtypes {', '.join(spec.dtypes)}, got {e.dtype!r}")
        if e.unit not in spec.units:
            raise c.fail(f"{f}.unit", f"expected one of the spec's units {', '.join(spec.units)}, got {e.unit!r}")
        key = (tuple(e.shape.values()), e.dtype)
        if key in seen:
            raise c.fail(f"{f}", f"a second entry for shape {e.shape} {e.dtype}")
        seen.add(key)
        names = spec.param_names(e.unit)
        for n in names:
            if n not in e.params:
                raise c.fail(f"{f}.params", f"missing param {n!r} of unit {e.unit}")
        for n, v in e.params.items():
            if n not in names:
                raise c.fail(f"{f}.params.{n}", f"unknown param of unit {e.unit}, expected one of {', '.join(names)}")
            p = spec.param(n)
            if p.kind == "int" and (isinstance(v, bool) or not isinstance(v, int)):
                raise c.fail(f"{f}.params.{n}", f"expected an integer, got {_show(v)}")
            if p.kind != "int" and not any(v == ch and type(v) is type(ch) for ch in p.choices):
                raise c.fail(f"{f}.params.{n}", f"expected one of {', '.join(_show(ch) for ch in p.choices)}, got {_show(v)}")
        _check_domains(c, spec, f, e)


def _check_domains(c: _Check, spec, field: str, e: Entry) -> None:
    """Each param of an entry lies in its domain for the entry's shape, dtype and unit (where the
    domain can be evaluated) and the entry keeps the spec's constraints: a hand edit such as
    ``single_core_m: 0`` or an L0A overflow would reach the headers (which divide by it, or hand a
    kernel buffers it cannot hold) and make the lookup skip the entry without a word."""
    from autotile.space.space import describe

    try:
        space = spec.space(e.shape, e.dtype, e.unit)
    except InputError as exc:
        raise c.fail(field, exc.message) from None
    bad = space.outside_domain(e.params)
    if bad is not None:
        name, dom = bad
        shape = ",".join(f"{k}={v}" for k, v in e.shape.items())
        raise c.fail(f"{field}.params.{name}", f"expected a value in its domain {describe(dom)} for {shape} "
                                               f"{e.dtype} {e.unit}, got {_show(e.params[name])}")
    why = space.constraint_failure(e.params)
    if why is not None:
        shape = ",".join(f"{k}={v}" for k, v in e.shape.items())
        raise c.fail(f"{field}.params", f"expected a configuration the spec allows for {shape} {e.dtype} {e.unit}, "
                                        f"but {why}")
