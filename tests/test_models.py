"""Learned models: dataset rows, the measurement adapter, unit selector, cost regressor, model files, CLI."""

from __future__ import annotations

import json
import zipfile

import numpy as np
import pytest

from autotile import cli
from autotile.errors import InputError
from autotile.models import dataset as D
from autotile.models import store, training
from autotile.models.regressor import CostRegressor, predict_params, top_k
from autotile.models.selector import UnitSelector
from autotile.space import load_spec
from tests.conftest import ROOT


@pytest.fixture(scope="module")
def ws_rows(hw):
    sizes = [16, 64, 128, 256, 512, 1024, 2048, 4096, 8192]
    return D.unit_rows("weighted_sum", ("fp16",), hw, sizes=sizes, placements=("on_chip", "gm"))


@pytest.fixture(scope="module")
def mm_rows():
    spec = load_spec(str(ROOT / "studies" / "matmul.yaml"))
    rows = []
    for i, s in enumerate(({"m": 256, "n": 256, "k": 256}, {"m": 512, "n": 128, "k": 384})):
        rows += D.config_rows(spec.space(s, "fp16", "cube"), 80, seed=i)
    return spec, rows


def test_sweep_and_holdout_sizes_do_not_overlap():
    train = D.sweep_sizes(16, 1 << 14, 4)
    assert train == sorted(set(train)) and train[0] == 16 and 4096 in train and 1536 in train
    held = D.holdout_sizes(16, 1 << 14, 30, seed=3, exclude=train)
    assert len(held) == 30 and not set(held) & set(train)
    assert all(16 <= n <= 1 << 14 for n in held)


def test_measurement_adapter_converts_times_and_skips_failures(hw):
    records = [({"tile_len": 64, "buffer_num": 2}, 0.001), ({"tile_len": 128, "buffer_num": 1}, "RuntimeFailedConfig"),
               ({"tile_len": 32, "buffer_num": 1}, float("nan")), ({"tile_len": 16, "buffer_num": 1}, 0.0005)]
    rows = D.from_measurements(records, op="elementwise", shape={"n": 4096}, dtype="fp16", unit="vector", hw=hw,
                               source="replay:made-up.csv")
    assert len(rows) == 2
    assert rows[0].cycles == pytest.approx(1e-6 * hw.clock_ghz * 1e9)
    assert {r.source for r in rows} == {"replay:made-up.csv"}
    with pytest.raises(InputError):
        D.from_measurements(records, op="elementwise", shape={"n": 1}, dtype="fp16", unit="vector", hw=hw,
                            time_unit="hours")


def test_models_train_on_replayed_rows(hw):
    # a made-up recording: two units of elementwise, the scalar one ~10x slower, time ~ n
    recs = {}
    for n in (256, 1024, 4096, 16384):
        for unit, per in (("vector", 1e-8), ("scalar", 1e-7)):
            recs[(n, unit)] = [({"tile_len": t, "buffer_num": 2, "cores": 1}, per * n * (1 + 64 / t)) for t in (64, 256)]
    rows = [r for (n, unit), rec in recs.items()
            for r in D.from_measurements(rec, op="elementwise", shape={"n": n}, dtype="fp16", unit=unit, hw=hw,
                                         time_unit="s")]
    sel = UnitSelector("elementwise").fit(rows)
    assert sel.decide({"n": 2000}, "fp16")[0] == "vector"
    from sklearn.ensemble import GradientBoostingRegressor

    reg = CostRegressor("elementwise", GradientBoostingRegressor(n_estimators=50, max_depth=2)).fit(rows)
    best = predict_params("elementwise", {"n": 2048}, "fp16", [{"tile_len": 64, "buffer_num": 2, "cores": 1},
                                                                {"tile_len": 256, "buffer_num": 2, "cores": 1}],
                          model=reg, unit="vector")
    assert best["tile_len"] == 256


def test_dataset_cache_rebuilds_when_meta_changes(tmp_path, hw):
    calls = []

    def build():
        calls.append(1)
        return [D.Row("copy", {"n": 16}, "fp16", "vector", {}, 10.0)]

    meta = {"fingerprint": D.fingerprint(hw)}
    rows, built = D.cached(tmp_path / "d.json", meta, build)
    assert built and rows[0].cycles == 10.0
    assert D.cached(tmp_path / "d.json", meta, build) == (rows, False)
    assert D.cached(tmp_path / "d.json", {"fingerprint": "other"}, build)[1] is True
    assert len(calls) == 2


