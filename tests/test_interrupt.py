"""Ctrl-C (SIGINT) during a run: the outputs keep every study the storage holds, studies that
never ran are said to be not run (never infeasible), and a resume only adds or improves."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest
from sessions import gone, session
from tinyspecs import EW2

from autotile.tune import driver, runner
from autotile.tune.storage import make_storage

ROOT = Path(__file__).resolve().parents[1]
TINY = str(ROOT / "tests" / "data" / "mm_tiny.yaml")



@pytest.fixture
def sigint_after(monkeypatch):
    """A real SIGINT to this process once the first study has run ``n`` trials in this run (or,
    with ``done``, once it holds ``done`` distinct configurations)."""
    saved = signal.getsignal(signal.SIGINT)
    state = {}

    def arm(n: int | None = None, done: int | None = None):
        real = driver._Progress.trial

        def trial(self, study, t, unique):
            real(self, study, t, unique)
            state[study.study_name] = state.get(study.study_name, 0) + 1
            if len(state) == 1 and (state[study.study_name] == n or unique == done):
                os.kill(os.getpid(), signal.SIGINT)

        monkeypatch.setattr(driver._Progress, "trial", trial)

    yield arm
    signal.signal(signal.SIGINT, saved)
    runner._Stop.requested = False


def _json(path):
    return json.loads(path.read_text())


def test_an_interrupted_resume_keeps_the_studies_it_did_not_reach(run_cli, write_spec, sigint_after, tmp_path):
    out, spec = tmp_path / "out", write_spec(EW2)
    assert run_cli("tune", spec, "--out", str(out), "--quiet")[0] == 0
    before = {e["shape"]["n"]: e for e in _json(out / "table.json")["entries"]}
    assert sorted(before) == [4096, 8192]
    sigint_after(3)
    code, stdout, _ = run_cli("tune", spec, "--out", str(out), "--quiet", "--trials", "40")
    assert code == 130
    after = {e["shape"]["n"]: e for e in _json(out / "table.json")["entries"]}
    assert sorted(after) == [4096, 8192]
    assert after[8192]["params"] == before[8192]["params"]
    assert after[4096]["cycles"] <= before[4096]["cycles"]
    s = _json(out / "summary.json")
    first, second = s["results"]
    assert 10 < first["unique_configs"] < 40 and second["unique_configs"] == 10
    assert s["interrupted"] is True and s["not_run"] == []
    assert "n=8192 fp16 vector" in stdout


def test_an_interrupted_fresh_run_says_which_studies_did_not_run(run_cli, write_spec, sigint_after, tmp_path):
    out = tmp_path / "out"
    sigint_after(2)
    code, stdout, _ = run_cli("tune", write_spec(EW2), "--out", str(out), "--quiet")
    assert code == 130
    s = _json(out / "summary.json")
    assert [r["shape"] for r in s["results"]] == [{"n": 4096}]
    assert [r["study"] for r in s["not_run"]] == ["elementwise/ascend910b2/fp16/n=8192/vector"]
    assert "n=8192 fp16 vector: not run (interrupted)" in stdout
    report = (out / "report.md").read_text()
    assert "1 study did not run before the interruption" in report and "no feasible" not in report


def test_a_stop_after_the_last_trial_is_not_an_interruption(run_cli, write_spec, sigint_after, tmp_path):
    out = tmp_path / "out"
    sigint_after(done=10)  # the budget: the study ends with this trial anyway
    code, stdout, _ = run_cli("tune", write_spec(EW2.replace("{n: 4096}, ", "")), "--out", str(out), "--quiet")
    assert code == 0
    s = _json(out / "summary.json")
    assert s["interrupted"] is False and s["results"][0]["interrupted"] is False and not s["not_run"]
    assert "interrupted" not in stdout


def _complete(out: Path, name: str) -> int:
    try:
        study = optuna.load_study(study_name=name, storage=make_storage(None, out))
    except KeyError:
        return 0
    return len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)))


def test_sigint_to_the_parent_stops_the_jobs_workers(tmp_path):
    """`kill -INT` reaches only the parent (not the process group, as a Ctrl-C does): the workers
    stop after their trial, and the study no worker started is not run (not infeasible)."""
    out = tmp_path / "out"
    first, second = (f"matmul/ascend910b2/fp16/{s}/cube" for s in ("m=256,n=256,k=128", "m=192,n=320,k=96"))
    proc = subprocess.Popen([sys.executable, "-m", "autotile", "tune", TINY, "--out", str(out), "--quiet",
                             "--trials", "100000", "--jobs", "2", "--no-verify"], env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while _complete(out, first) < 3:
            assert time.monotonic() < deadline and proc.poll() is None, "the first study did not start"
            time.sleep(0.1)
        proc.send_signal(signal.SIGINT)
        stdout, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)  # the workers too (its session)
            proc.communicate()
    assert proc.returncode == 130, err
    s = _json(out / "summary.json")
    assert s["interrupted"] is True
    assert [r["study"] for r in s["results"]] == [first] and s["results"][0]["interrupted"] is True
    assert [r["study"] for r in s["not_run"]] == [second]
    assert b"not run (interrupted)" in stdout and b"no feasible" not in stdout


def test_running_trials_of_odd_owners_are_left_alone(tmp_path):
    """A RUNNING trial whose owner pid is "¹" (str.isdigit() takes it, int() does not) or past
    pid_t (os.kill overflows) crashed every resume of its study with a traceback."""
    import socket

    from autotile.tune.storage import OWNER_ATTR, fail_stale_trials

    study = optuna.create_study(study_name="s", storage=make_storage(None, tmp_path))
    host = socket.gethostname()
    for pid in ("\u00b9", "99999999999999999999", "0", "9" * 5000):
        t = study.ask()
        study._storage.set_trial_user_attr(t._trial_id, OWNER_ATTR, f"{host}:{pid}")
    assert fail_stale_trials(study) == 0  # owners it cannot tell about are unknown, not dead
    assert len(study.get_trials(states=(optuna.trial.TrialState.RUNNING,))) == 4


def test_sigint_stops_a_long_simulate_at_once(tmp_path):
    """A Numba kernel keeps the main thread (and the GIL) until it returns, so SIGINT waited for
    the end of a simulation of hours; now the simulation runs in a child process and SIGINT ends
    the command at once with one line and exit 130, the child with it."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    spec = str(ROOT / "studies" / "matmul.yaml")
    warm = subprocess.run([sys.executable, "-m", "autotile", "simulate", spec, "--shape", "m=64,n=64,k=64"],
                          env=env, capture_output=True, timeout=300)  # Numba's cache: the long run starts soon
    assert warm.returncode == 0, warm.stderr
    big = "m=2147483647,n=2147483647,k=2147483647"  # hours of simulation
    proc = subprocess.Popen([sys.executable, "-m", "autotile", "simulate", spec, "--shape", big], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        time.sleep(5)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)  # to the parent only, as `kill -INT PID`
        start = time.monotonic()
        try:
            stdout, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            pytest.fail("simulate still running 15 s after SIGINT")
        assert time.monotonic() - start < 15
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130 and stdout == b""
    assert err.decode().startswith("autotile: note: simulating matmul at this shape may take about ")  # days
    assert err.decode().endswith("Ctrl-C stops it\nautotile: interrupted\n") and err.count(b"\n") == 2
    ps = subprocess.run(["ps", "-eo", "sid=,args="], capture_output=True, text=True).stdout
    assert not [ln for ln in ps.splitlines() if ln.split()[0] == str(proc.pid)]  # no child left behind


