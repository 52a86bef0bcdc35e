"""A model file is used only for what it was built for: its op, its simulator, its profile.

Models here are fitted on synthetic rows (no simulation), so each check takes a second or less.
"""

from __future__ import annotations

import json

import pytest

from autotile.models import dataset as D
from autotile.models import store
from autotile.models.dataset import Row
from autotile.models.regressor import CostRegressor
from autotile.models.selector import UnitSelector


def synth_rows(op: str, units, dtypes=("fp16",), sizes=(64, 256, 1024, 4096), data=("gm",), params=None,
               dims=("n",)):
    """Rows of made-up cycles: each unit a line in n, bf16 a tenth slower than fp16."""
    rows = []
    for where in data:
        for n in sizes:
            for dt in dtypes:
                for i, u in enumerate(units):
                    cyc = (100 + 50 * i + n * 0.01 * (i + 1)) * (1.1 if dt == "bf16" else 1.0)
                    for p in params or [{}]:
                        rows.append(Row(op, dict.fromkeys(dims, n), dt, u, dict(p), cyc * (1 + 0.01 * len(p)), "sim", where))
    return rows


def selector(op: str, units=("vector", "scalar"), **kw) -> UnitSelector:
    return UnitSelector(op).fit(synth_rows(op, units, **kw))


@pytest.fixture(scope="module")
def ws_selector():
    return selector("weighted_sum")


@pytest.fixture
def table(tmp_path):
    from tablekit import default_table

    path = tmp_path / "table.json"
    path.write_text(json.dumps(default_table()))
    return path


