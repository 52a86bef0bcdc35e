"""The tuner: budget, infeasible pruning, duplicates, baseline, resume, workers, faults, verification."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import optuna

from autotile.kernels import matmul as mm
from autotile.kernels import registry
from autotile.space import load_spec
from autotile.tune import runner, verify
from autotile.tune.storage import JOURNAL_NAME, make_storage

ROOT = Path(__file__).resolve().parents[1]
TINY = str(ROOT / "tests" / "data" / "mm_tiny.yaml")


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _complete_configs(out: Path, name: str) -> list[str]:
    study = optuna.load_study(study_name=name, storage=make_storage(None, out))
    return [t.user_attrs["config"] for t in study.get_trials(states=(optuna.trial.TrialState.COMPLETE,))]


def test_tune_writes_outputs_with_baseline_and_budget(run_cli, tmp_path):
    out = tmp_path / "out"
    code, stdout, err = run_cli("tune", TINY, "--out", str(out), "--quiet", "--trials", "10")
    assert code == 0, err
    s = _summary(out)
    assert s["op"] == "matmul" and len(s["results"]) == 2
    for r in s["results"]:
        assert r["unique_configs"] == 10
        assert r["verified"] is True
        assert r["baseline_cycles"] is not None and r["speedup_vs_baseline"] >= 1.0
        assert r["cycles"] <= r["baseline_cycles"]
        assert 0 < r["pct_of_peak"] < 100
        assert r["study"] == f"matmul/ascend910b2/fp16/{','.join(f'{k}={v}' for k, v in r['shape'].items())}/cube"
        study = optuna.load_study(study_name=r["study"], storage=make_storage(None, out))
        first = study.trials[0]
        assert first.user_attrs.get(runner.BASELINE_ATTR) is True
    table = json.loads((out / "table.json").read_text())
    assert table["schema"] == "autotile.table/1" and len(table["entries"]) == 2
    assert "summary.json" in stdout or "outputs in" in stdout


def test_json_summary_and_infeasible_share_on_matmul_study(run_cli, tmp_path):
    """On studies/matmul.yaml fewer than 20% of TPE trials may be infeasible (first shape)."""
    out = tmp_path / "out"
    spec = tmp_path / "one.yaml"
    text = (ROOT / "studies" / "matmul.yaml").read_text()
    head, _, rest = text.partition("shapes:\n")
    spec.write_text(head + "shapes:\n  - {m: 1024, k: 512, n: 2048}\n" + rest.split("\n\n", 1)[1])
    code, stdout, err = run_cli("tune", str(spec), "--out", str(out), "--trials", "60", "--json", "--no-verify")
    assert code == 0, err
    r = json.loads(stdout)["results"][0]
    assert r["infeasible"] / r["trials"] < 0.2
    assert r["unique_configs"] == 60


def test_duplicates_come_from_the_cache():
    spec = load_spec(TINY)
    space = spec.space(spec.shapes[0], "fp16", "cube")
    from autotile.tune.evaluate import Evaluator

    ev = Evaluator(space)
    p = {k: v for k, v in mm.default_params(space.shape, "fp16", spec.hardware).items() if k in space.names}
    a, b = ev.score(p), ev.score(dict(reversed(list(p.items()))))
    assert not a.cached and b.cached and ev.simulated == 1
    assert a.values == b.values


def test_infeasible_is_pruned_before_simulation():
    spec = load_spec(TINY)
    space = spec.space(spec.shapes[0], "fp16", "cube")
    from autotile.tune.evaluate import Evaluator

    ev = Evaluator(space)
    p = {k: v for k, v in mm.default_params(space.shape, "fp16", spec.hardware).items() if k in space.names}
    bad = dict(p, depth_b1=p["depth_b1"] * 3)
    out = ev.score(bad)
    assert not out.feasible and "outside its domain" in out.reason and ev.simulated == 0


def test_resume_continues_the_budget(run_cli, tmp_path):
    out = tmp_path / "out"
    assert run_cli("tune", TINY, "--out", str(out), "--quiet", "--trials", "6", "--no-verify")[0] == 0
    name = _summary(out)["results"][0]["study"]
    first = _complete_configs(out, name)
    assert run_cli("tune", TINY, "--out", str(out), "--quiet", "--trials", "14", "--no-verify")[0] == 0
    after = _complete_configs(out, name)
    assert after[: len(first)] == first
    assert len(set(after)) == 14


def test_two_workers_share_one_study(run_cli, tmp_path):
    out = tmp_path / "out"
    code, _, err = run_cli("tune", TINY, "--out", str(out), "--quiet", "--trials", "16", "--jobs", "2", "--no-verify")
    assert code == 0, err
    for r in _summary(out)["results"]:
        assert 16 <= r["unique_configs"] <= 17
        owners = {t.user_attrs.get("autotile.owner") for t in optuna.load_study(
            study_name=r["study"], storage=make_storage(None, out)).trials}
        assert len(owners) >= 1


def test_the_largest_seed_runs_with_two_workers(run_cli, tmp_path):
    """Worker seeds were ``seed + worker``: --seed 4294967295 --jobs 2 gave the second worker a
    seed past 2**32 - 1, which every sampler refused with a traceback."""
    out = tmp_path / "out"
    code, _, err = run_cli("tune", TINY, "--out", str(out), "--quiet", "--trials", "3", "--jobs", "2",
                           "--no-verify", "--sampler", "random", "--seed", "4294967295")
    assert code == 0, err
    assert _summary(out)["seed"] == 4294967295


def _spawn(out: Path, trials: int) -> subprocess.Popen:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-m", "autotile", "tune", TINY, "--out", str(out), "--quiet",
                             "--trials", str(trials), "--no-verify"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def _wait_for_trials(out: Path, name: str, n: int, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (out / JOURNAL_NAME).exists():
            try:
                if len(_complete_configs(out, name)) >= n:
                    return
            except KeyError:
                pass
        time.sleep(0.05)
    raise AssertionError(f"no {n} trials within {timeout} s")


def test_sigkill_loses_no_completed_trial_and_rerun_finishes_budget(tmp_path):
    out = tmp_path / "out"
    spec = load_spec(TINY)
    from autotile.tune.naming import study_name

    name = study_name("matmul", "ascend910b2", "fp16", spec.shapes[0], "cube")
    proc = _spawn(out, 200)
    _wait_for_trials(out, name, 5)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=30)  # reaps it and closes its pipes
    before = _complete_configs(out, name)
    assert len(before) >= 5
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "autotile", "tune", TINY, "--out", str(out), "--quiet",
                           "--trials", "30", "--no-verify"], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    after = _complete_configs(out, name)
    assert after[: len(before)] == before
    assert len(set(after)) == max(30, len(set(before)))
    study = optuna.load_study(study_name=name, storage=make_storage(None, out))
    assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,))


_DIE_AFTER_CREATE = """
import os, sys
from pathlib import Path
import optuna
from autotile.tune.storage import make_storage
optuna.logging.set_verbosity(optuna.logging.ERROR)
url = None if sys.argv[2] == "journal" else sys.argv[2]
study = optuna.create_study(study_name="s", storage=make_storage(url, Path(sys.argv[1])), load_if_exists=True)
study.enqueue_trial({"x": 1.0})
study._storage.create_new_trial(study._study_id)  # a new trial, as ask() creates it
study._pop_waiting_trial_id()                     # the queued one, as ask() takes it
os._exit(0)                                       # killed before any sampler hook runs
"""


def test_a_worker_killed_right_after_creating_a_trial_leaves_it_failable(tmp_path):
    """The owner is written with the trial itself, so no kill can leave an ownerless RUNNING trial."""
    from autotile.tune.storage import fail_stale_trials

    for url in ("journal", f"sqlite:///{tmp_path / 'db.sqlite'}"):
        out = tmp_path / url.rsplit("/", 1)[-1]
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, "-c", _DIE_AFTER_CREATE, str(out), url], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        study = optuna.load_study(study_name="s", storage=make_storage(None if url == "journal" else url, out))
        running = study.get_trials(states=(optuna.trial.TrialState.RUNNING,))
        assert len(running) == 2 and all(t.user_attrs.get("autotile.owner") for t in running)
        assert fail_stale_trials(study) == 2
        assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,))


def test_ctrl_c_stops_after_the_current_trial_with_everything_saved(tmp_path):
    out = tmp_path / "out"
    spec = load_spec(TINY)
    from autotile.tune.naming import study_name

    name = study_name("matmul", "ascend910b2", "fp16", spec.shapes[0], "cube")
    proc = _spawn(out, 100000)
    _wait_for_trials(out, name, 3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert b"Traceback" not in err
    s = _summary(out)
    assert s["interrupted"] is True
    study = optuna.load_study(study_name=name, storage=make_storage(None, out))
    assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,))


class _WrongFirst:
    """A kernel test double: correct except for one configuration, whose result is perturbed."""

    def __init__(self, bad: dict):
        self.bad = bad

    def __getattr__(self, name):
        return getattr(mm, name)

    def execute(self, inputs, params, dtype, hw, **kw):
        c = mm.execute(inputs, params, dtype, hw, **kw)
        if params == self.bad:
            c = c.astype(np.float32) + 1.0
        return c


def test_verification_gate_rejects_a_wrong_kernel_and_takes_the_next_best(hw):
    shape = {"m": 96, "n": 80, "k": 64}
    good = mm.default_params(shape, "fp16", hw)
    bad = dict(good, iterate_order="n_first")
    g = verify.gate(_WrongFirst(bad), shape, [bad, good], "fp16", hw)
    assert g.params == good and g.rank == 1
    assert len(g.rejected) == 1 and "exceeds the tolerance" in g.rejected[0][1].reason


def test_driver_uses_the_gate(monkeypatch, run_cli, tmp_path):
    """Through `autotile tune`: the winner fails verification, the table gets the next best."""
    calls = {}
    real = registry.implementation

    class Wrong(_WrongFirst):
        def execute(self, inputs, params, dtype, hw, **kw):
            calls.setdefault("first", params)
            self.bad = calls["first"]
            return super().execute(inputs, params, dtype, hw, **kw)

    monkeypatch.setattr(registry, "implementation", lambda op: Wrong({}) if op == "matmul" else real(op))
    out = tmp_path / "out"
    assert run_cli("tune", TINY, "--out", str(out), "--quiet", "--trials", "8")[0] == 0
    r = _summary(out)["results"][0]
    assert r["verified"] and len(r["rejected"]) == 1
    assert r["params"] != r["rejected"][0]["params"]


def test_a_study_whose_every_candidate_fails_verification_has_no_result_nor_table_entry(monkeypatch, run_cli, tmp_path):
    """A kernel wrong on every tiling: the gate rejects all candidates. The study used to keep the
    best of them (verified false) and the table served it; now it has no result, says why, and the
    table has no entry for it."""
    real = registry.implementation

    class Wrong(_WrongFirst):
        def execute(self, inputs, params, dtype, hw, **kw):
            return mm.execute(inputs, params, dtype, hw, **kw).astype(np.float32) + 1.0

    monkeypatch.setattr(registry, "implementation", lambda op: Wrong({}) if op == "matmul" else real(op))
    out = tmp_path / "out"
    code, stdout, _ = run_cli("tune", TINY, "--out", str(out), "--trials", "4")
    assert code == 0
    rs = _summary(out)["results"]
    assert rs and all(r["params"] is None and r["cycles"] is None and not r["verified"] for r in rs)
    assert all(r["rejected"] and r["reason"].startswith("FAILED verification") for r in rs)
    assert json.loads((out / "table.json").read_text())["entries"] == []
    assert stdout.count("FAILED verification") == len(rs)
    assert "FAILED verification (no table entry)" in (out / "report.md").read_text()


def test_bad_spec_and_bad_options_exit_2(run_cli, tmp_path):
    assert run_cli("tune", TINY, "--trials", "0")[0] == 2
    assert run_cli("tune", str(tmp_path / "missing.yaml"))[0] == 2
    code, _, err = run_cli("tune", TINY, "--sampler", "annealing", "--out", str(tmp_path / "o"))
    assert code == 2 and "unknown sampler" in err and err.count("\n") == 1
    assert not (tmp_path / "o").exists()  # refused before the output folder and its journal


def test_limits_make_a_single_objective_study_pick_the_fastest_admissible_variant(run_cli, tmp_path):
    spec = tmp_path / "sig.yaml"
    spec.write_text("""op: sigmoid