def test_selector_learns_the_weighted_sum_decision(ws_rows):
    sel = UnitSelector("weighted_sum").fit(ws_rows)
    assert sel.units == ["cube", "scalar", "vector"]
    assert sel.decide({"n": 128}, "fp16", "on_chip")[0] == "vector"
    assert sel.decide({"n": 8192}, "fp16", "on_chip")[0] == "cube"
    unit, cyc = sel.decide({"n": 4096}, "fp16", "gm")
    assert unit == "cube" and set(cyc) == {"vector", "cube", "scalar"}
    n = sel.crossover("fp16", data="on_chip")
    assert n is not None and 512 < n <= 2048
    # the learned windows are the model's answer at every n: decide agrees inside and outside them
    for data in ("on_chip", "gm"):
        spans = sel.crossover_windows("fp16", data=data)
        inside = {n for a, b in spans for n in range(a, b + 1)}
        for n in range(16, 16385, 37):
            cyc = sel.predict_cycles({"n": n}, "fp16", data)
            assert (cyc["cube"] < cyc["vector"]) == (n in inside), (data, n, spans)


def test_cost_regressor_ranks_matmul_configs(mm_rows):
    from scipy.stats import spearmanr

    spec, rows = mm_rows
    reg = CostRegressor("matmul").fit(rows)
    shape = {"m": 384, "n": 192, "k": 320}
    test = D.config_rows(spec.space(shape, "fp16", "cube"), 60, seed=9)
    pred = reg.predict(shape, "fp16", "cube", [r.params for r in test])
    assert spearmanr(pred, [r.cycles for r in test]).statistic > 0.6
    space = spec.space(shape, "fp16", "cube")
    top = top_k("matmul", shape, "fp16", space, 3, model=reg, samples=100, local_search=True)
    assert len(top) == 3 and top[0][1] <= top[1][1] <= top[2][1]
    assert all(space.check(p) is None for p, _ in top)
    assert predict_params("matmul", shape, "fp16", space, model=reg, samples=100, verify=1) == top[0][0]
    # by default the model's best few are simulated and the fastest returned
    from autotile.kernels import matmul

    top8 = [p for p, _ in top_k("matmul", shape, "fp16", space, 8, model=reg, samples=100)]
    got = predict_params("matmul", shape, "fp16", space, model=reg, samples=100, verify=8)
    sims = [matmul.simulate(shape, p, "fp16", spec.hardware).cycles for p in top8]
    assert got in top8 and matmul.simulate(shape, got, "fp16", spec.hardware).cycles == min(sims)
    # a candidate list is ranked by the model alone (nothing to simulate it with)
    cands = [r.params for r in test[:20]]
    assert predict_params("matmul", shape, "fp16", cands, model=reg, unit="cube") == \
        top_k("matmul", shape, "fp16", cands, 1, model=reg, unit="cube")[0][0]


def test_matmul_gm_bytes_feature_matches_the_simulated_traffic(mm_rows, hw):
    """The closed-form GM -> L1 bytes of a core block follow the kernel's L1 panel reuse exactly."""
    from autotile.dtypes import get as get_dtype
    from autotile.kernels import matmul
    from autotile.models.features import matmul_physics
    from autotile.sim import engine as E

    spec, _ = mm_rows
    checked = 0
    for i, s in enumerate(training.random_shapes(("m", "n", "k"), 8, 5)):
        for r in D.config_rows(spec.space(s, "fp16", "cube"), 25, seed=i):
            p, _ = matmul.check(s, r.params, "fp16", hw)
            st = matmul._state()
            sm, sn = min(p["single_core_m"], s["m"]), min(p["single_core_n"], s["n"])
            matmul._run_core(st, matmul.cost_vector(hw, "fp16"), s, p, get_dtype("fp16"), sm, sn, matmul.MODE_TRAFFIC)
            f = matmul_physics(s, "fp16", r.params, hw.cube_cores)
            assert 2 ** f["mm.gm.log2"] == pytest.approx(st.path_bytes[E.GM_L1], rel=1e-9), (s, r.params)
            checked += 1
    assert checked > 150


