"""Execute mode's public entry checks its input arrays: the kernels index them in Numba, which
checks no bounds, so a mismatch read past an array's end (nan, garbage, or a crash). Shapes with
a size of 0 are an infeasible configuration naming the dimension, never a ZeroDivisionError."""

import numpy as np
import pytest

from autotile.errors import InfeasibleConfig, InputError
from autotile.hardware import load_profile
from autotile.kernels import (
    copy,
    elementwise,
    global_sum,
    matmul,
    matmul_vector,
    registry,
    resize,
    sigmoid,
    weighted_sum,
)

HW = load_profile()
ONE = np.ones(1000, np.float32)
TILE = {"tile_len": 64, "buffer_num": 2, "cores": 1}


@pytest.mark.parametrize("run, match", [
    # 10 elements where a has 1000: the add read past b's end
    (lambda: elementwise.execute((ONE, ONE[:10]), TILE, "fp32", HW), r"^b: expected 1000 elements, as a has, got 10"),
    (lambda: elementwise.execute((ONE,), TILE, "fp32", HW), r"^inputs: expected 2 input arrays for add, got 1"),
    (lambda: elementwise.execute((ONE, ONE), TILE, "fp32", HW, options={"kind": "relu"}),
     r"^inputs: expected 1 input array for relu, got 2"),
    (lambda: elementwise.execute((ONE.reshape(10, 100), ONE.reshape(10, 100)), TILE, "fp32", HW),
     r"^a: expected a 1-D array, got shape \(10, 100\)"),
    # the weighted sum came out nan
    (lambda: weighted_sum.execute((ONE, ONE[:10]), dict(TILE, acc_dtype="fp32", reduction="tree"), "fp32", HW),
     r"^w: expected 1000 elements, as x has, got 10"),
    (lambda: global_sum.execute((ONE.reshape(10, 100),), dict(TILE, acc_dtype="fp32", combine="vector"), "fp32", HW),
     r"^x: expected a 1-D array"),
    (lambda: sigmoid.execute((ONE.astype(complex),), dict(TILE, variant="exact"), "fp32", HW),
     r"^x: expected real numbers, got dtype complex128"),
    (lambda: copy.execute((ONE.astype(np.float64),), {"block_dim": 1, "tile_bytes": 256, "depth": 2}, "fp32", HW),
     r"^x: expected float32 values for fp32, got float64"),
    (lambda: resize.execute((np.zeros((4, 4), np.float32), np.array([2, 2])),
                            {"tile_h": 1, "tile_w": 16, "tile_c": 1, "buffer_num": 1, "cores": 1}, "fp32", HW),
     r"^x: expected a 4-D array"),
    (lambda: resize.execute((np.zeros((1, 1, 4, 4), np.float32), np.array([2.5, 2])),
                            {"tile_h": 1, "tile_w": 16, "tile_c": 1, "buffer_num": 1, "cores": 1}, "fp32", HW),
     r"^sizes: expected two whole output sizes"),
    (lambda: matmul_vector.execute((np.ones((4, 8)), np.ones((6, 4))), {"tile_m": 4, "buffer_num": 1, "cores": 1},
                                   "fp32", HW),
     r"^B: expected 8 rows, as A \(4, 8\) has columns, got 6"),
])
def test_mismatched_inputs_are_an_input_error(run, match):
    with pytest.raises(InputError, match=match):
        run()


@pytest.mark.parametrize("inputs, kind, match", [
    ((ONE,), "add", r"^inputs: expected 2 input arrays for add, got 1"),
    ((ONE, ONE), "relu", r"^inputs: expected 1 input array for relu, got 2"),
    ((ONE, ONE[:10]), "mul", r"^b: expected 1000 elements, as a has, got 10"),
    ((ONE.reshape(10, 100),), "relu", r"^a: expected a 1-D array"),
])
def test_the_elementwise_reference_checks_its_inputs_as_execute_does(inputs, kind, match):
    """The reference of add given one array raised a bare IndexError (execute named the input)."""
    with pytest.raises(InputError, match=match):
        elementwise.reference(inputs, "fp32", options={"kind": kind})


SHAPES = {"copy": {"n": 64}, "weighted_sum": {"n": 64}, "global_sum": {"n": 64}, "sigmoid": {"n": 64},
          "elementwise": {"n": 64}, "resize": {"n": 1, "c": 1, "h_in": 4, "w_in": 4, "h_out": 3, "w_out": 3},
          "roi_align": {"n": 1, "c": 4, "h": 8, "w": 8, "rois": 4, "pooled_h": 2, "pooled_w": 2}}


@pytest.mark.parametrize("op, dim", [(op, d) for op, s in SHAPES.items() for d in s])
def test_a_size_of_zero_is_infeasible_naming_it(op, dim):
    """resize's h_out = 0 raised ZeroDivisionError (the tile count), roi_align's n = 0 a ValueError
    of the ROI generator, and h_in, w_in, h and w = 0 simulated as feasible."""
    kernel = registry.implementation(op)
    shape = SHAPES[op]
    for unit in kernel.UNITS:
        r = kernel.simulate({**shape, dim: 0}, kernel.default_params(shape, "fp32", HW, unit), "fp32", HW, unit=unit)
        assert not r.feasible and r.reason == f"shape.{dim}=0, expected a positive integer"


def test_zero_rows_for_the_vector_matmul_are_infeasible():
    with pytest.raises(InfeasibleConfig, match=r"shape.k=0"):
        matmul_vector.check({"m": 4, "n": 4, "k": 0}, {"tile_m": 4, "buffer_num": 1, "cores": 1}, "fp32", HW)


def test_resize_execute_with_an_output_size_of_zero_names_it():
    with pytest.raises(InfeasibleConfig, match=r"shape.h_out=0, expected a positive integer"):
        resize.execute((np.zeros((1, 1, 4, 4), np.float32), np.array([0, 3])),
                       {"tile_h": 1, "tile_w": 16, "tile_c": 1, "buffer_num": 1, "cores": 1}, "fp32", HW)


def test_cube_matmul_checks_its_inputs_and_sizes():
    """The cube matmul read B past its end when B had fewer rows than A has columns, and its
    check divided by zero for m or n = 0 (k = 0 passed as feasible)."""
    hw = HW
    params = matmul.default_params({"m": 32, "n": 32, "k": 64}, "fp16", hw)
    a, b = np.ones((32, 64), np.float16), np.ones((48, 32), np.float16)
    with pytest.raises(InputError, match="expected 64 rows"):
        matmul.execute((a, b), params, "fp16", hw)
    with pytest.raises(InputError, match="two inputs"):
        matmul.execute((a,), params, "fp16", hw)
    for dim in ("m", "n", "k"):
        shape = {"m": 32, "n": 32, "k": 64} | {dim: 0}
        with pytest.raises(InfeasibleConfig, match=f"shape.{dim}=0"):
            matmul.check(shape, params, "fp16", hw)
