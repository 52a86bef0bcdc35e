"""Tables of replay specs: self-contained (no measurements file needed after tuning)."""

from __future__ import annotations

import itertools
import json

import pytest

from autotile.cli import run as cli
from autotile.errors import InputError
from autotile.report.data import recorded_spec
from autotile.tables.schema import load_table

EW_SPEC = """\
op: elementwise
dtypes: fp16
units: vector
shapes: [{n: 4096}]
params:
  tile_len: {type: int, low: 16, high: 256, pow2: true}
  buffer_num: {type: int, low: 1, high: 2}
  cores: {type: int, low: 1, high: 8, pow2: true}
objective: time_us
backend: replay
measurements: ew_meas.csv
budget: {trials: 8}
"""


def _ew_folder(tmp_path):
    """A replay spec of elementwise with a relative ``measurements: ew_meas.csv`` beside it."""
    rp = tmp_path / "rp"
    rp.mkdir()
    rows = ["tile_len,buffer_num,cores,time_us"]
    for t, b, c in itertools.product((16, 32, 64, 128, 256), (1, 2), (1, 2, 4, 8)):
        rows.append(f"{t},{b},{c},{4096 / t / c + 3 * (b == 1) + c:.3f}")
    (rp / "ew_meas.csv").write_text("\n".join(rows) + "\n")
    (rp / "ew.yaml").write_text(EW_SPEC)
    return rp


def test_replay_table_needs_no_measurements_file(tmp_path, monkeypatch, capsys):
    """Tuned from the spec's folder with a relative measurements path, the table's embedded spec
    resolved ``ew_meas.csv`` against the table's folder and every lookup / export failed (exit 2,
    file not found), from any cwd; moving the CSV away must not matter either."""
    rp = _ew_folder(tmp_path)
    monkeypatch.chdir(rp)
    assert cli(["tune", "ew.yaml", "--quiet", "--out", "../r"]) == 0
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    table = tmp_path / "r"
    for gone in (False, True):
        if gone:
            (rp / "ew_meas.csv").unlink()
        capsys.readouterr()
        assert cli(["lookup", str(table), "--shape", "n=4096", "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["match"] == "exact"
        assert cli(["export", str(table), "--format", "c", "-o", "t.h"]) == 0
        assert cli(["export", str(table), "--format", "ascendc", "-o", "a.h"]) == 0
        assert capsys.readouterr().err == ""
        summary = json.loads((table / "summary.json").read_text())
        spec, why = recorded_spec(table, summary)
        assert spec is not None, why  # the report shows the run's spec


def test_replay_table_hash_still_covers_the_measurements_path(tmp_path, monkeypatch):
    """Not opening the measurements must not make the path free to edit: the spec hash covers it."""
    rp = _ew_folder(tmp_path)
    monkeypatch.chdir(rp)
    assert cli(["tune", "ew.yaml", "--quiet", "--out", "../r"]) == 0
    path = tmp_path / "r" / "table.json"
    doc = json.loads(path.read_text())
    assert load_table(doc).spec.content_hash() == doc["spec_hash"]
    doc["spec"]["content"]["measurements"] = "other.csv"
    with pytest.raises(InputError, match="spec.content: the spec does not match spec.hash"):
        load_table(doc)
