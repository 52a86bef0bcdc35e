"""In a queue of specs (``autotile tune A.yaml B.yaml``) each spec's tuning time is its own
studies' (and its verification's), not the queue's: with and without --jobs."""

from __future__ import annotations

import pytest
from tinyspecs import EW, EW2

from autotile.space import load_spec
from autotile.tune import driver, runner

# seconds each study of a spec takes on the fake clock: the queue's second spec is much slower
SECONDS = {4096: 10.0, 8192: 100.0}


class _Clock:
    """driver's clock: still, but for what a study takes (``SECONDS`` by its shape)."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch):
    clock = _Clock()
    monkeypatch.setattr(driver, "time", clock)
    run = runner.run

    def timed(plan, storage, **kw):
        out = run(plan, storage, **kw)
        clock.now += SECONDS[plan.space.shape["n"]]
        return out

    monkeypatch.setattr(runner, "run", timed)
    runner._Stop.requested, runner._Stop.signum = False, None
    return clock


def _queue(tmp_path):
    """Spec A: one study (n=4096, 10 s); spec B: n=8192 only (100 s), tuned after A."""
    a, b = tmp_path / "a.yaml", tmp_path / "b.yaml"
    a.write_text(EW)
    b.write_text(EW2.replace("shapes: [{n: 4096}, {n: 8192}]", "shapes: [{n: 8192}]"))
    specs = [load_spec(str(a)), load_spec(str(b))]
    opts = [driver.Options(out=tmp_path / name, quiet=True, verify=False, trials=4) for name in ("a", "b")]
    return specs, opts


def _in_process_pool(tasks, jobs, work, done, *, stage, begin, **kw):
    """``workers.run_pool`` in this process (the fake clock cannot reach worker processes)."""
    begun = set()
    for key, args in tasks:
        if stage(key) not in begun:
            begun.add(stage(key))
            begin(stage(key))
        done(key, work(*args))


def test_each_spec_of_a_queue_reports_its_own_tuning_time(clock, tmp_path):
    specs, opts = _queue(tmp_path)
    a, b = driver.tune_many(specs, opts, 1, True)
    assert a["elapsed_s"] == 10.0  # not 110 (the queue's), nor B's verification and report
    assert b["elapsed_s"] == 100.0


def test_with_jobs_each_spec_reports_the_span_of_its_own_studies(clock, tmp_path, monkeypatch):
    monkeypatch.setattr(driver.workers, "run_pool", _in_process_pool)
    specs, opts = _queue(tmp_path)
    opts = [driver.replace(o, jobs=2) for o in opts]
    a, b = driver.tune_many(specs, opts, 2, True)
    # each study's two tasks ran one after the other here: twice its time
    assert a["elapsed_s"] == 20.0 and b["elapsed_s"] == 200.0
    # the studies the workers ran carry their own time too (0 read as "resumed from other runs")
    assert [r["elapsed_s"] for r in a["results"]] == [20.0] and [r["elapsed_s"] for r in b["results"]] == [200.0]
