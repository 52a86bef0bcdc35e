"""resize's count mode at huge output sizes: a lookup of h_out = 2^31-1 was estimated at 0.45 s
(0.21 ns an output), simulated, and the process ran out of memory on its index tables; h_out =
10^7 rows of one column was estimated at 2 ms and took seconds. The shape is now refused where it
stands and the estimate follows the loop nest."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import numpy as np
import pytest
from tablekit import default_table

from autotile.hardware import load_profile
from autotile.kernels import resize, resize_sizing
from autotile.models import sim_budget, store
from autotile.models.sim_budget import estimate_seconds
from autotile.tables.schema import load_table, write_table

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "studies" / "resize.yaml"
HUGE = {"n": 1, "c": 1, "h_in": 1, "w_in": 1, "h_out": 2**31 - 1, "w_out": 1}


def test_the_limit_falls_between_the_largest_shape_it_holds_and_the_next():
    top = resize_sizing.MAX_TABLE_BYTES // resize_sizing.TABLE_BYTES  # h_out + w_out with h_in = 1
    fits = {**HUGE, "h_out": top - 1 - 1, "w_out": 1}  # the 8 bytes of the one source row
    assert resize_sizing.table_bytes(fits) <= resize_sizing.MAX_TABLE_BYTES
    assert resize_sizing.shape_problem(fits) is None
    dim, why = resize_sizing.shape_problem({**fits, "w_out": 3})
    assert dim == "h_out" and "too large to simulate" in why and f"at most {top:,})" in why
    assert resize_sizing.shape_problem({**fits, "h_out": 1, "h_in": 2**28})[0] == "h_in"


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_the_table_bytes_bound_count_modes_peak(mode):
    """The limit rests on the measured peak: at 10^6 output rows count mode's host memory stays
    under ``table_bytes`` and uses most of it (a constant far off either way would be wrong)."""
    hw, shape = load_profile(), {"n": 1, "c": 1, "h_in": 1, "w_in": 1, "h_out": 10**6, "w_out": 1}
    opts = {"mode": mode, "layout": "NCHW"}
    params = resize.default_params(shape, "fp16", hw, options=opts)
    resize.simulate(shape, params, "fp16", hw, options=opts)  # compiled (a cold cache) outside the trace
    tracemalloc.start()
    try:
        assert resize.simulate(shape, params, "fp16", hw, options=opts).feasible
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert 0.5 * resize_sizing.table_bytes(shape) < peak <= resize_sizing.table_bytes(shape)


def test_simulate_refuses_the_shape_before_building_anything(run_cli, monkeypatch):
    def built(*a, **k):
        raise AssertionError("index tables built for a shape over the limit")

    monkeypatch.setattr(resize, "src_index", built)
    shape = ",".join(f"{d}={v}" for d, v in HUGE.items())
    code, out, err = run_cli("simulate", str(SPEC), "--shape", shape, "--json")
    assert (code, out) == (2, "")
    assert err.startswith(f"autotile: error: shape.h_out: shape {shape} is too large to simulate: count mode builds "
                          "index/weight tables of 137,438,953,480 bytes") and err.count("\n") == 1


def test_a_spec_shape_over_the_limit_is_located(run_cli, tmp_path):
    text = SPEC.read_text()
    first = text.index("  - {n: 1, c: 64, h_in: 128, w_in: 128, h_out: 256, w_out: 256}")
    bad = tmp_path / "big.yaml"
    bad.write_text(text[:first] + "  - {n: 1, c: 64, h_in: 128, w_in: 128, h_out: 30000000, w_out: 256}"
                   + text[text.index("\n", first):])
    line = text[:first].count("\n") + 1
    for cmd in (("space", str(bad)), ("tune", str(bad), "--out", str(tmp_path / "out"))):
        code, out, err = run_cli(*cmd)
        assert code == 2 and err.startswith(f"autotile: error: {bad}:{line}:48: shapes[0].h_out: shape "), err
    assert not (tmp_path / "out").exists()


def test_the_estimate_follows_the_loop_nest_not_the_outputs():
    hw = load_profile()
    nchw = {"mode": "bilinear", "layout": "NCHW"}
    tall = {**HUGE, "h_out": 10**7}  # 10^7 one-column rows: seconds of host work, 2 ms by outputs
    assert estimate_seconds("resize", tall, "fp16", "vector", resize.default_params(tall, "fp16", hw, options=nchw),
                            options=nchw) > 1
    wide = {"n": 1, "c": 1, "h_in": 1000, "w_in": 1000, "h_out": 30000, "w_out": 30000}  # 0.12 s measured
    assert estimate_seconds("resize", wide, "fp16", "vector", {}, options=nchw) < 1
    # NHWC bilinear weighs every pixel apart (~16 s measured at 20000^2): the dearer layout costs more
    nhwc = {"mode": "bilinear", "layout": "NHWC"}
    assert estimate_seconds("resize", wide, "fp16", "vector", {}, options=nhwc) > 10
    assert estimate_seconds("resize", wide, "fp16", "vector", {}) == max(
        estimate_seconds("resize", wide, "fp16", "vector", {}, options={"mode": m, "layout": lay})
        for m in ("nearest", "bilinear") for lay in ("NCHW", "NHWC"))
    assert estimate_seconds("resize", HUGE, "fp16", "vector", {}) == float("inf")
    assert "too large to simulate" in sim_budget.too_long(float("inf"), 2.0)


class AnyTiling:
    """A stand-in cost model preferring taller tiles (resize's one unit)."""

    units = ("vector",)

    def outside(self, shape, data="gm"):
        return None

    def predict(self, shape, dtype, unit, configs, data="gm"):
        return np.array([1e6 / c["tile_h"] for c in configs])


def test_a_lookup_of_a_huge_shape_answers_without_simulating(run_cli, tmp_path, monkeypatch):
    """The crash this guards against: the model fallback's candidates were simulated at 2^31-1 rows."""
    table = load_table(write_table(tmp_path / "table.json", default_table(SPEC)))
    models = tmp_path / "models"
    cost = store.path_for("cost", "resize", models, table.hardware)
    cost.parent.mkdir(parents=True)
    cost.write_bytes(b"stand-in")
    monkeypatch.setattr(store, "load_regressor", lambda *a, **k: AnyTiling())

    def simulated(*a, **k):
        raise AssertionError("a shape over the limit was simulated")

    monkeypatch.setattr(resize, "simulate", simulated)
    shape = ",".join(f"{d}={v}" for d, v in HUGE.items())
    code, out, err = run_cli("lookup", str(tmp_path / "table.json"), "--shape", shape, "--models", str(models),
                             "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["cycles_from"] == "model" and "(the shape is too large to simulate)" in got["how"]


def test_a_default_answer_simulates_within_the_budget_and_never_past_the_limit(run_cli, tmp_path, monkeypatch):
    """A one-unit table's default answer gives its simulated cycles where the estimate allows (a
    resize table's lookup of 2^31-1 rows once simulated it, estimated at 0.45 s, and the process
    ran out of memory: the default answer's cycles were then withdrawn)."""
    path = write_table(tmp_path / "table.json", default_table(SPEC))
    small = "n=1,c=3,h_in=50,w_in=60,h_out=70,w_out=80"
    code, out, _ = run_cli("lookup", str(path), "--shape", small, "--json")
    got = json.loads(out)
    assert (code, got["match"], got["cycles_from"]) == (0, "default", "simulator") and got["cycles"] > 0

    def simulated(*a, **k):
        raise AssertionError("a shape over the limit was simulated")

    monkeypatch.setattr(resize, "simulate", simulated)
    code, out, _ = run_cli("lookup", str(path), "--shape", ",".join(f"{d}={v}" for d, v in HUGE.items()), "--json")
    got = json.loads(out)
    assert (code, got["match"], got["cycles"], got["cycles_from"]) == (0, "default", None, None)
