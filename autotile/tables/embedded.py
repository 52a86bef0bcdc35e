"""What a table carries to stand on its own: the hardware profile's values and the normalized spec.

A table records ``spec.to_dict()`` and the profile's values (``dataclasses.asdict`` without its
notes), so lookup can re-check a tiling against the spec's constraints without the original
spec or profile files. Both are rebuilt here and checked against the hashes the table records.
"""

from __future__ import annotations

import json
from dataclasses import asdict, replace

from autotile.errors import InputError
from autotile.hardware.profile import (
    DEFAULT_PROFILE,
    CopyPath,
    CubeCosts,
    HardwareProfile,
    VectorCost,
)


def profile_dict(hw: HardwareProfile) -> dict:
    """The profile's values as plain JSON data (what ``content_hash`` covers, plus the name)."""
    data = asdict(hw)
    data.pop("notes", None)
    data.pop("path", None)
    return data


def profile_from_dict(data: dict, *, file: str | None = None, field: str = "hardware.profile") -> HardwareProfile:
    """Rebuild a profile from :func:`profile_dict` output; InputError if it does not fit."""
    try:
        d = dict(data)
        d["copy"] = {k: CopyPath(**v) for k, v in d["copy"].items()}
        d["cube"] = CubeCosts(**d["cube"])
        d["vector"] = {op: {sig: VectorCost(**c) for sig, c in sigs.items()} for op, sigs in d["vector"].items()}
        return HardwareProfile(**d)
    except (TypeError, KeyError, AttributeError) as exc:
        raise InputError(f"not a hardware profile: {exc}", file=file, field=field) from None


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
