"""Model files in the cache: corrupt files, one folder per hardware profile, old one-file layout."""

from __future__ import annotations

import json
import zipfile

import pytest

from autotile.errors import InputError
from autotile.models import store
from autotile.models.dataset import fingerprint


def _deflated_zip(path, payload: bytes) -> None:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("meta.json", json.dumps({"format": store.FORMAT}))
        z.writestr("models.skops", payload)


def test_a_broken_deflate_stream_is_a_corrupt_model_not_a_traceback(tmp_path):
    path = tmp_path / "m.zip"
    _deflated_zip(path, b"estimators " * 200)
    data = bytearray(path.read_bytes())
    info = zipfile.ZipFile(path).getinfo("models.skops")
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    data[start:start + info.compress_size] = b"\xff" * info.compress_size  # block type 3: invalid
    path.write_bytes(bytes(data))
    with pytest.raises(InputError, match="corrupt model file"):
        store.load(path, kind="units")


@pytest.fixture(scope="module")
def tiny_regressor():
    """A matmul cost regressor fitted on a few configurations of one shape (seconds, not minutes)."""
    from autotile.models import dataset as D
    from autotile.models.regressor import CostRegressor
    from autotile.space import load_spec
    from tests.conftest import DATA

    spec = load_spec(str(DATA / "matmul_small.yaml"))
    rows = D.config_rows(spec.space({"m": 256, "n": 256, "k": 256}, "fp16", "cube"), 30, seed=0)
    return CostRegressor("matmul").fit(rows)


@pytest.fixture
def table(tmp_path):
    from tablekit import default_table

    path = tmp_path / "table.json"
    path.write_text(json.dumps(default_table()))
    return path


def _other_profile_model(tiny_regressor, models):
    """A cost model saved for ascend910 at the path an ascend910b2 table reads."""
    from autotile.hardware import load_profile

    store.save_regressor(tiny_regressor, load_profile("ascend910"), fingerprint(load_profile("ascend910")), models)
    p = store.path_for("cost", "matmul", models, load_profile("ascend910"))
    q = store.path_for("cost", "matmul", models, load_profile("ascend910b2"))
    q.parent.mkdir(parents=True, exist_ok=True)
    p.replace(q)


@pytest.mark.parametrize("damage", ["other_profile", "corrupt"])
def test_lookup_reads_the_model_only_when_it_falls_through_to_it(tmp_path, table, tiny_regressor, run_cli, damage):
    models = tmp_path / "cache"
    if damage == "other_profile":
        _other_profile_model(tiny_regressor, models)
    else:
        p = store.path_for("cost", "matmul", models)
        p.parent.mkdir(parents=True)
        p.write_bytes(b"")
    # a tuned shape: exact, without a word about the model
    code, out, err = run_cli("lookup", str(table), "--shape", "m=64,n=128,k=256", "--models", str(models), "--json")
    assert (code, json.loads(out)["match"], err) == (0, "exact", "")
    # an untuned shape: the model is needed, unusable, so the default answers with a one-line warning
    code, out, err = run_cli("lookup", str(table), "--shape", "m=20000,n=24,k=40", "--models", str(models), "--json")
    assert code == 0 and json.loads(out)["match"] == "default"
    assert err.count("\n") == 1 and "warning" in err and "matmul.cost.zip" in err
    assert ("profile" if damage == "other_profile" else "corrupt") in err


def test_models_for_two_profiles_coexist(tmp_path, tiny_regressor):
    from autotile.hardware import load_profile

    b2, b4 = load_profile("ascend910b2"), load_profile("ascend910b4")
    store.save_regressor(tiny_regressor, b2, fingerprint(b2), tmp_path)
    store.save_regressor(tiny_regressor, b4, fingerprint(b4), tmp_path)
    assert store.path_for("cost", "matmul", tmp_path, b2) != store.path_for("cost", "matmul", tmp_path, b4)
    for hw in (b2, b4):
        assert store.load_regressor("matmul", tmp_path, hw=hw).units == tiny_regressor.units


