"""The journal writers' lock: a killed holder or a lock file left behind stalls no one, and a
waiter blocks until it is released (no polling, no Optuna warnings)."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time

import optuna
import pytest

from autotile.tune import storage as storage_mod
from autotile.tune.storage import JOURNAL_NAME, make_storage

pytest.importorskip("fcntl")  # the lock is a flock where the OS has one

HOLD_AND_DIE = """
import os, sys, time
from autotile.tune.storage import _lock
_lock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(60)
"""


@pytest.fixture
def optuna_warnings(caplog):
    """The log records Optuna's loggers emit (its lock warns while it waits)."""
    optuna.logging.enable_propagation()
    caplog.set_level(logging.WARNING, logger="optuna")
    yield caplog
    optuna.logging.disable_propagation()


def test_a_killed_holder_does_not_stall_the_next_writer(tmp_path, optuna_warnings):
    journal = str(tmp_path / JOURNAL_NAME)
    proc = subprocess.Popen([sys.executable, "-c", HOLD_AND_DIE, journal], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline() == "held\n"
    finally:
        proc.kill()
        proc.wait()
    start = time.monotonic()
    storage = make_storage(None, tmp_path)
    storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "a")
    assert time.monotonic() - start < 3
    assert not optuna_warnings.records
    assert not (tmp_path / (JOURNAL_NAME + ".lock")).exists()  # released, and removed


def test_a_lock_file_left_by_an_older_autotile_does_not_stall(tmp_path, optuna_warnings):
    (tmp_path / (JOURNAL_NAME + ".lock")).write_bytes(b"")  # Optuna's O_EXCL lock of a killed run
    start = time.monotonic()
    storage = make_storage(None, tmp_path)
    storage.create_new_study([optuna.study.StudyDirection.MINIMIZE], "a")
    assert time.monotonic() - start < 3 and not optuna_warnings.records
    assert [s.study_name for s in make_storage(None, tmp_path).get_all_studies()] == ["a"]


def test_a_waiter_blocks_on_the_lock_instead_of_polling(tmp_path, monkeypatch):
    """Optuna's lock polled with sleeps backing off to 1 s, so a waiter took a released lock up
    to a second late and one worker could keep missing it; a flock waiter sleeps in the kernel
    until the release, calling no sleep at all."""
    journal = str(tmp_path / JOURNAL_NAME)
    holder, waiter = storage_mod._lock(journal), storage_mod._lock(journal)
    holder.acquire()
    real_sleep, polls, done = time.sleep, [], []

    def counting_sleep(seconds):
        if threading.current_thread().name == "waiter":
            polls.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", counting_sleep)

    def wait():
        waiter.acquire()
        done.append(True)
        waiter.release()

    thread = threading.Thread(target=wait, name="waiter")
    thread.start()
    real_sleep(1.5)
    assert not done  # still waiting while the lock is held
    holder.release()
    thread.join(timeout=30)
    assert done and not polls


def test_writers_hammering_the_lock_exclude_each_other(tmp_path):
    """Two writers that remove and recreate the lock file never hold it at once."""
    journal = str(tmp_path / JOURNAL_NAME)
    inside, overlaps = [0], []
    guard = threading.Lock()

    def work():
        lock = storage_mod._lock(journal)
        for _ in range(300):
            lock.acquire()
            with guard:
                inside[0] += 1
                overlaps.append(inside[0] > 1)
            time.sleep(0.0002)
            with guard:
                inside[0] -= 1
            lock.release()

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(overlaps) == 900 and not any(overlaps)
