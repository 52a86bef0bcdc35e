"""decide and the learned crossover: units that cannot compute a dtype, sizes outside the training
range, and the op options the selector assumes.

The selectors here are fitted on made-up cycles (straight lines per unit: the Cube's fixed cost
is higher, its growth lower), so they train in seconds and say plainly which unit should win.
"""

from __future__ import annotations

import json

import pytest

from autotile.errors import InputError
from autotile.hardware import load_profile
from autotile.models import dataset as D
from autotile.models import store
from autotile.models.selector import UnitSelector
from tests.conftest import ROOT

LINES = {"vector": (100.0, 0.2), "cube": (300.0, 0.05), "scalar": (50.0, 2.0)}  # unit -> (fixed, per element)
SIZES = (16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192)


def _rows(op: str, units) -> list:
    return [D.Row(op, {"n": n}, "fp16", u, {}, LINES[u][0] + LINES[u][1] * n, data=data)
            for n in SIZES for u in units for data in ("gm", "on_chip")]


def _save(op: str, units, hw, folder) -> UnitSelector:
    sel = UnitSelector(op, hw=hw).fit(_rows(op, units))
    store.save_selector(sel, hw, D.fingerprint(hw), folder)
    return sel


@pytest.fixture(scope="module")
def no_bf16_cube(tmp_path_factory):
    """The 910B2 profile with the cube's bf16 rate taken out, and a weighted_sum selector for it."""
    text = (ROOT / "autotile" / "hardware" / "ascend910b2.yaml").read_text()
    lines = [ln for ln in text.splitlines(keepends=True) if not ln.lstrip().startswith("bf16: {value: 4096")]
    assert len(lines) == len(text.splitlines()) - 1
    folder = tmp_path_factory.mktemp("nobf16")
    path = folder / "nobf16.yaml"
    path.write_text("".join(lines))
    hw = load_profile(str(path))
    assert hw.dtype_problem("cube", "bf16") and not hw.dtype_problem("vector", "bf16")
    sel = _save("weighted_sum", ("vector", "cube", "scalar"), hw, folder / "models")
    return str(path), str(folder / "models"), sel, hw


@pytest.fixture(scope="module")
def models(tmp_path_factory, hw):
    """weighted_sum and elementwise selectors for the bundled 910B2 profile."""
    folder = tmp_path_factory.mktemp("models")
    _save("weighted_sum", ("vector", "cube", "scalar"), hw, folder)
    _save("elementwise", ("vector", "scalar"), hw, folder)
    return str(folder)


