"""Study storage: an embedded journal file by default, or a database URL.

The default is Optuna's JournalFileBackend in the output folder: no server, safe for several
processes on one machine. ``--storage sqlite:///...`` or ``postgresql://...`` selects an RDB
storage (PostgreSQL for workers on several machines). The journal has no heartbeats, so every
trial records its owner (host and pid) in the same write that creates it, and on resume, trials
left RUNNING by an owner that no longer exists are marked failed: they do not count toward the
budget and are retried.
"""

from __future__ import annotations

import json
import logging
import os
import re
import signal
import socket
import sys
import threading
import time
import warnings
from datetime import UTC, datetime

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX: Optuna's lock file
    fcntl = None
from pathlib import Path

import optuna
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock
from optuna.storages.journal._file import BaseJournalFileLock
from optuna.storages.journal._storage import JournalOperation
from optuna.trial import FrozenTrial, TrialState

from autotile.atomic import OutputError, check_writable, make_folder
from autotile.errors import InputError, StorageError
from autotile.tune.outputs import JOURNAL_NAME

OWNER_ATTR = "autotile.owner"


def heartbeat_s() -> int:
    """Seconds between RDB heartbeats (AUTOTILE_HEARTBEAT_S, default 10); stale after 3x."""
    try:
        return max(1, int(os.environ.get("AUTOTILE_HEARTBEAT_S", "10")))
    except ValueError:
        return 10


def make_storage(url: str | None, out_dir: Path, *, write: bool = True):
    """The storage for ``url``; None means the journal file in ``out_dir``.

    ``write=False`` (a report) opens a journal only to read it: nothing is created or repaired.
    """
    if url is None:
        if write:
            try:
                make_folder(out_dir)
            except OSError as exc:
                raise OutputError(f"{out_dir}: cannot create the output folder: {exc.strerror or exc}") from None
        return _journal(str(out_dir / JOURNAL_NAME), None, write)
    if url.startswith("sqlite:") and in_memory_sqlite(url):
        raise InputError(f"--storage {url!r}: an in-memory SQLite database keeps no trials (they are lost "
                         "when the process exits); expected sqlite:///FILE")
    if url.startswith(("sqlite:", "postgresql:", "postgresql+", "mysql:", "mysql+")):
        return _rdb(url)
    if url.startswith("journal:"):
        if not url[len("journal:"):]:
            raise InputError(f"--storage {url!r}: expected journal:FILE")
        return _journal(url[len("journal:"):], url, write)
    raise InputError(f"--storage {url!r}: expected sqlite:///FILE, postgresql://..., or journal:FILE")


_SQLITE_FILE = re.compile(r"^(sqlite(?:\+\w+)?:///)([^?]*)(\?.*)?$")


def sqlite_file(url: str) -> str | None:
    """The file an ``sqlite:///FILE`` URL names (as written), or None (another URL, or in memory)."""
    m = _SQLITE_FILE.match(url)
    if not m or not m.group(2) or m.group(2) == ":memory:" or in_memory_sqlite(url):
        return None
    return m.group(2)


def absolute_url(url: str | None) -> str | None:
    """``url`` with a relative SQLite or journal file made absolute (from the current folder).

    summary.json records the storage: a relative path there named another file, or none, once
    ``autotile report`` ran from another folder.
    """
    if not url:
        return url
    if url.startswith("journal:"):
        path = url[len("journal:"):]
        return f"journal:{os.path.abspath(path)}" if path else url
    path = sqlite_file(url)
    if path is None or path.startswith("file:") or os.path.isabs(path):
        return url
    m = _SQLITE_FILE.match(url)
    return m.group(1) + os.path.abspath(path) + (m.group(3) or "")


def in_memory_sqlite(url: str) -> bool:
    """Whether an SQLite URL names no file (``sqlite://``, ``sqlite:///``, ``:memory:``)."""
    from sqlalchemy.engine import make_url

    try:
        parsed = make_url(url)
    except Exception:  # noqa: BLE001 - unparsable: opening it reports the problem
        return False
    return not parsed.database or parsed.database == ":memory:" or parsed.query.get("mode") == "memory"


