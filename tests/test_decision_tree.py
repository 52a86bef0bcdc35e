"""The seed talks' decision tree, each decision made by comparing simulated costs of real kernels.

Still missing here (see the report): matmul Vector vs Cube and global-sum Vector tree vs Cube/Scalar.
"""

import pytest

from autotile.hardware import load_profile
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
