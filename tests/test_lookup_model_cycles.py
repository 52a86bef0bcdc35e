"""``lookup --models`` reports the cycles of the tiling it answers (it gave only the default's, in
``how``: "the default tiling took 140,718 cycles", and JSON had no cycles at all). The cost model
here is a stand-in ranking weighted_sum's scalar tilings by their size, so the model's pick beats
the default and is simulated in well under a second."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from tablekit import default_table

from autotile.models import sim_budget, store
from autotile.tables.schema import write_table
from autotile.tune.evaluate import make_evaluator

WS = Path(__file__).resolve().parents[1] / "studies" / "weighted_sum.yaml"


class BiggestFirst:
    """Predicts fewer cycles for more elements per step (tile_len x cores): scalar only."""

    units = ("scalar",)

    def outside(self, shape, data="gm"):
        return None

    def predict(self, shape, dtype, unit, configs, data="gm"):
        return np.array([1e6 / (c["tile_len"] * c["cores"]) for c in configs])


@pytest.fixture
def setup(tmp_path, monkeypatch):
    from autotile.tables.schema import load_table

    path = write_table(tmp_path / "table.json", default_table(WS, lambda shape, dtype: "cube"))
    table = load_table(path)
    models = tmp_path / "models"
    cost = store.path_for("cost", "weighted_sum", models, table.hardware)
    cost.parent.mkdir(parents=True)
    cost.write_bytes(b"stand-in")
    monkeypatch.setattr(store, "load_regressor", lambda *a, **k: BiggestFirst())
    return table, path, models


def test_the_models_pick_reports_its_simulated_cycles(setup, run_cli):
    table, path, models = setup
    space = table.spec.space({"n": 70000}, "fp16", "scalar")
    # first, so a cold JIT cache compiles here and not inside the lookup's 2 s simulation budget
    default = make_evaluator(space).score(space.default_tiling()).values["cycles"]
    code, out, err = run_cli("lookup", str(path), "--shape", "n=70000", "--models", str(models), "--json")
    assert code == 0 and err == ""
    got = json.loads(out)
    assert (got["match"], got["unit"], got["cycles_from"]) == ("model", "scalar", "simulator")
    simulated = make_evaluator(space).score(got["params"]).values["cycles"]
    assert got["cycles"] == pytest.approx(simulated)
    assert simulated < default and f"the default tiling took {default:,.0f} cycles" in got["how"]
    code, out, _ = run_cli("lookup", str(path), "--shape", "n=70000", "--models", str(models))
    assert f"  {simulated:,.0f} cycles on the simulator\n" in out


def test_an_unsimulated_pick_reports_the_models_prediction(setup, run_cli, monkeypatch):
    _, path, models = setup
    monkeypatch.setattr(sim_budget, "BUDGET_S", 0.0)
    code, out, _ = run_cli("lookup", str(path), "--shape", "n=70000", "--models", str(models), "--json")
    got = json.loads(out)
    assert (code, got["match"], got["cycles_from"]) == (0, "model", "model")
    assert got["cycles"] == pytest.approx(1e6 / (got["params"]["tile_len"] * got["params"]["cores"]))
    code, out, _ = run_cli("lookup", str(path), "--shape", "n=70000", "--models", str(models))
    assert f"  ~{got['cycles']:,.0f} cycles predicted by the cost model (not simulated)\n" in out


def test_an_exact_answer_reports_the_entrys_cycles(setup, run_cli):
    _, path, _ = setup
    code, out, _ = run_cli("lookup", str(path), "--shape", "n=4096", "--json")
    got = json.loads(out)
    assert (code, got["match"], got["cycles"], got["cycles_from"]) == (0, "exact", 1000.0, "table")
    code, out, _ = run_cli("lookup", str(path), "--shape", "n=4096")
    assert "  1,000 cycles (the table entry's)\n" in out
