"""Model files in the cache: corrupt files, one folder per hardware profile, old one-file layout."""

from __future__ import annotations

import json
import zipfile

import pytest

from autotile.errors import InputError
from autotile.models import store


def _deflated_zip(path, payload: bytes) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("meta.json", json.dumps({"format": store.FORMAT}))
        z.writestr("models.skops", payload)


def test_a_broken_deflate_stream_is_a_corrupt_model_not_a_traceback(tmp_path):
    path = tmp_path / "m.zip"
    _deflated_zip(path, b"estimators " * 200)
    data = bytearray(path.read_bytes())
    info = zipfile.ZipFile(path).getinfo("models.skops")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start:start + info.compress_size] = b"\xff" * info.compress_size  # block type 3: invalid
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="corrupt model file"):
        store.load(path, kind="units")