def _owned(template: FrozenTrial | None) -> FrozenTrial:
    """The template a new trial is created from, naming this process as its owner."""
    if template is not None:
        return template
    return FrozenTrial(number=-1, state=TrialState.RUNNING, value=None, values=None,
                       datetime_start=datetime.now(tz=UTC), datetime_complete=None, params={},
                       distributions={}, user_attrs={OWNER_ATTR: owner()}, system_attrs={},
                       intermediate_values={}, trial_id=-1)


class _OwnerOnCreate:
    """Storage mixin: a new trial carries this process as its owner from its first write.

    Setting the owner in a second write left a window in which a killed worker's trial stayed
    RUNNING with no owner, so no resume could ever fail it. A trial taken from the queue (WAITING)
    gets its owner right after it turns RUNNING (the queue decides who takes it: the database's
    row lock, on SQLite a file lock, ``_OwnedRDBStorage``; the journal's lock).
    """

    def create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> int:
        return super().create_new_trial(study_id, _owned(template_trial))

    def set_trial_state_values(self, trial_id: int, state: TrialState, values=None) -> bool:
        taken = super().set_trial_state_values(trial_id, state, values)
        if taken and state == TrialState.RUNNING:
            super().set_trial_user_attr(trial_id, OWNER_ATTR, owner())
        return taken


class _OwnedJournalStorage(_OwnerOnCreate, JournalStorage):
    """A record that Optuna cannot apply while replaying the journal is reported as JournalDamaged
    (file and line); Optuna's answers to this process's own operations (a study that already
    exists, a finished trial) are raised as they are.

    Optuna skips another worker's record about a study or trial it does not know, or an update of
    a trial that already finished, without a word: records deleted from the middle of a journal or
    two journals joined into one turned finished trials into failed ones. Such a record is damage
    too (``_skipped_record``); the skips that races of real workers cause are still taken.
    """

    def _sync_with_backend(self) -> None:
        result = self._replay_result
        last: list = [None]

        def logs():
            for log in self._backend.read_logs(result.log_number_read):
                last[0] = log
                if log.get("worker_id") != result.worker_id and (why := _skipped_record(result, log)):
                    raise _damaged(self._backend._file_path, result.log_number_read + 1,
                                   f"a record Optuna cannot apply: {why}")
                yield log

        try:
            result.apply_logs(logs())
        except StorageError:
            raise
        except Exception as exc:
            if last[0] is None or last[0].get("worker_id") == result.worker_id:
                raise
            why = f"a record Optuna cannot apply: {type(exc).__name__}"
            if str(exc).strip():
                why += f": {_first_line(exc)}"
            raise _damaged(self._backend._file_path, result.log_number_read, why) from None


_STUDY_OPS = frozenset({JournalOperation.DELETE_STUDY, JournalOperation.SET_STUDY_USER_ATTR,
                        JournalOperation.SET_STUDY_SYSTEM_ATTR, JournalOperation.CREATE_TRIAL})
_TRIAL_OPS = frozenset({JournalOperation.SET_TRIAL_PARAM, JournalOperation.SET_TRIAL_STATE_VALUES,
                        JournalOperation.SET_TRIAL_INTERMEDIATE_VALUE, JournalOperation.SET_TRIAL_USER_ATTR,
                        JournalOperation.SET_TRIAL_SYSTEM_ATTR})


def _skipped_record(result, log: dict) -> str | None:
    """Why Optuna would silently skip ``log``, another worker's record, as no run writes it; None
    if it applies, or is skipped as races of workers make it: a study created twice, a trial's
    state set after another worker finished it (two resumes failing the same stale trial, two
    workers taking one queued trial)."""
    op = log["op_code"]
    if op in _STUDY_OPS:
        study = log.get("study_id")
        if type(study) is not int or not 0 <= study < result._next_study_id:  # deleted ones existed
            return f"study id {json.dumps(study)[:20]} was never created"
    elif op in _TRIAL_OPS:
        trial = log.get("trial_id")
        if type(trial) is not int or trial not in result._trials:
            return f"trial id {json.dumps(trial)[:20]} was never created"
        done = result._trials[trial]
        if op != JournalOperation.SET_TRIAL_STATE_VALUES and done.state.is_finished():
            return f"an update of trial {done.number}, which had finished ({done.state.name})"
    return None


