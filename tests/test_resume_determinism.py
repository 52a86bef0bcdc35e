"""A run stopped (Ctrl-C) and resumed proposes, trial for trial, what one uninterrupted run with
the same seed proposes: for every sampler, the baseline, warm starts and the untried fill."""

from __future__ import annotations

import os
import signal
import warnings
from pathlib import Path

import optuna
import pytest
from tinyspecs import EW

from autotile.kernels import registry
from autotile.space import load_spec
from autotile.tune import driver, runner
from autotile.tune.portfolio import MEMBER_ATTR
from autotile.tune.samplers import make_sampler
from autotile.tune.storage import make_storage

ROOT = Path(__file__).resolve().parents[1]
TINY = ROOT / "tests" / "data" / "mm_tiny.yaml"  # 15 params: a large space
SMALL = ROOT / "studies" / "matmul_small.yaml"  # 16x16x16 on the vector unit: 62 configurations

optuna.logging.set_verbosity(optuna.logging.WARNING)


@pytest.fixture
def sigint_at(monkeypatch):
    """A real SIGINT to this process once the run has finished ``n`` trials (all studies)."""
    saved = signal.getsignal(signal.SIGINT)

    def arm(n: int):
        real, seen = driver._Progress.trial, []

        def trial(self, study, t, unique):
            real(self, study, t, unique)
            seen.append(t.number)
            if len(seen) == n:
                os.kill(os.getpid(), signal.SIGINT)

        monkeypatch.setattr(driver._Progress, "trial", trial)

    yield arm
    signal.signal(signal.SIGINT, saved)
    runner._Stop.requested = False


def _plan(path, sampler, budget, objectives=("cycles",), seed=0, warm=(), shape=0, unit=None):
    spec = load_spec(str(path))
    space = spec.space(spec.shapes[shape], unit=unit)
    base = driver._baseline(registry.implementation(spec.op.name), space)
    return runner.StudyPlan(name="s", space=space, objectives=objectives, sampler=sampler, seed=seed,
                            budget=budget, timeout_s=None, baseline=base, warm=warm)


def _run(plan, storage, stop_after=None):
    """Run (or resume) the study; with ``stop_after``, a stop is requested (as the SIGINT handler
    does) once this run has finished that many trials."""
    seen = []

    def progress(study, trial, done):
        seen.append(trial.number)
        if len(seen) == stop_after:
            runner._Stop.request()

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            runner.run(plan, storage, progress=progress)
    finally:
        runner._Stop.requested = False
    return len(seen)


def _record(storage, name="s") -> list[tuple]:
    study = optuna.load_study(study_name=name, storage=storage)
    return [(t.number, t.state, t.params, t.values, t.user_attrs.get(runner.CONFIG_ATTR),
             t.system_attrs.get(MEMBER_ATTR), "fixed_params" in t.system_attrs)  # queued
            for t in study.get_trials(deepcopy=False)]


def _check(plan, stops):
    """The uninterrupted run against one stopped after each count in ``stops`` and resumed."""
    whole = optuna.storages.InMemoryStorage()
    _run(plan, whole)
    cut = optuna.storages.InMemoryStorage()
    for n in stops:
        assert _run(plan, cut, stop_after=n) == n  # it did stop there, short of its budget
    _run(plan, cut)
    want, got = _record(whole), _record(cut)
    for a, b in zip(got, want):
        assert a == b, f"trial {a[0]} differs"
    assert len(got) == len(want)
    return want


def test_a_trials_draws_do_not_depend_on_the_draws_before_it():
    def run(first):
        study = optuna.create_study(sampler=make_sampler("tpe", 3))
        study.enqueue_trial(first)
        study.optimize(lambda t: t.suggest_float("x", 0, 1) + t.suggest_int("y", 0, 9), n_trials=4)
        return [t.params for t in study.trials]

    a, b = run({"x": 0.5}), run({"x": 0.5, "y": 1})  # trial 0 draws y, or does not
    assert a[0] != b[0] and a[1:] == b[1:]


@pytest.mark.parametrize("sampler", ["tpe", "random", "cmaes", "nsga2", "portfolio"])
def test_a_stopped_and_resumed_run_makes_the_uninterrupted_runs_trials(sampler):
    want = _check(_plan(TINY, sampler, 30), stops=[1, 4, 7, 9])
    assert want[0][4] is not None and len(want) >= 30  # the baseline, then the budget


def test_the_portfolio_resumes_into_its_challengers_identically():
    want = _check(_plan(TINY, "portfolio", 90), stops=[12, 25, 9, 17])
    assert len({w[5] for w in want} - {"tpe", "enqueued", "mutation"}) >= 1  # challengers had trials


