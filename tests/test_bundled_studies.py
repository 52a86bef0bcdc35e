"""The study specs shipped in the package, reached by name from any folder (autotile.space.studies).

Before: after a pip install, ``autotile tune studies/matmul.yaml`` and ``autotile space matmul``
from any folder but the repository were ``file not found`` (exit 2), though the specs ship in
site-packages/autotile/studies/.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotile.space import load_spec
from autotile.space.studies import bundled_studies
from tests.conftest import ROOT

BUNDLED = ROOT / "autotile" / "studies"


@pytest.fixture
def elsewhere(tmp_path, monkeypatch):
    """An unrelated working folder (no studies/ in it)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_every_shipped_spec_is_listed():
    assert bundled_studies() == sorted(p.stem for p in BUNDLED.glob("*.yaml"))
    assert "matmul" in bundled_studies()


@pytest.mark.parametrize("ref", ["matmul", "matmul.yaml"])
def test_a_bare_name_loads_the_bundled_study(elsewhere, ref):
    assert Path(load_spec(ref).file).resolve() == (BUNDLED / "matmul.yaml").resolve()


def test_a_file_of_that_name_comes_first(elsewhere):
    (elsewhere / "matmul.yaml").write_text((BUNDLED / "elementwise.yaml").read_text())
    assert load_spec("matmul.yaml").op.name == "elementwise"
    assert load_spec("./matmul.yaml").op.name == "elementwise"


@pytest.mark.parametrize("args", [
    ("space", "elementwise", "--json"),
    ("simulate", "elementwise", "--shape", "n=256", "--json"),
    ("bench-search", "elementwise", "--samplers", "random", "--budgets", "2", "--seeds", "1", "--json"),
])
def test_commands_taking_a_spec_reach_the_bundled_ones(elsewhere, run_cli, args):
    code, out, err = run_cli(*args)
    assert code == 0, err
    assert json.loads(out)


def test_tune_reaches_the_bundled_ones(elsewhere, run_cli):
    # an --out that is a file is refused after the spec loads and before any work: the spec was found
    (elsewhere / "afile").write_text("")
    code, _, err = run_cli("tune", "matmul", "--out", "afile")
    assert code == 1 and "expected the output folder, found a file" in err


@pytest.mark.parametrize("ref, says", [
    ("studies/matmul.yaml", "studies/matmul.yaml: file not found; for the bundled study, give its name alone: matmul"),
    ("matmull", "matmull: file not found; bundled studies, by name: elementwise, global_sum, matmul, matmul_small, "
                "resize, roi_align, sigmoid, weighted_sum, did you mean matmul?"),
])
def test_a_missing_spec_names_the_bundled_ones(elsewhere, run_cli, ref, says):
    for command in ("space", "tune"):
        code, _, err = run_cli(command, ref)
        assert code == 2 and err == f"autotile: error: {says}\n"


def test_a_path_with_a_folder_never_means_a_bundled_study(elsewhere):
    (elsewhere / "mine").mkdir()
    with pytest.raises(Exception, match="mine/matmul.yaml: file not found"):
        load_spec("mine/matmul.yaml")
