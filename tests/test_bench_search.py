"""bench-search and the synthetic landscapes: known optimum, budgets as the tuner counts them."""

from __future__ import annotations

import importlib.util
import itertools
import json

import pytest

from autotile.cli import run as cli
from autotile.space import load_spec
from autotile.tune import benchsearch, landscapes
from autotile.tune.evaluate import make_evaluator


@pytest.fixture(scope="module")
def needle_spec(tmp_path_factory):
    folder = tmp_path_factory.mktemp("needle")
    land = landscapes.needle(0)
    landscapes.write(land, folder / "needle.json.gz")
    landscapes.write_spec(land, folder / "needle.json.gz", folder / "needle.yaml")
    return load_spec(folder / "needle.yaml")


def test_landscape_characters():
    needle, bowl, failing = (landscapes.GENERATORS[n](1) for n in ("needle", "bowl", "failing"))
    assert 1000 <= len(needle.times) <= 3000
    assert needle.near(0.05) <= 3 < bowl.near(0.05)
    assert 0.4 < failing.failed() / len(failing.times) < 0.7
    assert 0 < needle.failed() < 0.1 * len(needle.times)
    for land in (needle, bowl, failing):
        assert not isinstance(land.times[tuple(land.best()[0].values())], str)


def test_gemm_landscape_is_large_interacting_and_has_two_basins():
    land = landscapes.gemm(1)
    assert len(land.times) == 10_368
    assert 0.4 < land.failed() / len(land.times) < 0.6
    best_cfg, best = land.best()
    assert land.near(0.05) <= 20
    by_shared = {s: min(t for c, t in land.times.items() if not isinstance(t, str) and c[5] == s)
                 for s in (0, 1)}
    assert min(by_shared.values()) == best and max(by_shared.values()) > 1.1 * best
    # interaction: the best vector width depends on whether A is tiled in shared memory
    for shared in (0, 1):
        at = {v: min(t for c, t in land.times.items() if not isinstance(t, str) and c[5] == shared
                     and c[4] == v) for v in (1, 4)}
        assert (at[4] < at[1]) == (shared == 0)



def test_bank_conflicts_count_words_per_bank():
    assert landscapes._bank_conflicts(32, 1, 1, 48) == 1  # a warp reads one row, stride 1
    assert landscapes._bank_conflicts(32, 2, 1, 80) == 2  # stride 2: two words per even bank
    assert landscapes._bank_conflicts(32, 4, 1, 144) == 4
    # 16-wide blocks: a warp spans two rows. With stride-2 reads both rows use the even banks
    # when the row stride is even; one padding word moves the second row to the odd banks
    assert landscapes._bank_conflicts(16, 2, 1, 48) == 2
    assert landscapes._bank_conflicts(16, 2, 1, 49) == 1
    # contiguous reads: the rows overlap on 15 banks whether or not the stride is padded
    assert landscapes._bank_conflicts(16, 1, 1, 32) == landscapes._bank_conflicts(16, 1, 1, 33) == 2


