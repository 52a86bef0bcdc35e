"""Kernel Tuner cache files (``.json`` or ``.json.gz``): tolerant reading and validation.

A cache holds ``tune_params_keys``, ``tune_params`` (name -> values) and ``cache``, a map from
the comma-joined values to an entry with the params, ``time`` (ms) and more. A failed
configuration has a string (``"CompilationFailedConfig"``, ...) in ``time``; caches from old
Kernel Tuner versions mark failures with a time of 1e20. Kernel Tuner writes the cache while
it tunes, so a cache from an interrupted run lacks its closing braces: it is read as if closed.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass
from pathlib import Path

from autotile.errors import InputError

REQUIRED = ("tune_params_keys", "tune_params", "cache")
OLD_FAILURE_TIME = 1e20
SKIP_FIELDS = ("time", "times")  # entry fields that are neither params nor metrics


@dataclass(frozen=True)
class Entry:
    """One cached configuration: its key, params, time in ms (None if failed) and metrics."""

    key: str
    params: dict
    time_ms: float | None
    failure: str | None
    metrics: dict


def is_cache_file(path: str | Path) -> bool:
    """True for a name Kernel Tuner caches use: ``*.json`` or ``*.json.gz``."""
    name = str(path).lower()
    return name.endswith((".json", ".json.gz"))


def read_cache(path: str | Path) -> dict:
    """The cache document at ``path`` (gzip-compressed when it ends with ``.gz``), validated.

    >>> doc = read_cache("tests/data/kt_small.json")  # doctest: +SKIP
    >>> doc["tune_params_keys"]  # doctest: +SKIP
    ['block_size_x', 'tile', 'variant']
    """
    path = Path(path)
    try:
        raw = path.read_bytes()
        if str(path).lower().endswith(".gz"):
            raw = gzip.decompress(raw)
        text = raw.decode("utf-8").strip()
    except (OSError, EOFError, gzip.BadGzipFile, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the Kernel Tuner cache: {exc}", file=str(path)) from None
    doc = _loads(text, path)
    if not isinstance(doc, dict):
        raise InputError("expected a Kernel Tuner cache (a JSON object)", file=str(path))
    for key in REQUIRED:
        if key not in doc:
            raise InputError(f"not a Kernel Tuner cache: missing key {key!r}", file=str(path))
    keys, params, cache = doc["tune_params_keys"], doc["tune_params"], doc["cache"]
    if not isinstance(keys, list) or not keys or not all(isinstance(k, str) for k in keys):
        raise InputError("tune_params_keys: expected a non-empty list of names", file=str(path),
                         field="tune_params_keys")
    if not isinstance(params, dict) or set(params) != set(keys):
        raise InputError("tune_params: expected a mapping with exactly the names of tune_params_keys",
                         file=str(path), field="tune_params")
    for k in keys:
        if not isinstance(params[k], list) or not params[k]:
            raise InputError("expected a non-empty list of values", file=str(path), field=f"tune_params.{k}")
        bad = next((v for v in params[k] if not is_value(v)), _OK)
        if bad is not _OK:
            raise InputError(f"expected values that are numbers, text or true/false, got {show(bad)}",
                             file=str(path), field=f"tune_params.{k}")
    if not isinstance(cache, dict):
        raise InputError("expected a mapping of configurations", file=str(path), field="cache")
    return doc


_OK = object()


def is_value(v) -> bool:
    """True for a value a tunable parameter can take: a number, text or a bool (not null, a
    list or a mapping)."""
    return isinstance(v, (str, int, float))  # bool is an int


def show(v) -> str:
    """A short text of a JSON value for an error message (an integer of 400 digits is not printed)."""
    if v is None:
        return "null"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "a mapping"
    if isinstance(v, int) and not isinstance(v, bool) and abs(v) >= 10**20:
        return f"an integer of {len(str(abs(v)))} digits"
    text = repr(v)
    return text if len(text) <= 60 else text[:57] + "..."


def _loads(text: str, path: Path):
    try:
        return _parse(text, path)
    except json.JSONDecodeError as first:
        # an unfinished cache: Kernel Tuner appends entries and closes the braces at the end
        body = text.rstrip().rstrip(",")
        try:
            return _parse(body + "}\n}", path)
        except json.JSONDecodeError:
            raise InputError(f"invalid JSON at line {first.lineno}, column {first.colno}: {first.msg}",
                             file=str(path), line=first.lineno, col=first.colno) from None


def _parse(text: str, path: Path):
    """json.loads; nesting too deep to read and numbers too long to convert are located errors."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError:
        raise InputError("cannot read the Kernel Tuner cache: its JSON is nested too deeply "
                         "(a cache nests a few levels)", file=str(path)) from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        raise InputError(f"cannot read the Kernel Tuner cache: {exc}", file=str(path)) from None


def entries(doc: dict, file: str = "") -> list[Entry]:
    """Every entry of a cache document, with its params in ``tune_params_keys`` order."""
    keys = doc["tune_params_keys"]
    out = []
    for key, e in doc["cache"].items():
        if not isinstance(e, dict):
            raise InputError("expected an entry mapping", file=file, field=f"cache.{key}")
        if all(k in e for k in keys):
            params = {k: e[k] for k in keys}
            bad = next((k for k in keys if not is_value(params[k])), None)
            if bad is not None:
                raise InputError(f"expected a number, text or true/false, got {show(params[bad])}",
                                 file=file, field=f"cache.{key}.{bad}")
        else:
            parts = str(key).split(",")
            if len(parts) != len(keys):
                missing = next(k for k in keys if k not in e)
                raise InputError(f"entry has no {missing!r} and its key does not split into "
                                 f"{len(keys)} values", file=file, field=f"cache.{key}")
            params = {k: _from_key(v) for k, v in zip(keys, parts)}
        time_ms, failure = _time(e.get("time"))
        metrics = {}
        for k, v in e.items():
            if k in keys or k in SKIP_FIELDS or not _number(v):
                continue  # text (a timestamp, a failure name), lists: not metrics
            m = _finite(v)
            if k == "cycles" and m is not None and m <= 0 and time_ms is not None:
                raise InputError(f"metric 'cycles' is {show(v)}: expected a positive number",
                                 file=file, field=f"cache.{key}.{k}")
            if m is not None:
                metrics[k] = m
            elif time_ms is not None:  # a failed entry's metrics are not read
                raise InputError(f"metric {k!r} is {show(v)}: expected a finite number",
                                 file=file, field=f"cache.{key}.{k}")
        out.append(Entry(str(key), params, time_ms, failure, metrics))
    return out


def _time(value) -> tuple[float | None, str | None]:
    if value is None:
        return None, "no time recorded"
    if isinstance(value, str):
        return None, value
    if _number(value):
        if isinstance(value, float) and not math.isfinite(value) or value <= 0:  # a kernel takes some time
            return None, f"invalid time {show(value)}"
        if value >= OLD_FAILURE_TIME:  # an integer too large for a float too
            return None, "failed (time 1e20, Kernel Tuner's old failure marker)"
        return float(value), None
    return None, f"invalid time {show(value)}"


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _finite(v) -> float | None:
    """``v`` as a float, or None when it is not finite or too large for a float."""
    try:
        f = float(v)
    except OverflowError:
        return None
    return f if math.isfinite(f) else None


def _from_key(text: str):
    """A value from a comma-joined cache key: int, float or text."""
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text
