"""decide says how sure it is: the predicted margin over the runner-up, against the model's
held-out error (recorded at training), and a close call when the margin is within it.

Selectors here are fitted on made-up straight lines (``test_selector_cli``), in seconds.
"""

from __future__ import annotations

import json

from autotile.models import dataset as D
from autotile.models import store
from autotile.models.selector import CLOSE_DEFAULT, FOLDS, UnitSelector
from tests.test_selector_cli import SIZES, _rows, _save

UNITS = ("vector", "cube", "scalar")


def test_fit_records_a_heldout_error_per_unit_and_placement(hw):
    assert len(SIZES) >= 2 * FOLDS
    sel = UnitSelector("weighted_sum", hw=hw).fit(_rows("weighted_sum", UNITS))
    assert set(sel.error) == set(UNITS) and all(set(v) == {"gm", "on_chip"} for v in sel.error.values())
    assert all(0 <= e < 1 for v in sel.error.values() for e in v.values())


def test_decide_gives_the_margin_and_flags_a_close_call(tmp_path, run_cli, hw):
    """vector 100 + 0.2 n and cube 300 + 0.05 n tie at n = 1,333; at 8,192 the cube is far ahead."""
    sel = _save("weighted_sum", UNITS, hw, tmp_path)
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=8192", "--models", str(tmp_path), "--json")
    doc = json.loads(out)
    c = doc["confidence"]
    cyc = doc["predicted_cycles"]
    assert code == 0 and doc["unit"] == "cube" and c["runner_up"] == "vector" and c["close_call"] is False
    assert abs(c["margin_pct"] - 100 * (cyc["vector"] / cyc["cube"] - 1)) < 0.01
    assert c["error_from"] == "held-out"
    assert abs(c["error_pct"] - 100 * (sel.error["cube"]["gm"] + sel.error["vector"]["gm"])) < 0.01
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=1333", "--models", str(tmp_path), "--json")
    c = json.loads(out)["confidence"]
    assert code == 0 and c["close_call"] is True and c["margin_pct"] <= c["error_pct"]
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=1333", "--models", str(tmp_path))
    assert code == 0 and out.splitlines()[1].strip().startswith("close call: ")
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=8192", "--models", str(tmp_path))
    assert code == 0 and out.splitlines()[1].strip().startswith("margin: ")


def test_a_model_saved_without_heldout_errors_uses_the_default_threshold(tmp_path, run_cli, hw):
    sel = UnitSelector("weighted_sum", hw=hw).fit(_rows("weighted_sum", UNITS))
    state = {k: v for k, v in sel.state().items() if k != "error"}
    store.save(store.path_for("units", "weighted_sum", tmp_path, hw), kind="units", op="weighted_sum",
               hw_hash=hw.content_hash(), fingerprint=D.fingerprint(hw), state=state, models=sel.models)
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=8192", "--models", str(tmp_path), "--json")
    c = json.loads(out)["confidence"]
    assert code == 0 and c["error_from"] == "default" and c["error_pct"] == round(100 * CLOSE_DEFAULT, 2)


def test_a_pick_outside_the_training_sizes_is_a_close_call_flagged_extrapolated(tmp_path, run_cli, hw):
    """weighted_sum on chip at n = 32,784 (trained to 16,384) picked the cube 493% ahead, close_call
    false, where the simulator has it 13x slower: a margin the held-out error cannot vouch for.
    Here the made-up lines put the cube far ahead at n = 100,000, past the training sizes (16..8,192)."""
    _save("weighted_sum", UNITS, hw, tmp_path)
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=100000", "--models", str(tmp_path), "--json")
    doc = json.loads(out)
    c = doc["confidence"]
    assert code == 0 and doc["warning"] and c["margin_pct"] > c["error_pct"]
    assert c["extrapolated"] is True and c["close_call"] is True
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=100000", "--models", str(tmp_path))
    assert code == 0 and out.splitlines()[1].strip().startswith("close call: extrapolated: ")
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=8192", "--models", str(tmp_path), "--json")
    c = json.loads(out)["confidence"]
    assert code == 0 and c["extrapolated"] is False and c["close_call"] is False


def test_a_lone_unit_outside_the_training_sizes_is_still_a_close_call(tmp_path, run_cli, hw):
    """weighted_sum on chip at n = 50,000: only the Cube holds the data, and decide said "no other
    unit to compare", close_call false, though the shape is past the training sizes (extrapolated)."""
    _save("weighted_sum", UNITS, hw, tmp_path)
    argv = ("decide", "weighted_sum", "--shape", "n=50000", "--data", "on_chip", "--models", str(tmp_path))
    code, out, _ = run_cli(*argv, "--json")
    doc = json.loads(out)
    c = doc["confidence"]
    assert code == 0 and doc["unit"] == "cube" and c["runner_up"] is None
    assert c["extrapolated"] is True and c["close_call"] is True
    code, out, _ = run_cli(*argv)
    assert code == 0 and out.splitlines()[1].strip().startswith("close call: extrapolated: no other unit")


def test_decide_names_the_sigmoid_variant_it_compares(tmp_path, run_cli, hw):
    """decide sigmoid compares the exact variant only (as crossover's search says), yet said each unit
    was taken at its best tiling, of which the variant is a part (a Scalar lut_nearest runs n = 3
    faster than the Vector)."""
    _save("sigmoid", ("scalar", "vector"), hw, tmp_path)
    argv = ("decide", "sigmoid", "--shape", "n=512", "--models", str(tmp_path))
    code, out, _ = run_cli(*argv, "--json")
    assert code == 0 and "for sigmoid only variant exact" in json.loads(out)["compared"]
    code, out, _ = run_cli(*argv)
    assert code == 0 and "  compared: each unit at its best tiling on the simulator's grid; for sigmoid only " \
                         "variant exact" in out