def test_an_old_one_file_model_is_read_when_it_matches_and_named_when_not(tmp_path, tiny_regressor):
    from autotile.hardware import load_profile

    b2, b4 = load_profile("ascend910b2"), load_profile("ascend910b4")
    old = store.legacy_path("cost", "matmul", tmp_path)
    old.parent.mkdir(parents=True)
    store.save_regressor(tiny_regressor, b2, fingerprint(b2), path=old)
    assert store.load_regressor("matmul", tmp_path, hw=b2).units == tiny_regressor.units
    with pytest.raises(InputError, match="old one-file-per-op model.*--hw ascend910b4"):
        store.load_regressor("matmul", tmp_path, hw=b4)
    store.save_regressor(tiny_regressor, b4, fingerprint(b4), tmp_path)  # the per-profile file wins from then on
    assert store.load_regressor("matmul", tmp_path, hw=b4).units == tiny_regressor.units


@pytest.mark.parametrize("command", ["lookup", "decide"])
def test_a_models_folder_that_is_missing_or_a_file_is_an_error(tmp_path, table, run_cli, command):
    (tmp_path / "afile").write_text("x")
    for bad, why in ((tmp_path / "typo", "does not exist"), (tmp_path / "afile", "is not a folder")):
        args = [str(table), "--shape", "m=20000,n=24,k=40"] if command == "lookup" else ["weighted_sum", "--shape", "n=300"]
        code, out, err = run_cli(command, *args, "--models", str(bad))
        assert code == 2 and err.count("\n") == 1 and f"--models: {bad} {why}" in err


@pytest.mark.parametrize("op,shape", [("matmul", "m=64,n=64,k=64"), ("copy", "n=300"),
                                      ("resize", "n=1,c=1,h_in=4,w_in=4,h_out=8,w_out=8")])
def test_decide_names_the_ops_it_covers_for_an_op_without_a_selector(tmp_path, run_cli, op, shape):
    code, out, err = run_cli("decide", op, "--shape", shape, "--models", str(tmp_path))
    assert code == 2 and err.count("\n") == 1
    assert f"{op} has no unit selector" in err and "weighted_sum" in err and "autotile train" not in err


def test_train_flags_do_what_they_name_or_refuse(tmp_path, run_cli):
    from autotile.models import training

    # --cost naming an op outside --ops trains that op's cost regressor too, instead of dropping it
    assert training.selection(["weighted_sum"], ["resize"]) == (["weighted_sum", "resize"], {"resize"})
    assert training.selection(["weighted_sum"], "all") == (["weighted_sum"], {"weighted_sum"})
    for flag, value in (("--ops", ","), ("--ops", ""), ("--ops", " , "), ("--cost", ","), ("--cost", "")):
        code, out, err = run_cli("train", flag, value, "-o", str(tmp_path))
        assert code == 2 and err.count("\n") == 1 and f"{flag}: expected comma-separated op names" in err, (flag, value)
    assert not (tmp_path / "models").exists()


def test_lookup_model_answer_on_a_huge_shape_is_bounded_and_says_how(tmp_path, table, tiny_regressor, run_cli):
    """100000^3: simulating one candidate takes minutes; the lookup answers from the ranking."""
    import signal
    import time

    from autotile.hardware import load_profile

    store.save_regressor(tiny_regressor, load_profile("ascend910b2"), fingerprint(load_profile("ascend910b2")), tmp_path)

    def too_slow(*_):
        raise TimeoutError("lookup took over 60 s")

    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(60)
    try:
        t0 = time.monotonic()
        code, out, err = run_cli("lookup", str(table), "--shape", "m=100000,n=100000,k=100000", "--models",
                                 str(tmp_path), "--json")
        took = time.monotonic() - t0
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    got = json.loads(out)
    # nothing could be simulated and the model extrapolates: its unverified pick does not replace
    # the default tiling (with a model trained up to ~5000, it answered one using 4 of 24 cores,
    # 14x slower on the simulator than the default)
    assert code == 0 and got["match"] == "default" and took < 30
    assert "not verified" in got["how"] and "budget" in got["how"]
    code, plain, _ = run_cli("lookup", str(table), "--shape", "m=100000,n=100000,k=100000", "--json")
    assert code == 0 and got["params"] == json.loads(plain)["params"]
    # trained on 256^3 alone: the answer says it extrapolates
    assert "m=100000 (trained on 256..256)" in got["warning"] and "extrapolates" in got["warning"]
    # a moderate shape is still settled on the simulator (here the default tiling beats the
    # tiny model's top 8 there)
    code, out, err = run_cli("lookup", str(table), "--shape", "m=20000,n=24,k=40", "--models", str(tmp_path))
    assert code == 0 and "cycles on the simulator; the fastest of the model's top 8 took" in out
    assert "  warning: the model's best was not faster than the default tiling, which the lookup keeps; outside " \
           "the training range for data gm: m=20000 (trained on 256..256), n=24" in out