hardware: ascend910b2
dtypes: [fp16]
units: [scalar]
shapes: [{n: 2048}]
params:
  tile_len: {type: int, low: 256, high: "shape.n", pow2: true}
  buffer_num: {type: fixed, value: 2}
  cores: {type: fixed, value: 1}
  variant: {type: categorical, choices: [exact, poly, lut_nearest, lut_linear]}
objective: cycles
limits: {max_abs_error: 1.0e-3}
sampler: exhaustive
""")
    out = tmp_path / "out"
    code, stdout, err = run_cli("tune", str(spec), "--out", str(out), "--quiet", "--json")
    assert code == 0, err
    r = json.loads(stdout)["results"][0]
    assert r["values"]["max_abs_error"] <= 1e-3 and r["verified"]
    assert r["params"]["variant"] not in ("poly", "lut_nearest")  # both above the cap
    free = spec.read_text().replace("limits: {max_abs_error: 1.0e-3}\n", "")
    spec.write_text(free)
    code, stdout, err = run_cli("tune", str(spec), "--out", str(tmp_path / "free"), "--quiet", "--json")
    free_run = json.loads(stdout)["results"][0]
    # the cap admits lut_linear (4.9e-4 over [-8, 8]), held to that error (and on the tails beyond
    # its table, to it plus sigmoid(-8)); without the cap every inexact variant is held to the
    # dtype's tolerance: the fastest fail verification (lut_linear on the tails, 7x off at
    # x = -10), and the gate goes on down the ranking (it stopped at five, and the study had no
    # result) to the fastest exact configuration
    assert r["params"]["variant"] == "lut_linear"
    assert free_run["verified"] and free_run["params"]["variant"] == "exact"
    assert {x["params"]["variant"] for x in free_run["rejected"]} == {"poly", "lut_nearest", "lut_linear"}
    rank = free_run["gate"]["rank"]
    assert len(free_run["rejected"]) == rank - 1 and rank > 9
    code, stdout, err = run_cli("tune", str(spec), "--out", str(tmp_path / "free2"), "--quiet")
    assert f"verified (pick is rank {rank}: the {rank - 1} faster candidates failed verification)" in stdout
    assert f"pick is rank {rank}" in (tmp_path / "free2" / "report.md").read_text()
    db = tmp_path / "s.db"
    code, _, err = run_cli("tune", str(spec), "--out", str(tmp_path / "st"), "--quiet",
                           "--storage", f"sqlite:///{db}")
    assert code == 2 and "exhaustive sampler" in err and err.count("\n") == 1
    assert not db.exists() and not (tmp_path / "st").exists()  # refused before anything is written


def test_a_timeout_budget_is_shown_as_given(run_cli, tmp_path):
    """budget: {timeout_s: ...} is in the CLI line, summary.json and the report, with the trial budget."""
    spec = tmp_path / "ew.yaml"
    spec.write_text("""op: elementwise
