"""Warm start: a new shape's study starts from the best configurations of the nearest tuned shape,
including one tuned earlier in the same run."""

from __future__ import annotations

import optuna
from tinyspecs import EW2

from autotile.tune import runner
from autotile.tune.storage import make_storage


def _warm_configs(out, n: int) -> list[str]:
    study = optuna.load_study(study_name=f"elementwise/ascend910b2/fp16/n={n}/vector", storage=make_storage(None, out))
    return [t.user_attrs["config"] for t in study.trials if t.user_attrs.get(runner.WARM_ATTR)]


def test_a_shape_is_warm_started_from_one_tuned_earlier_in_the_same_run(run_cli, write_spec, tmp_path):
    out = tmp_path / "out"
    assert run_cli("tune", write_spec(EW2), "--out", str(out), "--quiet")[0] == 0
    assert _warm_configs(out, 4096) == []  # nothing was tuned before it
    study = optuna.load_study(study_name="elementwise/ascend910b2/fp16/n=4096/vector", storage=make_storage(None, out))
    best = sorted((t.values[0], t.number, t.user_attrs["config"]) for t in study.trials if t.values)
    assert _warm_configs(out, 8192) == list(dict.fromkeys(c for _, _, c in best))[:3]


def test_no_warm_start_on_request(run_cli, write_spec, tmp_path):
    out = tmp_path / "out"
    assert run_cli("tune", write_spec(EW2), "--out", str(out), "--quiet", "--no-warm-start")[0] == 0
    assert _warm_configs(out, 8192) == []