def test_interruptible_gives_back_the_answer_or_the_error():
    from autotile.cli.common import interruptible
    from autotile.errors import InputError

    def bad():
        raise InputError("bad", file="x.yaml", line=3, col=4, field="f")

    assert interruptible(lambda: [1, "two"], slow=True) == [1, "two"]
    assert interruptible(lambda: 3, slow=False) == 3
    with pytest.raises(InputError) as info:
        interruptible(bad, slow=True)
    assert str(info.value) == "x.yaml:3:4: f: bad" and info.value.line == 3


@contextlib.contextmanager
def _jobs_run(out: Path, trials: int = 100000, quiet: bool = True):
    """`tune --jobs 2` on a budget it never reaches, in its own session, once it holds trials;
    its output goes to files (a pipe would stay open as long as a worker does). On leaving, any
    process left in its session is killed and the main one reaped."""
    out.mkdir()
    proc = subprocess.Popen([sys.executable, "-m", "autotile", "tune", TINY, "--out", str(out),
                             *(["--quiet"] if quiet else []), "--trials", str(trials), "--jobs", "2", "--no-verify"],
                            env=dict(os.environ, PYTHONPATH=str(ROOT)),
                            stdout=(out / "stdout").open("wb"), stderr=(out / "stderr").open("wb"),
                            start_new_session=True)
    deadline = time.monotonic() + 120
    try:
        while _complete(out, "matmul/ascend910b2/fp16/m=256,n=256,k=128/cube") < 3:
            assert time.monotonic() < deadline and proc.poll() is None, "the first study did not start"
            time.sleep(0.1)
        yield proc
    finally:
        if session(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


def test_jobs_workers_do_not_outlive_a_killed_main_process(tmp_path):
    """Workers of a SIGKILLed main process were re-parented and went on tuning, then hung."""
    with _jobs_run(tmp_path / "out") as proc:
        assert len(session(proc.pid)) >= 3  # the main process and its two workers
        proc.kill()
        proc.wait()
        assert gone(proc.pid, 20)


def test_sigterm_stops_a_jobs_run_like_sigint_with_exit_143(tmp_path):
    """SIGTERM (a scheduler's stop) killed the main process and left its workers running; it now
    stops the workers after their trial and writes the outputs, as SIGINT does."""
    out = tmp_path / "out"
    with _jobs_run(out) as proc:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
        assert gone(proc.pid, 20)
    assert proc.returncode == 143, (out / "stderr").read_text()
    assert _json(out / "summary.json")["interrupted"] is True
    assert "not run (interrupted)" in (out / "stdout").read_text()


def _states(out: Path) -> dict:
    """How many trials of each state the journal holds, over its studies."""
    storage, got = make_storage(None, out), {}
    for s in optuna.get_all_study_summaries(storage, include_best_trial=False):
        for t in optuna.load_study(study_name=s.study_name, storage=storage).get_trials(deepcopy=False):
            got[t.state.name] = got.get(t.state.name, 0) + 1
    return got


def test_sigterm_to_the_whole_group_lets_the_workers_finish_their_trial(tmp_path):
    """`timeout`, systemd and scancel send SIGTERM to every process of the run: the workers died
    mid-trial (the journal kept 2 RUNNING trials) while the main process wrote the outputs."""
    out = tmp_path / "out"
    with _jobs_run(out) as proc:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=120)
        assert gone(proc.pid, 20)
    assert proc.returncode == 143, (out / "stderr").read_text()
    states = _states(out)
    assert "RUNNING" not in states and "FAIL" not in states and states["COMPLETE"] >= 3, states
    assert _json(out / "summary.json")["interrupted"] is True


