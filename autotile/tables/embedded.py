"""What a table carries to stand on its own: the hardware profile's values and the normalized spec.

A table records ``spec.to_dict()`` and the profile's values (``dataclasses.asdict`` without its
notes and declared relations), so lookup can re-check a tiling against the spec's constraints without the original
spec or profile files. Both are rebuilt here and checked against the hashes the table records.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace

from autotile.errors import InputError
from autotile.hardware.profile import (
    BUFFERS,
    DEFAULT_PROFILE,
    SCHEMA,
    HardwareProfile,
    parse_profile,
)
from autotile.yamlsrc import Located, dotted


def profile_dict(hw: HardwareProfile) -> dict:
    """The profile's values as plain JSON data (what ``content_hash`` covers, plus the name)."""
    data = asdict(hw)
    data.pop("notes", None)
    data.pop("derived", None)  # like the notes: what calibrate keeps, not a value
    data.pop("path", None)
    return data


CHIP = ("cube_cores", "vector_cores", "clock_ghz")
MEMORY = (*(f"{b}_bytes" for b in (*BUFFERS, "l2")),
          "hbm_bytes_per_cycle", "l2_read_bytes_per_cycle", "l2_write_bytes_per_cycle")
VECTOR = {"vector_bytes_per_repeat": "bytes_per_repeat", "vector_max_repeat": "max_repeat"}
_EMBEDDED = {f.name for f in fields(HardwareProfile)} - {"notes", "derived", "path"}


def profile_from_dict(data: dict, *, file: str | None = None, field: str = "hardware.profile") -> HardwareProfile:
    """Rebuild a profile from :func:`profile_dict` output; InputError if it does not fit.

    The values get the checks a profile file gets (``parse_profile``: types, the operation
    catalogue, every constant's bounds): a table whose ``name`` or ``vector_cores`` was null
    failed with a TypeError in lookup, and ``clock_ghz: "x"`` or ``0`` was exported as is.
    Errors name the table's field, e.g. ``hardware.profile.vector_cores``.
    """
    if not isinstance(data, dict):
        raise InputError("expected the profile's values (a mapping)", file=file, field=field)
    for key in data:
        if key not in _EMBEDDED:
            raise InputError("unknown key", file=file, field=f"{field}.{key}")
    for key in sorted(_EMBEDDED):
        if key not in data:
            raise InputError(f"missing key {key!r}", file=file, field=field)
    for op, sigs in data["vector"].items() if isinstance(data["vector"], dict) else ():
        for sig, cost in sigs.items() if isinstance(sigs, dict) else ():
            for note in ("source", "calibrated"):  # a table carries values, never notes
                if isinstance(cost, dict) and note in cost:
                    raise InputError("unknown key", file=file, field=f"{field}.vector.{op}.{sig}.{note}")
    doc = _EmbeddedProfile(_as_profile_document(data), file, prefix=field)
    return replace(parse_profile(doc), notes={}, path=None)


@dataclass(frozen=True)
class _EmbeddedProfile(Located):
    """A table's profile values dressed as a profile document; errors name the table's field."""

    prefix: str = "hardware.profile"

    def error(self, path, message, *, key=False) -> InputError:
        return InputError(message, file=self.file, field=_embedded_field(self.prefix, tuple(path)))


def _embedded_field(prefix: str, path: tuple) -> str:
    """The table field of a profile document path: ``("chip", "vector_cores", "value")`` is
    ``vector_cores``, ``("vector", "ops", "vadd", ...)`` is ``vector.vadd...``."""
    if path and path[-1] == "value":
        path = path[:-1]
    head = path[:1]
    if head in (("chip",), ("memory",)):
        path = path[1:]
    elif head == ("vector",):
        rest = path[1:]
        if rest[:1] == ("ops",):
            path = ("vector", *rest[1:])
        elif rest and rest[0] in VECTOR.values():
            path = (next(k for k, v in VECTOR.items() if v == rest[0]), *rest[1:])
        else:
            path = ()
    text = dotted(path)
    return f"{prefix}.{text}" if text else prefix


def _const(v):
    return {"value": v, "source": "embedded in the table"}


def _consts(node):
    """``{k: v}`` -> ``{k: {value: v, source}}``; anything else is left for the parser to refuse."""
    return {k: _const(v) for k, v in node.items()} if isinstance(node, dict) else node


def _as_profile_document(d: dict) -> dict:
    """The profile file a table's values came from (notes aside): keys the values lack stay
    missing, and values of the wrong kind stay as they are, so ``parse_profile`` reports them."""
    doc = {"schema": SCHEMA}
    for key in ("name", "description"):
        if key in d:
            doc[key] = d[key]
    doc["chip"] = {k: _const(d[k]) for k in CHIP if k in d}
    doc["memory"] = {k: _const(d[k]) for k in MEMORY if k in d}
    if "align" in d:
        doc["align"] = _consts(d["align"])
    if "copy" in d:
        copy = d["copy"]
        doc["copy"] = {p: _consts(c) for p, c in copy.items()} if isinstance(copy, dict) else copy
    if "cube" in d:
        cube = d["cube"]
        if isinstance(cube, dict):
            cube = {k: (_consts(v) if k == "macs_per_cycle" else _const(v)) for k, v in cube.items()}
        doc["cube"] = cube
    vector = {VECTOR[k]: _const(d[k]) for k in VECTOR if k in d}
    if "vector" in d:
        ops = d["vector"]
        if isinstance(ops, dict):
            ops = {op: ({sig: (dict(c, source="embedded in the table") if isinstance(c, dict) else c)
                         for sig, c in sigs.items()} if isinstance(sigs, dict) else sigs)
                   for op, sigs in ops.items()}
        vector["ops"] = ops
    doc["vector"] = vector
    if "scalar" in d:
        doc["scalar"] = _consts(d["scalar"])
    return doc


def spec_from_dict(data: dict, hw: HardwareProfile, *, file: str | None = None):
    """Rebuild a Spec from ``Spec.to_dict()`` output, with ``hw`` as its hardware.

    The spec parser resolves ``hardware`` by name or path; the table's own profile replaces it
    afterwards (expressions only read ``hw`` values when a space is built), so a spec whose
    profile file is gone still loads. A replay spec's ``measurements`` path is kept as recorded
    and not opened (the table never replays them), so moving or deleting that file does not
    break the table, while the spec hash still covers the path.
    """
    from autotile.space import load_spec_text

    if not isinstance(data, dict):
        raise InputError("expected the normalized spec (a mapping)", file=file, field="spec.content")
    ref = data.get("hardware", DEFAULT_PROFILE)
    doc = dict(data, hardware=DEFAULT_PROFILE)
    where = f"{file}#spec.content" if file else "spec.content"
    try:
        spec = load_spec_text(json.dumps(doc), where, embedded=True)
    except InputError as exc:
        raise InputError(f"the embedded spec is invalid: {exc.message}", file=file,
                         field="spec.content" + (f".{exc.field}" if exc.field else "")) from None
    return replace(spec, hardware=hw, hardware_ref=str(ref))
