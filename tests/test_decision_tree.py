"""The seed talks' decision tree, each decision made by comparing simulated costs of real kernels.

Each unit is taken at its best tiling on a small deterministic grid (``models.crossover.best`` for
the 1-D ops, ``matmul.grid_best`` for matmul).
"""

import pytest

from autotile.hardware import load_profile
from autotile.kernels import matmul as mm
from autotile.models.crossover import best

HW = load_profile()


def _winner(op, n, units, dtype="fp16", on_chip=False):
    return min(units, key=lambda u: best(op, u, n, dtype, HW, on_chip)[0])


@pytest.mark.parametrize("n", [512, 4096, 1 << 16])  # 1 KiB and up in fp16
def test_elementwise_above_1kb_goes_to_vector(n):
    assert _winner("elementwise", n, ("vector", "scalar")) == "vector"


@pytest.mark.parametrize("n", [16, 64])
@pytest.mark.parametrize("on_chip", [True, False])
def test_tiny_weighted_sum_goes_to_vector_or_scalar(n, on_chip):
    assert _winner("weighted_sum", n, ("vector", "scalar", "cube"), on_chip=on_chip) in ("vector", "scalar")


@pytest.mark.parametrize("n", [4096, 1 << 18])
def test_precise_sigmoid_goes_to_vector(n):
    assert _winner("sigmoid", n, ("vector", "scalar"), dtype="fp32") == "vector"


@pytest.mark.parametrize("n", [1 << 16, 1 << 22])
def test_global_sum_goes_to_the_vector_tree(n):
    assert _winner("global_sum", n, ("vector", "cube", "scalar")) == "vector"


@pytest.mark.parametrize("size", [64, 128, 256])
def test_matmul_from_64_cubed_goes_to_cube(size):
    shape = {"m": size, "n": size, "k": size}
    cube, vector = mm.grid_best(shape, "fp16", HW, "cube")[0], mm.grid_best(shape, "fp16", HW, "vector")[0]
    assert cube < vector


def test_tiny_matmul_is_close_and_vector_wins_the_tiniest():
    # what the simulator says: the cube's fixed costs (L1/L0 staging, Mmad latency, FixPipe) make
    # 4x4x16 a near tie (cube ahead by ~2%) and hand 2x8x8 to the Vector
    tie = {u: mm.grid_best({"m": 4, "n": 4, "k": 16}, "fp16", HW, u)[0] for u in ("cube", "vector")}
    assert abs(tie["cube"] - tie["vector"]) < 0.1 * tie["cube"]
    tiny = {"m": 2, "n": 8, "k": 8}
    assert mm.grid_best(tiny, "fp16", HW, "vector")[0] < mm.grid_best(tiny, "fp16", HW, "cube")[0]
