"""Write hardware profiles back to YAML: apply updated constants to a profile document.

Constants keep the strict ``{value: X, source|calibrated: "..."}`` form, written as one flow
mapping per line so a fitted profile reads like a hand-written one.
"""

from __future__ import annotations

import json
from pathlib import Path

from autotile.hardware.profile import VectorCost
from autotile.yamlsrc import load_file


def load_document(path: str | Path) -> dict:
    """The plain YAML document of a profile file (already validated by ``load_profile``), read
    as ``load_profile`` reads it."""
    return load_file(path).value


def set_constant(doc: dict, path: tuple, value, note: str, key: str = "calibrated", extra: dict | None = None) -> None:
    """Set the constant at ``path`` to ``value`` with one note (``calibrated`` or ``source``) and
    the ``extra`` keys given (a derived constant's ``derived``); any others it had go."""
    node = doc
    for p in path[:-1]:
        node = node.setdefault(p, {})
    if isinstance(value, VectorCost):
        entry = {"startup": value.startup, "per_repeat": value.per_repeat, "min_cycles": value.min_cycles}
    else:
        entry = {"value": value}
    entry[key] = note
    node[path[-1]] = {**entry, **(extra or {})}


def render(doc: dict, header: str = "") -> str:
    """YAML text of a profile document; leaf mappings are written inline."""
    lines = [f"# {h}" if h else "#" for h in header.splitlines()]
    _block(doc, 0, lines)
    return "\n".join(lines) + "\n"


def _scalar(v) -> str:
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return f"{v:.1f}"
    return str(v)


def _constant(v) -> bool:
    """A constant (scalars, and at most flat mappings such as ``derived``): one line."""
    return (isinstance(v, dict) and any(not isinstance(x, (dict, list)) for x in v.values())
            and all(not isinstance(x, list) and (not isinstance(x, dict) or _constant(x) and
                                                 all(not isinstance(y, (dict, list)) for y in x.values()))
                    for x in v.values()))


def _flow(v) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {_flow(x)}" for k, x in v.items()) + "}"
    return _scalar(v)


def _block(node: dict, indent: int, lines: list) -> None:
    pad = "  " * indent
    for k, v in node.items():
        if _constant(v):
            lines.append(f"{pad}{k}: {_flow(v)}")
        elif isinstance(v, dict):
            lines.append(f"{pad}{k}:")
            _block(v, indent + 1, lines)
        else:
            lines.append(f"{pad}{k}: {_scalar(v)}")
