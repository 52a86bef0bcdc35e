"""Atomic file output: a reader sees the old file or the new one, never half of one."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
from pathlib import Path

from autotile.errors import InputError

_fsync = os.fsync  # a seam for tests that simulate a full disk
_UMASK = os.umask(0)
os.umask(_UMASK)


class OutputError(Exception):
    """An output could not be written (unwritable folder, disk full). The old file is intact."""


class _Stage:
    """The files of one output set written so far, each in its temporary file, and the old files
    the set deletes: renamed and deleted together only once every file is written."""

    def __init__(self) -> None:
        self.renames: dict[Path, str] = {}  # final path -> its temporary file
        self.deletes: list[Path] = []


_stage: _Stage | None = None


@contextlib.contextmanager
def output_set():
    """Write every file of a set (``write_bytes`` and ``remove`` inside the block) to temporary
    files first and rename them into place only when the block ends without an error: a write
    that fails (a full disk) leaves the whole earlier set as it was, since renames need no room.
    ``pending`` reads a file of the set before the renames. Not nested: an inner block joins."""
    global _stage
    if _stage is not None:
        yield
        return
    _stage = stage = _Stage()
    try:
        yield
    except BaseException:
        _stage = None
        for tmp in stage.renames.values():
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        raise
    _stage = None
    with _signals_held():  # a second Ctrl-C during the renames would leave half a set
        for i, (path, tmp) in enumerate(stage.renames.items()):
            try:
                os.replace(tmp, path)
            except OSError as exc:
                for rest in list(stage.renames.values())[i:]:
                    with contextlib.suppress(OSError):
                        os.unlink(rest)
                raise OutputError(f"{path}: cannot write: {exc.strerror or exc}") from None
        for path in stage.deletes:
            if path not in stage.renames:  # written again after it was deleted
                path.unlink(missing_ok=True)


@contextlib.contextmanager
def _signals_held():
    """SIGINT and SIGTERM wait until the block ends (where the platform can hold them)."""
    import signal

    held = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    except (AttributeError, ValueError, OSError):  # no pthread_sigmask (Windows)
        yield
        return
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def pending(path: str | Path) -> Path:
    """The file to read for ``path``: inside ``output_set``, the temporary file of a write not
    renamed into place yet (the report of a run reads the run's new summary.json), else ``path``."""
    if _stage is not None:
        tmp = _stage.renames.get(Path(os.path.realpath(path)))
        if tmp is not None:
            return Path(tmp)
    return Path(path)


def remove(path: str | Path) -> None:
    """Delete the file ``path`` (if there): inside ``output_set``, once the set is renamed into place."""
    if _stage is not None:
        _stage.deletes.append(Path(os.path.realpath(path)))
        return
    Path(path).unlink(missing_ok=True)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` through a temporary file in the same folder and a rename.

    A symlink is written through (its target is replaced, the link kept); a path that exists and
    is neither a regular file nor a folder (``/dev/null``, ``/dev/stdout``, a FIFO) is a stream,
    written in place: renaming over it would replace the device with a file. The stream is found
    by stat, before resolving links: ``/dev/stdout`` on a pipe resolves to ``/proc/<pid>/fd/pipe:[N]``,
    a name that does not exist, so it was taken for a new file and failed.
    """
    if not str(path):
        raise InputError("output path is empty: expected a file name")
    shown = Path(path)
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        mode = None
    if mode is not None and not stat.S_ISREG(mode) and not stat.S_ISDIR(mode):
        try:
            with open(shown, "wb") as fh:
                fh.write(data)
        except OSError as exc:
            raise OutputError(f"{shown}: cannot write: {exc.strerror or exc}") from None
        return shown
    path = Path(os.path.realpath(path))
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
        # mkstemp makes 0600: a new output gets the usual mode, a replaced file keeps its own
        # (a read-only 0444 header stays read-only, as after an editor's save)
        # (permission bits only: a setuid or sticky bit is not carried over to new contents)
        os.chmod(tmp, mode & 0o777 if mode is not None and stat.S_ISREG(mode) else 0o666 & ~_UMASK)
        if _stage is not None:  # renamed with the rest of its set
            old = _stage.renames.pop(path, None)
            if old is not None:
                os.unlink(old)
            _stage.renames[path] = tmp
        else:
            os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise OutputError(f"{shown}: cannot write: {exc.strerror or exc}") from None
    return shown


def is_stdout(path: str | Path) -> bool:
    """Whether ``path`` is this process's standard output (``/dev/stdout``, ``/proc/self/fd/1``):
    a command writing there says what it wrote on stderr, not into the output."""
    import sys

    try:
        a, b = os.stat(path), os.fstat(sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


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
    if anc is None:
        return
    if not anc.is_dir():  # as make_folder would say at the first write, but before any work
        if anc == folder:
            raise OutputError(f"{folder}: Not a directory: expected {what}, found a file")
        raise OutputError(f"{folder}: cannot create {what}: {anc}: Not a directory (a file is in the way)")
    if os.access(anc, os.W_OK | os.X_OK):
        return
    if anc == folder:
        raise OutputError(f"{folder}: cannot write to {what} (it is read-only or not yours); "
                          "its files are left as they are")
    raise OutputError(f"{folder}: cannot create {what}: {anc} is read-only or not yours")


def check_output_file(flag: str, path: str | Path) -> None:
    """The output file ``path`` the user named as ``flag``, checked before any work: a folder (a
    rename cannot replace it) or a path below a file is an InputError, a folder that cannot take
    new files an OutputError (``check_writable``); missing folders are made at the write, as for
    every output. ``calibrate -o DIR`` printed the whole fit, then failed on the write (exit 1)."""
    p = Path(path)
    if p.is_dir():
        raise InputError(f"{flag} {path}: is a folder: expected a file's name")
    anc = next((a for a in p.parents if a.exists()), None)
    if anc is not None and not anc.is_dir():
        raise InputError(f"{flag} {path}: {anc} is a file, not a folder: expected a file's name in a folder")
    check_writable(p.parent, f"the folder of {flag} {path}")


def check_outputs(folder: Path, files=(), folders=(), what: str = "the output folder") -> None:
    """``check_writable(folder)``, and an OutputError for an output subfolder of ``folder`` that
    is a file or cannot take new files, or a named output file (``name`` or ``sub/name``) that is
    a folder (a rename cannot replace it): found before any work, so a run does not replace some
    of its outputs and then fail on another."""
    folder = Path(folder)
    check_writable(folder, what)
    for name in folders:
        path = folder / name
        if path.exists() and not path.is_dir():
            raise OutputError(f"{path}: cannot write into it: Not a directory (expected a folder or nothing there)")
        if path.is_dir():
            check_writable(path, f"{name}/ of {what}")
    for name in files:
        path = folder / name
        if path.is_dir():
            raise OutputError(f"{path}: cannot write: it is a folder (expected a file or nothing there)")


def same_file(a: str | Path, b: str | Path) -> bool:
    """One file under two names (symlinks and hard links included), or one path spelled two ways."""
    try:
        a, b = Path(a), Path(b)
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except (OSError, ValueError):
        return False


def refuse_input(flag: str, output: str | Path | None, inputs: dict, advice: str = "expected another file") -> None:
    """An InputError when the output ``output`` (given as ``flag``) is one of ``inputs`` (what
    the command reads, named by how the message calls it -> its path): writing it would replace
    the input, e.g. ``simulate SPEC --trace SPEC``."""
    if output is None or not str(output):
        return
    for label, path in inputs.items():
        if path and str(path) and same_file(output, path):
            raise InputError(f"{flag} {output}: is {label}; {advice}")


def write_text(path: str | Path, text: str) -> Path:
    """Atomically write UTF-8 text (a character UTF-8 cannot hold, such as the lone surrogate a
    non-UTF-8 file name decodes to, is written as "?")."""
    return write_bytes(path, text.encode("utf-8", errors="replace"))


def json_bytes(obj) -> bytes:
    """``obj`` as ``write_json`` writes it: indented JSON with a trailing newline, UTF-8."""
    return (json.dumps(obj, indent=2, sort_keys=False) + "\n").encode("utf-8", errors="replace")


def write_json(path: str | Path, obj) -> Path:
    """Atomically write ``obj`` as indented JSON with a trailing newline."""
    return write_bytes(path, json_bytes(obj))
