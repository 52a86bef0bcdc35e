"""A lookup applies the spec's ``limits`` where it knows the answer's metrics: a default tiling
over a cap (which tune prunes as infeasible) is no answer. A weighted_sum table tuned with
``limits: {cycles: 1}`` has no entry, and its lookup at the tuned shape answered the default
tiling, 868 cycles on the simulator, with no warning."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from autotile.space import load_spec
from autotile.tables.lookup import Lookup, NoFeasibleTiling
from autotile.tables.schema import build_table

STUDY = Path(__file__).resolve().parents[1] / "studies" / "weighted_sum.yaml"


def _table(tmp_path, limits: str, dtype: str = "fp16", units: str = "[vector]") -> str:
    """table.json of weighted_sum ``dtype`` at n=4096 on ``units`` with ``limits``, and no entry
    (what tune writes when no configuration met the limits)."""
    text = STUDY.read_text()
    text = re.sub(r"(?m)^dtypes: .*$", f"dtypes: [{dtype}]", text)
    text = re.sub(r"(?m)^units: .*$", f"units: {units}", text)
    text = re.sub(r"(?m)^shapes: .*$", "shapes: [{n: 4096}]", text) + f"limits: {limits}\n"
    spec = tmp_path / "ws.yaml"
    spec.write_text(text)
    table = tmp_path / "table.json"
    table.write_text(json.dumps(build_table(load_spec(str(spec)), {"results": []}, created="2026-01-01T00:00:00+00:00")))
    return str(table)


def test_a_default_over_a_cycles_limit_is_no_answer(run_cli, tmp_path):
    table = _table(tmp_path, "{cycles: 1}")
    for json_flag in ((), ("--json",)):
        code, out, err = run_cli("lookup", table, "--shape", "n=4096", *json_flag)
        assert code == 2 and out == "" and err.count("\n") == 1, (code, out, err)
        assert re.fullmatch(r"autotile: error: no feasible tiling for weighted_sum n=4096 fp16: no table entry fits, "
                            r"and default \(vector\): over the spec's limits: cycles \d+ exceeds the limit 1\n", err), err


def test_a_default_within_the_limits_answers_with_its_cycles(run_cli, tmp_path):
    code, out, _ = run_cli("lookup", _table(tmp_path, "{cycles: 100000, time_us: 100}"), "--shape", "n=4096", "--json")
    got = json.loads(out)
    assert code == 0 and got["match"] == "default" and got["cycles"] > 1 and got["cycles_from"] == "simulator"


def test_a_unit_over_a_time_limit_is_passed_over_and_named(tmp_path):
    """scalar's default takes ~0.60 us at n=4096, the vector's ~0.48, the cube's ~0.29."""
    look = Lookup(_table(tmp_path, "{time_us: 0.5}", units="[scalar, vector]"))
    got = look.find({"n": 4096})
    assert got.unit == "vector" and re.search(r"over the spec's limits: scalar time_us 0\.6\d* exceeds the limit 0\.5$",
                                              got.how), got.how
    with pytest.raises(NoFeasibleTiling, match=r"default \(scalar\): over the spec's limits: time_us .* exceeds the "
                                               r"limit 0\.3; default \(vector\): over the spec's limits: time_us"):
        Lookup(_table(tmp_path, "{time_us: 0.3}", units="[scalar, vector]")).find({"n": 4096})


def test_an_error_limit_is_checked_as_tune_checks_it(tmp_path):
    """fp32 on the vector and scalar units sums in another order than the reference (errors ~4e-6
    and ~1e-5 at n=4096); the cube's default is exact here."""
    with pytest.raises(NoFeasibleTiling, match=r"default \(scalar\): over the spec's limits: max_abs_error .* "
                                               r"exceeds the limit 1e-09"):
        Lookup(_table(tmp_path, "{max_abs_error: 1.0e-9}", "fp32", "[scalar, vector]")).find({"n": 4096})


