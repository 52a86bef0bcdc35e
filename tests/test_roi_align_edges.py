"""roi_align's verification inputs reach past the feature map, so the gate tests the range test."""

import functools
import inspect
import types

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import njit

from autotile.hardware import load_profile
from autotile.kernels import roi_align as A
from autotile.tune.verify import verify_one

HW = load_profile()
SHAPE = {"n": 2, "c": 8, "h": 16, "w": 16, "rois": 8, "pooled_h": 2, "pooled_w": 2}


RANGE_TEST = "if not (y >= -1.0 and y <= H and x >= -1.0 and x <= W):"


def _mutant_corners():
    """``roi_align._corners`` with its range test cut to a NaN test, made from its own source (so
    the rest stays the kernel's): points off the map clamp to its border pixels instead of adding
    nothing."""
    src = inspect.getsource(A._corners.py_func)
    assert src.count(RANGE_TEST) == 1, "the range test moved: update RANGE_TEST"
    src = src.replace(RANGE_TEST, "if not (y == y and x == x):")
    src = "\n".join(line for line in src.splitlines() if not line.startswith("@"))
    scope = {"np": np}
    exec(compile(src, "<mutant _corners>", "exec"), scope)  # the project's own source, not user text
    return njit(scope["_corners"])


@functools.cache
def _broken_core():
    """A fresh compile of ``roi_align.core`` calling the mutated corners (Numba binds the callee
    when it compiles ``core``, so patching ``_corners`` alone would not reach it)."""
    f = A.core.py_func
    return njit(types.FunctionType(f.__code__, {**f.__globals__, "_corners": _mutant_corners()},
                                   f.__name__))


def test_the_mutation_is_the_one_reported(monkeypatch):
    """A map of 1s and a box from -40 to 16 at scale 0.25, 2 x 2 bins: the reference has
    [[0, 0], [0, 0.25]], the kernel without a range test all 1s."""
    inputs = (np.ones((1, 16, 16, 1)), np.array([[0, -40.0, -40.0, 16.0, 16.0]]), np.array([2, 2]))
    o = {"spatial_scale": 0.25, "sampling_ratio": 2, "aligned": True}
    p = {"tile_rois": 1, "tile_bins": 4, "tile_c": 1, "buffer_num": 2, "cores": 1}
    assert A.reference(inputs, "fp32", options=o)[0, :, :, 0].tolist() == [[0, 0], [0, 0.25]]
    monkeypatch.setattr(A, "core", _broken_core())
    assert A.execute(inputs, p, "fp32", HW, options=o)[0, :, :, 0].tolist() == [[1, 1], [1, 1]]


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
@pytest.mark.parametrize("sr", [2, 0])
@pytest.mark.parametrize("aligned", [True, False])
def test_the_gate_rejects_a_kernel_without_the_range_test(monkeypatch, aligned, sr, dtype):
    """make_inputs drew every box inside the image, so no sampling point left the map and the
    kernel above passed the gate at every bundled roi_align shape, aligned or not, sampling
    ratio 2 or adaptive. The edge boxes (``edge_rois``) put points off the map."""
    o = {"spatial_scale": 0.25, "sampling_ratio": sr, "aligned": aligned}
    p = A.default_params(SHAPE, dtype, HW, options=o)
    assert verify_one(A, SHAPE, p, dtype, HW, options=o).passed
    monkeypatch.setattr(A, "core", _broken_core())
    v = verify_one(A, SHAPE, p, dtype, HW, options=o)
    assert not v.passed and v.max_abs_error > 0.1


def _points(roi, o, shape):
    """(inside, outside): the ROI's sampling points on [-1, h] x [-1, w] and off it."""
    sh, sw, bh, bw, gh, gw = A._roi_geometry(roi, o["spatial_scale"], o["sampling_ratio"], o["aligned"],
                                             shape["pooled_h"], shape["pooled_w"])
    ys = [A._coord(sh, b, bh, i, gh) for b in range(shape["pooled_h"]) for i in range(gh)]
    xs = [A._coord(sw, b, bw, i, gw) for b in range(shape["pooled_w"]) for i in range(gw)]
    ok = [-1 <= y <= shape["h"] and -1 <= x <= shape["w"] for y in ys for x in xs]
    return sum(ok), len(ok) - sum(ok)


@pytest.mark.parametrize("aligned", [True, False])
@pytest.mark.parametrize("scale", [0.25, 1.0])
def test_edge_boxes_sample_off_the_map_and_one_samples_nothing(aligned, scale):
    """Of the verification ROIs the first and last have sampling points on the map and off it,
    the middle one only off it (its output is 0); the seeded boxes have none off it."""
    o = A.opts({"spatial_scale": scale, "sampling_ratio": 2, "aligned": aligned})
    seeded = A.make_rois(SHAPE, o)
    feat, rois, pooled = A.make_inputs(SHAPE, "fp32", options=o)
    moved = np.flatnonzero(np.any(rois != seeded, axis=1)).tolist()
    assert moved == [0, SHAPE["rois"] // 2, SHAPE["rois"] - 1]
    assert all(_points(r, o, SHAPE)[1] == 0 for r in seeded)
    first, past, last = (_points(rois[i], o, SHAPE) for i in moved)
    assert min(first) > 0 and min(last) > 0 and past[0] == 0
    assert np.all(A.reference((feat, rois, pooled), "fp32", options=o)[moved[1]] == 0)


@pytest.mark.parametrize("rois, moved", [(1, [0]), (2, [0, 1]), (3, [0, 1, 2])])
def test_few_rois_move_as_many_as_there_are(rois, moved):
    shape = {**SHAPE, "rois": rois}
    o = {"spatial_scale": 0.25}
    got = A.make_inputs(shape, "fp32", options=o)[1]
    assert np.flatnonzero(np.any(got != A.make_rois(shape, o), axis=1)).tolist() == moved


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 3000), w=st.integers(1, 3000), ph=st.integers(1, 9), pw=st.integers(1, 9),
       rois=st.integers(1, 50), aligned=st.booleans(), scale=st.sampled_from([1e-3, 0.0625, 0.25, 1.0, 4.0]),
       seed=st.integers(0, 9), lo=st.sampled_from([0.01, 0.05, 0.5, 1.0]), hi=st.sampled_from([0.05, 0.3, 0.5, 1.0]))
def test_edge_boxes_need_no_more_ub_than_the_check_sized(h, w, ph, pw, rois, aligned, scale, seed, lo, hi):
    """An adaptive grid of the moved boxes stays within the one UB is sized by without them, so
    a tiling the study found feasible executes on the gate's inputs."""
    shape = {"n": 1, "c": 1, "h": h, "w": w, "rois": rois, "pooled_h": ph, "pooled_w": pw}
    o = A.opts({"sampling_ratio": 0, "aligned": aligned, "spatial_scale": scale, "roi_seed": seed,
                "roi_min": min(lo, hi), "roi_max": hi})
    moved = A.edge_rois(shape, A.make_rois(shape, o), o)
    assert A.ub_grid(shape, moved, o) == A.ub_grid(shape, None, o)
