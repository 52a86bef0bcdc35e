"""``tune --jobs`` on an SQLite file: two workers never both run one queued trial, a worker that
loses such a race goes on, and one worker's error does not lose the outputs of finished studies."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from tinyspecs import EW2

from autotile.tune import runner

ROOT = Path(__file__).resolve().parents[1]

# widens the window between a worker reading a queued trial WAITING and setting it RUNNING, so
# two workers starting a study together both read the baseline WAITING unless something excludes
SLOW_POP = """
import os, time
from optuna.storages._rdb import models
from optuna.trial import TrialState

_find = models.TrialModel.find_or_raise_by_id.__func__

def _slow(cls, trial_id, session, for_update=False):
    trial = _find(cls, trial_id, session, for_update)
    if for_update and trial.state == TrialState.WAITING:
        time.sleep(float(os.environ["AUTOTILE_TEST_POP_DELAY"]))
    return trial

models.TrialModel.find_or_raise_by_id = classmethod(_slow)

from optuna.storages import RDBStorage

_set = RDBStorage.set_trial_state_values

def _logged(self, trial_id, state, values=None):
    taken = _set(self, trial_id, state, values)
    if taken and state == TrialState.RUNNING:  # this worker took the trial
        with open(os.environ["AUTOTILE_TEST_POP_LOG"], "a") as f:
            f.write(f"{trial_id}\\n")
    return taken

RDBStorage.set_trial_state_values = _logged
"""

# the second study's workers fail (an error of autotile's own, not the storage's)
FAIL_SECOND = """
import os
from autotile.tune import runner

_run = runner.run

def _failing(plan, storage, **kw):
    if os.environ["AUTOTILE_TEST_FAIL_STUDY"] in plan.name:
        raise RuntimeError("a worker's own error")
    return _run(plan, storage, **kw)

runner.run = _failing
"""


def _tune(tmp_path: Path, hook: str, *args: str, **env) -> subprocess.CompletedProcess:
    (tmp_path / "hook").mkdir(exist_ok=True)
    (tmp_path / "hook" / "sitecustomize.py").write_text(hook)
    spec = tmp_path / "ew.yaml"
    spec.write_text(EW2)
    env = dict(os.environ, PYTHONPATH=f"{tmp_path / 'hook'}{os.pathsep}{ROOT}", **env)
    return subprocess.run([sys.executable, "-m", "autotile", "tune", str(spec), "--jobs", "2", "--quiet",
                           "--no-verify", *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)


def test_two_sqlite_workers_never_run_one_queued_trial_twice(tmp_path):
    url = f"sqlite:///{tmp_path / 'st.db'}"
    log = tmp_path / "taken.log"
    done = _tune(tmp_path, SLOW_POP, "--storage", url, "--out", "out", AUTOTILE_TEST_POP_DELAY="0.5",
                 AUTOTILE_TEST_POP_LOG=str(log))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr and "already set" not in done.stderr
    taken = log.read_text().split()
    assert taken and len(taken) == len(set(taken)), f"queued trials taken by both workers: {sorted(taken)}"
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(summary["results"]) == 2 and not summary["not_run"]
    for name in (r["study"] for r in summary["results"]):
        trials = optuna.load_study(study_name=name, storage=url).get_trials(deepcopy=False)
        # the baseline and the warm start were queued: each ran once, in a trial of its own
        queued = [t for t in trials if t.user_attrs.get(runner.BASELINE_ATTR) or t.user_attrs.get(runner.WARM_ATTR)]
        assert queued and all(t.state.is_finished() and t.state.name != "FAIL" for t in queued)
    assert not (tmp_path / "st.db.lock").exists()  # the queue's lock file is removed on release


def test_a_worker_that_loses_the_race_for_a_queued_trial_goes_on(tmp_path):
    """Any storage: with nothing excluding them (the SQLite lock off), two workers both take the
    baseline; the one that tells its result second skips the trial instead of failing the run."""
    url = f"sqlite:///{tmp_path / 'st.db'}"
    unlocked = SLOW_POP + "\nfrom autotile.tune import storage\nstorage.fcntl = None\n"
    done = _tune(tmp_path, unlocked, "--storage", url, "--out", "out", AUTOTILE_TEST_POP_DELAY="0.5",
                 AUTOTILE_TEST_POP_LOG=str(tmp_path / "taken.log"))
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert len(summary["results"]) == 2 and all(r["params"] is not None for r in summary["results"])
    assert runner.lost_race(optuna.exceptions.UpdateFinishedTrialError("Trial#95 has already finished"))
    assert runner.lost_race(ValueError("Cannot tell a COMPLETE trial."))
    assert not runner.lost_race(ValueError("Cannot tell for trial with number 3 since it has not been created."))
    assert not runner.lost_race(ValueError("a ValueError of the kernel"))


def test_one_workers_error_keeps_the_outputs_of_finished_studies(tmp_path):
    done = _tune(tmp_path, FAIL_SECOND, "--out", "out", AUTOTILE_TEST_FAIL_STUDY="8192")
    assert done.returncode != 0
    assert "a worker's own error" in done.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert [r["shape"] for r in summary["results"]] == [{"n": 4096}]
    assert summary["results"][0]["params"] is not None and not summary["results"][0]["interrupted"]
    assert [r["shape"] for r in summary["not_run"]] == [{"n": 8192}]
    assert summary["interrupted"]


@pytest.fixture(autouse=True)
def _no_stale_stop():
    runner._Stop.requested, runner._Stop.signum = False, None
    yield
    runner._Stop.requested, runner._Stop.signum = False, None