def test_two_objectives_resume_identically():
    for sampler in ("nsga2", "portfolio", "tpe"):
        _check(_plan(TINY, sampler, 30, objectives=("cycles", "time_us")), stops=[3, 11])


def test_the_fill_and_warm_starts_resume_identically():
    """62 configurations, a budget of 60: the samplers repeat, so untried ones are queued."""
    warm = ({"tile_m": 4, "buffer_num": 2, "cores": 4}, {"tile_m": 8, "buffer_num": 1, "cores": 2})
    for sampler in ("tpe", "portfolio", "random"):
        plan = _plan(SMALL, sampler, 60, warm=warm, shape=1, unit="vector")
        want = _check(plan, stops=[2, 21, 5, 13, 30])
        assert sum(w[6] for w in want) > 1 + len(warm)  # the baseline, warm starts and the fill


# one param fixed: 68 configurations, 25 of them over the UB (pruned), so proposals repeat
# infeasible ones and the nearest untried configuration is queued
EW_68 = EW.replace("shapes: [{n: 4096}]", "shapes: [{n: 1048576}]").replace(
    'cores: {type: int, low: 1, high: "min(hw.vector_cores, shape.n // 16)", pow2: true}',
    "cores: {type: fixed, value: 1}")


@pytest.mark.parametrize("sampler", ["tpe", "random", "nsga2"])
def test_repeated_infeasible_proposals_resume_identically(sampler, write_spec):
    """A repeat is told from the history, not from this process's cache (which a resumed run
    fills only with the completed trials)."""
    assert EW_68 != EW
    want = _check(_plan(write_spec(EW_68), sampler, 40), stops=[4] * 10)
    assert any(w[1] == optuna.trial.TrialState.PRUNED for w in want)


def test_ctrl_c_and_the_same_command_again_end_as_one_run_would(run_cli, sigint_at, tmp_path, monkeypatch):
    """Two shapes (the second warm-started from the first): Ctrl-C in the first study, then in
    the second, then the command to the end, against one run."""
    from autotile.report import render

    monkeypatch.setattr(render, "write_report", lambda out, storage=None: None)  # not what is tested
    args = ("tune", str(TINY), "--sampler", "portfolio", "--trials", "16", "--no-verify", "--quiet")
    assert run_cli(*args, "--out", str(tmp_path / "whole"))[0] == 0
    cut = tmp_path / "cut"
    for n in (5, 16):
        sigint_at(n)
        assert run_cli(*args, "--out", str(cut))[0] == 130
    assert run_cli(*args, "--out", str(cut))[0] == 0
    names = [s.study_name for s in optuna.get_all_study_summaries(make_storage(None, cut))]
    assert len(names) == 2
    for name in names:
        want = _record(make_storage(None, tmp_path / "whole"), name)
        got = _record(make_storage(None, cut), name)
        assert [(g[0], g[2], g[3]) for g in got] == [(w[0], w[2], w[3]) for w in want], name


def test_the_worker_that_takes_a_trial_does_not_change_what_it_proposes(tmp_path, monkeypatch):
    """``--jobs``: a study run in turns by workers 1, 0 and 1 makes the trials worker 0 alone
    makes (each worker drew from seed + its index)."""
    real, stops = runner.run, []

    def run(plan, storage, **kw):
        return real(plan, storage, progress=lambda study, t, done: _stop_at(stops), **kw)

    monkeypatch.setattr(runner, "run", run)

    def work(out, worker, after=None):
        stops[:] = [after]
        opts = driver.Options(trials=20, sampler="portfolio", out=out, verify=False)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                spec = load_spec(str(TINY))
                plan = driver.plans(spec, opts)[0]
                driver._worker(spec.file, spec.source, opts, 0, worker, (plan.name, plan.identity))
        finally:
            runner._Stop.requested = False
        return driver.plans(load_spec(str(TINY)), opts)[0].name

    name = work(tmp_path / "one", 0)
    for worker, after in ((1, 4), (0, 9), (1, None)):
        work(tmp_path / "turns", worker, after)
    want = _record(make_storage(None, tmp_path / "one"), name)
    got = _record(make_storage(None, tmp_path / "turns"), name)
    assert len(want) >= 20 and [g[:4] for g in got] == [w[:4] for w in want]


def _stop_at(stops: list) -> None:
    """Count a finished trial; request a stop when the count reaches ``stops[0]``."""
    stops.append(None)
    if len(stops) - 1 == stops[0]:
        runner._Stop.request()
