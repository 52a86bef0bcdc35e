"""The lookup's default step in a table of several units answers the unit whose default tiling
simulates fastest, and says so (it used to answer the spec's first feasible unit: weighted_sum at
n=4097 got the vector default, 959 cycles, beside a cube default of 593 in a table that chose the
cube at n=4096)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tablekit import default_table

from autotile.models import sim_budget
from autotile.tables.lookup import Lookup
from autotile.tables.model_hook import default_of
from autotile.tables.schema import write_table
from autotile.tune.evaluate import make_evaluator

WS = Path(__file__).resolve().parents[1] / "studies" / "weighted_sum.yaml"


@pytest.fixture(scope="module")
def doc():
    """weighted_sum's default tilings at its grid (64 .. 1048576), every entry on the cube."""
    return default_table(WS, lambda shape, dtype: "cube")


def _defaults(look, shape, dtype="fp16") -> dict:
    """{unit: simulated cycles of its default tiling}, through the tuner's evaluator."""
    out = {}
    for unit in look.table.spec.units:
        space = look.table.spec.space(shape, dtype, unit)
        out[unit] = make_evaluator(space).score(default_of(space)).values["cycles"]
    return out


@pytest.mark.parametrize("n", [4097, 100, 70000])
def test_the_default_step_answers_the_fastest_units_default(doc, n):
    look = Lookup(doc)
    got = look.find({"n": n})
    cycles = _defaults(look, {"n": n})
    fastest = min(cycles, key=cycles.get)
    assert (got.match, got.unit) == ("default", fastest), (n, cycles)
    assert got.cycles == pytest.approx(cycles[fastest]) and got.cycles_from == "simulator"
    assert got.how.startswith("the fastest default of vector/cube/scalar on the simulator (cycles: ")
    assert f"{fastest} {cycles[fastest]:,.0f}" in got.how


def test_the_cli_says_which_unit_and_why(doc, tmp_path, run_cli):
    path = tmp_path / "table.json"
    write_table(path, doc)
    code, out, err = run_cli("lookup", str(path), "--shape", "n=4097")
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "n=4097 fp16: default, unit cube"
    assert lines[2] == "  593 cycles on the simulator"
    each = ", ".join(f"{u} {c:,.0f}" for u, c in sorted(_defaults(Lookup(doc), {"n": 4097}).items(), key=lambda x: x[1]))
    assert lines[3] == f"  chosen as the fastest default of vector/cube/scalar on the simulator (cycles: {each})"
    code, out, _ = run_cli("lookup", str(path), "--shape", "n=4097", "--json")
    got = json.loads(out)
    assert (got["match"], got["unit"], got["cycles_from"]) == ("default", "cube", "simulator")
    assert round(got["cycles"]) == 593 and "fastest default" in got["how"]


def test_over_the_budget_the_nearest_entrys_unit_answers(doc, monkeypatch):
    """Defaults too large to simulate: the unit the table chose at the nearest tuned shape."""
    monkeypatch.setattr(sim_budget, "BUDGET_S", 0.0)
    got = Lookup(doc).find({"n": 4097})
    assert (got.match, got.unit, got.cycles, got.cycles_from) == ("default", "cube", None, None)
    assert got.how.startswith("the unit the table chose at the nearest tuned shape, n=4096; the defaults were not "
                              "simulated (simulating them would take ~")


def test_over_the_budget_without_entries_the_specs_order_answers(doc, monkeypatch):
    monkeypatch.setattr(sim_budget, "BUDGET_S", 0.0)
    fp16_only = dict(doc, entries=[e for e in doc["entries"] if e["dtype"] == "fp16"])
    got = Lookup(fp16_only).find({"n": 4097}, "fp32")
    assert (got.match, got.unit) == ("default", "vector")
    assert got.how.startswith("the spec's first unit with a feasible default; the defaults were not simulated")


def test_a_single_unit_table_past_the_budget_simulates_nothing(monkeypatch):
    """One unit: nothing to choose; its default is simulated for its cycles only within the budget."""
    from autotile.tables import default_unit

    monkeypatch.setattr(default_unit, "scored", lambda *a: pytest.fail("simulated"))
    monkeypatch.setattr(sim_budget, "estimate_seconds", lambda *a: 10 * sim_budget.BUDGET_S)
    got = Lookup(default_table()).find({"m": 20000, "n": 24, "k": 40})
    assert (got.match, got.how, got.cycles, got.cycles_from) == ("default", None, None, None)


def test_the_c_header_says_its_caller_chooses_the_unit(doc):
    """The header has no default step: a multi-unit table's says Python's picks by simulation."""
    from autotile.tables import export_c
    from autotile.tables.schema import load_table

    note = "this header has no simulator, so the caller chooses the unit"
    assert note in export_c.render(load_table(doc))
    assert note not in export_c.render(load_table(default_table()))


def test_a_one_unit_tables_default_answer_gives_its_simulated_cycles():
    """A matmul table of the cube alone answered its default with cycles null and no source, where
    a table of several units gives each default's simulated cycles (README: every answer gives its
    cycles when known)."""
    from tablekit import SMALL_SPEC

    look = Lookup(default_table(SMALL_SPEC))
    assert look.table.spec.units == ("cube",)
    shape = {"m": 7, "n": 300, "k": 50}
    got = look.find(shape, "fp16")
    space = look.table.spec.space(shape, "fp16", "cube")
    want = make_evaluator(space).score(got.params).values["cycles"]
    assert got.match == "default" and got.cycles_from == "simulator" and got.cycles == pytest.approx(want)
