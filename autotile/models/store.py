"""Model files without pickle: a zip holding ``meta.json`` and the estimators in skops format.

Files live in ``<cache>/models/<profile>/<op>.<kind>.zip`` (``profile_folder``: the name of a
bundled profile, name and content hash of any other), so models of two profiles coexist; a file
of the older one-file-per-op layout (``<cache>/models/<op>.<kind>.zip``) is still read when no
per-profile file exists, and named as such when it does not match.
``meta.json`` records the kind (units or cost), the op, the autotile version, the hardware
profile's content hash, the dataset fingerprint and the model's JSON state (feature names,
units). ``load`` reads the metadata first and refuses a file built for another op, profile,
version or simulator, or a corrupt one, with a one-line ``InputError``; the estimators are then loaded by
``skops.io.loads`` with an explicit list of trusted types, so a file carrying any other type
is refused instead of executed.
"""

from __future__ import annotations

import io
import json
import lzma
import re
import shlex
import zipfile
import zlib
from pathlib import Path

from autotile import __version__
from autotile.atomic import write_bytes
from autotile.errors import InputError
from autotile.models.dataset import cache_dir

FORMAT = "autotile-model/1"
# what reading a damaged zip can raise besides BadZipFile: a broken deflate/bzip2/lzma stream
# (zlib.error, OSError, EOFError, LZMAError), an encrypted member (RuntimeError) or an
# unsupported compression method (NotImplementedError)
CORRUPT = (OSError, EOFError, zipfile.BadZipFile, KeyError, ValueError, zlib.error, lzma.LZMAError, RuntimeError,
           NotImplementedError)
# Types skops does not trust by default that our fitted estimators carry (the tree arrays);
# scikit-learn estimators and numpy arrays are trusted by skops itself. Nothing else loads.
TRUSTED = [
    "sklearn.tree._tree.Tree",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
]


def models_dir(out=None) -> Path:
    """Folder of model files: ``<cache>/models`` (see ``dataset.cache_dir``)."""
    return cache_dir(out) / "models"


def given_dir(out, flag: str = "--models"):
    """``out`` if it is None or an existing folder; else an InputError, so a typo is not
    silently the same as having no models."""
    if out is not None and not str(out).strip():
        raise InputError(f"{flag}: expected a folder name, got an empty one")
    if out is not None and not Path(out).is_dir():
        what = "is not a folder" if Path(out).exists() else "does not exist"
        raise InputError(f"{flag}: {out} {what} (expected the cache folder given to `autotile train -o`)")
    return out


def profile_folder(hw) -> str:
    """The folder of ``hw``'s models and datasets: its name (made safe as a file name) for a
    bundled profile as shipped, else ``<name>-<8 hex digits of its content hash>``, since a
    calibrated or edited copy keeps the name and must not replace the shipped profile's files."""
    name = re.sub(r"[^A-Za-z0-9._-]", "_", hw.name).lstrip(".") or "profile"
    return name if hw.shipped else f"{name}-{hw.content_hash()[:8]}"


def path_for(kind: str, op: str, out=None, hw=None) -> Path:
    """Where the ``kind`` model of ``op`` for profile ``hw`` (default: the default profile) lives."""
    if hw is None:
        from autotile.hardware import load_profile

        hw = load_profile(None)
    return models_dir(out) / profile_folder(hw) / f"{op}.{kind}.zip"


def legacy_path(kind: str, op: str, out=None) -> Path:
    """The one-file-per-op path of models saved before they were kept per profile."""
    return models_dir(out) / f"{op}.{kind}.zip"


def locate(kind: str, op: str, out=None, hw=None) -> Path:
    """The file to read: the profile's, else an old one-file-per-op one, else the profile's (missing)."""
    p = path_for(kind, op, out, hw)
    old = legacy_path(kind, op, out)
    return old if not p.exists() and old.exists() else p


def save(path, *, kind: str, op: str, hw_hash: str, fingerprint: str, state: dict, models: dict,
         extra: dict | None = None) -> Path:
    """Write a model file; refuses to write estimators whose types are not in TRUSTED."""
    import skops.io as sio

    blob = sio.dumps(models)
    unknown = [t for t in sio.get_untrusted_types(data=blob) if t not in TRUSTED]
    if unknown:
        raise ValueError(f"model carries types outside the trusted list: {', '.join(unknown)}")
    meta = {"format": FORMAT, "kind": kind, "op": op, "autotile_version": __version__,
            "profile_hash": hw_hash, "fingerprint": fingerprint, "state": state, **(extra or {})}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("meta.json", json.dumps(meta, indent=2))
        z.writestr("models.skops", blob)
    return write_bytes(path, buf.getvalue())


