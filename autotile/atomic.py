"""Atomic file output: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from autotile.errors import InputError

_fsync = os.fsync  # a seam for tests that simulate a full disk
_UMASK = os.umask(0)
os.umask(_UMASK)


class OutputError(Exception):
    """An output could not be written (unwritable folder, disk full). The old file is intact."""


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    A symlink is written through (its target is replaced, the link kept); a path that exists and
    is neither a regular file nor a folder (``/dev/null``, ``/dev/stdout``, a FIFO) is a stream,
    written in place: renaming over it would replace the device with a file.
    """
    if not str(path):
        raise InputError("output path is empty: expected a file name")
    shown = Path(path)
    path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file() and not path.is_dir():
        try:
            with open(path, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise OutputError(f"{shown}: cannot write: {exc.strerror or exc}") from None
        return shown
    try:
        make_folder(path.parent)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write: {exc.strerror or exc}") from None
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
        raise OutputError(f"{shown}: cannot write: {exc.strerror or exc}") from None
    return shown


def make_folder(folder: Path) -> None:
    """Create ``folder`` and its parents; an ancestor that is a file is "Not a directory" (mkdir
    alone would say "File exists", which names the wrong problem)."""
    for anc in (folder, *folder.parents):
        if anc.exists():
            if not anc.is_dir():
                raise NotADirectoryError(20, "Not a directory", str(anc))
            break
    folder.mkdir(parents=True, exist_ok=True)


def check_writable(folder: Path, what: str = "the output folder") -> None:
    """An OutputError naming ``folder`` if it (or, not made yet, the folder it would be made in)
    cannot take new files (permissions, an immutable folder, a read-only file system): found
    before any work, not at the first write."""
    folder = Path(folder)
    anc = next((a for a in (folder, *folder.parents) if a.exists()), None)
    if anc is None or not anc.is_dir():  # make_folder names a file in the way
        return
    if os.access(anc, os.W_OK | os.X_OK):
        return
    if anc == folder:
        raise OutputError(f"{folder}: cannot write to {what} (it is read-only or not yours); "
                          "its files are left as they are")
    raise OutputError(f"{folder}: cannot create {what}: {anc} is read-only or not yours")


def write_text(path: str | Path, text: str) -> Path:
    """Atomically write UTF-8 text (a character UTF-8 cannot hold, such as the lone surrogate a
    non-UTF-8 file name decodes to, is written as "?")."""
    return write_bytes(path, text.encode("utf-8", errors="replace"))


def write_json(path: str | Path, obj) -> Path:
    """Atomically write ``obj`` as indented JSON with a trailing newline."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")
