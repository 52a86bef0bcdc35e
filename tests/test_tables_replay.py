"""Tables of replay specs: self-contained (no measurements file needed after tuning), and an
``op: replay`` table answers lookups and exports without a kernel."""

from __future__ import annotations

import itertools
import json
import subprocess
from pathlib import Path

import pytest
from tablekit import C_MAIN, ascendc_fill, compile_ok

from autotile.cli import run as cli
from autotile.errors import InputError
from autotile.report.data import recorded_spec
from autotile.tables.lookup import NoFeasibleTiling, lookup
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

RP_SPEC = """\
op: replay
shapes: [{x: 1024}, {x: 4096}]
params:
  block: {type: int, low: 16, high: 64, pow2: true}
  variant: {type: categorical, choices: [plain, vec]}
objective: time_us
backend: replay
measurements: meas.csv
budget: {trials: 6}
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


def _rp_folder(tmp_path):
    """An ``op: replay`` spec over two shapes with its CSV."""
    rp = tmp_path / "rp"
    rp.mkdir()
    rows = ["x,block,variant,time_us"]
    for x, b, v in itertools.product((1024, 4096), (16, 32, 64), ("plain", "vec")):
        rows.append(f"{x},{b},{v},{x / b + (v == 'plain') * 5:.3f}")
    (rp / "meas.csv").write_text("\n".join(rows) + "\n")
    (rp / "rp.yaml").write_text(RP_SPEC)
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
        # nothing about the missing file: only that replayed entries are not verified
        assert capsys.readouterr().err.splitlines() == [
            "autotile: warning: 1 of 1 entries not verified (replayed measurements: no kernel to execute); "
            "they carry verified: false (the C entry's verified = 0)"] * 2
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


def test_op_replay_table_looks_up_and_exports(tmp_path, monkeypatch, capsys):
    """An ``op: replay`` table refused every lookup and export ("op 'replay' has no kernel to
    simulate ... tune it with backend: replay"), even of a tuned shape. It needs no kernel to answer
    its tuned shapes; another shape is a one-line error saying what such a table answers."""
    rp = _rp_folder(tmp_path)
    out = tmp_path / "r"
    assert cli(["tune", str(rp / "rp.yaml"), "--quiet", "--out", str(out)]) == 0
    entries = load_table(out).entries
    assert len(entries) == 2
    for i, e in enumerate(entries):
        m = lookup(out, e.shape)
        assert (m.match, m.entry, m.params) == ("exact", i, e.params)
    with pytest.raises(NoFeasibleTiling) as exc:
        lookup(out, {"x": 2000})
    assert "answers only its tuned shapes (fp32: x=1024; x=4096)" in str(exc.value)
    capsys.readouterr()
    assert cli(["lookup", str(out), "--shape", "x=2000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no kernel for a default tiling" in err and "tune it with" not in err

    monkeypatch.chdir(tmp_path)
    assert cli(["export", str(out), "--format", "c", "-o", "table.h"]) == 0
    assert cli(["export", str(out), "--format", "ascendc", "-o", "tiling.h"]) == 0
    # no kernel, so no default tiling: the headers said "use the default tiling then"
    assert "default tiling then" not in Path("tiling.h").read_text()
    assert "a replay table has no default tiling, only its tuned shapes" in Path("tiling.h").read_text()
    assert "a replay table has no kernel, so no default tiling either" in Path("table.h").read_text()
    err = capsys.readouterr().err  # replayed entries are not verified (no kernel): that alone is said
    assert err.count("warning") == 2 and err.count("2 of 2 entries not verified (replayed measurements") == 2
    # the C header answers the tuned shapes and nothing else, like the Python lookup
    main = C_MAIN.replace("long long m, n, k;", "long long m;").replace(
        '"%lld %lld %lld %d", &m, &n, &k, &dtype) == 4', '"%lld %d", &m, &dtype) == 2').replace(
        "int64_t x[3];", "int64_t x[1];").replace("x[0] = m; x[1] = n; x[2] = k;", "x[0] = m;").replace(
        "matmul", "replay").replace("MATMUL", "REPLAY")
    (tmp_path / "main.c").write_text(main)
    compile_ok(["gcc", "-std=c99", "-Wall", "-Werror", "main.c", "-o", "look", "-lm"], tmp_path)
    got = subprocess.run([str(tmp_path / "look")], input="1024 0\n4096 0\n2000 0\n", capture_output=True,
                         text=True, check=True).stdout.split("\n")
    assert got[:3] == ["0 1", "1 1", "-1 0"]
    fill = ascendc_fill(tmp_path, "Replay", 1, ["x", "block"])
    got = subprocess.run([str(fill)], input="4096 0\n2000 0\n", capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert got[0].split()[2:] == ["4096", str(entries[1].params["block"])] and got[1] == "none"