class _OwnedRDBStorage(_OwnerOnCreate, RDBStorage):
    """Optuna wraps an RDB storage in a cache that creates trials through ``_create_new_trial``.

    A worker takes a queued (WAITING) trial by setting it RUNNING after reading it WAITING under a
    row lock (SELECT ... FOR UPDATE), which SQLite ignores: two --jobs workers both read it
    WAITING, both ran it, and the second to finish it crashed the run. On an SQLite file
    (``pop_lock``, the database's path) that read and write hold a flock on ``FILE.lock`` beside
    it, so the second reads the trial RUNNING and takes the next one.
    """

    pop_lock: str | None = None

    def set_trial_state_values(self, trial_id: int, state: TrialState, values=None) -> bool:
        if state != TrialState.RUNNING or self.pop_lock is None or fcntl is None:
            return super().set_trial_state_values(trial_id, state, values)
        try:
            with _locked(_FlockLock(self.pop_lock), self.pop_lock):
                return super().set_trial_state_values(trial_id, state, values)
        except OSError as exc:
            raise StorageError(f"{exc.filename or self.pop_lock}: cannot take the SQLite queue's lock: "
                               f"{exc.strerror or exc}; completed trials are saved, rerun to resume") from None

    def _create_new_trial(self, study_id: int, template_trial: FrozenTrial | None = None) -> FrozenTrial:
        return super()._create_new_trial(study_id, _owned(template_trial))


class JournalDamaged(StorageError):
    """A study journal holds a record Optuna cannot read (not one cut off at its end)."""


def _damaged(path: str, line: int, why: str) -> JournalDamaged:
    keep = (f"keep the {line - 1} record{'s' if line != 2 else ''} before it (head -n {line - 1}) and resume, or "
            if line > 1 else "")
    return JournalDamaged(f"{path}:{line}: the study journal is damaged ({why}); restore it from a backup, "
                          f"{keep}tune into a new --out (or another --storage)")


_OPS = frozenset(int(op) for op in JournalOperation)


def _record_problem(log) -> str | None:
    """Why ``log`` (a decoded journal line) is no Optuna record, or None."""
    if not isinstance(log, dict):
        return f"a JSON {type(log).__name__}, not a record"
    op = log.get("op_code")
    if type(op) is not int or op not in _OPS:
        return f"unknown operation code {json.dumps(op)[:20]}" if "op_code" in log else "a record with no op_code"
    if not isinstance(log.get("worker_id"), str):
        return "a record with no worker_id"
    return None


def _decode_problem(exc: BaseException) -> str:
    if isinstance(exc, UnicodeDecodeError):
        return "bytes that are not UTF-8 text"
    if isinstance(exc, json.JSONDecodeError):
        return f"not JSON: {exc.msg}"
    return _first_line(exc)


class _FlockLock(BaseJournalFileLock):
    """The journal writers' lock: ``fcntl.flock`` on ``JOURNAL.lock`` beside the journal.

    Optuna's lock file (created with O_EXCL) outlived a killed holder, stalling every later writer
    for its 30 s grace period with warnings, and its waiters polled at 1 s, so a waiter could miss
    the lock for seconds. The kernel drops a flock when its holder dies, and a waiter sleeps until
    the lock is free. The holder removes the file on release; a waiter that got the lock on a file
    removed or replaced meanwhile takes it again on the current one. A lock file left by a killed
    run (or by an older autotile) is only a file: nobody holds its lock.
    """

    def __init__(self, path: str):
        self._path = path + ".lock"
        self._fd: int | None = None

    def acquire(self) -> bool:
        while True:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                held = os.fstat(fd)
                try:
                    now = os.stat(self._path)
                except FileNotFoundError:
                    now = None
            except BaseException:
                os.close(fd)
                raise
            if now is not None and (now.st_dev, now.st_ino) == (held.st_dev, held.st_ino):
                self._fd = fd
                return True
            os.close(fd)  # released and removed by its holder while we waited: take the new one

    def release(self) -> None:
        fd, self._fd = self._fd, None
        if fd is None:
            raise RuntimeError("the journal lock is not held")
        try:
            os.unlink(self._path)
        except OSError:
            pass  # removed by someone else; closing still releases the lock
        finally:
            os.close(fd)


def _lock(path: str) -> BaseJournalFileLock:
    """The writers' lock of the journal ``path``: a flock where the OS has one, else Optuna's."""
    return _FlockLock(path) if fcntl is not None else JournalFileOpenLock(path)


