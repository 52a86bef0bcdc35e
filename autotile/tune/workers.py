"""``tune --jobs``: the worker processes, which survive a dead sibling and never outlive the
main process.

A worker that dies (killed, out of memory) breaks Python's process pool, which then ends its
other workers too; the tasks they had not finished go to a new pool, whose workers mark the
trials the dead ones left RUNNING as failed (stale owners, ``storage.fail_stale_trials``) and go
on. Only pools that keep breaking before any task finishes end the run (RunError, exit 1, after
the outputs of what finished).

Re-parented workers kept tuning and then blocked forever on the queue of a pool nobody read. On
Linux the kernel now sends a worker SIGTERM when its parent exits (PR_SET_PDEATHSIG); anywhere,
a worker whose parent changed stops after its current trial and exits (``runner._Stop``).

A SIGTERM to the whole process group or job (``timeout``, systemd, Slurm's scancel) reaches the
workers too, and used to kill them mid-trial (the journal kept their trials RUNNING): a worker
now tells it from the SIGTERM of its own pool or of its parent's death by the sender
(``_watch_sigterm``) and stops after its current trial, as a Ctrl-C to the group stops it.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import itertools
import multiprocessing
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool

from autotile.errors import RunError
from autotile.tune import runner, storage

_PR_SET_PDEATHSIG = 1
MAX_BARREN = 3  # pools in a row that break before any task finishes: the run gives up
# what happens to a dead worker's task, and what is kept when the run gives up (tune's words)
STUDY_NOTES = ("the process pool ends the other workers with it, and new workers take over their studies "
               "(each worker's unfinished trial, the dead one's and the others', is marked failed and retried)",
               "before any study finished (out of memory?); completed trials are saved, rerun to resume")


def run_pool(tasks: list, jobs: int, work, done, *, ctx=None, notes: tuple[str, str] = STUDY_NOTES,
             stage=None, begin=None) -> None:
    """``work(*args)`` for every ``(key, args)`` of ``tasks`` in ``jobs`` worker processes, in
    order; ``done(key, result)`` as each one finishes, with what ``work`` returned. Tasks cut short by a dead worker go to a new pool;
    after a stop request they are left unrun. ``ctx``: the multiprocessing context (default:
    the platform's); ``notes``: the end of the two dead-worker messages (see STUDY_NOTES).
    ``stage(key)``: consecutive tasks of one stage are handed out only once every task of the
    stage before has finished, each stage after ``begin(stage)`` ran here (once); default: one stage."""
    ctx = ctx or multiprocessing.get_context()
    runner._Stop.shared = ctx.RawValue("b", 0)
    if runner._Stop.requested:  # a stop before the line above
        runner._Stop.shared.value = 1
    stage = stage or (lambda key: None)
    begun: set = set()

    def start(key):
        if (which := stage(key)) not in begun:
            begun.add(which)
            if begin is not None:
                begin(which)

    barren = 0
    try:
        while tasks:
            lost, finished = _one_pool(ctx, tasks, jobs, work, done, stage, start)
            if not lost or runner._Stop.is_set():
                return
            barren = 0 if finished else barren + 1
            if barren >= MAX_BARREN:
                raise RunError(f"--jobs worker processes died {barren} times in a row {notes[1]}")
            print(f"autotile: warning: a --jobs worker process died; {notes[0]}", file=sys.stderr)
            tasks = lost
    finally:
        _adopt_stop(runner._Stop.shared.value)
        runner._Stop.shared = None


def _adopt_stop(value: int) -> None:
    """A stop a worker raised (a SIGTERM sent to it alone: ``_on_sigterm``) becomes the run's, so
    it reads as interrupted and exits 143, not as a run that finished."""
    if value > 1 and not runner._Stop.requested:  # 1: the run's own stop (or an error) told the workers
        runner._Stop.requested, runner._Stop.signum = True, value


def _one_pool(ctx, tasks: list, jobs: int, work, done, stage, start) -> tuple[list, int]:
    """Run ``tasks`` in one pool, stage by stage: (the tasks its broken pool did not finish, how
    many finished). On any other error the workers are told to stop and the tasks not started
    are dropped."""
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=ctx, initializer=init,
                               initargs=(runner._Stop.shared, os.getpid()))
    lost, finished = [], 0
    try:
        for _, group in itertools.groupby(tasks, key=lambda task: stage(task[0])):
            group = list(group)
            if lost:  # the pool broke: the stages left go to the next one
                lost += group
                continue
            start(group[0][0])
            try:
                with _sigterm_blocked():  # the workers it starts
                    futures = [pool.submit(call, work, *args) for _, args in group]
            except BrokenProcessPool:  # a worker died between stages
                lost += group
                continue
            for (key, args), fut in zip(group, futures):
                try:
                    result = fut.result()
                except BrokenProcessPool:
                    lost.append((key, args))
                    continue
                finished += 1
                done(key, result)
    except BaseException:
        runner._Stop.shared.value = 1
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    pool.shutdown(wait=True)  # a broken pool's workers are reaped, so their trials read as stale
    return lost, finished


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
    SIGTERM: see ``_watch_sigterm``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    runner._Stop.requested, runner._Stop.signum = False, None
    runner._Stop.shared = shared
    runner._Stop.parent = parent
    _watch_sigterm(parent)
    die_with_parent()
    if os.getppid() != parent:  # the parent died before the line above
        os._exit(1)


def _watch_sigterm(parent: int) -> None:
    """SIGTERM from the worker's parent (its pool ending it) or on the parent's death ends the
    worker at once, though never inside a journal append (``storage._locked``); from anyone
    else (a signal to the group or job) it stops the run after the current trial, as the main
    process's handler does. The sender is known only to ``sigwaitinfo`` (a thread, with SIGTERM
    blocked in all, from the worker's start: ``_sigterm_blocked``); without it (macOS) every
    SIGTERM ends a worker at once."""
    if not hasattr(signal, "sigwaitinfo"):
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # not the main process's handler, inherited by fork
        storage._locked.defer_sigterm = True
        return
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})  # already, unless started elsewhere
    threading.Thread(target=_on_sigterm, args=(parent,), name="autotile-sigterm", daemon=True).start()


@contextlib.contextmanager
def _sigterm_blocked():
    """SIGTERM blocked in this thread meanwhile, so a worker process started now (forked, or
    spawned: the mask outlives exec) has it blocked from its first instant, in every thread
    its imports start (OpenBLAS's) before ``init``: ``sigwaitinfo`` sees only signals that every
    thread blocks. A SIGTERM to this process meanwhile waits until the block ends."""
    if not hasattr(signal, "sigwaitinfo"):
        yield
        return
    old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _on_sigterm(parent: int) -> None:
    while True:
        info = signal.sigwaitinfo({signal.SIGTERM})
        if info.si_pid == parent or runner._Stop.orphaned():
            with storage._locked.held:
                os._exit(128 + signal.SIGTERM)
        runner._Stop.signalled(signal.SIGTERM)


def call(work, *args):
    """``work(*args)`` in a worker, returning its result; an orphaned worker exits instead of
    waiting for more work."""
    result = work(*args)
    if runner._Stop.orphaned():
        os._exit(1)
    return result
