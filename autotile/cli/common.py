"""Small helpers shared by the command modules: JSON printing, ``k=v`` parsing, path checks."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

from autotile.errors import InputError


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


def nonempty(value: str | None, flag: str, expected: str = "a file name") -> str | None:
    """A path flag's value, or None when not given; an empty (or blank) value is an error, not
    'no output' (``-o ""`` wrote nothing with exit 0)."""
    if value is not None and not value.strip():
        raise InputError(f"{flag}: expected {expected}, got an empty one")
    return value


def same_file(a, b) -> bool:
    """One file under two names (links included), or one path spelled two ways."""
    a, b = Path(a), Path(b)
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except OSError:
        return False


def parse_kv(text: str, *, what: str, ints: bool = False) -> dict:
    """``m=1024,n=2048`` -> ``{"m": 1024, "n": 2048}``; values are int, float, bool or text."""
    out: dict = {}
    if not text:
        return out
    for part in text.split(","):
        if "=" not in part:
            raise InputError(f"{what}: expected name=value, got {part!r}")
        key, _, raw = part.partition("=")
        key, raw = key.strip(), raw.strip()
        if not key.isidentifier():
            raise InputError(f"{what}: {key!r} is not a valid name")
        if key in out:
            raise InputError(f"{what}: {key} given twice")
        out[key] = _value(raw, what=f"{what} {key}", ints=ints)
    return out


def parse_shape(text: str) -> dict:
    """``--shape m=1024,n=2048``: every dimension an integer within the bounds spec shapes have
    (1 .. 2**31-1), so a typo of a few digits is an error, not an hour-long simulation."""
    from autotile.space.loader import MAX_DIM

    shape = parse_kv(text, what="--shape", ints=True)
    for key, value in shape.items():
        if value < 1:
            raise InputError(f"--shape {key}: expected a positive integer, got {value}")
        if value > MAX_DIM:
            raise InputError(f"--shape {key}: expected at most {MAX_DIM}, got {value}")
    return shape


def _value(raw: str, *, what: str, ints: bool):
    try:
        return int(raw)
    except ValueError:
        pass
    if ints:
        raise InputError(f"{what}: expected a positive integer, got {raw!r}")
    low = raw.lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        value = float(raw)
    except ValueError:
        return raw
    if not math.isfinite(value):
        raise InputError(f"{what}: expected a finite number, got {raw!r}")
    return value
