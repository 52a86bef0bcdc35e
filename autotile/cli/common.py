"""Small helpers shared by the command modules: JSON printing and ``k=v`` parsing."""

from __future__ import annotations

import json
import math
import sys

from autotile.errors import InputError


def print_json(obj) -> None:
    json.dump(obj, sys.stdout, indent=2)
    sys.stdout.write("\n")


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