def test_sigterm_to_one_worker_stops_the_run_as_interrupted(tmp_path):
    """A SIGTERM sent to one --jobs worker alone stopped the run after the trial, but the summary
    said it was not interrupted and the exit code was 0, as if every study had finished."""
    out = tmp_path / "out"
    with _jobs_run(out) as proc:
        kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True,
                              text=True).stdout.split()
        os.kill(int(kids[0]), signal.SIGTERM)
        proc.wait(timeout=120)
        assert gone(proc.pid, 20)
    assert proc.returncode == 143, (out / "stderr").read_text()
    assert _json(out / "summary.json")["interrupted"] is True
    assert "RUNNING" not in _states(out)


def test_a_stopped_jobs_run_logs_its_studies_as_interrupted_and_not_run(tmp_path):
    """After SIGTERM the progress log said "study 2/2 done" of a study that never ran (and
    "1/2 done" of one cut short): a worker task's return read as its study being done."""
    out = tmp_path / "out"
    with _jobs_run(out, quiet=False) as proc:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    assert proc.returncode == 143
    log = [ln for ln in (out / "stderr").read_text().splitlines() if " study " in ln]
    assert len(log) == 2 and " done" not in "".join(log), log
    assert log[0].startswith("autotile: study 1/2 interrupted: fp16/m=256,n=256,k=128/cube, ")
    assert log[0].split(", ")[1].endswith("configs measured")
    assert log[1] == "autotile: study 2/2 not run (interrupted): fp16/m=192,n=320,k=96/cube"


def test_an_interrupted_study_is_not_logged_done(run_cli, write_spec, sigint_after, tmp_path):
    """Without --jobs, the study a SIGINT cut short was logged "done: 2 configs measured"."""
    sigint_after(2)
    code, _, err = run_cli("tune", write_spec(EW2), "--out", str(tmp_path / "out"))
    assert code == 130
    log = [ln for ln in err.splitlines() if " study " in ln]
    assert len(log) == 1 and log[0].startswith("autotile: study 1/2 interrupted: fp16/n=4096/vector, "), log


