"""`autotile train` under a stop signal, with outputs in the way, and on a damaged cached dataset."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sessions import gone, session

from autotile.models import dataset as D
from autotile.models import training
from autotile.tune import runner

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("sig, code, to", [(signal.SIGINT, 130, "main"), (signal.SIGTERM, 143, "main"),
                                           (signal.SIGTERM, 143, "group"), (signal.SIGTERM, 143, "worker")])
def test_a_signal_stops_the_workers_and_writes_nothing_half_done(tmp_path, sig, code, to):
    """`kill -INT` reached only the main process, which waited for its workers to build and save
    every model (~75 s) before saying "interrupted"; `kill -TERM` killed the main process and
    left its workers writing models after the command had ended. A SIGTERM to the whole group
    (as `timeout` sends) killed the workers, and the run said "trained sigmoid" and exited 0.
    A SIGTERM to one worker alone stopped the run but exited 130, as if it had been a SIGINT."""
    out = tmp_path / "cache"
    proc = subprocess.Popen([sys.executable, "-m", "autotile", "train", "--ops", "sigmoid", "-j", "2", "-o", str(out)],
                            env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=(tmp_path / "stdout").open("wb"),
                            stderr=(tmp_path / "stderr").open("wb"), start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(session(proc.pid)) < 4:  # the main process, the resource tracker, two workers
            assert time.monotonic() < deadline and proc.poll() is None, "the workers did not start"
            time.sleep(0.1)
        time.sleep(3)  # into the datasets (a stop before them is the same: nothing to write)
        if to == "group":
            os.killpg(proc.pid, sig)
        elif to == "worker":
            kids = subprocess.run(["ps", "-ww", "-o", "pid=,args=", "--ppid", str(proc.pid)], capture_output=True,
                                  text=True).stdout.splitlines()
            os.kill(int(next(k for k in kids if "spawn_main" in k).split()[0]), sig)
        else:
            proc.send_signal(sig)
        proc.wait(timeout=120)
        assert gone(proc.pid, 20), session(proc.pid)
    finally:
        if session(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    err = (tmp_path / "stderr").read_text()
    assert proc.returncode == code, err
    assert err.splitlines()[-1].startswith("autotile: interrupted: not trained: sigmoid "), err
    assert not list((out / "models").rglob("*.zip")) if (out / "models").exists() else True
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")] if out.exists() else True


def test_a_stop_in_one_process_keeps_what_finished_and_nothing_cut_short(tmp_path, hw, monkeypatch):
    """With -j 1 the stop is seen between simulations: the model under way is left unwritten."""
    monkeypatch.setitem(D.PLACEMENTS, "on_chip", (256, 1024))
    monkeypatch.setitem(D.PLACEMENTS, "gm", (256, 1024))
    monkeypatch.setattr(training, "COST_1D", (256, 512, 1, 6))
    real, calls = D.best_of_unit, []

    def best_of_unit(*a, **k):  # a real SIGINT to this process on the third search of the cost model's op
        calls.append(1)
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*a, **k)

    monkeypatch.setattr(D, "best_of_unit", best_of_unit)
    saved = signal.getsignal(signal.SIGINT)
    try:
        got = training.train(["elementwise"], hw, tmp_path, jobs=1)
    finally:
        runner._Stop.requested = False
    assert signal.getsignal(signal.SIGINT) is saved  # the handlers are put back
    assert got["elementwise"] == {"units": {"interrupted": True, "kept": []}, "cost": {"interrupted": True, "kept": []}}
    assert training.interrupted(got) and training.written(got) == []
    assert not [p for p in tmp_path.rglob("*") if p.is_file()]


def test_a_stop_during_a_fit_keeps_the_dataset_and_writes_no_model(tmp_path, hw, monkeypatch):
    """A fit has no stop check of its own (45 s of boosting on a busy machine): it is cut short."""
    from autotile.models.selector import UnitSelector

    monkeypatch.setitem(D.PLACEMENTS, "on_chip", (256, 512))
    monkeypatch.setitem(D.PLACEMENTS, "gm", (256, 512))

    def fit(self, rows):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(10**9):  # a fit that never looks at the stop request
            pass
        raise AssertionError("the fit was not stopped")

    monkeypatch.setattr(UnitSelector, "fit", fit)
    try:
        got = training.train(["elementwise"], hw, tmp_path, cost="none", jobs=1)
    finally:
        runner._Stop.requested = False
    dataset = tmp_path / "datasets" / "ascend910b2" / "elementwise.units.json"
    assert got["elementwise"] == {"units": {"interrupted": True, "kept": [str(dataset)]}}
    assert training.written(got) == [str(dataset)] and D.load_rows(dataset)
    assert [p for p in tmp_path.rglob("*") if p.is_file()] == [dataset]


def test_stoppable_raises_once_in_the_block_or_right_after_it():
    runner._Stop.requested = False
    left = []
    try:
        with pytest.raises(training.Stopped):
            with training.stoppable(poll=0.01):
                runner._Stop.requested = True
                for _ in range(10**9):
                    pass
                left.append("the loop ran to its end")
        with pytest.raises(training.Stopped):
            with training.stoppable(poll=0.01):
                runner._Stop.requested = True
                time.sleep(0.2)  # one C call: the watcher fires, but nothing can raise inside it
        for _ in range(10**5):  # nothing left pending for the code after the block
            pass
    finally:
        runner._Stop.requested = False
    assert left == []
    with training.stoppable(poll=0.01):  # no stop request: nothing raised
        time.sleep(0.05)


def test_every_output_in_the_way_is_found_before_any_dataset(run_cli, tmp_path, monkeypatch):
    """A file where the profile's models folder goes cost 75 s of datasets (two written) and then
    `...elementwise.cost.zip: cannot write: Not a directory`."""
    called = []

    def fake(ops, *a, **k):  # no datasets: only whether the run got this far
        called.append(ops)
        return {op: {} for op in ops}

    monkeypatch.setattr(training, "train", fake)
    (tmp_path / "a" / "models").mkdir(parents=True)
    (tmp_path / "a" / "models" / "ascend910b2").write_text("keep")
    code, _, err = run_cli("train", "--ops", "elementwise", "-o", str(tmp_path / "a"))
    assert code == 1 and err.count("\n") == 1, err
    assert "models/ascend910b2: Not a directory" in err
    assert not (tmp_path / "a" / "datasets").exists()
    (tmp_path / "b" / "datasets" / "ascend910b2" / "sigmoid.units.json").mkdir(parents=True)
    code, _, err = run_cli("train", "--ops", "sigmoid", "-o", str(tmp_path / "b"))
    assert code == 1 and err.count("\n") == 1 and "sigmoid.units.json: cannot write: it is a folder" in err, err
    (tmp_path / "c" / "models" / "ascend910b2" / "sigmoid.cost.zip").mkdir(parents=True)
    assert not called
    code, _, err = run_cli("train", "--ops", "sigmoid", "--cost", "none", "-o", str(tmp_path / "c"))
    assert code == 0 and called == [["sigmoid"]], err  # its cost model is not asked for: not in the way


def _row(**k) -> dict:
    return {"op": "sigmoid", "shape": {"n": 256}, "dtype": "fp16", "unit": "vector", "params": {"tile_len": 64},
            "cycles": 100.0, "source": "sim", "data": "gm", "extra": {}, **k}


@pytest.mark.parametrize("bad, where", [
    ({"cycles": 0}, "rows[1].cycles: expected a positive finite number, got 0"),
    ({"cycles": "fast"}, "rows[1].cycles: expected a positive finite number"),
    ({"shape": {"n": 0}}, "rows[1].shape: expected positive integers for n"),
    ({"unit": "cube"}, "rows[1].unit: expected one of vector, scalar"),
    ({"op": "matmul"}, "rows[1].op: expected sigmoid"),
])
def test_a_damaged_cached_dataset_is_rebuilt_with_a_warning(tmp_path, capsys, bad, where):
    """A cached dataset with a row's cycles set to 0 was used as it was, and the fit failed with a
    traceback (`array must not contain infs or NaNs`)."""
    meta = {"kind": "units", "op": "sigmoid", "fingerprint": "f"}
    path = tmp_path / "sigmoid.units.json"
    path.write_text(json.dumps({"meta": meta, "rows": [_row(), _row(**bad)]}))
    with pytest.raises(D.DamagedDataset, match=f"^{path}: " + where.replace("[", r"\[").replace("]", r"\]")):
        D.load_rows(path, meta)
    fresh = [D.Row.from_dict(_row(cycles=7.0))]
    assert D.cached(path, meta, lambda: fresh) == (fresh, True)
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and where in err and err.rstrip().endswith("; rebuilding the dataset")
    assert D.load_rows(path, meta) == fresh  # rewritten, and read back without a word
    assert D.cached(path, meta, lambda: []) == (fresh, False) and capsys.readouterr().err == ""


def test_a_dataset_that_is_not_json_is_rebuilt_with_a_warning_and_a_stale_one_silently(tmp_path, capsys):
    meta = {"kind": "units", "op": "sigmoid", "fingerprint": "f"}
    path = tmp_path / "d.json"
    fresh = [D.Row.from_dict(_row())]
    path.write_text('{"meta": {')
    assert D.cached(path, meta, lambda: fresh) == (fresh, True)
    assert f"{path}: not JSON" in capsys.readouterr().err
    assert D.cached(path, {**meta, "fingerprint": "g"}, lambda: fresh) == (fresh, True)
    assert capsys.readouterr().err == ""