def test_dataset_rows_skip_the_domain_recheck_but_not_the_constraints(mm_rows):
    """config_rows/refine_rows score drawn configs without re-deriving domains: same cycles."""
    from autotile.tune.evaluate import Evaluator

    spec, _ = mm_rows
    space = spec.space({"m": 300, "n": 200, "k": 500}, "fp16", "cube")
    rows = D.config_rows(space, 40, seed=3)
    more = D.refine_rows(space, rows, 2, seed=1, rounds=2)
    once = D.refine_rows(space, rows, 2, seed=1)
    assert len(more) > len(once) > 0
    ev = Evaluator(space)
    for r in rows + more:
        out = ev.score(r.params)
        assert out.feasible and out.values["cycles"] == r.cycles
    # a drawn config breaking a constraint (L1 overflow) is dropped, not simulated
    sim = D._Sim(space)
    bad = dict(rows[0].params, depth_a1=10 ** 6)
    assert space.constraint_failure(bad) is not None and sim.cycles(bad) is None


def test_model_files_round_trip_and_refuse_mismatch(tmp_path, ws_rows, hw, monkeypatch):
    sel = UnitSelector("weighted_sum").fit(ws_rows)
    path = store.save_selector(sel, hw, D.fingerprint(hw), tmp_path)
    again = store.load_selector("weighted_sum", hw, tmp_path)
    assert again.decide({"n": 300}, "fp16") == sel.decide({"n": 300}, "fp16")
    with zipfile.ZipFile(path) as z:
        assert "models.skops" in z.namelist()
        meta = json.loads(z.read("meta.json"))
    assert meta["profile_hash"] == hw.content_hash() and meta["autotile_version"]
    # another profile
    from autotile.hardware import load_profile

    with pytest.raises(InputError, match="profile"):
        store.load_selector("weighted_sum", load_profile("ascend910"), path=path)
    with pytest.raises(InputError, match="no trained model"):  # its models live in their own folder
        store.load_selector("weighted_sum", load_profile("ascend910"), tmp_path)
    # another version
    monkeypatch.setattr(store, "__version__", "9.9.9")
    with pytest.raises(InputError, match="autotile"):
        store.load_selector("weighted_sum", hw, tmp_path)
    monkeypatch.undo()
    # corrupt
    path.write_bytes(b"not a zip")
    with pytest.raises(InputError, match="corrupt"):
        store.load_selector("weighted_sum", hw, tmp_path)
    with pytest.raises(InputError, match="no trained model"):
        store.load_selector("sigmoid", hw, tmp_path)


def test_untrusted_types_are_refused(tmp_path, hw):
    import skops.io as sio
    from sklearn.neighbors import KNeighborsRegressor

    knn = KNeighborsRegressor(n_neighbors=1).fit(np.arange(4.0).reshape(-1, 1), np.arange(4.0))
    blob = sio.dumps({"vector": knn})
    meta = {"format": store.FORMAT, "kind": "units", "op": "copy", "autotile_version": store.__version__,
            "profile_hash": hw.content_hash(), "state": {}}
    path = tmp_path / "evil.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("meta.json", json.dumps(meta))
        z.writestr("models.skops", blob)
    if [t for t in sio.get_untrusted_types(data=blob) if t not in store.TRUSTED]:
        with pytest.raises(InputError, match="refused"):
            store.load(path, kind="units", hw_hash=hw.content_hash())
    with pytest.raises(ValueError):
        store.save(tmp_path / "x.zip", kind="units", op="copy", hw_hash="h", fingerprint="f", state={},
                   models={"f": np.frompyfunc(abs, 1, 1)})


