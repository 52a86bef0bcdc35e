"""Recorded measurements of a replay spec: a CSV or a Kernel Tuner cache, bound to the spec.

CSV: a header row, then one row per measured configuration. Columns are

- one per parameter of the spec (every parameter; a cell may be empty for a parameter that is
  not in the row's unit);
- exactly one time column: ``time`` or ``time_ms`` (milliseconds, Kernel Tuner's unit),
  ``time_us``, ``time_ns`` or ``time_s``. A cell that is not a number (``failed``,
  ``CompilationFailedConfig``, empty) records a failed configuration;
- optionally the op's shape dims, ``dtype`` and ``unit``: a row then applies only to the
  spaces with those values (one file may hold many shapes and units);
- any other column is a numeric metric (``cycles``, ``max_abs_error``, ...), available as an
  objective. A ``cycles`` column replaces the cycles derived from the time (above 0 where a
  time is; a time of 0 or less records a failed configuration).

Values are matched to the spec's parameter values exactly, with integral floats read as ints
(``64.0`` is ``64``) and, for a param with bool values, ``true`` / ``false`` (any case; also
``yes`` / ``no``, ``on`` / ``off``, ``1`` / ``0``, ``1.0`` / ``0.0``) read as the bool. A spec parameter missing from the file, or a file parameter the spec does
not declare, is an InputError naming the file and the parameter.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from autotile.errors import InputError
from autotile.tune import ktcache
from autotile.yamlsrc import scalar_text, suggest

TIME_COLUMNS = {"time": 1e3, "time_ms": 1e3, "time_us": 1.0, "time_ns": 1e-3, "time_s": 1e6}  # -> us
CONTEXT = ("dtype", "unit")


@dataclass(frozen=True)
class Record:
    """One measured configuration. ``time_us`` is None when it failed (``failure`` says why)."""

    params: dict
    time_us: float | None
    failure: str | None = None
    metrics: dict = field(default_factory=dict)
    context: dict = field(default_factory=dict)  # shape dims, dtype, unit where the file has them
    where: str = ""  # "line 12" or "cache key '1,2,3'"


@dataclass(frozen=True)
class Measurements:
    """A measurements file read against a spec's parameters."""

    file: str
    kind: str  # "csv" | "kernel_tuner"
    params: tuple[str, ...]
    records: tuple[Record, ...]
    meta: dict = field(default_factory=dict)  # Kernel Tuner: device_name, kernel_name, problem_size


def norm(value):
    """A value as configurations are compared: integral floats become ints, numpy scalars plain.

    >>> norm(64.0), norm(0.5), norm(True), norm("a")
    (64, 0.5, True, 'a')
    """
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return int(value)
    return value


_CACHE: dict = {}


def load(spec) -> Measurements:
    """The measurements of replay spec ``spec``, read once per file version and spec.

    >>> m = load(load_spec("examples/replay.yaml"))  # doctest: +SKIP
    >>> m.records[0].time_us  # doctest: +SKIP
    """
    path = Path(spec.measurements)
    try:
        st = path.stat()
    except OSError as exc:
        raise InputError(f"cannot read measurements: {exc.strerror}", file=str(path)) from None
    key = (str(path.resolve()), st.st_mtime_ns, st.st_size, spec.content_hash())
    if key not in _CACHE:
        if len(_CACHE) > 16:
            _CACHE.clear()
        _CACHE[key] = read_kt(path, spec) if ktcache.is_cache_file(path) else read_csv(path, spec)
    return _CACHE[key]


def check_names(file: str, spec_params, file_params) -> None:
    """InputError unless the spec and the file have the same parameters."""
    for name in spec_params:
        if name not in file_params:
            raise InputError(f"parameter {name!r} of the spec is not in the measurements "
                             f"(they have {', '.join(file_params)})" + suggest(name, file_params),
                             file=file, field=name)
    for name in file_params:
        if name not in spec_params:
            raise InputError(f"parameter {name!r} of the measurements is not declared in the spec "
                             f"(it has {', '.join(spec_params)})" + suggest(name, spec_params),
                             file=file, field=name)


def read_kt(path: Path, spec) -> Measurements:
    """A Kernel Tuner cache bound to ``spec``'s parameters."""
    file = str(path)
    doc = ktcache.read_cache(path)
    names = tuple(doc["tune_params_keys"])
    check_names(file, [p.name for p in spec.params], names)
    conv = {p.name: _converter(p) for p in spec.params}
    records = []
    for e in ktcache.entries(doc, file):
        params = {k: conv[k](v) for k, v in e.params.items()}
        t = None if e.time_ms is None else e.time_ms * 1e3
        records.append(Record(params, t, e.failure, e.metrics, {}, f"cache key {e.key!r}"))
    meta = {k: doc.get(k) for k in ("device_name", "kernel_name", "problem_size", "objective")}
    return Measurements(file, "kernel_tuner", names, tuple(records), meta)


