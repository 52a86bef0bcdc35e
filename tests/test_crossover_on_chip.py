"""The crossover search on chip stops where the units' buffers stop holding the data, and says so."""

from __future__ import annotations

import json

from autotile.hardware import load_profile
from autotile.models import crossover as X
from autotile.models import what_decides

HW = load_profile()


def test_the_crossover_searches_only_where_the_data_fits():
    res = X.crossover("weighted_sum", "fp16", HW, on_chip=True, lo=100_000, hi=200_000)
    assert res["n"] is None and res["top"] is None and res["grid"] == []
    assert res["limits"] == {"vector": 49136, "cube": 131072}
    res = X.crossover("elementwise", "fp32", HW, small_unit="scalar", large_unit="vector", on_chip=True,
                      lo=8192, hi=32768)
    assert res["top"] == 16384 and max(r["n"] for r in res["grid"]) == 16384 and res["n"] == 8192
    res = X.crossover("elementwise", "fp32", HW, small_unit="scalar", large_unit="vector", on_chip=True,
                      lo=8192, hi=32768, aligned=False)
    assert res["top"] == 16368 and max(r["n"] for r in res["grid"]) <= 16384


def test_cli_crossover_says_where_the_framing_holds(run_cli, monkeypatch):
    """crossover --low 100000 --high 200000 answered on chip for sizes no unit's buffers hold."""
    monkeypatch.setattr(X, "on_chip_limit", lambda op, unit, *a, **k: {"vector": 64, "cube": 48}[unit])
    code, out, err = run_cli("crossover", "weighted_sum", "--low", "16", "--high", "128", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["on_chip_range"] == [16, 48] and doc["on_chip_limits"] == {"vector": 64, "cube": 48}
    assert all(r["n"] <= 48 for r in X.crossover("weighted_sum", "fp16", HW, lo=16, hi=128)["grid"])
    assert "searched n=16..48 only" in doc["on_chip_note"]
    code, out, err = run_cli("crossover", "weighted_sum", "--low", "100", "--high", "128")
    assert code == 0 and "Traceback" not in err
    assert "on chip: no size in n=100..128 fits" in out and "nowhere (no size searched fits on chip)" in out


def test_explain_at_the_on_chip_limit_steps_back_instead_of_past_it():
    """At the limit, 2n no longer fits: the growth came out infinite; past it a unit has no tiling."""
    got = what_decides.explain("elementwise", "fp32", HW, True, 16384, "scalar", "vector")
    assert 0 < got["vector"]["cycles_per_element"] < got["scalar"]["cycles_per_element"] < 10
    got = what_decides.explain("elementwise", "fp32", HW, True, 20000, "scalar", "vector")
    assert got["why"] == "scalar has no feasible tiling at n=20,000: its buffers hold the data up to n=16,384"


def test_a_change_where_the_new_unit_leads_on_both_lines_is_put_down_to_the_step():
    """weighted_sum fp16 on chip, Cube to Vector at n = 32,769: the Vector has the less fixed cost
    and the slower growth (its line below the Cube's on both sides of n, so the lines cannot say
    why the Cube wins below), yet the text said "vector grows more slowly". The Cube's trace form
    stops fitting L0A there (176 -> 13,991 cycles). The Vector's fitted fixed cost, -0.8 cycles,
    was printed as -1: the text says ~0 and names the intercept, the JSON keeps it."""
    e = what_decides.explain("weighted_sum", "fp16", HW, True, 32769, "cube", "vector")
    v, c = e["vector"], e["cube"]
    assert v["fixed_cycles"] < 0 < c["fixed_cycles"] and v["cycles_per_element"] < c["cycles_per_element"]
    cube = [X.best("weighted_sum", "cube", n, "fp16", HW, True) for n in (32768, 32769)]
    assert cube[0][1]["cube_form"] == "trace" and cube[1][1]["cube_form"] == "naive"
    assert e["why"].startswith(f"cube's cost steps up at n=32,769: {cube[0][0]:,.1f} cycles at 32,768, "
                               f"{cube[1][0]:,.1f} at 32,769 (+{cube[1][0] - cube[0][0]:,.1f}: cube_form=trace no "
                               f"longer fits (")
    assert "L0A holds" in e["why"] and "cube_form=naive is its best" in e["why"]
    assert "grows more slowly (0.0320 against 0.4234" in e["why"] and "a step, not a trend" in e["why"]
    assert "from n to 2n (vector: from n/2 to n, its data at 2n does not fit) vector has" in e["why"]
    assert f"less fixed cost (~0 against {c['fixed_cycles']:.0f} cycles; ~0: vector's line meets n = 0 at " \
           f"{v['fixed_cycles']:.1f} cycles)" in e["why"]