dtypes: [fp16]
units: [vector]
shapes: [{n: 4096}]
params:
  tile_len: {type: int, low: 16, high: "shape.n", pow2: true}
  buffer_num: {type: int, low: 1, high: 4}
  cores: {type: int, low: 1, high: "min(hw.vector_cores, shape.n // 16)", pow2: true}
constraints:
  - {expr: "3 * buffer_num * tile_len * dtype.bytes <= hw.ub_bytes", message: "fit UB"}
budget: {timeout_s: 0.5}
""")
    out = tmp_path / "out"
    code, stdout, err = run_cli("tune", str(spec), "--out", str(out), "--quiet")
    assert code == 0, err
    assert "budget 100 configs or 0.5 s per study" in stdout.splitlines()[0]
    s = _summary(out)
    assert s["budget"] == 100 and s["timeout_s"] == 0.5
    assert "budget 100 distinct feasible configurations or 0.5 s per study" in (out / "report.md").read_text()
    code, stdout, err = run_cli("tune", TINY, "--out", str(tmp_path / "mm"), "--quiet", "--trials", "2", "--no-verify")
    assert code == 0 and "budget 2, seed" in stdout and _summary(tmp_path / "mm")["timeout_s"] is None


_SIG_TWO = """op: sigmoid
hardware: ascend910b2
dtypes: [fp16]
units: [scalar]
shapes: [{n: 4096}]
params:
  tile_len: {type: int, low: 1024, high: "shape.n", pow2: true}
  buffer_num: {type: fixed, value: 2}
  cores: {type: int, low: 1, high: 32, pow2: true}
  variant: {type: categorical, choices: [exact, poly]}