class _CheckedJournalFile(JournalFileBackend):
    """Optuna's journal file, which reports a damaged record as one JournalDamaged line (file and
    line number) instead of a traceback, and never appends onto a record cut off at the end.

    A crash or a full disk in the middle of an append leaves the last line without its newline.
    Optuna skips such a line when it reads, but its next append would glue a new record onto it,
    making a line no reader can decode: every later run and report would fail. So under the
    writers' lock, an append first cuts the file back to its last newline (the cut bytes are a
    record no reader has ever used) and says how many bytes it dropped.
    """

    def read_logs(self, log_number_from: int):
        line = log_number_from  # lines read so far (one record a line)
        logs = super().read_logs(log_number_from)
        while True:
            try:
                log = next(logs)
            except StopIteration:
                return
            except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError, "Invalid log format."
                raise _damaged(self._file_path, line + 1, _decode_problem(exc)) from None
            line += 1
            if (why := _record_problem(log)) is not None:
                raise _damaged(self._file_path, line, why)
            yield log

    def append_logs(self, logs: list[dict]) -> None:
        data = "".join(json.dumps(log, separators=(",", ":")) + "\n" for log in logs).encode("utf-8")
        try:
            with open(self._file_path, "ab", buffering=0) as f:
                with _locked(self._lock, self._file_path):
                    _repair_tail(self._file_path)
                    _append(f, data)
                os.fsync(f.fileno())  # outside the lock: the next writer need not wait for the disk
        except OSError as exc:
            raise _write_error(self._file_path, exc) from None


def _append(f, data: bytes) -> None:
    """Write ``data`` at the end of ``f`` (unbuffered, O_APPEND; call under the writers' lock), or
    none of it: a write that fails (a full disk) cuts back what it wrote before it is raised.

    Left in place, the cut-off record was dropped with a warning blaming "a crash or a full disk"
    by the next append, which in a run that failed this way is the same run's next write."""
    start = os.fstat(f.fileno()).st_size
    view = memoryview(data)
    try:
        while view:
            view = view[f.write(view):]  # appends at the end as it is now; a short write goes on
    except OSError:
        try:
            os.ftruncate(f.fileno(), start)
        except OSError:
            pass  # left for the next append to cut (``_repair_tail``)
        raise


class JournalWriteError(StorageError):
    """The study journal (or its lock file beside it) could not be written."""


def _write_error(path: str, exc: OSError) -> JournalWriteError:
    """One line naming what could not be written: the journal, or its lock file (in its folder)."""
    what = exc.filename or path
    folder = Path(path).parent
    return JournalWriteError(f"{what}: cannot write the study journal: {exc.strerror or exc}; the trials it holds "
                             f"are kept (make {folder} and the journal writable and rerun to resume, or tune into "
                             "a new --out)")


class _locked:
    """The writers' lock held around an append (``_lock``: a lock file beside the journal).

    With ``defer_sigterm`` (a --jobs worker, which SIGTERM ends at once) a SIGTERM that arrives
    while the lock is held ends the process only once it is released: the record is finished
    rather than cut, and where the lock is Optuna's lock file (no flock), a file left behind
    would hold up every other writer for its 30 s grace period. A worker that tells SIGTERMs
    apart (``workers._watch_sigterm``) ends itself only while holding ``held``, which an append
    holds throughout.
    """

    defer_sigterm = False
    held = threading.RLock()
    _pending: list = []

    def __init__(self, lock: BaseJournalFileLock, path: str):
        self.lock, self.path = lock, path
        self.saved = None

    def __enter__(self):
        if self.defer_sigterm and threading.current_thread() is threading.main_thread():
            self.saved = signal.signal(signal.SIGTERM, lambda signum, frame: self._pending.append(signum))
        self.held.acquire()
        try:
            self.lock.acquire()
        except BaseException:
            self.held.release()
            raise
        return self

    def __exit__(self, *exc):
        try:
            self.lock.release()
        except RuntimeError:  # forcibly released by another writer after the grace period
            pass
        finally:
            self.held.release()
            if self.saved is not None:
                signal.signal(signal.SIGTERM, self.saved)
                if self._pending:
                    os._exit(128 + self._pending[0])
        return False