def load(path, *, kind: str, op: str | None = None, hw_hash: str | None = None, fingerprint: str | None = None,
         command: str = "autotile train", retrain: str | None = None) -> tuple[dict, dict]:
    """(meta, estimators) of a model file, checked against ``kind``, ``op`` (a file copied or
    renamed from another op's model is refused), the version, the profile and the simulator
    (``fingerprint``: ``dataset.fingerprint``, which a model trained on older cycles lacks).
    ``command`` (see ``retrain_command``) is the train line every message names; ``retrain``, if
    given, replaces the advice that ends a mismatch's message."""
    import skops.io as sio

    path = Path(path)
    retrain = retrain or f"retrain with `{command}`"
    if not path.exists():
        raise InputError(f"{path}: no trained model; run `{command}` first")
    try:
        with zipfile.ZipFile(path) as z:
            meta = json.loads(z.read("meta.json"))
            blob = z.read("models.skops")
    except CORRUPT as exc:
        raise InputError(f"{path}: corrupt model file ({exc}); run `{command}` again") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("kind") != kind:
        raise InputError(f"{path}: not an autotile {kind} model file")
    if op is not None and meta.get("op") != op:
        raise InputError(f"{path}: a {kind} model trained for op {meta.get('op')!r}, not {op} (copied or renamed?); "
                         f"{retrain}")
    if meta.get("autotile_version") != __version__:
        raise InputError(f"{path}: model built by autotile {meta.get('autotile_version')}, this is "
                         f"{__version__}; {retrain}")
    if hw_hash is not None and meta.get("profile_hash") != hw_hash:
        raise InputError(f"{path}: model built for profile {meta.get('profile_hash')}, the current profile is "
                         f"{hw_hash}; {retrain}")
    if fingerprint is not None and meta.get("fingerprint") != fingerprint:
        raise InputError(f"{path}: model trained on another simulator's cycles (fingerprint "
                         f"{meta.get('fingerprint')}, this simulator's is {fingerprint}); {retrain}")
    try:
        models = sio.loads(blob, trusted=TRUSTED)
    except Exception as exc:  # skops raises several types for untrusted or broken content
        raise InputError(f"{path}: model refused: {' '.join(str(exc).split())[:200]}") from None
    if not isinstance(models, dict):
        raise InputError(f"{path}: corrupt model file (estimators are not a mapping)")
    return meta, models


def save_selector(sel, hw, fingerprint: str, out=None, path=None) -> Path:
    return save(path or path_for("units", sel.op, out, hw), kind="units", op=sel.op, hw_hash=hw.content_hash(),
                fingerprint=fingerprint, state=sel.state(), models=sel.models)


def load_selector(op: str, hw=None, out=None, path=None):
    """The stored unit selector of ``op`` (checked against ``hw``'s content hash when given)."""
    from autotile.models.selector import UnitSelector

    p, (meta, models), command = _read("units", op, out, hw, path)
    try:
        model = UnitSelector.from_state(meta.get("state"), models, op=op)
    except ValueError as exc:
        raise InputError(f"{p}: unusable model file ({exc}); run `{command}` again") from None
    model.source, model.command = str(p), command
    return model


def save_regressor(reg, hw, fingerprint: str, out=None, path=None) -> Path:
    return save(path or path_for("cost", reg.op, out, hw), kind="cost", op=reg.op, hw_hash=hw.content_hash(),
                fingerprint=fingerprint, state=reg.state(), models=reg.models)


def load_regressor(op: str, out=None, hw=None, path=None):
    """The stored cost regressor of ``op``."""
    from autotile.models.regressor import CostRegressor

    p, (meta, models), command = _read("cost", op, out, hw, path)
    try:
        model = CostRegressor.from_state(meta.get("state"), models, op=op)
    except ValueError as exc:
        raise InputError(f"{p}: unusable model file ({exc}); run `{command}` again") from None
    model.source, model.command = str(p), command
    return model


def _read(kind: str, op: str, out, hw, path) -> tuple[Path, tuple[dict, dict], str]:
    """(file, ``load`` of ``path`` else of the located file, the train command that rebuilds it),
    checked against ``hw`` (default: the default profile) and the current simulator; an
    old-layout file that does not match says so, since retraining writes the per-profile file
    and leaves it in place."""
    from autotile.hardware import load_profile
    from autotile.models.dataset import fingerprint

    hw = hw if hw is not None else load_profile(None)
    command = retrain_command(op, hw, out)
    check = {"kind": kind, "op": op, "hw_hash": hw.content_hash(), "fingerprint": fingerprint(hw),
             "command": command}
    if path:
        return Path(path), load(path, **check), command
    p = locate(kind, op, out, hw)
    if p != legacy_path(kind, op, out):
        return p, load(p, **check), command
    check["retrain"] = (f"it is an old one-file-per-op model (models now live in {p.parent}/<profile>/); "
                        f"run `{command}`")
    return p, load(p, **check), command


def retrain_command(op: str, hw, out=None) -> str:
    """The ``autotile train`` line that rebuilds ``op``'s models (unit selector and cost
    regressor, whichever it has) for ``hw`` in ``out``; arguments shell-quoted. ``--hw`` names
    ``hw.reference``: a bundled profile as shipped by its name, another by its file; a profile
    rebuilt from a table's values has no file, so the line says which file to pass instead of
    naming one that trains another chip (the name of an edited copy is the shipped profile's)."""
    from autotile.hardware.profile import DEFAULT_PROFILE, file_placeholder

    if hw.shipped or hw.path:
        ref = hw.reference
        flag = ["--hw", shlex.quote(str(ref))] if ref != DEFAULT_PROFILE else []
    else:
        flag = ["--hw", file_placeholder(hw.name, hw.content_hash())]
    return " ".join(["autotile train", "--ops", shlex.quote(op), *flag,
                     *(["-o", shlex.quote(str(out))] if out else [])])
