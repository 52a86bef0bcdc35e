"""Model files without pickle: a zip holding ``meta.json`` and the estimators in skops format.

``meta.json`` records the kind (units or cost), the op, the autotile version, the hardware
profile's content hash, the dataset fingerprint and the model's JSON state (feature names,
units). ``load`` reads the metadata first and refuses a file built for another profile or
version, or a corrupt one, with a one-line ``InputError``; the estimators are then loaded by
``skops.io.loads`` with an explicit list of trusted types, so a file carrying any other type
is refused instead of executed.
"""

from __future__ import annotations

import io
import json
import lzma
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


def path_for(kind: str, op: str, out=None) -> Path:
    return models_dir(out) / f"{op}.{kind}.zip"


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


def load(path, *, kind: str, hw_hash: str | None = None) -> tuple[dict, dict]:
    """(meta, estimators) of a model file, checked against ``kind``, the version and the profile."""
    import skops.io as sio

    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no trained model; run `autotile train` first")
    try:
        with zipfile.ZipFile(path) as z:
            meta = json.loads(z.read("meta.json"))
            blob = z.read("models.skops")
    except CORRUPT as exc:
        raise InputError(f"{path}: corrupt model file ({exc}); run `autotile train` again") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT or meta.get("kind") != kind:
        raise InputError(f"{path}: not an autotile {kind} model file")
    if meta.get("autotile_version") != __version__:
        raise InputError(f"{path}: model built by autotile {meta.get('autotile_version')}, this is "
                         f"{__version__}; run `autotile train` again")
    if hw_hash is not None and meta.get("profile_hash") != hw_hash:
        raise InputError(f"{path}: model built for profile {meta.get('profile_hash')}, the current profile is "
                         f"{hw_hash}; run `autotile train` again")
    try:
        models = sio.loads(blob, trusted=TRUSTED)
    except Exception as exc:  # skops raises several types for untrusted or broken content
        raise InputError(f"{path}: model refused: {' '.join(str(exc).split())[:200]}") from None
    if not isinstance(models, dict):
        raise InputError(f"{path}: corrupt model file (estimators are not a mapping)")
    return meta, models


def save_selector(sel, hw, fingerprint: str, out=None, path=None) -> Path:
    return save(path or path_for("units", sel.op, out), kind="units", op=sel.op, hw_hash=hw.content_hash(),
                fingerprint=fingerprint, state=sel.state(), models=sel.models)


def load_selector(op: str, hw=None, out=None, path=None):
    """The stored unit selector of ``op`` (checked against ``hw``'s content hash when given)."""
    from autotile.models.selector import UnitSelector

    p = Path(path) if path else path_for("units", op, out)
    meta, models = load(p, kind="units", hw_hash=hw.content_hash() if hw is not None else None)
    try:
        return UnitSelector.from_state(meta["state"], models)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{p}: corrupt model file ({exc})") from None


def save_regressor(reg, hw, fingerprint: str, out=None, path=None) -> Path:
    return save(path or path_for("cost", reg.op, out), kind="cost", op=reg.op, hw_hash=hw.content_hash(),
                fingerprint=fingerprint, state=reg.state(), models=reg.models)


def load_regressor(op: str, out=None, hw=None, path=None):
    """The stored cost regressor of ``op``."""
    from autotile.models.regressor import CostRegressor

    p = Path(path) if path else path_for("cost", op, out)
    meta, models = load(p, kind="cost", hw_hash=hw.content_hash() if hw is not None else None)
    try:
        return CostRegressor.from_state(meta["state"], models)
    except (KeyError, TypeError, ValueError) as exc:
        raise InputError(f"{p}: corrupt model file ({exc})") from None