def test_train_selection_defaults_to_unit_selectors_and_matmul_cost():
    ops, cost = training.selection()
    assert cost == {"matmul"} and "matmul" in ops
    assert {"weighted_sum", "global_sum", "sigmoid", "elementwise"} <= set(ops)
    assert "resize" not in ops and "roi_align" not in ops  # only a cost regressor, not asked for
    assert not training.trainable("matmul")["units"]  # two units, but not a 1-D sweep
    ops, cost = training.selection(cost="all")
    assert {"resize", "roi_align", "sigmoid", "matmul"} <= cost and "resize" in ops
    assert training.selection(["elementwise"]) == (["elementwise"], {"elementwise"})
    assert training.selection(["elementwise"], "none") == (["elementwise"], set())
    assert training.selection(["elementwise", "matmul"], ["matmul"]) == (["elementwise", "matmul"], {"matmul"})
    with pytest.raises(InputError, match="nothing to train for resize"):
        training.selection(["resize"], "none")
    with pytest.raises(InputError, match="--cost: no cost regressor for copy"):
        training.selection(cost=["copy"])
    with pytest.raises(InputError, match="unknown op"):
        training.selection(["nosuchop"])


def test_train_in_worker_processes_builds_what_one_process_builds(tmp_path, monkeypatch, hw):
    """Workers see the parent's (here shrunk) dataset settings and write the same datasets."""
    monkeypatch.setitem(D.PLACEMENTS, "on_chip", (256, 1024))
    monkeypatch.setitem(D.PLACEMENTS, "gm", (256, 1024))
    monkeypatch.setattr(training, "COST_1D", (256, 512, 1, 6))
    logged = []
    one = training.train(["elementwise"], hw, tmp_path / "one", jobs=1)
    two = training.train(["elementwise"], hw, tmp_path / "two", jobs=2, log=lambda op, e: logged.append(op))
    assert logged == ["elementwise"] and set(two["elementwise"]) == {"units", "cost"}
    for kind in ("units", "cost"):
        assert two["elementwise"][kind]["rows"] == one["elementwise"][kind]["rows"]
        a = D.load_rows(one["elementwise"][kind]["dataset"])
        b = D.load_rows(two["elementwise"][kind]["dataset"])
        assert a == b and max(r.shape["n"] for r in a) <= 1024
    assert training.train(["copy"], hw, tmp_path / "x", jobs=2) == {"copy": {"skipped": "one unit and no study spec"}}


def test_datasets_are_kept_per_profile(tmp_path, monkeypatch, hw):
    """Training for a second chip neither replaces nor reuses the first chip's datasets."""
    from autotile.hardware import load_profile

    monkeypatch.setitem(D.PLACEMENTS, "on_chip", (256, 512))
    monkeypatch.setitem(D.PLACEMENTS, "gm", (256, 512))
    other = load_profile("ascend910b4")
    first = training.train(["elementwise"], hw, tmp_path, cost="none", jobs=1)["elementwise"]["units"]
    second = training.train(["elementwise"], other, tmp_path, cost="none", jobs=1)["elementwise"]["units"]
    again = training.train(["elementwise"], hw, tmp_path, cost="none", jobs=1)["elementwise"]["units"]
    assert first["rebuilt"] and second["rebuilt"] and not again["rebuilt"]
    assert first["dataset"] == again["dataset"] != second["dataset"]
    assert {p.parent.name for p in (tmp_path / "datasets").glob("*/elementwise.units.json")} == {
        "ascend910b2", "ascend910b4"}