def test_a_regressor_keeps_its_training_ranges_through_its_file(tmp_path, tiny_regressor):
    """The ranges travel in the model file; a file saved before they existed warns about nothing."""
    from autotile.hardware import load_profile
    from autotile.models.regressor import CostRegressor

    hw = load_profile("ascend910b2")
    store.save_regressor(tiny_regressor, hw, fingerprint(hw), tmp_path)
    back = store.load_regressor("matmul", tmp_path, hw=hw)
    assert back.ranges == {"gm": {"m": [256, 256], "n": [256, 256], "k": [256, 256]}}
    assert back.outside({"m": 256, "n": 256, "k": 256}) is None
    assert back.outside({"m": 256, "n": 512, "k": 256}) == (
        "outside the training range for data gm: n=512 (trained on 256..256)")
    old = CostRegressor.from_state({k: v for k, v in tiny_regressor.state().items() if k != "ranges"},
                                   tiny_regressor.models)
    assert old.ranges == {} and old.outside({"m": 1, "n": 1, "k": 1}) is None


def test_neighbours_of_a_huge_shape_do_not_list_its_domains():
    """single_core_m of m = 3e9 allows ~2e8 values; neighbours used to build that list."""
    import random
    import signal

    from autotile.models import dataset as D
    from autotile.space import load_spec
    from tests.conftest import ROOT

    space = load_spec(str(ROOT / "studies" / "matmul.yaml")).space({"m": 3 * 10 ** 9, "n": 16, "k": 16}, "fp16", "cube")
    rng = random.Random(0)
    cfg = next(c for c in iter(lambda: D.random_config(space, rng), 0) if c and space.check(c) is None)

    def too_slow(*_):
        raise TimeoutError("neighbours took over 10 s")

    old = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(10)
    try:
        got = D.neighbours(space, cfg, rng)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    assert got and all(space.check(c) is None for c in got)
    assert D._nearest(range(16, 10 ** 9, 16), 41) == 48 and D._nearest(range(16, 10 ** 9, 16), 40) == 32
    assert D._nearest(range(16, 64, 16), 5) == 16 and D._nearest(range(16, 64, 16), 500) == 48


def test_decide_warns_outside_the_training_range(tmp_path, run_cli, hw):
    from autotile.models import dataset as D
    from autotile.models.selector import UnitSelector

    rows = D.unit_rows("weighted_sum", ("fp16",), hw, sizes=[256, 1024, 4096], placements=("gm",))
    store.save_selector(UnitSelector("weighted_sum").fit(rows), hw, fingerprint(hw), tmp_path)
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=1000", "--models", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["warning"] is None
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=2000000000", "--models", str(tmp_path), "--json")
    assert code == 0 and "n=2000000000 (trained on 256..4096)" in json.loads(out)["warning"]
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=16", "--models", str(tmp_path))
    assert code == 0 and "warning: outside the training range for data gm: n=16" in out


