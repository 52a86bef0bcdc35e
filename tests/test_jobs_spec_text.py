"""``tune --jobs``: the workers tune the spec the main process loaded, as one process does, even
when the file is edited or deleted during the run; the files it reads (its hardware profile) are
still found relative to the spec's folder, and one that changed meanwhile is refused."""

from __future__ import annotations

import warnings
from pathlib import Path

import optuna
import pytest
from tinyspecs import EW2

from autotile.errors import InputError
from autotile.hardware.profile import bundled_path
from autotile.space import load_spec
from autotile.tune import driver, runner
from autotile.tune.storage import make_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)

EDITED = EW2.replace("shapes: [{n: 4096}, {n: 8192}]", "shapes: [{n: 2048}, {n: 4096}, {n: 8192}]")
assert EDITED != EW2


def _run(spec, out: Path) -> dict:
    opts = driver.Options(trials=6, jobs=2, out=out, quiet=True, verify=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return driver.tune_many([spec], [opts], 2, True)[0]


def _studies(out: Path) -> set[str]:
    return {s.study_name for s in optuna.get_all_study_summaries(make_storage(None, out))}


@pytest.mark.parametrize("change", ["edited", "deleted"])
def test_workers_tune_the_studies_the_main_process_scheduled(tmp_path, change):
    path = tmp_path / "ew.yaml"
    path.write_text(EW2)
    spec = load_spec(str(path))
    want = [p.name for p in driver.plans(spec, driver.Options())]
    if change == "edited":  # a shape added at the front: the workers read index 0 as n=2048
        path.write_text(EDITED)
    else:
        path.unlink()
    summary = _run(spec, tmp_path / "out")
    assert [r["study"] for r in summary["results"]] == want
    assert not summary["not_run"] and not summary["interrupted"]
    assert all(r["trials"] >= 6 for r in summary["results"])
    assert _studies(tmp_path / "out") == set(want)


def _with_profile(tmp_path: Path) -> Path:
    """A spec in ``s/`` whose profile is ``../p/hw.yaml`` (relative to the spec's folder)."""
    (tmp_path / "p").mkdir()
    (tmp_path / "p" / "hw.yaml").write_text(Path(bundled_path("ascend910b2")).read_text())
    (tmp_path / "s").mkdir()
    spec = tmp_path / "s" / "ew.yaml"
    spec.write_text(EW2.replace("hardware: ascend910b2", "hardware: ../p/hw.yaml"))
    return spec


def test_a_profile_relative_to_the_spec_is_found_by_the_workers(tmp_path, monkeypatch):
    _with_profile(tmp_path)
    monkeypatch.chdir(tmp_path)
    spec = load_spec("s/ew.yaml")  # its folder is s/, relative to the folder the run started in
    summary = _run(spec, tmp_path / "out")
    assert len(summary["results"]) == 2 and not summary["not_run"]


def test_a_profile_changed_during_the_run_is_refused_by_the_worker(tmp_path):
    spec = load_spec(str(_with_profile(tmp_path)))
    opts = driver.Options(trials=6, jobs=2, out=tmp_path / "out", quiet=True, verify=False)
    plan = driver.plans(spec, opts)[0]
    hw = tmp_path / "p" / "hw.yaml"
    hw.write_text(hw.read_text().replace("vector_cores: {value: 48", "vector_cores: {value: 24"))
    try:
        with pytest.raises(InputError, match=r"ew\.yaml: .*changed during the run \(hardware profile\)"):
            driver._worker(spec.file, spec.source, opts, 0, 0, (plan.name, plan.identity))
    finally:
        runner._Stop.requested = False
    assert not _studies(tmp_path / "out")


def test_replayed_measurements_relative_to_the_spec_are_found_by_the_workers(tmp_path, monkeypatch):
    import json

    from test_replay import kt_doc

    from autotile.cli import run as cli

    (tmp_path / "s" / "data").mkdir(parents=True)
    (tmp_path / "s" / "data" / "stencil.json").write_text(json.dumps(kt_doc()))
    monkeypatch.chdir(tmp_path / "s")
    assert cli(["import-kt", "data/stencil.json", "-o", "stencil.yaml"]) == 0
    assert "measurements: data/stencil.json" in (tmp_path / "s" / "stencil.yaml").read_text()
    monkeypatch.chdir(tmp_path)
    spec = load_spec("s/stencil.yaml")
    (tmp_path / "s" / "stencil.yaml").unlink()
    summary = _run(spec, tmp_path / "out")
    (r,) = summary["results"]
    assert r["unique_configs"] >= 6 and not summary["not_run"]
