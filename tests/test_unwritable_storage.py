"""An output folder or study journal that cannot be written is one line naming it (exit 1), found
before any trial runs where it can be, and never a traceback; earlier outputs stay intact."""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess

import pytest
from tinyspecs import EW

from autotile.tune import storage as storage_mod
from autotile.tune.storage import JOURNAL_NAME


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


def _files(folder) -> dict:
    return {p.relative_to(folder): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture
def read_only():
    """Makes a folder unwritable (chmod, or as root the immutable flag); undone afterwards."""
    done = []

    def make(folder):
        if os.geteuid() != 0:
            folder.chmod(0o555)
            done.append(lambda: folder.chmod(0o755))
            return
        if shutil.which("chattr") is None or subprocess.run(["chattr", "+i", str(folder)],
                                                            capture_output=True).returncode != 0:
            pytest.skip("root, and the file system has no immutable flag (chattr +i)")
        done.append(lambda: subprocess.run(["chattr", "-i", str(folder)], check=True))

    yield make
    for undo in done:
        undo()


@pytest.fixture
def tuned(run_cli, write_spec, tmp_path):
    spec, out = write_spec(EW), tmp_path / "out"
    assert run_cli("tune", spec, "--out", str(out), "--quiet")[0] == 0
    return spec, out


def test_tune_into_an_unwritable_output_folder_is_one_line(run_cli, tuned, read_only, tmp_path):
    spec, out = tuned
    before = _files(out)
    read_only(out)
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--trials", "12")
    assert code == 1 and _one_line(err), err
    assert f"{out}: cannot write to the output folder" in err
    other = tmp_path / "other"  # the journal named by --storage is checked as well, before any output
    code, _, err = run_cli("tune", spec, "--out", str(other), "--quiet", "--storage", f"journal:{out / JOURNAL_NAME}")
    assert code == 1 and _one_line(err) and f"{out}: cannot write to the study journal's folder" in err, err
    assert _files(out) == before and not other.exists()


@pytest.mark.parametrize("sub", ["report_files", "traces"])
def test_an_unwritable_report_subfolder_is_found_before_the_trials(run_cli, tuned, read_only, sub):
    """It was found only by the report, after the trials: the journal had grown and summary.json
    and table.json were new beside the old report."""
    spec, out = tuned
    assert (out / sub).is_dir()
    before = _files(out)
    read_only(out / sub)
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--trials", "12")
    assert code == 1 and _one_line(err) and f"{out / sub}: cannot write to" in err, err
    assert _files(out) == before


@pytest.mark.parametrize("sub", ["report_files", "traces"])
def test_report_into_an_unwritable_subfolder_writes_nothing(run_cli, tuned, read_only, monkeypatch, sub):
    from autotile.report import traces

    def boom(*a, **k):
        raise AssertionError("a trace was simulated before the report's outputs were checked")

    spec, out = tuned
    read_only(out / sub)
    monkeypatch.setattr(traces, "write_traces", boom)
    code, _, err = run_cli("report", str(out))
    assert code == 1 and _one_line(err) and f"{out / sub}: cannot write to" in err, err


def test_a_lock_file_that_cannot_be_made_is_one_line(run_cli, tuned, monkeypatch):
    spec, out = tuned
    before = _files(out)
    lock = f"{out / JOURNAL_NAME}.lock"

    def refuse(self):
        raise PermissionError(errno.EACCES, "Permission denied", lock)

    monkeypatch.setattr(type(storage_mod._lock(lock)), "acquire", refuse)  # the writers' lock class
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--trials", "12")
    assert code == 1 and _one_line(err), err
    assert f"{lock}: cannot write the study journal: Permission denied" in err and "rerun to resume" in err
    assert _files(out) == before


def test_a_failed_append_mid_run_is_one_line_and_a_rerun_resumes(run_cli, write_spec, tmp_path, monkeypatch):
    spec, out = write_spec(EW), tmp_path / "out"
    real_fsync, calls = os.fsync, []

    def disk_full(fd):  # the 30th append is cut off mid-record, as by a full disk
        calls.append(fd)
        if len(calls) == 30:
            os.ftruncate(fd, os.fstat(fd).st_size - 10)
            raise OSError(errno.ENOSPC, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", disk_full)
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet")
    assert code == 1 and _one_line(err), err
    assert f"{out / JOURNAL_NAME}: cannot write the study journal: No space left on device" in err
    monkeypatch.setattr(os, "fsync", real_fsync)
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet")
    assert code == 0 and "dropped" in err and "incomplete last record" in err, err
    assert (out / "summary.json").exists()


def test_an_output_folder_that_cannot_be_made_is_refused_before_any_trial(run_cli, write_spec, read_only, tmp_path):
    spec, parent, db = write_spec(EW), tmp_path / "ro", tmp_path / "s.db"
    parent.mkdir()
    read_only(parent)
    code, _, err = run_cli("tune", spec, "--out", str(parent / "new"), "--quiet", "--storage", f"sqlite:///{db}")
    assert code == 1 and _one_line(err), err
    assert f"{parent / 'new'}: cannot create the output folder: {parent} is read-only" in err
    assert not db.exists()  # refused before the storage, not after every trial ran



class _FillingDisk:
    """The journal's appends on a disk that fills at the ``at``-th record holding ``marker``: that
    append and every later one writes half its bytes and fails with ENOSPC."""

    def __init__(self, real_open, marker: bytes, at: int):
        self.real_open, self.marker, self.left = real_open, marker, at

    def open(self, path, mode="r", *args, **kwargs):
        f = self.real_open(path, mode, *args, **kwargs)
        return _Filling(f, self) if mode.startswith("a") else f


class _Filling:
    def __init__(self, f, disk: _FillingDisk):
        self.f, self.disk = f, disk

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()

    def write(self, data):
        data = bytes(data)
        self.disk.left -= self.disk.marker in data
        if self.disk.left <= 0:
            self.f.write(data[: len(data) // 2])
            self.f.flush()
            raise OSError(errno.ENOSPC, "No space left on device")
        return self.f.write(data)


TRIAL_COMPLETES = b'"state":1,'  # written by Optuna's tell, after the objective returned
PARAM_SET = b'"op_code":5,'  # written inside the objective (a suggestion)


@pytest.mark.parametrize("marker", [TRIAL_COMPLETES, PARAM_SET])
def test_a_disk_that_fills_mid_run_is_one_line_and_a_rerun_resumes(run_cli, write_spec, tmp_path,
                                                                   monkeypatch, marker):
    """A record that completes a trial is appended inside Optuna's ``tell``, whose ``finally`` then
    failed with ``AssertionError: Should not reach.``: 40 lines of traceback instead of the one
    line (a 150 KiB tmpfs, 40 trials of weighted_sum). One appended inside the objective came
    with Optuna's warning and its traceback before the line. The half-written record is cut at
    once (the next append no longer drops it, with a warning, in the same run or the rerun)."""
    spec, out = write_spec(EW), tmp_path / "out"
    monkeypatch.setattr(storage_mod, "open", _FillingDisk(open, marker, 5).open, raising=False)
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet")
    assert code == 1 and _one_line(err), err
    assert err.startswith(f"autotile: error: {out / JOURNAL_NAME}: cannot write the study journal: No space left")
    journal = (out / JOURNAL_NAME).read_bytes()
    assert journal.endswith(b"\n") and journal.count(marker) == 4
    assert sorted(p.name for p in out.iterdir()) == [JOURNAL_NAME]  # no output half-written
    monkeypatch.undo()
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet")
    assert code == 0 and err == "", err
    (result,) = json.loads((out / "summary.json").read_text())["results"]
    assert result["complete"] == 10


def test_optunas_warnings_about_a_trial_the_full_disk_failed_are_dropped():
    """A journal append that failed inside the objective (a suggestion) came with Optuna's
    warning and its 25-line traceback before the run's one line (a 100 KiB tmpfs)."""
    import logging

    from autotile.tune.storage import JournalWriteError, _DropStorageFailureWarnings

    def record(msg, exc=None):
        return logging.LogRecord("optuna.study._optimize", logging.WARNING, __file__, 1, msg, None,
                                 (type(exc), exc, None) if exc else None)

    drop = _DropStorageFailureWarnings()
    full = JournalWriteError("studies.journal: cannot write the study journal: No space left on device")
    assert not drop.filter(record("Trial 34 failed with parameters: {} because of ...", full))
    assert not drop.filter(record("Trial 34 failed with value None."))
    assert drop.filter(record("Trial 35 failed with parameters: {} because of ...", ValueError("x")))


def test_a_read_only_sqlite_storage_says_so_rather_than_to_rerun(run_cli, write_spec, tmp_path):
    """It said "completed trials are saved, rerun the same command to resume", which fails the same way."""
    spec, db = write_spec(EW), tmp_path / "s.db"
    assert run_cli("tune", spec, "--out", str(tmp_path / "a"), "--quiet", "--no-verify", "--trials", "3",
                   "--storage", f"sqlite:///{db}")[0] == 0
    url = f"sqlite:///file:{db}?mode=ro&uri=true"  # read-only as a file, folder or mount would make it, even for root
    code, _, err = run_cli("tune", spec, "--out", str(tmp_path / "b"), "--quiet", "--no-verify", "--trials", "5",
                           "--storage", url)
    assert code == 1 and _one_line(err), err
    assert f"study storage {url} is read-only: " in err and "readonly database" in err
    assert "to resume" not in err and "another --storage" in err
