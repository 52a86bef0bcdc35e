"""``tune --jobs``: the worker processes, which never outlive the main process.

Re-parented workers kept tuning and then blocked forever on the queue of a pool nobody read. On
Linux the kernel now sends a worker SIGTERM when its parent exits (PR_SET_PDEATHSIG); anywhere,
a worker whose parent changed stops after its current trial and exits (``runner._Stop``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys

from autotile.tune import runner

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Linux: have the kernel send this process SIGTERM once its parent exits (else nothing)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(signal.SIGTERM), 0, 0, 0)
    except (OSError, AttributeError):  # no libc or no prctl: the parent-pid check remains
        pass


def init(shared, parent: int) -> None:
    """A worker ignores SIGINT and stops when the main process says so through ``shared``: a
    Ctrl-C reaches the whole process group, but ``kill -INT`` (or a scheduler) only the parent.
    SIGTERM (the pool's own, or the parent's death) ends it at once."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the main process's handler, inherited by fork
    die_with_parent()
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)
    runner._Stop.requested = False
    runner._Stop.shared = shared
    runner._Stop.parent = parent


def call(work, *args) -> None:
    """``work(*args)`` in a worker; an orphaned worker exits instead of waiting for more work."""
    work(*args)
    if runner._Stop.orphaned():
        os._exit(1)
