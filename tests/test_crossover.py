"""The Vector-to-Cube crossover of weighted_sum comes out of simulation."""

from autotile.cli import run
from autotile.hardware import load_profile
from autotile.models.crossover import best, crossover

HW = load_profile()


def test_on_chip_crossover_is_where_cube_starts_winning():
    res = crossover("weighted_sum", "fp16", HW, on_chip=True)
    n = res["n"]
    assert n is not None and 256 <= n <= 4096
    assert best("weighted_sum", "cube", n, "fp16", HW, True)[0] < best("weighted_sum", "vector", n, "fp16", HW, True)[0]
    assert best("weighted_sum", "cube", 256, "fp16", HW, True)[0] > best("weighted_sum", "vector", 256, "fp16", HW, True)[0]


def test_cli_prints_both_framings(capsys):
    assert run(["crossover", "weighted_sum", "--dtype", "fp16", "--json"]) == 0
    out = capsys.readouterr().out
    assert '"simulated_n"' in out and '"end_to_end_n"' in out


def test_cli_rejects_unknown_unit(capsys):
    assert run(["crossover", "weighted_sum", "--large-unit", "tpu"]) == 2


def test_tiles_longer_than_a_core_slice_simulate_like_the_covering_tile():
    """``best`` skips them: the kernels clamp a tile to the core's slice, so they are duplicates.

    If a kernel stopped clamping, the skip would change "best"; this catches it.
    """
    from autotile.kernels import registry
    from autotile.models import crossover as X

    checked = 0
    for op, units in X.CATEGORICAL.items():
        mod = registry.implementation(op)
        for unit in units:
            for n, on_chip in ((100, True), (3000, False), (5000, True), (70000, False)):
                dtype = registry.get(op).dtypes[-1]
                opts = {"data": "on_chip"} if on_chip else None
                cands = X.candidate_params(op, unit, n, HW, on_chip)
                tiles = sorted({p["tile_len"] for p in cands})
                full = {}
                for p in cands:
                    r = mod.simulate({"n": n}, p, dtype, HW, unit=unit, options=opts)
                    full[tuple(sorted(p.items()))] = r.cycles if r.feasible else None
                for p in cands:
                    cover = X.covering_tile(n, p["cores"], tiles)
                    got = full[tuple(sorted(p.items()))]
                    if cover is None or p["tile_len"] <= cover or got is None:
                        continue
                    assert got == full[tuple(sorted({**p, "tile_len": cover}.items()))], (op, unit, n, p)
                    checked += 1
                feasible = [(c, dict(k)) for k, c in full.items() if c is not None]
                want = min(c for c, _ in feasible)
                got_c, got_p = X.best(op, unit, n, dtype, HW, on_chip)
                assert got_c == want and full[tuple(sorted(got_p.items()))] == want
                first = next(p for c, p in ((full[tuple(sorted(p.items()))], p) for p in cands) if c == want)
                assert got_p == first  # the same pick as the exhaustive grid, ties included
    assert checked > 500