def test_the_model_fallback_compares_every_unit_it_knows(tmp_path, monkeypatch):
    """A multi-unit table asks the cost model about each unit and takes the fewest cycles (it used
    to answer with the spec's first unit the model had, whatever the others cost)."""
    from pathlib import Path

    from tablekit import default_table

    from autotile.hardware import load_profile
    from autotile.models import regressor as R
    from autotile.tables.model_hook import regressor_hook
    from autotile.tables.schema import load_table

    spec = Path(__file__).resolve().parents[1] / "studies" / "weighted_sum.yaml"
    table = load_table(default_table(spec))
    path = store.path_for("cost", "weighted_sum", tmp_path, load_profile(table.hardware.name))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"stand-in")

    class Reg:
        units = ("vector", "cube", "scalar")

        def outside(self, shape, data="gm"):
            return None if shape["n"] < 1000 else f"n={shape['n']} (trained on 16..999)"

    monkeypatch.setattr(store, "load_regressor", lambda *a, **k: Reg())
    cost = {"vector": 900.0, "cube": 400.0, "scalar": 5000.0}

    def pick(op, shape, dtype, space, *, model, unit, baseline=None, data="gm"):
        assert data == "gm"  # the table's placement (weighted_sum.yaml's inputs)
        return R.Pick({"tile_len": 256}, f"{unit} pick", cost[unit], verified=True)  # as if simulated

    monkeypatch.setattr(R, "pick_params", pick)
    got = regressor_hook(table, tmp_path)("weighted_sum", {"n": 777}, "fp16")
    assert got["unit"] == "cube" and "cube 400" in got["how"] and "vector 900" in got["how"]
    assert got["warning"] is None
    far = regressor_hook(table, tmp_path)("weighted_sum", {"n": 5000}, "fp16")
    assert far["warning"] == "n=5000 (trained on 16..999); the model's ranking extrapolates"


def test_the_model_step_keeps_the_default_when_the_models_picks_are_slower(tmp_path, monkeypatch):
    """The model step simulates the default tiling beside the model's best candidates: a model
    that ranks the tilings using the fewest cores first (as one extrapolating to 100000^3 did,
    answering a tiling 14x slower than the default) gets the default answered, saying why."""
    import re

    import numpy as np
    from tablekit import default_table

    from autotile.hardware import load_profile
    from autotile.tables.lookup import Lookup
    from autotile.tables.model_hook import regressor_hook
    from autotile.tables.schema import load_table

    table = load_table(default_table())
    path = store.path_for("cost", "matmul", tmp_path, load_profile(table.hardware.name))
    path.parent.mkdir(parents=True)
    path.write_bytes(b"stand-in")

    class FewestCoresFirst:
        units = ("cube",)

        def outside(self, shape, data="gm"):
            return None

        def predict(self, shape, dtype, unit, configs, data="gm"):
            return np.array([float(-(-shape["m"] // c["single_core_m"]) * -(-shape["n"] // c["single_core_n"]))
                             for c in configs])

    monkeypatch.setattr(store, "load_regressor", lambda *a, **k: FewestCoresFirst())
    shape = {"m": 20000, "n": 24, "k": 40}  # no entry fits; each candidate simulates in well under a second
    got = Lookup(table, regressor_hook(table, tmp_path)).find(shape)
    assert got.match == "default" and got.params == Lookup(table).find(shape).params
    cycles = re.fullmatch(r"the default tiling, ([\d,]+) cycles on the simulator; the fastest of the model's "
                          r"top 8 took ([\d,]+) cycles", got.how)
    assert cycles is not None, got.how
    default, model = (int(c.replace(",", "")) for c in cycles.groups())
    assert default < model
    assert "not faster than the default tiling" in got.warning
    out = got.to_json()
    assert out["match"] == "default" and set(out) == {"shape", "dtype", "matched_shape", "match", "unit", "params",
                                                      "verified", "how", "warning", "cycles", "cycles_from"}
    assert round(out["cycles"]) == default and out["cycles_from"] == "simulator"  # the kept default's
    assert out["verified"] is False  # no table entry: nothing verified it