def test_decide_refuses_another_ops_selector_under_its_name(tmp_path, run_cli, hw):
    """sigmoid's selector copied as weighted_sum.units.zip answered weighted_sum's decide."""
    target = store.path_for("units", "weighted_sum", tmp_path, hw)
    store.save_selector(selector("sigmoid"), hw, D.fingerprint(hw), path=target)
    code, out, err = run_cli("decide", "weighted_sum", "--shape", "n=4096", "--models", str(tmp_path), "--json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert str(target) in err and "'sigmoid'" in err and "autotile train --ops weighted_sum" in err


def test_lookup_skips_another_ops_cost_model_under_its_name(tmp_path, run_cli, table, hw):
    """weighted_sum's cost model copied as matmul.cost.zip answered a matmul lookup."""
    reg = CostRegressor("weighted_sum").fit(synth_rows("weighted_sum", ("vector",), params=[{"tile_len": 256}]))
    target = store.path_for("cost", "matmul", tmp_path, hw)
    store.save_regressor(reg, hw, D.fingerprint(hw), path=target)
    code, out, err = run_cli("lookup", str(table), "--shape", "m=20000,n=24,k=40", "--models", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["match"] == "default"
    assert err.count("\n") == 1 and "warning" in err and str(target) in err and "'weighted_sum'" in err


def test_a_state_of_another_op_is_refused(tmp_path, hw):
    sel = selector("weighted_sum")
    path = store.path_for("units", "weighted_sum", tmp_path, hw)
    store.save(path, kind="units", op="weighted_sum", hw_hash=hw.content_hash(), fingerprint=D.fingerprint(hw),
               state=dict(sel.state(), op="sigmoid"), models=sel.models)
    from autotile.errors import InputError

    with pytest.raises(InputError, match="for op 'sigmoid', not weighted_sum"):
        store.load_selector("weighted_sum", hw, tmp_path)


def test_a_model_of_an_older_simulator_is_refused(tmp_path, run_cli, table, hw):
    """The fingerprint of the simulator whose cycles a model learned is compared on load, as
    studies and datasets compare theirs."""
    store.save_selector(selector("weighted_sum"), hw, "0ld51mulat0r000", tmp_path)
    code, out, err = run_cli("decide", "weighted_sum", "--shape", "n=4096", "--models", str(tmp_path), "--json")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "weighted_sum.units.zip" in err and "another simulator" in err and "0ld51mulat0r000" in err
    assert f"retrain with `autotile train --ops weighted_sum -o {tmp_path}`" in err
    reg = CostRegressor("matmul").fit(synth_rows("matmul", ("cube",), params=[{"tile": 16}], dims=("m", "n", "k")))
    store.save_regressor(reg, hw, "0ld51mulat0r000", tmp_path)
    code, out, err = run_cli("lookup", str(table), "--shape", "m=20000,n=24,k=40", "--models", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["match"] == "default"
    assert err.count("\n") == 1 and "matmul.cost.zip" in err and "another simulator" in err
    store.save_selector(selector("weighted_sum"), hw, D.fingerprint(hw), tmp_path)  # retrained: used
    code, out, err = run_cli("decide", "weighted_sum", "--shape", "n=4096", "--models", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["unit"] == "vector"


def test_an_edited_profile_with_a_bundled_name_keeps_its_own_folder(tmp_path, run_cli, hw):
    """`calibrate -o` keeps `name: ascend910b2`: its models replaced the shipped profile's, after
    which a plain decide failed with a profile mismatch."""
    from autotile.hardware import load_profile
    from autotile.hardware.profile import bundled_path

    text = bundled_path("ascend910b2").read_text()
    assert "clock_ghz: {value: 1.8," in text
    (tmp_path / "clk.yaml").write_text(text.replace("clock_ghz: {value: 1.8,", "clock_ghz: {value: 1.5,"))
    edited = load_profile(str(tmp_path / "clk.yaml"))
    assert edited.name == hw.name and edited.content_hash() != hw.content_hash()
    models = tmp_path / "cache"
    store.save_selector(selector("weighted_sum"), hw, D.fingerprint(hw), models)
    store.save_selector(selector("weighted_sum", units=("vector", "cube")), edited, D.fingerprint(edited), models)
    assert store.profile_folder(hw) == "ascend910b2"
    assert store.profile_folder(edited) == f"ascend910b2-{edited.content_hash()[:8]}"
    for prof, units in ((hw, ["scalar", "vector"]), (edited, ["cube", "vector"])):
        assert store.load_selector("weighted_sum", prof, models).units == units
    code, out, err = run_cli("decide", "weighted_sum", "--shape", "n=4096", "--models", str(models), "--json")
    assert code == 0, err
    code, out, err = run_cli("decide", "weighted_sum", "--shape", "n=4096", "--models", str(models), "--json",
                             "--hw", str(tmp_path / "clk.yaml"))
    assert code == 0 and set(json.loads(out)["predicted_cycles"]) == {"vector", "cube"}


def _tampered(sel, **change):
    """``sel``'s state and estimators with ``change`` applied (state keys, or ``models``)."""
    models = change.pop("models", sel.models)
    return dict(sel.state(), **change), models


def _linear(n_features: int):
    import numpy as np
    from sklearn.linear_model import LinearRegression

    return LinearRegression().fit(np.ones((3, n_features)), np.ones(3))


def _shifted(n_features: int, shift: float):
    """A linear 'tree' predicting ``shift`` (log2 of cycles over the work fit) everywhere."""
    model = _linear(n_features)
    model.coef_, model.intercept_ = model.coef_ * 0.0, shift
    return model


def _base_scaled(sel, value: float):
    """``sel``'s work fits with every coefficient set to ``value`` (passes the sign and zero checks)."""
    return _tampered(sel, base={u: {w: [value] * len(c) for w, c in fits.items()} for u, fits in sel.base.items()})


TAMPER = {
    "base_huge": lambda s: _base_scaled(s, 1e308),  # predicted Infinity: invalid JSON, exit 0
    "base_tiny": lambda s: _base_scaled(s, 1e-320),  # every unit predicted 0.0
    "error_text": lambda s: _tampered(s, error={"vector": {"gm": "small"}}),
    "error_unit": lambda s: _tampered(s, error={"npu": {"gm": 0.01}}),
    "trees_overflow": lambda s: _tampered(s, models={u: _shifted(len(s.names), 5000.0) for u in s.units}),
    "trees_underflow": lambda s: _tampered(s, models={u: _shifted(len(s.names), -5000.0) for u in s.units}),
    "names_wrong": lambda s: _tampered(s, names=["x"]),
    "names_empty": lambda s: _tampered(s, names=[]),
    "names_text": lambda s: _tampered(s, names="abc"),
    "names_reversed": lambda s: _tampered(s, names=s.names[::-1]),  # loaded, and answered with columns swapped
    "ranges_list": lambda s: _tampered(s, ranges=[1, 2]),
    "ranges_short": lambda s: _tampered(s, ranges={"gm": {"n": [1]}}),
    "ranges_text": lambda s: _tampered(s, ranges={"gm": {"n": ["a", "b"]}}),
    "n_rows_text": lambda s: _tampered(s, n_rows="many"),
    "units_more": lambda s: _tampered(s, units=["vector", "cube", "scalar"]),
    "arrays": lambda s: _tampered(s, models={u: __import__("numpy").ones(3) for u in s.units}),
    "linear_2_features": lambda s: _tampered(s, models={u: _linear(2) for u in s.units}),
    "state_null": lambda s: (None, s.models),
}


@pytest.mark.parametrize("case", sorted(TAMPER))
def test_a_tampered_selector_is_one_line_not_a_traceback(tmp_path, run_cli, hw, ws_selector, case):
    """Files that are still valid zip + JSON with trusted estimators gave tracebacks (exit 1)."""
    state, models = TAMPER[case](ws_selector)
    path = store.path_for("units", "weighted_sum", tmp_path, hw)
    store.save(path, kind="units", op="weighted_sum", hw_hash=hw.content_hash(), fingerprint=D.fingerprint(hw),
               state=state, models=models)
    code, out, err = run_cli("decide", "weighted_sum", "--shape", "n=4096", "--models", str(tmp_path), "--json")
    assert (code, out, err.count("\n")) == (2, "", 1), err
    assert f"{path}: unusable model file (" in err and "autotile train" in err


@pytest.mark.parametrize("case", ["names_wrong", "names_reversed", "arrays", "hw_incomplete", "trees_overflow", "trees_underflow"])
def test_lookup_skips_a_tampered_cost_model(tmp_path, run_cli, table, hw, case):
    """A cost model that is refused on load, or that loads but fails inside its prediction (a
    profile-constants map lacking what the matmul features read), is skipped with a warning."""
    reg = CostRegressor("matmul").fit(synth_rows("matmul", ("cube",), params=[{"tile": 16}], dims=("m", "n", "k")))
    state, models = TAMPER[case](reg) if case in TAMPER else _tampered(reg, hw={"l2": 1.0})
    path = store.path_for("cost", "matmul", tmp_path, hw)
    store.save(path, kind="cost", op="matmul", hw_hash=hw.content_hash(), fingerprint=D.fingerprint(hw),
               state=state, models=models)
    code, out, err = run_cli("lookup", str(table), "--shape", "m=20000,n=24,k=40", "--models", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["match"] == "default"
    assert err.count("\n") == 1 and f"{path}: unusable model file (" in err and "falls back" in err


@pytest.mark.parametrize("damage", ["corrupt", "other_profile", "old_simulator"])
def test_crossover_answers_without_an_unusable_model(tmp_path, run_cli, hw, ws_selector, damage):
    """simulated_n does not depend on the model: an unusable one is skipped with a note and a
    warning (it exited 2 with no output)."""
    from autotile.hardware import load_profile

    path = store.path_for("units", "weighted_sum", tmp_path, hw)
    if damage == "corrupt":
        path.parent.mkdir(parents=True)
        path.write_bytes(b"")
    else:
        made = load_profile("ascend910") if damage == "other_profile" else hw
        store.save_selector(ws_selector, made, "0ld51mulat0r000" if damage == "old_simulator" else D.fingerprint(made),
                            path=path)
    code, out, err = run_cli("crossover", "weighted_sum", "--models", str(tmp_path), "--json")
    doc = json.loads(out)
    from autotile.models.crossover import crossover

    assert code == 0 and doc["learned_n"] is None
    assert doc["simulated_n"] == crossover("weighted_sum", "fp16", hw, on_chip=True)["n"] is not None
    why = {"corrupt": "corrupt model file", "other_profile": "profile", "old_simulator": "another simulator"}[damage]
    assert doc["learned_note"].startswith(f"model skipped: {path}: ") and why in doc["learned_note"]
    assert err.count("\n") == 1 and "warning" in err and str(path) in err
    code, out, err = run_cli("crossover", "weighted_sum", "--models", str(tmp_path))
    assert code == 0 and "learned: no usable model" in out and f"learned: model skipped: {path}" in out


def test_selectors_tell_bf16_from_fp16(hw, monkeypatch, tmp_path):
    """Same size, different cost (global_sum vector n=1024: bf16 413 against fp16 378 cycles); the
    features had only dtype_bytes, so every bf16 prediction was the fp16 one."""
    from autotile.models import features
    from autotile.models import selector as selector_mod

    a, b = (features.shape_features("global_sum", {"n": 1024}, dt) for dt in ("fp16", "bf16"))
    assert a != b
    sel = UnitSelector("global_sum").fit(synth_rows("global_sum", ("vector", "scalar"), dtypes=("fp16", "bf16")))
    for n in (256, 1024):
        fp16, bf16 = sel.predict_cycles({"n": n}, "fp16"), sel.predict_cycles({"n": n}, "bf16")
        assert bf16["vector"] == pytest.approx(1.1 * fp16["vector"], rel=0.02)
    # a model file with the old features is refused in one line, not read with columns missing
    def old(*args):
        return {k: v for k, v in features.shape_features(*args).items() if not k.startswith("dtype.")}

    monkeypatch.setattr(selector_mod, "shape_features", old)
    stale = UnitSelector("global_sum").fit(synth_rows("global_sum", ("vector", "scalar")))
    monkeypatch.undo()
    store.save_selector(stale, hw, D.fingerprint(hw), tmp_path)
    from autotile.errors import InputError

    with pytest.raises(InputError, match=r"unusable model file \(its features are not this version's \(lacks dtype"):
        store.load_selector("global_sum", hw, tmp_path)


def test_train_reads_the_packaged_specs_not_the_working_folders(tmp_path, monkeypatch):
    """A user's own studies/matmul.yaml in the working folder silently became the spec matmul's
    cost model trained on; and specs outside the package were missing from a `pip install .`."""
    import tomllib
    from pathlib import Path

    import autotile
    from autotile.models import training
    from tests.conftest import ROOT

    (tmp_path / "studies").mkdir()
    (tmp_path / "studies" / "matmul.yaml").write_text("op: matmul\n")
    (tmp_path / "studies" / "copy.yaml").write_text("op: copy\n")
    monkeypatch.chdir(tmp_path)
    package = Path(autotile.__file__).resolve().parent
    assert D.spec_path("copy") is None and not training.trainable("copy")["cost"]
    for op in ("matmul", "weighted_sum", "resize"):
        path = D.spec_path(op)
        assert path.parent == package / "studies" and training.trainable(op)["cost"]
        assert path.samefile(ROOT / "studies" / f"{op}.yaml")  # the README's `autotile tune studies/matmul.yaml`
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["autotile"]
    assert "studies/*.yaml" in data


def test_lookup_says_when_the_given_models_folder_lacks_the_tables_model(tmp_path, run_cli, table):
    """--models given but no cost model for the table's op and profile (e.g. trained for the bundled
    profile, table tuned on an edited copy): one warning when the lookup needs it, not silence."""
    (tmp_path / "models").mkdir()
    code, out, err = run_cli("lookup", str(table), "--shape", "m=20000,n=24,k=40", "--models", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["match"] == "default"
    assert err.count("\n") == 1 and "warning: no cost model for matmul" in err and "matmul.cost.zip" in err
    code, out, err = run_cli("lookup", str(table), "--shape", "m=64,n=128,k=256", "--models", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["match"] == "exact" and err == ""  # an exact match needs no model


def test_learned_crossover_searches_the_given_range(tmp_path, run_cli, hw):
    """--low/--high move the learned search with the simulated one; a range too wide to ask the
    model at every n leaves learned_* null with a note (2**20 sizes took ~1 min and 3.6 GB)."""
    import argparse

    from autotile.cli.crossover import _learned

    sel = selector("weighted_sum", data=("gm", "on_chip"))  # the Vector ahead at every n
    store.save_selector(sel, hw, D.fingerprint(hw), path=store.path_for("units", "weighted_sum", tmp_path, hw))
    code, out, _ = run_cli("crossover", "weighted_sum", "--small-unit", "scalar", "--large-unit", "vector",
                           "--models", str(tmp_path), "--low", "8", "--high", "64", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["learned_windows"] == doc["learned_end_to_end_windows"] == [[8, 64]]
    assert doc["learned_n"] == 8 and doc["range_edges"]["learned_n"] == "floor"
    args = argparse.Namespace(op="weighted_sum", options={}, models=str(tmp_path), small_unit="scalar",
                              large_unit="vector", dtype="fp16", low=16, high=1 << 20)
    got = _learned(args, hw, True)
    assert got["learned_n"] is None and "narrow --low/--high" in got["learned_note"]
