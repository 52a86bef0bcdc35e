"""A queue of specs sharing one --storage: two specs that would tune one study with different
specs are refused before anything runs (with --restart too), and a study another spec tuned is
never summarized as this spec's result."""

from __future__ import annotations

import warnings

import optuna
import pytest
from tinyspecs import EW

from autotile.space import load_spec
from autotile.tune import driver
from autotile.tune.storage import make_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)

NAME = "elementwise/ascend910b2/fp16/n=4096/vector"
OTHER = EW.replace("buffer_num: {type: int, low: 1, high: 4, step: 1}", "buffer_num: {type: int, low: 1, high: 3, step: 1}")
MORE = EW.replace("budget: {trials: 10}", "budget: {trials: 12}")  # the same studies, a longer search
assert OTHER != EW and MORE != EW


def _specs(tmp_path, second: str) -> tuple:
    (tmp_path / "ws.yaml").write_text(EW)
    (tmp_path / "wsb.yaml").write_text(second)
    return str(tmp_path / "ws.yaml"), str(tmp_path / "wsb.yaml")


@pytest.mark.parametrize("restart", [False, True])
def test_two_specs_of_a_queue_with_one_study_in_one_storage_are_refused(tmp_path, run_cli, restart):
    ws, wsb = _specs(tmp_path, OTHER)
    db = tmp_path / "q.db"
    code, out, err = run_cli("tune", ws, wsb, "--storage", f"sqlite:///{db}", "--out", str(tmp_path / "q"),
                             "--no-verify", "--quiet", *(["--restart"] if restart else []))
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1, err
    assert f"{ws} and {wsb} would both tune study {NAME}" in err
    assert "params.buffer_num differs" in err and "--storage" in err
    assert ("--restart" in err) == restart
    assert not (tmp_path / "q").exists() and not db.exists()


def test_two_specs_with_the_same_studies_share_a_storage(tmp_path, run_cli):
    ws, wsb = _specs(tmp_path, MORE)
    code, _, err = run_cli("tune", ws, wsb, "--storage", f"sqlite:///{tmp_path / 'q.db'}",
                           "--out", str(tmp_path / "q"), "--no-verify", "--quiet")
    assert code == 0, err
    assert (tmp_path / "q" / "wsb" / "summary.json").is_file()


def test_a_study_another_spec_tuned_is_not_summarized_as_this_specs_result(tmp_path, run_cli):
    ws, wsb = _specs(tmp_path, OTHER)
    url = f"sqlite:///{tmp_path / 'q.db'}"
    assert run_cli("tune", ws, "--storage", url, "--out", str(tmp_path / "a"), "--no-verify", "--quiet")[0] == 0
    spec = load_spec(wsb)  # as a peer tuning ws.yaml into the storage after this run checked it
    opts = driver.Options(storage=url, out=tmp_path / "b", verify=False)
    job = driver._Job(spec, opts, make_storage(url, opts.out), driver.plans(spec, opts), {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        never = driver._collect(job)
    assert [p.name for p in never] == [NAME] and not job.outcomes


def test_two_specs_of_one_file_name_are_refused_naming_both(tmp_path, run_cli):
    """It said "two specs share a file name" without saying which of a long queue they were."""
    for d in ("d1", "d2"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "ws.yaml").write_text(EW)
    a, b = str(tmp_path / "d1" / "ws.yaml"), str(tmp_path / "d2" / "ws.yaml")
    code, out, err = run_cli("tune", a, b, "--trials", "1", "--out", str(tmp_path / "o"))
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert f"{a} and {b} share a file name" in err and not (tmp_path / "o").exists(), err
    # the pair that clashes, not the first two of the queue; a spec given twice says so
    for d in ("d3", "d4"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "other.yaml").write_text(EW)
    c, d = str(tmp_path / "d3" / "other.yaml"), str(tmp_path / "d4" / "other.yaml")
    code, out, err = run_cli("tune", c, a, d, b, "--trials", "1", "--out", str(tmp_path / "o"))
    assert code == 2 and f"{c} and {d} share a file name" in err, err
    code, out, err = run_cli("tune", a, a, "--trials", "1")
    assert code == 2 and err == f"autotile: error: tune: {a} is given twice; expected each spec once\n", err