def test_convolution_landscape_is_rugged_and_limited_by_shared_memory():
    land = landscapes.convolution(1)
    assert len(land.times) == 4_736  # threads per block in [32, 1024]
    assert all(32 <= c[0] * c[1] <= 1024 for c in land.times)
    compile_failed = [c for c, t in land.times.items() if t == "CompilationFailedConfig"]
    assert 0.2 < len(compile_failed) / len(land.times) < 0.5
    # the input tile with its 16-wide halo over 48 KiB never compiles
    assert all((c[0] * c[2] + 16 + c[4]) * (c[1] * c[3] + 16) * 4 > 48 * 1024 or 24 + 2 * c[2] * c[3] + c[2] > 255
               for c in compile_failed)
    assert land.near(0.05) <= 20
    # rugged: along tile_size_x the time changes direction more than once for most other settings
    ok = {c: t for c, t in land.times.items() if not isinstance(t, str)}
    turns = []
    for (bx, by, ty, pad, ro) in itertools.product(*(land.params[k] for k in
                                                      ("block_size_x", "block_size_y", "tile_size_y", "use_padding", "read_only"))):
        row = [ok.get((bx, by, tx, ty, pad, ro)) for tx in land.params["tile_size_x"]]
        row = [t for t in row if t is not None]
        if len(row) >= 6:
            signs = [b > a for a, b in zip(row, row[1:])]
            turns.append(sum(x != y for x, y in zip(signs, signs[1:])))
    assert len(turns) > 100 and sorted(turns)[len(turns) // 2] >= 2

def test_csv_and_cache_give_the_same_optimum(tmp_path):
    land = landscapes.failing(2)
    opts = []
    for name in ("f.csv", "f.json"):
        landscapes.write(land, tmp_path / name)
        landscapes.write_spec(land, tmp_path / name, tmp_path / f"{name}.yaml")
        spec = load_spec(tmp_path / f"{name}.yaml")
        opts.append(benchsearch.optimum(spec.space(spec.shapes[0]), "time_us"))
    assert opts[0].params == opts[1].params == land.best()[0]
    assert opts[0].value == pytest.approx(land.best()[1] * 1e3, rel=1e-5)
    assert opts[0].feasible == len(land.times) - land.failed()


def test_prefix_of_a_long_run_is_the_short_run(needle_spec):
    space = needle_spec.space(needle_spec.shapes[0])
    ev = make_evaluator(space, ("time_us",))
    long = benchsearch.trace(space, "tpe", 3, 40, "time_us", ev)
    short = benchsearch.trace(space, "tpe", 3, 15, "time_us", ev)
    assert benchsearch.at_budget(long, 15) == (short[-1][1], short)


def test_bench_search_json(needle_spec, capsys):
    code = cli(["bench-search", needle_spec.file, "--samplers", "random,gp", "--budgets", "20,5",
                "--seeds", "3", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    assert out["schema"] == "autotile.bench_search/1" and out["budgets"] == [5, 20]
    (sp,) = out["spaces"]
    assert sp["near_optimal_configs"] == 2 and sp["feasible_configs"] > 1000
    rand, gp = sp["samplers"]
    assert [r["budget"] for r in rand["results"]] == [5, 20]
    for r in rand["results"]:
        assert len(r["fractions"]) == 3 and 0 < r["median_fraction"] <= 1
        assert r["median_trials_to_within"] is None or r["median_trials_to_within"] <= r["budget"]
    assert rand["results"][0]["median_fraction"] <= rand["results"][1]["median_fraction"]
    if importlib.util.find_spec("torch") is None:
        assert gp == {"sampler": "gp", "available": False, "reason": gp["reason"]}
        assert "pip install" in gp["reason"]


def test_whole_space_budget_finds_the_optimum(tmp_path):
    """A simulator spec: the optimum by exhaustive simulation; a budget of the whole space hits it."""
    spec = tmp_path / "ew.yaml"
    spec.write_text("op: elementwise\nshapes: [{n: 256}]\ninputs: {kind: add, data: gm}\nparams:\n"
                    "  tile_len: {type: int, low: 16, high: shape.n, pow2: true}\n"
                    "  buffer_num: {type: fixed, value: 2}\n"
                    "  cores: {type: int, low: 1, high: 4, pow2: true}\n")
    out = benchsearch.bench(load_spec(spec), ("random",), (15,), seeds=2)
    (sp,) = out["spaces"]
    assert out["backend"] == "simulator" and sp["feasible_configs"] == 15
    res = sp["samplers"][0]["results"][0]
    assert res["fractions"] == [1.0, 1.0] and res["reached"] == 2


def test_bad_arguments(needle_spec, capsys):
    assert cli(["bench-search", needle_spec.file, "--samplers", "tpe,annealing"]) == 2
    assert "unknown sampler 'annealing'" in capsys.readouterr().err
    assert cli(["bench-search", needle_spec.file, "--budgets", "10,x"]) == 2


def test_tpe_beats_random_on_the_needle(needle_spec):
    """Reduced from bench/search.py (10 seeds, budgets 100 and 200): 5 seeds, budget 100."""
    out = benchsearch.bench(needle_spec, ("tpe", "random"), (100,), seeds=5)
    tpe, rand = (s["results"][0] for s in out["spaces"][0]["samplers"])
    assert tpe["median_fraction"] > rand["median_fraction"]
    assert tpe["reached"] > rand["reached"]


def test_runs_stop_once_the_space_is_exhausted(tmp_path, capsys):
    """15 feasible configurations and a budget of 1000: each run stops at the 15th, not at the
    cap of 5000 trials, and the output says the space was exhausted."""
    spec = tmp_path / "ew.yaml"
    spec.write_text("op: elementwise\nshapes: [{n: 256}]\ninputs: {kind: add, data: gm}\nparams:\n"
                    "  tile_len: {type: int, low: 16, high: shape.n, pow2: true}\n"
                    "  buffer_num: {type: fixed, value: 2}\n"
                    "  cores: {type: int, low: 1, high: 4, pow2: true}\n")
    space = load_spec(spec).space(load_spec(spec).shapes[0])
    points = benchsearch.trace(space, "random", 0, 1000, "cycles", make_evaluator(space, ("cycles",)), feasible=15)
    assert points[-1][0] == 15 and points[-2][0] < 15
    assert benchsearch.at_budget(points, 1000, 15) == (points[-1][1], points)
    assert cli(["bench-search", str(spec), "--samplers", "random", "--budgets", "5,1000", "--seeds", "1"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[1]: line for line in out.splitlines() if line.split()[:1] == ["random"]}
    assert rows["1000"].endswith("(space exhausted)") and "exhausted" not in rows["5"]
    assert "a budget of 15 or more measures every feasible config" in out