_CHUNK = 1 << 20


def _tail(f) -> tuple[int, int, int]:
    """(size, end, start): ``end`` is just past the file's last newline (0 if none), and
    ``start`` where the complete line ending there begins."""
    size = f.seek(0, os.SEEK_END)
    found: list[int] = []  # offsets of the last two newlines, last first
    pos, chunk_size = size, 4096  # a record is usually far shorter; a long one doubles the read
    while pos > 0 and len(found) < 2:
        step = min(chunk_size, pos)
        chunk_size = min(2 * chunk_size, _CHUNK)
        pos -= step
        f.seek(pos)
        chunk = f.read(step)
        i = len(chunk)
        while len(found) < 2 and (i := chunk.rfind(b"\n", 0, i)) >= 0:
            found.append(pos + i)
    end = found[0] + 1 if found else 0
    start = found[1] + 1 if len(found) > 1 else 0
    return size, end, start


def _line_problem(raw: bytes) -> str | None:
    """Why one journal line (without its newline) is no journal record, or None."""
    try:
        return _record_problem(json.loads(raw))
    except ValueError as exc:
        return _decode_problem(exc)


def _first_damage(path: str, f, end: int) -> JournalDamaged:
    """The error for a journal whose last line up to ``end`` is no record, found by reading it all.

    It names the first line that is no record, so that keeping the lines before it (the advice)
    leaves a journal that opens: naming the last line sent a file overwritten by something else
    (``export -o studies.journal``: 844 lines of JSON) round ``head -n 843``, ``head -n 842``, ...
    A file none of whose lines is a record is no journal at all, and is called that."""
    f.seek(0)
    first, records, pos, line = None, False, 0, 0
    while pos < end:
        raw = f.readline()
        if not raw:
            break
        pos, line = pos + len(raw), line + 1
        why = _line_problem(raw.rstrip(b"\n"))
        if why is None:
            records = True
        elif first is None:
            first = (line, why)
        if records and first is not None:
            break  # damage next to records: a journal, damaged at ``first``
    if first is None:  # not reached (the last line is no record), but for a file changed meanwhile
        first = (line, "its last line is no journal record")
    if records:
        return _damaged(path, *first)
    what = f"{first[1]}" if line == 1 else f"none of its {line} lines is a journal record; line 1: {first[1]}"
    return JournalDamaged(f"{path}:1: not a study journal ({what}); restore it from a backup, or tune into a "
                          "new --out (or another --storage)")


def _check_last_record(path: str, f, end: int, start: int) -> None:
    """Optuna silently skips an undecodable last line; a new record after it would make the whole
    journal unreadable, so it is reported before anything is written."""
    if end == 0:
        return
    f.seek(start)
    if _line_problem(f.read(end - start)) is not None:
        raise _first_damage(path, f, end)


def _repair_tail(path: str) -> None:
    """Cut a record left incomplete at the end of the journal (call under the writers' lock)."""
    with open(path, "r+b") as f:
        size, end, start = _tail(f)
        if end < size:
            f.truncate(end)
            f.flush()
            os.fsync(f.fileno())
            print(f"autotile: warning: {path}: dropped {size - end} byte{'s' if size - end != 1 else ''} of an "
                  "incomplete last record (a crash or a full disk cut it off; Optuna never read it)",
                  file=sys.stderr)
        _check_last_record(path, f, end, start)


def _inspect(path: str, write: bool) -> None:
    """Before the journal is replayed: a writer takes the writers' lock (which also proves the
    folder writable), cuts an incomplete last record and checks the last complete one; a reader
    only checks."""
    if write:
        check_writable(Path(path).parent, what="the study journal's folder")
        with _locked(_lock(path), path):
            if os.path.lexists(path):  # else made next, empty
                _repair_tail(path)
    else:
        with open(path, "rb") as f:
            size, end, start = _tail(f)
            _check_last_record(path, f, end, start)


