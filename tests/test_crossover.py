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
