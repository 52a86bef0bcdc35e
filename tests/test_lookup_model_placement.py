"""``lookup --models`` on a table tuned with ``inputs: {data: on_chip}`` asks the cost model about
on-chip data: the hook predicted and checked the training range for data gm, so the warning named
gm's range and a model trained on gm alone never said it knew nothing of on_chip."""

from __future__ import annotations

from pathlib import Path

import numpy as np
from tablekit import default_table

from autotile.models import store
from autotile.models.features import outside
from autotile.tables.model_hook import regressor_hook
from autotile.tables.schema import load_table, write_table

WS = Path(__file__).resolve().parents[1] / "studies" / "weighted_sum.yaml"


class GmOnly:
    """A scalar cost model trained on data gm alone (n 64..4096): records the placements it is asked."""

    units = ("scalar",)
    ranges = {"gm": {"n": [64, 4096]}}

    def __init__(self):
        self.asked = []

    def outside(self, shape, data="gm"):
        self.asked.append(data)
        return outside(self.ranges, shape, data)

    def predict(self, shape, dtype, unit, configs, data="gm"):
        self.asked.append(data)
        return np.array([1e6 / (c["tile_len"] * c["cores"]) for c in configs])


def hook(tmp_path, monkeypatch, data: str):
    text = WS.read_text()
    assert text.count("inputs: {data: gm}") == 1
    spec = tmp_path / "ws.yaml"
    spec.write_text(text.replace("inputs: {data: gm}", f"inputs: {{data: {data}}}")
                    .replace("n: [64, 512, 4096, 65536, 1048576]", "n: [64, 512]"))
    table = load_table(write_table(tmp_path / "table.json", default_table(spec, lambda shape, dtype: "scalar")))
    cost = store.path_for("cost", "weighted_sum", tmp_path / "models", table.hardware)
    cost.parent.mkdir(parents=True)
    cost.write_bytes(b"stand-in")
    model = GmOnly()
    monkeypatch.setattr(store, "load_regressor", lambda *a, **k: model)
    warned = []
    return regressor_hook(table, tmp_path / "models", warned.append), model, warned


def test_an_on_chip_table_asks_the_model_about_on_chip_data(tmp_path, monkeypatch):
    answer, model, warned = hook(tmp_path, monkeypatch, "on_chip")
    got = answer("weighted_sum", {"n": 1000}, "fp16")  # inside gm's range, which says nothing of on_chip
    assert got is not None and warned == []
    assert model.asked and set(model.asked) == {"on_chip"}, model.asked
    assert "the model has no training for data on_chip (trained on data gm)" in got["warning"], got


def test_a_gm_table_inside_the_range_gets_no_warning(tmp_path, monkeypatch):
    answer, model, _ = hook(tmp_path, monkeypatch, "gm")
    got = answer("weighted_sum", {"n": 1000}, "fp16")
    assert set(model.asked) == {"gm"}, model.asked
    assert "training" not in (got["warning"] or ""), got


def test_outside_says_a_placement_has_no_training():
    assert outside({"gm": {"n": [64, 4096]}}, {"n": 100}, "on_chip") == \
        "the model has no training for data on_chip (trained on data gm)"
    assert outside({"gm": {"n": [64, 4096]}}, {"n": 100}, "gm") is None
    assert outside({}, {"n": 100}, "on_chip") is None  # a model saved without its ranges: nothing known