def _journal(path: str, url: str | None, write: bool = True):
    """The journal storage in ``path``; ``url`` is the user's --storage (None: the default journal).

    A file that cannot be opened is bad input when the user named it, an output error otherwise;
    a folder or file that cannot be written, an output error; a damaged journal, JournalDamaged.
    A writer takes the lock before the journal is made, so a lock that cannot be taken (a folder
    in its place) leaves no empty journal behind.
    """
    if write and Path(path).parent.is_dir():
        _inspect_or_fail(path, url, write)
    try:
        backend = _CheckedJournalFile(path, lock_obj=_lock(path))
    except OSError as exc:
        why = exc.strerror or str(exc)
        if url is None:
            raise OutputError(f"{path}: cannot open the study journal: {why}") from None
        raise InputError(f"--storage {url}: cannot open the journal file: {why}{_folder_hint(path)}") from None
    if not write:
        _inspect_or_fail(path, url, write)
    try:
        return _OwnedJournalStorage(backend)
    except OSError as exc:
        raise OutputError(f"{path}: cannot read the study journal: {exc.strerror or exc}") from None


def _folder_hint(path: str) -> str:
    """Why the journal's folder cannot hold it, when it is no folder: it (or the first of its
    parents that exists) is a file, or it does not exist."""
    folder = Path(path).parent
    for anc in (folder, *folder.parents):
        if anc.is_dir():
            return "" if anc == folder else f" (the folder {folder} does not exist)"
        if anc.exists():
            return f" ({anc} is not a folder)"
    return f" (the folder {folder} does not exist)"


def _inspect_or_fail(path: str, url: str | None, write: bool) -> None:
    """``_inspect``, its OSError as one line naming the file it is about (the journal, or its lock)."""
    try:
        _inspect(path, write)
    except IsADirectoryError as exc:
        lock = exc.filename not in (None, path)
        if url is None:
            what = f"{exc.filename}: cannot open the study journal's lock file" if lock else \
                f"{path}: cannot open the study journal"
            raise OutputError(f"{what}: {exc.strerror}") from None
        what = f"the journal's lock file {exc.filename}" if lock else "the journal file"
        raise InputError(f"--storage {url}: cannot open {what}: {exc.strerror}") from None
    except OSError as exc:
        if not write:
            raise OutputError(f"{path}: cannot read the study journal: {exc.strerror or exc}") from None
        raise OutputError(str(_write_error(path, exc))) from None


def _rdb(url: str):
    """An RDB storage; heartbeats (and retry of stale trials) on server databases.

    Several workers starting at once on a new database race to create Optuna's tables; the
    loser's unique-violation is retried rather than reported.
    """
    kw = {}
    if not url.startswith("sqlite:"):
        hb = heartbeat_s()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            retry = optuna.storages.RetryHeartbeatStaleTrialCallback(max_retry=2)
        kw = {"heartbeat_interval": hb, "grace_period": 3 * hb, "heartbeat_stale_trial_callback": retry,
              "engine_kwargs": {"pool_pre_ping": True}}
    last = None
    for attempt in range(5):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                storage = _OwnedRDBStorage(url, **kw)
            path = sqlite_file(url)
            if path is not None and not path.startswith("file:"):
                storage.pop_lock = os.path.abspath(path)
            return storage
        except ImportError as exc:
            raise InputError(f"--storage {redact(url)}: a database driver is missing ({exc}); for "
                             "PostgreSQL: pip install 'autotile[postgres]' (psycopg 3)") from None
        except Exception as exc:  # noqa: BLE001 - any failure to open is about the user's URL
            last = exc
            if "UniqueViolation" not in str(exc) and "already exists" not in str(exc):
                break
            time.sleep(0.2 * (attempt + 1))
    raise InputError(f"--storage: cannot open {redact(url)}: {_first_line(last)}") from None


def moved_storage(recorded, storage: str | None, out: Path) -> str | None:
    """The storage ``tune --out out [--storage storage]`` would use (redacted), when it is not
    the one ``recorded`` (summary.json's ``storage``) names: such a run is refused without
    --restart. None when it is the same (or nothing usable is recorded).

    >>> moved_storage("/runs/a/studies.journal", None, Path("/runs/b"))  # the folder moved with its journal
    >>> moved_storage("sqlite:////old/s.db", "sqlite:////new/s.db", Path("/runs/a"))
    'sqlite:////new/s.db'
    """
    if not isinstance(recorded, str) or not recorded:
        return None
    default = "://" not in recorded and not recorded.startswith("journal:")  # the journal in its --out
    if storage is None:
        if default:  # the folder's own journal (wherever the folder was when it was written)
            return None
        this = os.path.abspath(out / JOURNAL_NAME)
    else:
        this = redact(absolute_url(storage))
        if _storage_file(this) is not None and _storage_file(this) == _storage_file(recorded):
            return None
    return None if this == recorded else this


