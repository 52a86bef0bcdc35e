"""Study storage: an embedded journal file by default, or a database URL.

The default is Optuna's JournalFileBackend in the output folder: no server, safe for several
processes on one machine. ``--storage sqlite:///...`` or ``postgresql://...`` selects an RDB
storage (PostgreSQL for workers on several machines). The journal has no heartbeats, so every
trial records its owner (host and pid) and, on resume, trials left RUNNING by an owner that no
longer exists are marked failed: they do not count toward the budget and are retried.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import optuna
from optuna.storages import JournalStorage, RDBStorage
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock
from optuna.trial import TrialState

from autotile.errors import InputError

OWNER_ATTR = "autotile.owner"
JOURNAL_NAME = "studies.journal"
HEARTBEAT_S = 10


def make_storage(url: str | None, out_dir: Path):
    """The storage for ``url``; None means the journal file in ``out_dir``."""
    if url is None:
        out_dir.mkdir(parents=True, exist_ok=True)
        path = str(out_dir / JOURNAL_NAME)
        return JournalStorage(JournalFileBackend(path, lock_obj=JournalFileOpenLock(path)))
    if url.startswith(("sqlite:", "postgresql:", "postgresql+", "mysql:", "mysql+")):
        try:
            kw = {}
            if not url.startswith("sqlite:"):
                kw = {"heartbeat_interval": HEARTBEAT_S, "grace_period": 3 * HEARTBEAT_S,
                      "engine_kwargs": {"pool_pre_ping": True}}
            return RDBStorage(url, **kw)
        except ImportError as exc:
            raise InputError(f"--storage {url}: a database driver is missing ({exc}); for PostgreSQL: "
                             "pip install 'autotile[postgres]'") from None
        except Exception as exc:  # noqa: BLE001 - any connection failure is the user's URL
            raise InputError(f"--storage: cannot open {redact(url)}: {_first_line(exc)}") from None
    if url.startswith("journal:"):
        path = url[len("journal:"):]
        return JournalStorage(JournalFileBackend(path, lock_obj=JournalFileOpenLock(path)))
    raise InputError(f"--storage {url!r}: expected sqlite:///FILE, postgresql://..., or journal:FILE")


def redact(url: str) -> str:
    """The URL without its password."""
    if "@" in url and "://" in url:
        scheme, rest = url.split("://", 1)
        creds, host = rest.rsplit("@", 1)
        user = creds.split(":", 1)[0]
        return f"{scheme}://{user}:***@{host}"
    return url


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def owner() -> str:
    """This process: ``host:pid``."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _alive(owner_text: str) -> bool | None:
    """Whether the owner process still runs (None if it is on another host: unknown)."""
    host, _, pid = owner_text.rpartition(":")
    if host != socket.gethostname() or not pid.isdigit():
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
    if isinstance(storage, RDBStorage) and storage.is_heartbeat_enabled():
        optuna.storages.fail_stale_trials(study)
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        who = t.user_attrs.get(OWNER_ATTR)
        if who and _alive(who) is False:
            try:
                storage.set_trial_state_values(t._trial_id, TrialState.FAIL)
                n += 1
            except Exception:  # noqa: BLE001 - another worker may have finished it meanwhile
                pass
    return n