def test_decide_leaves_out_a_unit_that_cannot_compute_the_dtype(no_bf16_cube, run_cli):
    """It answered cube for bf16 on a profile whose cube has no bf16 rate."""
    hw_path, folder, sel, hw = no_bf16_cube
    assert sel.decide({"n": 4096}, "bf16")[0] == "cube"  # the model alone would pick it
    assert sel.decide({"n": 4096}, "bf16", hw=hw)[0] == "vector"
    code, out, err = run_cli("decide", "weighted_sum", "--dtype", "bf16", "--shape", "n=4096", "--hw", hw_path,
                             "--models", folder, "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["unit"] == "vector" and "cube" not in got["predicted_cycles"]
    assert "no bf16 rate" in got["excluded"]["cube"]
    code, out, _ = run_cli("decide", "weighted_sum", "--dtype", "fp16", "--shape", "n=4096", "--hw", hw_path,
                           "--models", folder, "--json")
    assert code == 0 and json.loads(out)["unit"] == "cube" and json.loads(out)["excluded"] == {}
    code, out, _ = run_cli("decide", "weighted_sum", "--dtype", "bf16", "--shape", "n=4096", "--hw", hw_path,
                           "--models", folder)
    assert code == 0 and ": vector (" in out and "cube excluded: the cube of" in out


def test_a_crossover_with_a_unit_that_cannot_run_is_refused(no_bf16_cube, run_cli):
    """crossover --dtype bf16 reported a learned n=513 for a cube without bf16 (simulated: nowhere)."""
    hw_path, folder, sel, hw = no_bf16_cube
    with pytest.raises(InputError, match="cube cannot run bf16"):
        sel.crossover_windows("bf16", hw=hw)
    code, out, err = run_cli("crossover", "weighted_sum", "--dtype", "bf16", "--hw", hw_path, "--models", folder,
                             "--low", "256", "--high", "512", "--json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "no bf16 rate" in err and "cube cannot run it" in err
    code, out, err = run_cli("crossover", "weighted_sum", "--dtype", "bf16", "--hw", hw_path, "--models", folder,
                             "--small-unit", "scalar", "--large-unit", "vector", "--low", "256", "--high", "512",
                             "--json")
    assert code == 0, err


def test_a_learned_crossover_outside_the_training_sizes_warns(models, run_cli):
    """learned_end_to_end_n came out for n=1..64 from a model trained from n=16, with no word of it."""
    code, out, err = run_cli("crossover", "weighted_sum", "--low", "1", "--high", "64", "--models", models, "--json")
    assert code == 0, err
    got = json.loads(out)
    assert "n=1 (trained on 16..8192)" in got["learned_warning"] and "extrapolates" in got["learned_warning"]
    code, out, _ = run_cli("crossover", "weighted_sum", "--low", "1", "--high", "64", "--models", models)
    assert code == 0 and "learned: warning: outside the training range" in out
    code, out, _ = run_cli("crossover", "weighted_sum", "--low", "16", "--high", "64", "--models", models, "--json")
    assert code == 0 and json.loads(out)["learned_warning"] is None


def test_a_learned_crossover_names_the_sizes_it_extrapolates_on(models, run_cli):
    """weighted_sum on chip --low 16384 --high 49136 gave learned_n 16,384 (the Cube ahead to 49,136)
    from a model trained to 16,384, where the simulator has the Cube ahead only to 32,768; only a
    range-wide warning said the model extrapolated, not that the learned n rests on it."""
    code, out, err = run_cli("crossover", "weighted_sum", "--low", "1", "--high", "64", "--models", models, "--json")
    assert code == 0, err
    assert json.loads(out)["learned_extrapolated"] == {"learned_n": [[1, 15]], "learned_end_to_end_n": [[1, 15]]}
    code, out, _ = run_cli("crossover", "weighted_sum", "--low", "1", "--high", "64", "--models", models)
    assert code == 0 and out.splitlines()[0].count("(extrapolated on n=1..15)") == 2
    code, out, _ = run_cli("crossover", "weighted_sum", "--low", "16", "--high", "64", "--models", models, "--json")
    assert code == 0 and json.loads(out)["learned_extrapolated"] == {"learned_n": [], "learned_end_to_end_n": []}


def test_decide_says_which_options_the_selector_assumes(models, run_cli):
    """decide elementwise answered for kind=add without saying so, and took no --inputs."""
    code, out, err = run_cli("decide", "elementwise", "--shape", "n=300", "--models", models, "--json")
    assert code == 0, err
    assert json.loads(out)["inputs"] == {"kind": "add"}
    code, out, _ = run_cli("decide", "elementwise", "--shape", "n=300", "--models", models)
    assert code == 0 and out.startswith("elementwise fp16 n=300 kind=add: ")
    code, out, _ = run_cli("decide", "elementwise", "--shape", "n=300", "--inputs", "kind=add", "--models", models)
    assert code == 0
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=300", "--models", models, "--json")
    assert code == 0 and json.loads(out)["inputs"] == {}


@pytest.mark.parametrize("inputs,needle", [
    ("kind=relu", "--inputs: the unit selector is trained with the default options (kind=add), not kind=relu"),
    ("kind=foo", "--inputs kind: expected one of add, mul, relu, got 'foo'"),
    ("data=gm", "--inputs data: use --data"),
])
def test_decide_refuses_options_the_selector_was_not_trained_with(models, run_cli, inputs, needle):
    code, out, err = run_cli("decide", "elementwise", "--shape", "n=300", "--inputs", inputs, "--models", models)
    assert code == 2 and out == "" and err.count("\n") == 1 and needle in err, err


def test_crossover_and_decide_word_the_untrained_options_alike(models, run_cli):
    code, out, _ = run_cli("crossover", "elementwise", "--inputs", "kind=relu", "--low", "16", "--high", "64",
                           "--models", models, "--json")
    assert code == 0
    note = json.loads(out)["learned_note"]
    _, _, err = run_cli("decide", "elementwise", "--shape", "n=300", "--inputs", "kind=relu", "--models", models)
    assert note in err
