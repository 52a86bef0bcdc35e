"""Scale-out on a real PostgreSQL server and fault tolerance: several workers, killed workers,
a database that goes away, and an output folder that cannot be written."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna

from autotile.space import load_spec
from autotile.tune.naming import study_name
from autotile.tune.storage import make_storage

ROOT = Path(__file__).resolve().parents[1]
TINY = str(ROOT / "tests" / "data" / "mm_tiny.yaml")


def _cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "autotile", "tune", *args]


def _env(**extra) -> dict:
    return dict(os.environ, PYTHONPATH=str(ROOT), **extra)


def _names() -> list[str]:
    spec = load_spec(TINY)
    return [study_name("matmul", "ascend910b2", "fp16", s, "cube") for s in spec.shapes]


def _states(url: str, name: str) -> dict:
    study = optuna.load_study(study_name=name, storage=url)
    out: dict = {}
    for t in study.get_trials(deepcopy=False):
        out.setdefault(t.state.name, []).append(t)
    return out


def _unique_complete(url: str, name: str) -> int:
    return len({t.user_attrs["config"] for t in _states(url, name).get("COMPLETE", [])})


def _fresh_db(url: str, tag: str) -> str:
    """A database of its own for one test, on the shared server."""
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.execute(sqlalchemy.text(f"DROP DATABASE IF EXISTS {tag}"))
        c.execute(sqlalchemy.text(f"CREATE DATABASE {tag}"))
    engine.dispose()
    return url.rsplit("/", 1)[0] + "/" + tag


def test_four_worker_processes_share_the_studies(pg_url, tmp_path):
    url = _fresh_db(pg_url, "autotile_four")
    args = [TINY, "--storage", url, "--trials", "12", "--quiet", "--no-verify", "--out", str(tmp_path / "out")]
    procs = [subprocess.Popen(_cmd(*args), env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for _ in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=600)
        assert p.returncode == 0, err.decode()
    owners = set()
    for name in _names():
        n = _unique_complete(url, name)
        assert 12 <= n <= 12 + 4 - 1, n
        owners |= {t.user_attrs.get("autotile.owner") for t in _states(url, name)["COMPLETE"]}
    # the work really was shared: over the studies, not within each (on a loaded machine one
    # process can finish a tiny study before the others have imported Numba)
    assert len(owners) >= 2


def test_jobs_tune_a_queue_of_specs(pg_url, tmp_path):
    url = _fresh_db(pg_url, "autotile_queue")
    other = tmp_path / "mm_other.yaml"
    other.write_text(Path(TINY).read_text().replace("m: 256", "m: 320"))
    out = tmp_path / "out"
    done = subprocess.run(_cmd(TINY, str(other), "--jobs", "4", "--storage", url, "--trials", "10", "--quiet",
                               "--no-verify", "--out", str(out)), env=_env(), capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    for stem in ("mm_tiny", "mm_other"):
        s = json.loads((out / stem / "summary.json").read_text())
        assert s["storage"].startswith("postgresql://")
        for r in s["results"]:
            assert 10 <= r["unique_configs"] <= 13


def _wait(predicate, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if predicate():
                return
        except (KeyError, Exception):  # noqa: BLE001 - the study may not exist yet
            pass
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_killed_worker_trial_is_stale_retried_and_the_budget_finishes_exactly(pg_url, tmp_path):
    url = _fresh_db(pg_url, "autotile_kill")
    name = _names()[0]
    env = _env(AUTOTILE_HEARTBEAT_S="1")
    args = [TINY, "--storage", url, "--quiet", "--no-verify", "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(_cmd(*args, "--trials", "100000"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _wait(lambda: _unique_complete(url, name) >= 4)
    proc.send_signal(signal.SIGKILL)
    proc.wait(30)
    before = {t.number: t.user_attrs["config"] for t in _states(url, name).get("COMPLETE", [])}
    time.sleep(5.0)  # well past the grace period (3 heartbeats of 1 s)
    done = subprocess.run(_cmd(*args, "--trials", "20"), env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    states = _states(url, name)
    after = {t.number: t.user_attrs["config"] for t in states["COMPLETE"]}
    assert all(after.get(k) == v for k, v in before.items())  # no completed trial lost
    assert _unique_complete(url, name) == max(20, len(set(before.values())))
    assert "RUNNING" not in states
    for t in states.get("FAIL", []):  # the killed worker's trial: failed as stale, then retried
        assert "failed_trial" not in t.system_attrs


def test_database_going_away_stops_workers_cleanly_and_a_rerun_resumes(pg_private, tmp_path):
    url = pg_private.url
    name = _names()[0]
    args = [TINY, "--storage", url, "--quiet", "--no-verify", "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(_cmd(*args, "--trials", "100000"), env=_env(), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    _wait(lambda: _unique_complete(url, name) >= 4)
    pg_private.stop("immediate")
    _, err = proc.communicate(timeout=180)
    err = err.decode()
    assert proc.returncode == 1, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert "rerun the same command to resume" in err and "***" not in err or "postgres@" in err
    pg_private.start()
    before = {t.number: t.user_attrs["config"] for t in _states(url, name).get("COMPLETE", [])}
    done = subprocess.run(_cmd(*args, "--trials", "15"), env=_env(), capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    after = {t.number: t.user_attrs["config"] for t in _states(url, name)["COMPLETE"]}
    assert all(after.get(k) == v for k, v in before.items())
    assert _unique_complete(url, name) == max(15, len(set(before.values())))


def test_full_output_folder_is_a_clear_error_and_old_outputs_stay(run_cli, tmp_path, monkeypatch):
    out = tmp_path / "out"
    assert run_cli("tune", TINY, "--out", str(out), "--quiet", "--trials", "4", "--no-verify")[0] == 0
    old = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file() and p.suffix in (".json", ".html", ".md")}
    assert "table.json" in old and "summary.json" in old

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr("autotile.atomic._fsync", full)
    code, _, err = run_cli("tune", TINY, "--out", str(out), "--quiet", "--trials", "6", "--no-verify")
    assert code == 1 and "No space left on device" in err and err.count("\n") == 1
    for name, data in old.items():
        assert (out / name).read_bytes() == data
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")]


def test_unwritable_output_path_is_a_clear_error(run_cli, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    code, _, err = run_cli("tune", TINY, "--out", str(blocker / "out"), "--quiet", "--trials", "3", "--no-verify")
    assert code in (1, 2) and err.count("\n") == 1 and "Traceback" not in err


def test_storage_url_errors_are_one_line(run_cli, tmp_path):
    code, _, err = run_cli("tune", TINY, "--storage", "postgresql://nobody@127.0.0.1:1/none", "--out",
                           str(tmp_path / "o"), "--quiet")
    assert code in (1, 2) and err.count("\n") == 1 and "Traceback" not in err
    code, _, err = run_cli("tune", TINY, "--storage", "ftp://x", "--out", str(tmp_path / "o"), "--quiet")
    assert code == 2 and "expected sqlite" in err
    _ = make_storage  # the same function the CLI uses