def test_a_model_answer_over_the_limits_is_passed_over(tmp_path):
    look = Lookup(_table(tmp_path, "{cycles: 1}"))
    default = look.table.spec.space({"n": 4096}, "fp16", "vector").default_tiling()
    look.model = lambda op, shape, dtype: {"unit": "vector", "params": dict(default), "how": "test"}
    with pytest.raises(NoFeasibleTiling, match=r"model \(vector\): cycles \d+ exceeds the limit 1; default \(vector\)"):
        look.find({"n": 4096})


def test_an_error_limit_too_dear_to_execute_is_not_checked_and_said_so(tmp_path, monkeypatch):
    """A resize table with limits {max_abs_error: 0.01} executed the default at the whole query
    shape for its errors (n=1,c=64,1024x1024: 22 s and 3.1 GB, 1.8 s without the limit): past
    EXECUTE_ELEMENTS the answer is given, its error limits named as not checked, and the cycles and
    time caps still checked from count mode. Here the bound is lowered below weighted_sum n=4096."""
    from autotile.tables import default_unit
    from autotile.tune.evaluate import Evaluator

    monkeypatch.setattr(default_unit, "EXECUTE_ELEMENTS", 4095)
    monkeypatch.setattr(Evaluator, "errors", lambda *a: pytest.fail("executed"))
    got = Lookup(_table(tmp_path, "{max_abs_error: 1.0e-9}", "fp32", "[scalar, vector]")).find({"n": 4096})
    assert got.match == "default" and got.cycles > 1
    assert re.search(r"the spec's error limits \(max_abs_error\) not checked: executing it would take inputs and "
                     r"output of 4,096 elements, more than the 4,095 a lookup executes", got.how), got.how
    with pytest.raises(NoFeasibleTiling, match=r"default \(vector\): over the spec's limits: cycles \d+ exceeds"):
        Lookup(_table(tmp_path, "{max_abs_error: 1.0e-9, cycles: 1}", "fp32")).find({"n": 4096})
    look = Lookup(_table(tmp_path, "{max_abs_error: 1.0e-9}", "fp32"))  # a model answer says so too
    default = look.table.spec.space({"n": 4096}, "fp32", "vector").default_tiling()
    look.model = lambda op, shape, dtype: {"unit": "vector", "params": dict(default), "how": "test"}
    got = look.find({"n": 4096})
    assert got.match == "model" and got.how.startswith("test; the spec's error limits (max_abs_error) not checked")


def test_an_error_that_could_not_be_measured_is_not_over_the_limit(tmp_path, monkeypatch):
    """resize fp32 at n=1,c=64,2048x2048 -> 512x512 (285M elements, past what execute mode runs)
    was refused: "over the spec's limits: errors not measured", where without the limit it
    answered 759,653 cycles. Here execute mode's bound is lowered below a tiny resize."""
    from autotile.tune import verify

    text = (Path(__file__).resolve().parents[1] / "studies" / "resize.yaml").read_text()
    text = re.sub(r"(?m)^dtypes: .*$", "dtypes: [fp32]", text)
    text = re.sub(r"(?m)^shapes:\n(?:  - .*\n)+", "shapes: [{n: 1, c: 4, h_in: 8, w_in: 8, h_out: 16, w_out: 16}]\n",
                  text) + "limits: {max_abs_error: 0.01}\n"
    (tmp_path / "rz.yaml").write_text(text)
    table = tmp_path / "table.json"
    table.write_text(json.dumps(build_table(load_spec(str(tmp_path / "rz.yaml")), {"results": []})))
    monkeypatch.setattr(verify, "MAX_IO_ELEMENTS", 1000)
    got = Lookup(str(table)).find({"n": 1, "c": 4, "h_in": 8, "w_in": 8, "h_out": 16, "w_out": 16})
    assert got.match == "default" and got.cycles > 1 and got.how == (
        "the default of vector, the only unit for fp32; the spec's error limits (max_abs_error) not checked: errors not measured: inputs and output hold "
        "1,280 elements, more than the 1,000 execute mode runs"), got.how
