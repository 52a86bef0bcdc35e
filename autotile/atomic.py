"""Atomic file output: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

_fsync = os.fsync  # a seam for tests that simulate a full disk
_UMASK = os.umask(0)
os.umask(_UMASK)


class OutputError(Exception):
    """An output could not be written (unwritable folder, disk full). The old file is intact."""


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            _fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; outputs get the usual mode
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
    return path


def write_text(path: str | Path, text: str) -> Path:
    """Atomically write UTF-8 text."""
    return write_bytes(path, text.encode("utf-8"))


def write_json(path: str | Path, obj) -> Path:
    """Atomically write ``obj`` as indented JSON with a trailing newline."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")