def read_csv(path: Path, spec) -> Measurements:
    """A CSV of measurements bound to ``spec`` (see the module docstring for the columns)."""
    file = str(path)
    try:
        with open(path, newline="", encoding="utf-8-sig") as fh:
            table = list(csv.reader(fh))
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"cannot read the CSV: {exc}", file=file) from None
    if not table or not any(h.strip() for h in table[0]):
        raise InputError("empty CSV: expected a header row", file=file, line=1)
    header = [h.strip() for h in table[0]]
    seen = set()
    for i, h in enumerate(header):
        if not h or h in seen:
            raise InputError(f"column {i + 1}: {'empty' if not h else 'repeated'} column name {h!r}",
                             file=file, line=1, col=i + 1)
        seen.add(h)
    spec_names = [p.name for p in spec.params]
    times = [h for h in header if h in TIME_COLUMNS]
    if len(times) != 1:
        what = "no time column" if not times else f"{len(times)} time columns ({', '.join(times)})"
        guess = next((suggest(h, TIME_COLUMNS) for h in header if suggest(h, TIME_COLUMNS)), "")
        raise InputError(f"{what}: expected one of {', '.join(TIME_COLUMNS)}" + guess, file=file, line=1)
    context_cols = [h for h in header if h in spec.op.dims or h in CONTEXT]
    others = [h for h in header if h not in times and h not in context_cols]
    params_in = [h for h in others if h in spec_names]
    for name in spec_names:
        if name not in params_in:
            raise InputError(f"parameter {name!r} of the spec is not a column (columns: "
                             f"{', '.join(header)})" + suggest(name, others), file=file, line=1,
                             field=name)
    metric_cols = [h for h in others if h not in spec_names]
    col = {h: i for i, h in enumerate(header)}
    conv = {p.name: _converter(p) for p in spec.params}
    scale = TIME_COLUMNS[times[0]]
    records = []
    for line, row in enumerate(table[1:], 2):
        if not any(c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(f"expected {len(header)} cells, got {len(row)}", file=file, line=line)
        cell = {h: row[col[h]].strip() for h in header}
        params = {}
        for h in params_in:
            try:
                params[h] = conv[h](cell[h]) if cell[h] != "" else None
            except ValueError as exc:
                raise InputError(str(exc), file=file, line=line, col=col[h] + 1, field=h) from None
        context = {h: _context(cell[h], h in spec.op.dims, file, line, col[h] + 1, h)
                   for h in context_cols}
        t, failure = _time_cell(cell[times[0]], scale)
        metrics = {}
        for h in metric_cols:
            v = _float(cell[h])
            if v is None and cell[h] != "" and t is not None:
                raise InputError(f"column {h!r} has text {cell[h]!r}: it is neither a parameter of "
                                 "the spec nor a numeric metric" + suggest(h, spec_names),
                                 file=file, line=line, col=col[h] + 1, field=h)
            if h == "cycles" and v is not None and v <= 0 and t is not None:
                raise InputError(f"expected a positive number of cycles, got {cell[h]!r}", file=file, line=line,
                                 col=col[h] + 1, field=h)
            if v is not None:
                metrics[h] = v
        records.append(Record(params, t, failure, metrics, context, f"line {line}"))
    return Measurements(file, "csv", tuple(params_in), tuple(records))


def _converter(p):
    """How a file value of param ``p`` becomes a spec value (text cells of CSVs too). Where ``p``
    has bool values (a bool param, or choices such as ``[true, false]``), a bool spelling or 1 / 0
    is the bool: a choice of bools read ``true`` as no number and 1 as no match for True."""
    if p.is_text:
        return lambda v: v if isinstance(v, str) else _text(v)
    if p.kind == "bool":
        return _bool
    bools = p.kind != "int" and any(isinstance(c, bool) for c in p.choices)
    only_bools = bools and all(isinstance(c, bool) for c in p.choices)
    wanted = "true or false" if only_bools else "true, false or a number" if bools else "a number"

    def number(v):
        if bools and (b := _as_bool(v)) is not None:  # 0 and 1 are no choice beside a bool (the same number)
            return b
        if isinstance(v, str):
            parsed = _float(v)
            if parsed is None:
                raise ValueError(f"expected {wanted} for parameter {p.name}, got {v!r}")
            v = int(v) if _is_int_text(v) else parsed
        return norm(v)

    return number


def _text(v) -> str:
    """A number given for a text parameter, as the text it would be written as."""
    return scalar_text(norm(v))


# what a bool value may be written as: true / false and the other words YAML's safe loader reads
# as bools (yes / no, on / off), in any case, and 1 / 0
BOOL_TEXT = {"true": True, "yes": True, "on": True, "1": True, "false": False, "no": False, "off": False, "0": False}


def _as_bool(v) -> bool | None:
    """``v`` as a bool when it spells one (see BOOL_TEXT; a number cell ``1.0`` / ``0.0`` too, as
    ``64.0`` is ``64`` for an int), else None."""
    if isinstance(v, bool):
        return v
    if isinstance(v, str) and (f := _float(v)) is not None:
        v = f
    return BOOL_TEXT.get(str(norm(v)).strip().lower())


def _bool(v):
    if (b := _as_bool(v)) is not None:
        return b
    raise ValueError(f"expected true or false, got {v!r}")


def _is_int_text(text: str) -> bool:
    try:
        int(text)
        return True
    except ValueError:
        return False


def _float(text):
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if math.isfinite(v) else None


def _time_cell(text: str, scale: float) -> tuple[float | None, str | None]:
    if text == "":
        return None, "no time recorded"
    v = _float(text)
    if v is None:
        return None, text
    if v * scale <= 0:  # a kernel takes some time (and a table's time_us is above 0)
        return None, f"invalid time {text}"
    if v >= ktcache.OLD_FAILURE_TIME:
        return None, "failed (time 1e20)"
    return v * scale, None


def _context(text: str, is_dim: bool, file, line, col, name):
    if not is_dim:
        return text
    if not _is_int_text(text) or int(text) <= 0:
        raise InputError(f"expected a positive integer for dimension {name}, got {text!r}",
                         file=file, line=line, col=col, field=name)
    return int(text)
