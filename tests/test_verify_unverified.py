"""A study the gate cannot check (a shape too large to execute, or out of memory in execute mode)
gets its best configuration as an entry marked not verified, with the reason in the summary, the
printout, the report and the table, and never costs the run its other studies' outputs."""

from __future__ import annotations

import json
from pathlib import Path

from autotile.kernels import matmul as mm

DATA = Path(__file__).parent / "data"
ROI = """op: roi_align
hardware: ascend910b2
dtypes: [fp16]
units: [vector]
shapes: [{n: 8, c: 256, h: 256, w: 256, rois: 512, pooled_h: 7, pooled_w: 7}]
inputs: {spatial_scale: 0.25, sampling_ratio: 2, aligned: true, roi_seed: 0, roi_min: 0.05, roi_max: 0.5}
params:
  tile_rois: {type: int, low: 1, high: 16, pow2: true}
  tile_bins: {type: int, low: 1, high: 49}
  tile_c: {type: int, low: 16, high: 64, pow2: true}
  buffer_num: {type: int, low: 1, high: 2}
  cores: {type: int, low: 1, high: 48, where: "divides(cores, hw.vector_cores)"}
objective: cycles
seed: 0
"""
TOO_LARGE = "too large to execute in verification"


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("autotile: warning: ")]


def test_a_shape_too_large_to_execute_gets_an_entry_that_says_so(write_spec, run_cli, tmp_path):
    """It said "FAILED verification: all 2 of its candidates disagreed with the reference" and the
    table had no entry, where the README promises the entry says it was not executed."""
    out = tmp_path / "r"
    code, text, err = run_cli("tune", write_spec(ROI), "--trials", "2", "--jobs", "1", "--out", str(out), "--quiet")
    assert code == 0, err
    assert "disagreed" not in text + err and f"NOT verified ({TOO_LARGE}: inputs and output hold 140,642,816" in text
    assert [w for w in _warnings(err) if TOO_LARGE in w] == _warnings(err) and len(_warnings(err)) == 1
    (r,) = json.loads((out / "summary.json").read_text())["results"]
    assert r["params"] is not None and r["verified"] is False and r["verification"]["unverified"].startswith(TOO_LARGE)
    (entry,) = json.loads((out / "table.json").read_text())["entries"]
    assert entry["verified"] is False and entry["unverified"].startswith(TOO_LARGE)
    report = (out / "report.md").read_text()
    assert "disagreed" not in report and f"NOT verified: {r['shape']['n']}" not in report
    assert f"not verified ({TOO_LARGE})" in report and "1 exported configuration NOT verified" in report
    code, _, err = run_cli("export", str(out), "--format", "c", "-o", str(tmp_path / "t.h"))
    assert code == 0 and _warnings(err) == [
        f"autotile: warning: 1 of 1 entries not verified (1 {TOO_LARGE}); they carry verified: false "
        "(the C entry's verified = 0)"]
    assert f"NOT verified ({TOO_LARGE})" in (tmp_path / "t.h").read_text()
    # lookup says why too (it said only "NOT verified"); its JSON carries the whole reason
    query = ",".join(f"{k}={v}" for k, v in r["shape"].items())
    code, text, err = run_cli("lookup", str(out), "--shape", query)
    assert code == 0 and f"exact, unit vector, NOT verified ({TOO_LARGE})" in text, text + err
    code, text, err = run_cli("lookup", str(out), "--shape", query, "--json")
    assert code == 0 and json.loads(text)["unverified"] == entry["unverified"], text + err


def test_running_out_of_memory_in_one_study_keeps_every_studys_outputs(run_cli, tmp_path, monkeypatch):
    """A MemoryError verifying one study ended the run with exit 1 and only studies.journal written,
    the other study's result lost with it; a rerun failed the same way."""
    execute = mm.execute

    def short_of_memory(inputs, params, dtype, hw, **kw):
        if mm.shape_of(inputs)["n"] == 320:
            raise MemoryError("Unable to allocate 2.66 GiB for an array with shape (43648, 16384) and data type float32")
        return execute(inputs, params, dtype, hw, **kw)

    monkeypatch.setattr(mm, "execute", short_of_memory)
    out = tmp_path / "r"
    code, text, err = run_cli("tune", str(DATA / "mm_tiny.yaml"), "--trials", "3", "--jobs", "1", "--out", str(out),
                              "--quiet")
    assert code == 0, err
    (warned,) = _warnings(err)
    assert "fp16/m=192,n=320,k=96/cube: best configuration NOT verified" in warned and "out of memory in verification: Unable to allocate 2.66 GiB" in warned
    results = json.loads((out / "summary.json").read_text())["results"]
    assert [(r["shape"]["n"], r["verified"]) for r in results] == [(256, True), (320, False)]
    entries = json.loads((out / "table.json").read_text())["entries"]
    assert len(entries) == 2 and entries[1]["unverified"].startswith("out of memory in verification")
    assert (out / "report.html").exists()