objective: [max_abs_error, cycles]
sampler: exhaustive
"""


def test_two_objective_ties_on_the_first_go_to_the_second_in_a_study(tmp_path):
    """Trial 0 (the baseline) and trial 2 tie on max_abs_error; trial 2 has fewer cycles, so it
    ranks first (ranking on the first objective alone kept trial 0, a dominated pick)."""
    from optuna.distributions import IntDistribution
    from optuna.trial import create_trial

    spec_path = tmp_path / "sig.yaml"
    spec_path.write_text(_SIG_TWO.replace("sampler: exhaustive\n", ""))
    spec = load_spec(str(spec_path))
    space = spec.space(spec.shapes[0], "fp16", "scalar")
    study = optuna.create_study(directions=["minimize", "minimize"])
    for cores, vals in ((1, (0.0, 50000.0)), (2, (0.001, 1000.0)), (32, (0.0, 2000.0))):
        cfg = {"buffer_num": 2, "cores": cores, "tile_len": 4096, "variant": "exact"}
        study.add_trial(create_trial(
            values=list(vals), params={"cores": cores}, distributions={"cores": IntDistribution(1, 32)},
            user_attrs={runner.CONFIG_ATTR: json.dumps(cfg, sort_keys=True, separators=(",", ":")),
                        "values": {"max_abs_error": vals[0], "cycles": vals[1]}}))
    plan = runner.StudyPlan("s", space, ("max_abs_error", "cycles"), "tpe", 0, 3, None, None)
    from autotile.tune.evaluate import Evaluator

    out = runner.summarize(study, plan, Evaluator(space, plan.objectives), 0.0)
    assert [b[2] for b in out.best] == [2, 0, 1]


def test_two_objective_exhaustive_exports_the_fastest_of_the_most_accurate(run_cli, tmp_path):
    """objective [max_abs_error, cycles]: the exported configuration has the lowest error and,
    among those with it, the fewest cycles (not the first such configuration enumerated)."""
    spec = tmp_path / "sig.yaml"
    spec.write_text(_SIG_TWO)
    code, stdout, err = run_cli("tune", str(spec), "--out", str(tmp_path / "out"), "--quiet", "--json")
    assert code == 0, err
    r = json.loads(stdout)["results"][0]
    from autotile.tune import exhaustive

    sp = load_spec(str(spec))
    rows = [v for _, v in exhaustive.scores(sp.space(sp.shapes[0], "fp16", "scalar"), sp.objectives)]
    low = min(v["max_abs_error"] for v in rows)
    fastest = min(v["cycles"] for v in rows if v["max_abs_error"] == low)
    assert r["values"]["max_abs_error"] == low and r["cycles"] == fastest
    assert max(v["cycles"] for v in rows if v["max_abs_error"] == low) > 2 * fastest  # a real tie to break
    # the Pareto front is the non-dominated rows (it was empty: only the Optuna path filled it)
    pts = [(v["max_abs_error"], v["cycles"]) for v in rows]
    want = sorted(p for p in pts if not any(q[0] <= p[0] and q[1] <= p[1] and q != p for q in pts))
    got = sorted((f["values"]["max_abs_error"], f["values"]["cycles"]) for f in r["pareto"])
    assert got == want and len(got) >= 2


def test_unit_choice_breaks_first_objective_ties_on_the_second():
    """Two units tie on max_abs_error; the one with fewer cycles is chosen, whichever is listed first."""
    from autotile.tune.driver import _mark_chosen_units

    def res(unit, err, cycles):
        return {"shape": {"n": 64}, "dtype": "fp16", "unit": unit, "cycles": cycles, "verified": True,
                "values": {"max_abs_error": err, "cycles": cycles}}

    for order in ((0, 1, 2), (2, 1, 0)):
        rs = [res("vector", 0.0, 900.0), res("scalar", 0.0, 400.0), res("cube", 0.5, 100.0)]
        rs = [rs[i] for i in order]
        _mark_chosen_units(rs, ("max_abs_error", "cycles"))
        assert [r["unit"] for r in rs if r["chosen"]] == ["scalar"]


def test_a_refused_multi_spec_run_writes_no_output(run_cli, tmp_path, monkeypatch):
    """`--jobs 2` with an exhaustive spec first: the refusal comes before any spec's output
    folder or journal is made (the second spec's results/<stem>/studies.journal was left)."""
    ew = tmp_path / "ew.yaml"
    ew.write_text("""op: elementwise
dtypes: [fp16]
units: [vector]
shapes: [{n: 1024}]
params:
  tile_len: {type: int, low: 16, high: "shape.n", pow2: true}
  buffer_num: {type: fixed, value: 2}
  cores: {type: fixed, value: 1}
sampler: exhaustive
""")
    sig = tmp_path / "sig.yaml"
    sig.write_text(_SIG_TWO.replace("sampler: exhaustive\n", ""))
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("tune", str(ew), str(sig), "--quiet", "--trials", "5", "--jobs", "2", "--json")
    assert code == 2 and "--jobs: the exhaustive sampler runs in one process" in err and err.count("\n") == 1
    assert not (tmp_path / "results").exists()


def test_a_huge_integer_range_tunes_without_numpy_warnings(run_cli, tmp_path, recwarn):
    """cores to 2**53 overflowed TPE's density arithmetic: ~200 lines of NumPy RuntimeWarnings from
    inside Optuna in a 25-trial tune, though the sampler went on proposing values."""
    from tinyspecs import EW

    spec = tmp_path / "ew53.yaml"
    spec.write_text(EW.replace('cores: {type: int, low: 1, high: "min(hw.vector_cores, shape.n // 16)", pow2: true}',
                               "cores: {type: int, low: 1, high: 9007199254740992}"))
    code, out, err = run_cli("tune", str(spec), "--trials", "25", "--sampler", "tpe", "--out", str(tmp_path / "o"),
                             "--quiet")
    assert code == 0, err
    assert "Warning" not in err and not [w for w in recwarn if issubclass(w.category, RuntimeWarning)], \
        [str(w.message) for w in recwarn][:5]
    # CMA-ES said "Constraints have been set, but CmaEsSampler will not use them" once a trial
    code, out, err = run_cli("tune", str(spec), "--trials", "5", "--sampler", "cmaes", "--out", str(tmp_path / "c"),
                             "--quiet")
    assert code == 0 and "Warning" not in err and not [w for w in recwarn if "Constraints" in str(w.message)], err
