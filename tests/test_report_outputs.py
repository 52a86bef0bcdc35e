"""What `autotile report DIR` reads and leaves: the run's recorded spec, traces, storage."""

import json
import re
import shutil
from pathlib import Path

import pytest

from autotile.cli import run as cli

ROOT = Path(__file__).resolve().parents[1]


def _spec_text(inputs: str = "{data: on_chip}") -> str:
    text = (ROOT / "studies" / "weighted_sum.yaml").read_text()
    text = re.sub(r"(?m)^shapes:.*$", "shapes: [{grid: {n: [512, 4096]}}]", text, count=1)
    text = re.sub(r"(?m)^dtypes:.*$", "dtypes: [fp16, fp32]", text, count=1)
    text = re.sub(r"(?m)^units:.*$", "units: [vector, cube]", text, count=1)
    return re.sub(r"(?m)^inputs:.*$", f"inputs: {inputs}", text, count=1)


@pytest.fixture(scope="module")
def ws_run(tmp_path_factory):
    """A weighted_sum run with its inputs on chip (not the kernel's default framing)."""
    tmp = tmp_path_factory.mktemp("ws")
    spec = tmp / "ws.yaml"
    spec.write_text(_spec_text())
    out = tmp / "out"
    assert cli(["tune", str(spec), "--trials", "4", "--quiet", "--out", str(out)]) == 0
    return out


@pytest.fixture
def run_copy(ws_run, tmp_path):
    """A private copy of the run (with its spec file beside it) that a test may edit."""
    shutil.copy(ws_run.parent / "ws.yaml", tmp_path / "ws.yaml")
    out = tmp_path / "out"
    shutil.copytree(ws_run, out)
    summary = json.loads((out / "summary.json").read_text())
    summary["spec"] = str(tmp_path / "ws.yaml")  # as if the run had been made here
    (out / "summary.json").write_text(json.dumps(summary))
    return out


def _trace_cycles(out: Path) -> dict:
    return {p.stem: json.loads(p.read_text())["otherData"]["cycles"] for p in (out / "traces").glob("*.json")}


def _table_cycles(out: Path) -> dict:
    from autotile.report.data import slug

    return {slug(e): e["cycles"] for e in json.loads((out / "table.json").read_text())["entries"]}


@pytest.mark.parametrize("change", ["edit", "move"])
def test_report_uses_the_spec_the_run_recorded(run_copy, change):
    """An edited or moved spec file changes nothing: the report, its crossover framing and the
    re-simulated traces follow the spec table.json embeds (whose hash summary.json records)."""
    spec = run_copy.parent / "ws.yaml"
    if change == "edit":
        spec.write_text(_spec_text("{data: gm}"))
    else:
        spec.rename(spec.with_suffix(".moved"))
    assert cli(["report", str(run_copy)]) == 0
    md = (run_copy / "report.md").read_text()
    assert "inputs already on chip" in md and "streamed from GM" not in md
    table = _table_cycles(run_copy)
    assert _trace_cycles(run_copy).keys() == table.keys()
    for name, cycles in _trace_cycles(run_copy).items():
        assert cycles == pytest.approx(table[name], rel=1e-9), name


def test_without_the_recorded_spec_nothing_is_simulated_under_a_guessed_framing(run_copy):
    (run_copy / "table.json").unlink()
    assert cli(["report", str(run_copy)]) == 0
    md = (run_copy / "report.md").read_text()
    assert "streamed from GM" not in md and "inputs already on chip" not in md
    assert "data framing of the run is unknown" in md and "not simulated: table.json" in md
