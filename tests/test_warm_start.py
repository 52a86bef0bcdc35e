"""Warm start: a new shape's study starts from the best configurations of the nearest tuned shape,
including one tuned earlier in the same run."""

from __future__ import annotations

import optuna
import pytest
from tinyspecs import EW2

from autotile.tune import runner
from autotile.tune.naming import parse_study_name
from autotile.tune.storage import make_storage


def _warm_configs(out, n: int) -> list[str]:
    study = optuna.load_study(study_name=f"elementwise/ascend910b2/fp16/n={n}/vector", storage=make_storage(None, out))
    return [t.user_attrs["config"] for t in study.trials if t.user_attrs.get(runner.WARM_ATTR)]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_shape_is_warm_started_from_one_tuned_earlier_in_the_same_run(run_cli, write_spec, tmp_path, jobs):
    """With --jobs every study was created (its warm start chosen) before any ran, so none was
    warm-started from the run's own shapes; the workers took the studies one after another all
    the same (README said side by side)."""
    out = tmp_path / "out"
    assert run_cli("tune", write_spec(EW2), "--out", str(out), "--quiet", "--jobs", jobs)[0] == 0
    assert _warm_configs(out, 4096) == []  # nothing was tuned before it
    study = optuna.load_study(study_name="elementwise/ascend910b2/fp16/n=4096/vector", storage=make_storage(None, out))
    best = sorted((t.values[0], t.number, t.user_attrs["config"]) for t in study.trials if t.values)
    later = optuna.load_study(study_name="elementwise/ascend910b2/fp16/n=8192/vector", storage=make_storage(None, out))
    baseline = [t.user_attrs["config"] for t in later.trials if t.user_attrs.get(runner.BASELINE_ATTR)]
    top = list(dict.fromkeys(c for _, _, c in best))[:3]
    warm = [c for c in top if c not in baseline]  # one the baseline (trial 0) already is is not queued twice
    assert warm and _warm_configs(out, 8192) == warm
    reproduce = (out / "report.md").read_text().split("## Reproduce")[1]
    assert ("--jobs 2" in reproduce) == (jobs == "2")  # the run's trial order (it was dropped)


def test_no_warm_start_on_request(run_cli, write_spec, tmp_path):
    out = tmp_path / "out"
    assert run_cli("tune", write_spec(EW2), "--out", str(out), "--quiet", "--no-warm-start")[0] == 0
    assert _warm_configs(out, 8192) == []


def test_foreign_study_names_in_the_storage_are_passed_over(run_cli, write_spec, tmp_path):
    """A study named like autotile's but with n=¹ (str.isdigit() takes it, int() does not) or n=0
    (log2 of it) in the storage crashed every warm start with a traceback."""
    out = tmp_path / "out"
    out.mkdir()
    storage = make_storage(None, out)
    for shape in ("n=\u00b9", "n=0", "n=" + "9" * 5000):
        optuna.create_study(study_name=f"elementwise/ascend910b2/fp16/{shape}/vector", storage=storage)
    assert run_cli("tune", write_spec(EW2), "--out", str(out), "--quiet", "--trials", "4")[0] == 0
    assert parse_study_name("elementwise/ascend910b2/fp16/n=\u00b9/vector") is None
    assert parse_study_name("elementwise/ascend910b2/fp16/n=0/vector") is None
    assert parse_study_name("elementwise/ascend910b2/fp16/n=2147483647/vector")["shape"] == {"n": 2**31 - 1}