def _storage_file(url: str) -> str | None:
    """The real path of the journal or SQLite file a recorded storage names, else None."""
    if url.startswith("journal:"):
        path = url[len("journal:"):]
    elif "://" in url:
        path = sqlite_file(url) if url.startswith("sqlite") else None
    else:
        path = url
    return os.path.realpath(path) if path else None


def redact(url: str) -> str:
    """The URL without its password (if it has one)."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        if ":" in creds:
            return f"{scheme}://{creds.split(':', 1)[0]}:***@{host}"
    return url


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def owner() -> str:
    """This process: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(owner_text: str) -> bool | None:
    """Whether the owner process still runs (None if it is on another host: unknown)."""
    host, _, pid = owner_text.rpartition(":")
    # a pid owner() writes: ASCII digits (str.isdigit() also takes "¹", which int() refuses) of a
    # positive pid_t (os.kill overflows past it, and 0 would ask about our own process group)
    if host != socket.gethostname() or not (pid.isascii() and pid.isdigit()) or len(pid) > 10 \
            or not 0 < int(pid) < 2**31:
        return None
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def fail_stale_trials(study: optuna.Study) -> int:
    """Mark RUNNING trials whose owner on this host is dead as FAIL; returns how many.

    RDB storages with heartbeats handle other hosts themselves (``fail_stale_trials``).
    """
    storage = study._storage
    n = 0
    with warnings.catch_warnings():  # Optuna marks it experimental; its contract is what we rely on
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)  # does nothing without heartbeats
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        who = t.user_attrs.get(OWNER_ATTR)
        if who and _alive(who) is False:
            try:
                storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
                n += 1
            except Exception:  # noqa: BLE001 - another worker may have finished it meanwhile
                pass
    return n


def storage_errors() -> tuple:
    """Exception types that mean the storage itself failed (not the trial)."""
    errors: tuple = (optuna.exceptions.StorageInternalError,)
    try:
        from sqlalchemy.exc import DBAPIError, OperationalError

        errors += (OperationalError, DBAPIError)
    except ImportError:  # pragma: no cover - sqlalchemy comes with optuna
        pass
    return errors


def storage_cause(exc: BaseException) -> BaseException | None:
    """The storage failure behind ``exc`` (itself, or in its cause/context chain), or None.

    Optuna may surface a lost database as another error raised while it handles the first, and
    raises StorageInternalError ("... invalid data in the commit, e.g. exceeding max length")
    from whatever the database said, a lost connection too: the innermost storage failure (or the
    error a StorageInternalError was raised from) is the one that names what went wrong. An
    autotile StorageError in the chain is that line already: a journal append that failed in
    Optuna's ``tell`` (a full disk) surfaced as ``AssertionError: Should not reach.`` from its
    ``finally``, with the JournalWriteError only as its context.
    """
    seen, found = 0, None
    errors = storage_errors()
    while exc is not None and seen < 20:
        if isinstance(exc, StorageError):
            return exc  # autotile's own line (a journal that cannot be written) already says it all
        if isinstance(exc, errors) or (isinstance(found, optuna.exceptions.StorageInternalError)
                                       and exc is found.__cause__):
            found = exc
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return found


class StudyDeleted(StorageError):
    """A study this run was using was deleted from the storage by another process."""


def study_gone(exc: BaseException) -> bool:
    """Whether ``exc`` (or its cause/context) is Optuna's KeyError for a study or trial that no
    longer exists in the storage (another process deleted the study, e.g. ``tune --restart``)."""
    seen = 0
    while exc is not None and seen < 20:
        if isinstance(exc, KeyError) and exc.args == ("Record does not exist.",):
            return True
        exc = exc.__cause__ or exc.__context__
        seen += 1
    return False


def deleted(name: str | None) -> StudyDeleted:
    what = f"study {name}" if name else "a study of this run"
    return StudyDeleted(f"{what} was deleted from the storage by another process (a concurrent "
                        "`tune --restart` on the same storage?) while this run used it; rerun to tune it afresh")


