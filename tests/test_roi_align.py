"""roi_align: the reference's documented semantics, execute mode against it, and ROI-dependent cost."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from autotile.hardware import load_profile
from autotile.kernels import roi_align as A

HW = load_profile()


def _ref(feat, rois, ph, pw, **o):
    return A.reference((feat, np.asarray(rois, dtype=np.float64), np.array([ph, pw])), "fp32", options=o)


def test_linear_map_gives_bin_centres_and_aligned_shifts_half_a_pixel():
    # bilinear interpolation is exact on f(y, x) = x, so each bin's average is its centre's x
    feat = np.tile(np.arange(16.0, dtype=np.float32), (1, 16, 1))[..., None]
    roi = [[0, 2.0, 2.0, 10.0, 10.0]]
    for aligned, off in ((True, 0.5), (False, 0.0)):
        out = _ref(feat, roi, 2, 4, spatial_scale=1.0, sampling_ratio=2, aligned=aligned)[0, 0, :, 0]
        assert np.allclose(out, 2.0 - off + (np.arange(4) + 0.5) * 2.0)


def test_points_beyond_the_map_contribute_zero_and_small_boxes_grow_to_one_pixel():
    feat = np.ones((1, 8, 8, 1), dtype=np.float32)
    far = _ref(feat, [[0, 100.0, 100.0, 120.0, 120.0]], 2, 2, spatial_scale=1.0, sampling_ratio=2, aligned=False)
    assert np.all(far == 0)
    ramp = np.tile(np.arange(8.0, dtype=np.float32), (1, 8, 1))[..., None]
    tiny = _ref(ramp, [[0, 3.0, 3.0, 3.0, 3.0]], 1, 1, spatial_scale=1.0, sampling_ratio=1, aligned=False)
    assert np.isclose(tiny[0, 0, 0, 0], 3.5)  # width forced to 1: the sample sits at 3 + 0.5


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 6), h=st.integers(1, 10), w=st.integers(1, 10),
       rois=st.integers(1, 5), ph=st.integers(1, 3), pw=st.integers(1, 3), tr=st.integers(1, 3),
       tb=st.integers(1, 5), tc=st.integers(1, 4), cores=st.integers(1, 4), sr=st.integers(-1, 3),
       aligned=st.booleans(), scale=st.sampled_from([0.25, 0.5, 1.0]), seed=st.integers(0, 9),
       dtype=st.sampled_from(["fp32", "fp16"]))
def test_execute_matches_reference(n, c, h, w, rois, ph, pw, tr, tb, tc, cores, sr, aligned, scale, seed, dtype):
    shape = {"n": n, "c": c, "h": h, "w": w, "rois": rois, "pooled_h": ph, "pooled_w": pw}
    o = {"spatial_scale": scale, "sampling_ratio": sr, "aligned": aligned, "roi_seed": seed, "roi_min": 0.05,
         "roi_max": 1.0}
    p = {"tile_rois": tr, "tile_bins": tb, "tile_c": tc, "buffer_num": 2, "cores": cores}
    assume(A.simulate(shape, p, dtype, HW, options=o).feasible)
    inputs = A.make_inputs(shape, dtype, seed=seed, options=o)
    got = A.execute(inputs, p, dtype, HW, options=o).astype(np.float64)
    ref = A.reference(inputs, dtype, options=o).astype(np.float64)
    assert got.shape == ref.shape == (rois, ph, pw, c)
    assert np.max(np.abs(got - ref)) <= A.tolerance(dtype, shape)[1]


SHAPE = {"n": 2, "c": 64, "h": 64, "w": 64, "rois": 64, "pooled_h": 7, "pooled_w": 7}


@pytest.mark.parametrize("sr", [0, 2])
@pytest.mark.parametrize("aligned", [False, True])
def test_default_params_simulate(sr, aligned):
    o = {"sampling_ratio": sr, "aligned": aligned}
    r = A.simulate(SHAPE, A.default_params(SHAPE, "fp16", HW, options=o), "fp16", HW, options=o)
    assert r.feasible and r.cycles > 0 and 0 < r.pct_of_peak < 100


def test_bigger_boxes_cost_more_with_adaptive_sampling():
    p = {"tile_rois": 1, "tile_bins": 1, "tile_c": 64, "buffer_num": 2, "cores": 16}
    small = A.simulate(SHAPE, p, "fp16", HW, options={"sampling_ratio": 0, "roi_min": 0.05, "roi_max": 0.1})
    big = A.simulate(SHAPE, p, "fp16", HW, options={"sampling_ratio": 0, "roi_min": 0.4, "roi_max": 0.8})
    assert big.cycles > 3 * small.cycles


def test_ub_is_sized_by_the_largest_sampling_grid():
    p = {"tile_rois": 2, "tile_bins": 49, "tile_c": 64, "buffer_num": 2, "cores": 1}
    assert A.simulate(SHAPE, p, "fp16", HW, options={"sampling_ratio": 1}).feasible
    r = A.simulate(SHAPE, p, "fp16", HW, options={"sampling_ratio": 4})
    assert not r.feasible and "sampling points" in r.reason
