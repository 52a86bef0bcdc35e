"""A lossy variant's accuracy reaches the table, ``lookup`` and the headers: a sigmoid study that
trades accuracy (objective [cycles, max_abs_error]) picked ``variant=poly`` at max_abs_error 0.021,
and the table, ``lookup`` and the C header's comment said only "515 cycles ..., verified"."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from autotile.cli import run as cli
from autotile.errors import InputError
from autotile.hardware import load_profile
from autotile.kernels import sigmoid as S
from autotile.space import load_spec
from autotile.tables.export import render
from autotile.tables.schema import build_table, load_table, write_table
from autotile.tune import verify

STUDY = Path(__file__).resolve().parent.parent / "studies" / "sigmoid.yaml"
ERR = 0.02099609375


def _spec(tmp_path: Path, objective: str = "[cycles, max_abs_error]", units: str = "[scalar]", n: int = 1024,
          dtype: str = "fp16"):
    """studies/sigmoid.yaml cut to fp16 n=1024 on the scalar unit (the QA finding's study)."""
    text = STUDY.read_text()
    for key, value in (("dtypes", f"[{dtype}]"), ("units", units), ("shapes", f"[{{n: {n}}}]"),
                       ("objective", objective)):
        text = re.sub(rf"^{key}:.*$", f"{key}: {value}", text, flags=re.M)
    path = tmp_path / "sigmoid.yaml"
    path.write_text(text)
    return load_spec(path)


def _table(tmp_path: Path, err: float | None = ERR, variant: str = "poly", **spec_kw) -> Path:
    """A table of one entry as tune builds it from a summary whose pick recorded ``err``."""
    spec = _spec(tmp_path, **spec_kw)
    space = spec.space({"n": 1024}, "fp16", "scalar")
    params = {**space.default_tiling(), "variant": variant}
    assert space.check(params) is None
    r = {"shape": {"n": 1024}, "dtype": "fp16", "unit": "scalar", "params": params, "cycles": 514.9,
         "time_us": 0.286, "pct_of_peak": 16.6, "verified": True, "study": "sigmoid/fp16", "trial": 7,
         "chosen": True}
    if err is not None:  # the study measured the error; the gate held the pick to it (claimed)
        r["values"] = {"cycles": 514.9, "time_us": 0.286, "max_abs_error": err, "max_rel_error": 61.2}
        r["verification"] = {"passed": True, "max_abs_error": err, "rtol": 0.00146484375,
                             "atol": 6.103515625e-05, "claimed": err}
    doc = build_table(spec, {"results": [r]}, created="2026-01-01T00:00:00+00:00")
    return write_table(tmp_path / "table.json", doc)


def test_the_table_records_the_entrys_error_and_what_the_gate_held_it_to(tmp_path):
    path = _table(tmp_path)
    e = json.loads(path.read_text())["entries"][0]
    # the study's objectives beside time only: max_rel_error was measured but is no objective
    assert e["values"] == {"max_abs_error": ERR} and e["verified_within"] == ERR
    t = load_table(path)
    assert t.entries[0].values == {"max_abs_error": ERR} and t.entries[0].verified_within == ERR
    assert t.entries[0].to_json() == e  # round trip


def test_an_older_table_without_the_fields_still_loads(tmp_path):
    doc = json.loads(_table(tmp_path).read_text())
    for e in doc["entries"]:
        del e["values"], e["verified_within"]
    t = load_table(doc)
    assert t.entries[0].values is None and t.entries[0].verified_within is None
    assert "values" not in t.entries[0].to_json() and "verified_within" not in t.entries[0].to_json()
    out = tmp_path / "old.json"
    out.write_text(json.dumps(doc))
    assert cli(["lookup", str(out), "--shape", "n=1024"]) == 0


@pytest.mark.parametrize("key, value, expected", [
    ("values", {"max_abs_error": "big"}, "entries[0].values.max_abs_error: expected a finite number"),
    ("values", [0.1], "entries[0].values: expected a mapping of objective values or null"),
    ("verified_within", -1.0, "entries[0].verified_within: expected a max abs error (0 or more)"),
    ("trial", -3, "entries[0].trial: expected a trial number (0 or more), got -3"),
])
def test_bad_fields_are_one_line_errors(tmp_path, key, value, expected, capsys):
    doc = json.loads(_table(tmp_path).read_text())
    doc["entries"][0][key] = value
    with pytest.raises(InputError, match=re.escape(expected)):
        load_table(doc)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc, indent=1))
    assert cli(["lookup", str(bad), "--shape", "n=1024"]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and "\n" not in err and "Traceback" not in err


def test_lookup_says_the_error_and_that_the_gate_held_the_entry_to_it(tmp_path, capsys):
    path = _table(tmp_path)
    assert cli(["lookup", str(path), "--shape", "n=1024"]) == 0
    out = capsys.readouterr().out
    assert "max_abs_error 0.021 (the table entry's, recorded by its study)" in out
    assert "verified within its recorded max abs error 0.021, not the fp16 tolerance" in out
    assert cli(["lookup", str(path), "--shape", "n=1024", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["values"] == {"max_abs_error": ERR} and got["verified_within"] == ERR


@pytest.mark.parametrize("fmt", ["c", "ascendc"])
def test_the_headers_entry_comment_gives_the_error(tmp_path, fmt):
    text = render(_table(tmp_path), fmt)
    line = next(x for x in text.splitlines() if "/* n=1024 fp16 scalar:" in x)
    assert "515 cycles, 16.6% of peak, max_abs_error 0.021, verified within its recorded max abs error " \
           "0.021, not the fp16 tolerance */" in line


def test_the_json_export_keeps_the_fields(tmp_path):
    got = json.loads(render(_table(tmp_path), "json"))["entries"][0]
    assert got["values"] == {"max_abs_error": ERR} and got["verified_within"] == ERR


def test_an_exact_pick_reads_naturally(tmp_path, capsys):
    # error 0: the tolerance decided, so no "verified within"; its 0 error is stated plainly
    path = _table(tmp_path, err=0.0, variant="exact")
    e = load_table(path).entries[0]
    assert e.values == {"max_abs_error": 0.0} and e.verified_within is None
    assert cli(["lookup", str(path), "--shape", "n=1024"]) == 0
    out = capsys.readouterr().out
    assert "max_abs_error 0 (the table entry's" in out and "verified within" not in out
    line = next(x for x in render(path, "c").splitlines() if "/* n=1024 fp16 scalar:" in x)
    assert line.endswith("16.6% of peak, max_abs_error 0, verified */")


def test_a_study_that_trades_no_accuracy_stays_quiet(tmp_path, capsys):
    path = _table(tmp_path, err=None, variant="exact", objective="cycles")
    e = json.loads(path.read_text())["entries"][0]
    assert "values" not in e and "verified_within" not in e
    assert cli(["lookup", str(path), "--shape", "n=1024"]) == 0
    out = capsys.readouterr().out
    assert "max_abs_error" not in out and "verified within" not in out
    line = next(x for x in render(path, "c").splitlines() if "/* n=1024 fp16 scalar:" in x)
    assert line.endswith("16.6% of peak, verified */")


@pytest.mark.parametrize("variant, flagged", [("exact", False), ("poly", True)])
def test_only_an_entry_that_needed_its_recorded_error_is_held_to_it(tmp_path, capsys, variant, flagged):
    """fp16 n=1000 on the Vector, as the gate verifies it: the exact variant recorded max abs error
    0.000488, above fp16's atol but within atol + rtol x |ref| on every element, and was labelled
    "verified within its recorded max abs error 0.000488, not the fp16 tolerance" (table, lookup,
    headers). Only poly, off by more than the tolerance, passed on its recorded error."""
    spec = _spec(tmp_path, units="[vector]", n=1000)
    space = spec.space({"n": 1000}, "fp16", "vector")
    params = {**space.default_tiling(), "variant": variant}
    (x,) = S.make_inputs({"n": 1000}, "fp16", 0)
    err = float(np.abs(S.execute((x,), params, "fp16", load_profile(), unit="vector").astype(np.float64)
                       - S.reference((x,), "fp16")).max())
    assert err > S.tolerance("fp16", {"n": 1000}, params, "vector")[1]  # both above atol
    v = verify.verify_one(S, {"n": 1000}, params, "fp16", load_profile(), unit="vector",
                          claimed_abs_error=err, recorded_abs_error=err)
    assert v.passed, v
    r = {"shape": {"n": 1000}, "dtype": "fp16", "unit": "vector", "params": params, "cycles": 310.0,
         "time_us": 0.17, "pct_of_peak": 0.2, "verified": True, "study": "sigmoid/fp16", "trial": 1,
         "chosen": True, "values": {"max_abs_error": err}, "verification": v.to_json()}
    path = write_table(tmp_path / "table.json", build_table(spec, {"results": [r]}))
    e = load_table(path).entries[0]
    assert e.verified_within == (err if flagged else None)
    assert cli(["lookup", str(path), "--shape", "n=1000"]) == 0
    assert ("verified within its recorded max abs error" in capsys.readouterr().out) is flagged
    for fmt in ("c", "ascendc"):
        line = next(x for x in render(path, fmt).splitlines() if "/* n=1000 fp16 vector:" in x)
        assert line.endswith("not the fp16 tolerance */" if flagged else ", verified */"), line
    assert v.beyond_tolerance is flagged  # what the table's label rests on


def test_an_error_the_tail_allowance_passed_does_not_hold_the_entry_to_its_recorded_error(tmp_path, capsys):
    """bf16 n=16 lut_linear on the scalar unit (objective [cycles, max_abs_error]): it recorded max
    abs error 0, and its only element outside atol + rtol x |ref| was on the tail inputs, within the
    TAIL_ERROR the gate allows there; the gate said beyond_tolerance, and the table, lookup and the
    headers that it was "verified within its recorded max abs error 0", which admitted nothing."""
    spec = _spec(tmp_path, units="[scalar]", n=16, dtype="bf16")
    space = spec.space({"n": 16}, "bf16", "scalar")
    params = {**space.default_tiling(), "variant": "lut_linear"}
    hw = load_profile()
    tails = S.tail_inputs({"n": 16}, "bf16", 1)
    diff = np.abs(S.execute(tails, params, "bf16", hw, unit="scalar").astype(np.float64) - S.reference(tails, "bf16"))
    rtol, atol = S.tolerance("bf16", {"n": 16}, params, "scalar", inputs=tails)
    outside = diff > atol + rtol * np.abs(S.reference(tails, "bf16"))
    assert outside.any() and (diff[outside] <= S.TAIL_ERROR).all()  # the case: only the tail allowance needed
    v = verify.verify_one(S, {"n": 16}, params, "bf16", hw, unit="scalar", claimed_abs_error=0.0,
                          recorded_abs_error=0.0)
    assert v.passed and v.runs > 1 and v.beyond_tolerance is False, v
    r = {"shape": {"n": 16}, "dtype": "bf16", "unit": "scalar", "params": params, "cycles": 499.0,
         "time_us": 0.28, "pct_of_peak": 0.1, "verified": True, "study": "sigmoid/bf16", "trial": 1,
         "chosen": True, "values": {"max_abs_error": 0.0}, "verification": v.to_json()}
    path = write_table(tmp_path / "table.json", build_table(spec, {"results": [r]}))
    assert load_table(path).entries[0].verified_within is None
    assert cli(["lookup", str(path), "--shape", "n=16"]) == 0
    assert "verified within" not in capsys.readouterr().out
    # a recorded 0 admits nothing, whatever the gate recorded beside it
    r["verification"] = {**v.to_json(), "beyond_tolerance": True}
    assert load_table(write_table(tmp_path / "t2.json", build_table(spec, {"results": [r]}))).entries[0].verified_within is None