def test_shapes_around_stay_near_the_spec_shapes():
    base = [{"n": 1, "c": 64, "h": 100, "w": 152}]
    got = training.shapes_around(base, 20, seed=1)
    assert len(got) == 20 and got == training.shapes_around(base, 20, seed=1)
    for s in got:
        assert all(max(1, v // 2 - 1) <= s[d] <= 2 * v + 1 for d, v in base[0].items())


def test_train_decide_crossover_commands(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(D.PLACEMENTS, "on_chip", (256, 4096))
    monkeypatch.setitem(D.PLACEMENTS, "gm", (256, 4096))
    monkeypatch.setattr(training, "COST_1D", (256, 1024, 1, 10))
    out = str(tmp_path)
    assert cli.run(["train", "--ops", "elementwise", "-o", out, "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert set(summary["ops"]["elementwise"]) == {"units", "cost"}
    assert cli.run(["decide", "elementwise", "--shape", "n=300", "--models", out, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["unit"] == "vector" and set(got["predicted_cycles"]) == {"vector", "scalar"}
    assert cli.run(["decide", "weighted_sum", "--shape", "n=300", "--models", out]) == 2
    assert "autotile train" in capsys.readouterr().err
    assert cli.run(["decide", "elementwise", "--shape", "m=3", "--models", out]) == 2
    assert cli.run(["train", "--ops", "nosuchop", "-o", out]) == 2
    assert cli.run(["train", "--ops", "elementwise", "--cost", "none", "-o", str(tmp_path / "u"), "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)["ops"]["elementwise"]) == {"units"}
    assert cli.run(["train", "--ops", "copy", "-o", out]) == 2
    assert cli.run(["train", "--ops", "elementwise", "-j", "0", "-o", out]) == 2


def test_table_lookup_falls_back_to_the_cost_model(tmp_path, mm_rows, hw, run_cli):
    """`autotile lookup --models DIR`: a shape no tuned tiling fits is answered by the model."""
    from tablekit import default_table

    _, rows = mm_rows
    store.save_regressor(CostRegressor("matmul").fit(rows), hw, D.fingerprint(hw), tmp_path)
    table = tmp_path / "table.json"
    table.write_text(json.dumps(default_table()))
    shape = "m=20000,n=24,k=40"
    code, out, err = run_cli("lookup", str(table), "--shape", shape, "--json")
    assert code == 0, err
    assert json.loads(out)["match"] == "default"
    code, out, err = run_cli("lookup", str(table), "--shape", shape, "--models", str(tmp_path), "--json")
    assert code == 0, err
    got = json.loads(out)
    # the model step answered: its best candidates, simulated beside the default tiling (which
    # it keeps unless a candidate is faster)
    assert got["match"] in ("model", "default") and "the model's top 8" in got["how"]
    spec = load_spec(str(ROOT / "tests" / "data" / "matmul_small.yaml"))
    assert spec.space({"m": 20000, "n": 24, "k": 40}, "fp16", "cube").check(got["params"]) is None


def test_lookup_without_models_answers_as_a_kernel_does(tmp_path, mm_rows, hw, run_cli, monkeypatch):
    """A model in train's default cache is read only when named: `lookup` without --models gives
    what run_with_table gives (it said "model" where the kernel got "default")."""
    from tablekit import default_table

    from autotile.kernels import matmul
    from autotile.tables.run import run_with_table

    cache = tmp_path / "cache"
    monkeypatch.setenv("AUTOTILE_CACHE", str(cache))
    _, rows = mm_rows
    store.save_regressor(CostRegressor("matmul").fit(rows), hw, D.fingerprint(hw))
    assert store.path_for("cost", "matmul", None, hw).is_relative_to(cache)
    table = tmp_path / "table.json"
    table.write_text(json.dumps(default_table()))
    shape = {"m": 7, "n": 3, "k": 5}  # no entry fits (every tuned base block is wider)
    _, kernel = run_with_table("matmul", matmul.make_inputs(shape, "fp16", seed=0), table)
    code, out, err = run_cli("lookup", str(table), "--shape", "m=7,n=3,k=5", "--json")
    assert code == 0, err
    assert json.loads(out) == kernel.to_json() and kernel.match == "default"
    code, out, err = run_cli("lookup", str(table), "--shape", "m=7,n=3,k=5", "--models", str(cache), "--json")
    assert code == 0, err
    got = json.loads(out)  # the documented way to use train's cache: the model step answers (and says how)
    assert got["match"] in ("model", "default") and "the model's top 8" in got["how"]


def test_learned_windows_keep_a_range_between_grid_sizes(ws_rows, monkeypatch):
    """A learned curve can favour the Cube in a narrow range between two powers of two (decide
    said cube at n=390..401 while the windows, probed on the grid, did not list it)."""
    sel = UnitSelector("weighted_sum").fit(ws_rows)

    def fake(problems):
        return [{"vector": 10.0, "cube": 5.0 if 390 <= s["n"] <= 401 or s["n"] >= 465 else 20.0, "scalar": 99.0}
                for s, _, _ in problems]

    monkeypatch.setattr(sel, "predict_many", fake)
    assert sel.crossover_windows("fp16", data="gm") == [[390, 401], [465, 16384]]
    assert sel.crossover("fp16", data="gm") == 465


def _hinted_train(err: str) -> list[str]:
    """The arguments of the `autotile train ...` command a missing-model message names."""
    import re
    import shlex

    cmd = re.search(r"`(autotile train[^`]*)`", err)
    assert cmd, err
    return shlex.split(cmd.group(1))[1:]


def _small_train(monkeypatch):
    """A train of a few sizes and configurations (in this process: run `train -j 1`)."""
    monkeypatch.setitem(D.PLACEMENTS, "on_chip", (256, 512))
    monkeypatch.setitem(D.PLACEMENTS, "gm", (256, 512))
    monkeypatch.setattr(D, "SPEC_EXHAUSTIVE", 40)
    monkeypatch.setattr(D, "SPEC_TRIALS", 8)
    monkeypatch.setattr(training, "COST_1D", (256, 512, 1, 6))
    monkeypatch.setattr(training, "REFINE", (1, 1))


def test_missing_model_hints_name_a_train_command_that_writes_the_file(tmp_path, monkeypatch, run_cli):
    """The hints said `autotile train -o DIR` (lookup: a default train builds no weighted_sum cost
    model, nor one for the table's profile) and `autotile train` (decide --hw ascend910 --models
    DIR: neither the profile nor the folder)."""
    from tablekit import default_table

    from autotile.hardware import load_profile

    _small_train(monkeypatch)
    spec = tmp_path / "ws.yaml"
    spec.write_text((ROOT / "studies" / "weighted_sum.yaml").read_text().replace(
        "hardware: ascend910b2", "hardware: ascend910").replace("[fp16, fp32, bf16]", "[fp16, fp32]"))  # no bf16 there
    table = tmp_path / "table.json"
    table.write_text(json.dumps(default_table(spec)))
    models = tmp_path / "models dir"  # a space: the command quotes it
    models.mkdir()
    want = ["train", "--ops", "weighted_sum", "--hw", "ascend910", "-o", str(models)]
    code, _, err = run_cli("decide", "weighted_sum", "--shape", "n=300", "--hw", "ascend910", "--models", str(models))
    assert code == 2 and "no trained model" in err and _hinted_train(err) == want
    code, _, err = run_cli("lookup", str(table), "--shape", "n=777", "--models", str(models), "--json")
    assert code == 0 and "no cost model for weighted_sum" in err and _hinted_train(err) == want
    assert run_cli(*want, "-j", "1", "--json")[0] == 0
    hw = load_profile("ascend910")
    assert store.path_for("cost", "weighted_sum", models, hw).exists()
    store.load_regressor("weighted_sum", models, hw=hw)
    code, _, err = run_cli("decide", "weighted_sum", "--shape", "n=300", "--hw", "ascend910", "--models",
                           str(models), "--json")
    assert code == 0, err


def test_feasible_sample_enumerates_a_small_space_instead_of_drawing(monkeypatch):
    """m=n=k=16 has 64 feasible configurations: the 40,000 draws that found them took 15 s of a
    20 s `lookup --models`. The enumeration is the same set; a large space gets the same draws."""
    import random

    from autotile.models import regressor as R
    from autotile.tune.evaluate import config_key

    spec = load_spec(str(ROOT / "studies" / "matmul.yaml"))
    small = spec.space({"m": 16, "n": 16, "k": 16}, "fp16", "cube")
    every = {config_key(small.enumerate().row(i)) for i in range(len(small.enumerate()))}
    draws = []
    real = D.random_config
    monkeypatch.setattr(D, "random_config", lambda *a: draws.append(1) or real(*a))
    got = R.feasible_sample(small)
    assert not draws and {config_key(c) for c in got} == every and len(got) == len(every) == 64
    big = spec.space({"m": 1000, "n": 77, "k": 33}, "fp16", "cube")
    got = R.feasible_sample(big, count=300, seed=3)
    assert len(draws) >= 300
    rng, want, seen = random.Random(3), [], set()  # the draws as they were, over space.domain itself
    while len(want) < 300:
        cfg = real(big, rng)
        if cfg is not None and config_key(cfg) not in seen:
            seen.add(config_key(cfg))
            if big.check(cfg) is None:
                want.append(cfg)
    assert got == want