def describe_failure(url: str | None, exc: BaseException) -> str:
    """One line: which storage failed, why, and that a rerun resumes; a read-only database says
    so instead (a rerun fails the same way: it said "rerun the same command to resume")."""
    where = redact(url) if url else "the journal file"
    if read_only_failure(exc):
        return (f"study storage {where} is read-only: {_first_line(exc)}; tune records its trials there, so a "
                "rerun fails the same way: make it writable (a read-only file, folder or mount, or a read-only "
                "database user), or pass another --storage")
    return (f"study storage {where} failed: {_first_line(exc)}; completed trials are saved, "
            "rerun the same command to resume")


def read_only_failure(exc: BaseException) -> bool:
    """Whether the database refused a write because it is read-only: SQLite's "attempt to write a
    readonly database", PostgreSQL's read-only transaction (a standby, or
    ``default_transaction_read_only``)."""
    text = str(exc)
    return "readonly database" in text or "read-only transaction" in text or "ReadOnlySqlTransaction" in text


def storage_failure(exc: BaseException, url: str | None, name: str | None) -> StorageError | None:
    """The one-line error for ``exc`` raised while using study ``name`` if the storage caused it
    (the study was deleted by another process, or the storage itself failed), else None."""
    if study_gone(exc):
        return deleted(name)
    cause = storage_cause(exc)
    if cause is None or isinstance(cause, StorageError):
        return cause
    return StorageError(describe_failure(url, cause))


def quiet_heartbeat_failures() -> None:
    """A database that went away must not print a heartbeat thread's traceback or Optuna's
    intermediate warnings: the worker's own storage call fails and reports it as one line
    (StorageError)."""
    import threading

    default = threading.excepthook

    def hook(args):
        if isinstance(args.exc_value, storage_errors()) and "heartbeat" in (args.thread.name or ""):
            return
        default(args)

    if getattr(threading.excepthook, "_autotile", False):
        return
    hook._autotile = True
    threading.excepthook = hook
    # Optuna's RDB storage logs "Caught an error from sqlalchemy ... falling back" before its
    # fallback query fails too; that failure then reaches the user as one StorageError line.
    logging.getLogger("optuna.storages._rdb.storage").addFilter(_drop_sqlalchemy_fallback_warning)
    # a study deleted, or a storage failing (a full disk under the journal), under a running
    # trial: Optuna logs the trial's failure with a traceback before the error reaches
    # ``runner.run``, which reports it as one StorageError line
    logging.getLogger("optuna.study._optimize").addFilter(_DropStorageFailureWarnings())


def _drop_sqlalchemy_fallback_warning(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Caught an error from sqlalchemy")


class _DropStorageFailureWarnings(logging.Filter):
    """Drops Optuna's two warnings about a trial that failed because its study was deleted or the
    storage failed: the one carrying the error, and the "Trial N failed with value None." that
    follows it."""

    def __init__(self):
        super().__init__()
        self.gone: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        msg = str(record.msg)
        number = msg.split()[1] if msg.startswith("Trial ") and len(msg.split()) > 1 else None
        if record.exc_info and (study_gone(record.exc_info[1]) or storage_cause(record.exc_info[1]) is not None):
            self.gone.add(number)
            return False
        if number in self.gone and msg.startswith(f"Trial {number} failed with value"):
            self.gone.discard(number)
            return False
        return True


class OwnedSampler(optuna.samplers.BaseSampler):
    """Delegates to ``inner``; makes sure each new trial names this process as its owner.

    Storages from ``make_storage`` write the owner when they create the trial; for any other
    storage ``before_trial`` (right after creation, before relative sampling, which can take a
    while with no heartbeat yet) writes it.
    """

    def __init__(self, inner: optuna.samplers.BaseSampler):
        self.inner = inner
        self.me = owner()

    def before_trial(self, study, trial):
        if trial.user_attrs.get(OWNER_ATTR) != self.me:
            study._storage.set_trial_user_attr(trial._trial_id, OWNER_ATTR, self.me)
        self.inner.before_trial(study, trial)

    def infer_relative_search_space(self, study, trial):
        return self.inner.infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        return self.inner.sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self.inner.sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study, trial, state, values):
        self.inner.after_trial(study, trial, state, values)

    def reseed_rng(self):
        self.inner.reseed_rng()