def test_a_killed_jobs_worker_is_replaced_and_the_run_completes(tmp_path):
    """Killing one --jobs worker broke the process pool: a traceback, exit 1, no outputs, and
    the other worker's trial left RUNNING. New workers now take over; the dead ones' trials are
    marked failed and retried."""
    out = tmp_path / "out"
    with _jobs_run(out, trials=30) as proc:
        kids = subprocess.run(["ps", "-o", "pid=", "--ppid", str(proc.pid)], capture_output=True,
                              text=True).stdout.split()
        os.kill(int(kids[0]), signal.SIGKILL)
        proc.wait(timeout=300)
    err = (out / "stderr").read_text()
    assert proc.returncode == 0, err
    assert "a --jobs worker process died" in err and "Traceback" not in err
    # the broken pool ends the healthy worker too: the warning says both trials are failed
    assert "ends the other workers with it" in err and "each worker's unfinished trial" in err
    s = _json(out / "summary.json")
    assert len(s["results"]) == 2 and all(r["unique_configs"] >= 30 for r in s["results"])
    for r in s["results"]:
        study = optuna.load_study(study_name=r["study"], storage=make_storage(None, out))
        assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,))


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def test_workers_that_keep_dying_end_the_run_with_one_error():
    from autotile.errors import RunError
    from autotile.tune import workers

    with pytest.raises(RunError, match="died 3 times in a row"):
        workers.run_pool([(0, ())], 1, _die, lambda key, result: None)


def test_a_study_deleted_by_another_process_ends_the_run_with_one_line(tmp_path):
    """A concurrent `tune --restart` deleting a study under a --jobs run crashed it with a
    traceback (KeyError: 'Record does not exist.')."""
    out = tmp_path / "out"
    with _jobs_run(out) as proc:
        optuna.delete_study(study_name="matmul/ascend910b2/fp16/m=256,n=256,k=128/cube",
                            storage=make_storage(None, out))
        proc.wait(timeout=120)
        assert gone(proc.pid, 20)
    err = (out / "stderr").read_text()
    assert proc.returncode == 1, err
    assert err.count("\n") == 1 and "was deleted from the storage by another process" in err


def test_both_of_optunas_warnings_about_a_deleted_studys_trial_are_dropped():
    """Optuna logs a failed trial twice: with the KeyError, then "Trial N failed with value
    None."; only the first was dropped, so the run's one-line error came with a stray warning
    (in about half the runs of the test above)."""
    import logging

    from autotile.tune.storage import _DropStorageFailureWarnings

    def record(msg, exc=None):
        return logging.LogRecord("optuna.study._optimize", logging.WARNING, __file__, 1, msg, None,
                                 (type(exc), exc, None) if exc else None)

    drop = _DropStorageFailureWarnings()
    gone = KeyError("Record does not exist.")
    assert not drop.filter(record("Trial 13 failed with parameters: {} because of ...", gone))
    assert not drop.filter(record("Trial 13 failed with value None."))
    assert drop.filter(record("Trial 14 failed with value None."))  # another failure is kept
    assert drop.filter(record("Trial 15 failed with parameters: {} because of ...", ValueError("x")))


def test_a_run_that_gives_up_marks_the_studies_it_cut_short(run_cli, write_spec, monkeypatch, tmp_path):
    """Workers dying three times in a row end the run (exit 1), but its summary said the studies
    were complete and not interrupted: the one cut short is now interrupted, the other not run."""
    from dataclasses import replace

    from autotile.errors import RunError

    def dying_pool(queue, jobs, bar):
        job = queue[0]  # as a worker would: trials in the storage, no outcome in this process
        runner.run(replace(job.plans[0], budget=3), job.storage)
        raise RunError("--jobs worker processes died 3 times in a row")

    monkeypatch.setattr(driver, "_run_pool", dying_pool)
    out = tmp_path / "out"
    code, _, err = run_cli("tune", write_spec(EW2), "--out", str(out), "--quiet", "--jobs", "2")
    assert code == 1 and "died 3 times in a row" in err
    s = _json(out / "summary.json")
    assert s["interrupted"] is True
    assert [r["interrupted"] for r in s["results"]] == [True]
    assert [r["study"] for r in s["not_run"]] == ["elementwise/ascend910b2/fp16/n=8192/vector"]
    assert runner._Stop.requested is False


def test_a_first_ctrl_c_during_verification_says_what_still_happens(run_cli, write_spec, monkeypatch, tmp_path):
    """It was silently ignored: the run went on verifying and exited 0, and only a second Ctrl-C
    (exit 130, no new outputs) seemed to do anything."""
    saved = signal.getsignal(signal.SIGINT)
    real, calls = driver.gate, []

    def gate(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(driver, "gate", gate)
    out = tmp_path / "out"
    try:
        code, _, err = run_cli("tune", write_spec(EW2), "--out", str(out), "--quiet", "--trials", "3")
    finally:
        signal.signal(signal.SIGINT, saved)
        runner._Stop.requested = False
    assert len(calls) == 2 and code == 0, err  # both studies verified: none was cut short
    assert "Ctrl-C: every study has run; verification of their best configurations finishes" in err
    assert "a second Ctrl-C stops at once" in err
    s = _json(out / "summary.json")
    assert s["interrupted"] is False and all(r["verified"] for r in s["results"])
