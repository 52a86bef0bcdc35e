"""roi_align: the reference's documented semantics, execute mode against it, and ROI-dependent cost."""

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tablekit import default_table

from autotile.errors import InfeasibleConfig, InputError
from autotile.hardware import load_profile
from autotile.kernels import registry
from autotile.kernels import roi_align as A
from autotile.tables.lookup import Lookup
from tests.conftest import MAX_DIM, ROOT, peak_memory

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


@pytest.mark.parametrize("sr", [2, 0])
@pytest.mark.parametrize("bad", [(1, np.nan), (4, np.nan), (3, np.inf)])
def test_nan_or_infinite_roi_coordinates_sample_nothing(sr, bad):
    """torchvision's range test is negated, so a NaN sampling point is outside and adds 0; the
    reference raised (int of NaN) and execute returned NaN. An adaptive grid of a NaN or
    infinite size has no points."""
    feat = np.ones((1, 4, 4, 2), np.float32)
    rois = np.array([[0, 0.0, 0.0, 2.0, 2.0], [0, 0.0, 0.0, 2.0, 2.0]])
    rois[0, bad[0]] = bad[1]
    o = {"spatial_scale": 1.0, "sampling_ratio": sr, "aligned": False}
    p = {"tile_rois": 1, "tile_bins": 1, "tile_c": 2, "buffer_num": 2, "cores": 1}
    inputs = (feat, rois, np.array([1, 1]))
    for got in (A.reference(inputs, "fp32", options=o), A.execute(inputs, p, "fp32", HW, options=o)):
        assert got.ravel().tolist() == [0.0, 0.0, 1.0, 1.0]


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
    rtol, atol = A.tolerance(dtype, shape)
    assert np.all(np.abs(got - ref) <= atol + rtol * np.abs(ref))


SHAPE = {"n": 2, "c": 64, "h": 64, "w": 64, "rois": 64, "pooled_h": 7, "pooled_w": 7}


@pytest.mark.parametrize("sr", [0, 2])
@pytest.mark.parametrize("aligned", [False, True])
def test_default_params_simulate(sr, aligned):
    o = {"sampling_ratio": sr, "aligned": aligned}
    r = A.simulate(SHAPE, A.default_params(SHAPE, "fp16", HW, options=o), "fp16", HW, options=o)
    assert r.feasible and r.cycles > 0 and 0 < r.pct_of_peak < 100


@pytest.mark.parametrize("sr, depth, tc", [(20, 1, 16), (38, 1, 8)])
def test_a_big_sampling_grid_default_single_buffers_before_giving_up(sr, depth, tc):
    """fp32, 64 channels, 400 points a bin: one bin of 16 channels double buffered needs 204,928
    bytes of UB and the default was that overflowing tiling; single buffered it fits, and at
    1,444 points a bin so does one 32 B block of 8 channels."""
    o = {"sampling_ratio": sr}
    p = A.default_params(SHAPE, "fp32", HW, options=o)
    assert A.simulate(SHAPE, p, "fp32", HW, options=o).feasible
    assert (p["buffer_num"], p["tile_c"]) == (depth, tc)


def test_bigger_boxes_cost_more_with_adaptive_sampling():
    p = {"tile_rois": 1, "tile_bins": 1, "tile_c": 64, "buffer_num": 2, "cores": 16}
    small = A.simulate(SHAPE, p, "fp16", HW, options={"sampling_ratio": 0, "roi_min": 0.05, "roi_max": 0.1})
    big = A.simulate(SHAPE, p, "fp16", HW, options={"sampling_ratio": 0, "roi_min": 0.4, "roi_max": 0.8})
    assert big.cycles > 3 * small.cycles


@pytest.mark.parametrize("o", [{}, {"aligned": False, "roi_max": 0.9}, {"spatial_scale": 1.0, "roi_seed": 3}])
def test_sampling_ratio_minus_one_and_zero_are_one_option(o):
    """Both mean adaptive, so a study records them as one (``autotile.space.options.SAME``)."""
    from autotile.space.options import SAME

    assert SAME[("roi_align", "sampling_ratio")] == {0: -1}
    p = A.default_params(SHAPE, "fp16", HW, options={**o, "sampling_ratio": -1})
    a, b = (A.simulate(SHAPE, p, "fp16", HW, options={**o, "sampling_ratio": sr}) for sr in (-1, 0))
    assert (a.feasible, a.cycles, a.reason, a.pct_of_peak) == (b.feasible, b.cycles, b.reason, b.pct_of_peak)
    assert a.feasible
    inputs = A.make_inputs(SHAPE, "fp16", options=o)
    assert np.array_equal(A.reference(inputs, "fp16", options={**o, "sampling_ratio": -1}),
                          A.reference(inputs, "fp16", options={**o, "sampling_ratio": 0}))


def test_ub_is_sized_by_the_largest_sampling_grid():
    p = {"tile_rois": 2, "tile_bins": 49, "tile_c": 64, "buffer_num": 2, "cores": 1}
    assert A.simulate(SHAPE, p, "fp16", HW, options={"sampling_ratio": 1}).feasible
    r = A.simulate(SHAPE, p, "fp16", HW, options={"sampling_ratio": 4})
    assert not r.feasible and "sampling points" in r.reason




@pytest.mark.parametrize("sr", [-1, 0, 2])
@pytest.mark.parametrize("aligned", [False, True])
def test_check_of_huge_roi_counts_generates_no_rois(sr, aligned):
    """check generated every ROI to find the largest sampling grid: 1.1 GB and 23 s at 1e7 ROIs,
    and a lookup of 2**31-1 ROIs was killed. A fixed sampling ratio needs no ROI; adaptive, past
    EXACT_ROIS the grid is the largest one the generator's boxes can have."""
    o = {"sampling_ratio": sr, "aligned": aligned}
    p = {"tile_rois": 1, "tile_bins": 1, "tile_c": 64, "buffer_num": 2, "cores": 48}
    (q, bufs, _, rois), peak = peak_memory(lambda: A.check({**SHAPE, "rois": MAX_DIM}, p, "fp16", HW, o))
    assert rois is None and bufs["ub"]["used"] <= HW.ub_bytes and peak < 1 << 20
    grid = 4 if sr == 2 else A.ub_grid(SHAPE, None, A.opts(o))
    # tc = c: 2 rows of 2 pixels' 128 B, and one tile of the bin's fp32 sums (256 B)
    assert bufs["ub"]["used"] == 2 * (grid * 4 * 128 + 128) + 256


def test_lookup_of_huge_roi_counts_answers_in_bounded_memory(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text((ROOT / "studies" / "roi_align.yaml").read_text().replace("sampling_ratio: 2", "sampling_ratio: 0"))
    look = Lookup(default_table(spec))
    shape = {"n": 2, "c": 256, "h": 64, "w": 64, "rois": MAX_DIM, "pooled_h": 7, "pooled_w": 7}
    m, peak = peak_memory(lambda: look.find(shape))
    assert m.match == "default" and peak < 4 << 20


@settings(max_examples=60, deadline=None)
@given(h=st.integers(1, 3000), w=st.integers(1, 3000), ph=st.integers(1, 9), pw=st.integers(1, 9),
       rois=st.integers(1, 2000), sr=st.integers(-1, 3), aligned=st.booleans(),
       scale=st.sampled_from([1e-3, 0.0625, 0.25, 1.0, 4.0]), seed=st.integers(0, 9),
       lo=st.sampled_from([0.01, 0.05, 0.5, 1.0]), hi=st.sampled_from([0.05, 0.3, 0.5, 1.0]))
def test_ub_grid_holds_for_the_generated_rois(h, w, ph, pw, rois, sr, aligned, scale, seed, lo, hi):
    shape = {"n": 1, "c": 1, "h": h, "w": w, "rois": rois, "pooled_h": ph, "pooled_w": pw}
    o = A.opts({"sampling_ratio": sr, "aligned": aligned, "spatial_scale": scale, "roi_seed": seed,
                "roi_min": min(lo, hi), "roi_max": hi})
    exact = A._max_grid(shape, A.make_rois(shape, o), o)
    assert A.ub_grid(shape, None, o) == exact if sr > 0 else A.ub_grid(shape, None, o) >= exact


@pytest.mark.parametrize("aligned", [False, True])
@pytest.mark.parametrize("pw", [1, 3])
def test_ub_grid_holds_when_every_box_is_roi_max(aligned, pw):
    """roi_max * w / pooled_w a whole number and every box at roi_max: the float32 rounding of
    the ROI, the scale and the size (1e-3 scales the corners to thousands) must not carry a
    side past it (with the generator's old 2**-40 hair the grid came out 16 against 9)."""
    shape = {"n": 1, "c": 1, "h": 10, "w": 10, "rois": 500, "pooled_h": pw, "pooled_w": pw}
    for seed in range(3):
        o = A.opts({"sampling_ratio": 0, "aligned": aligned, "spatial_scale": 1e-3, "roi_seed": seed,
                    "roi_min": 0.3, "roi_max": 0.3})
        assert A._max_grid(shape, A.make_rois(shape, o), o) == A.ub_grid(shape, None, o)


def test_simulate_generates_the_rois_the_check_did_not():
    """Past EXACT_ROIS (adaptive) the check sizes UB by the bound and simulate makes the ROIs."""
    shape = {"n": 1, "c": 16, "h": 8, "w": 8, "rois": A.EXACT_ROIS + 1, "pooled_h": 1, "pooled_w": 1}
    o = {"sampling_ratio": 0, "roi_max": 0.25}
    p = {"tile_rois": 16, "tile_bins": 1, "tile_c": 16, "buffer_num": 2, "cores": 48}
    r = A.simulate(shape, p, "fp16", HW, options=o)
    assert r.feasible and r.cycles > 0 and 0 < r.pct_of_peak < 100
    # tc = c: 2 rows x 64 B per point, and the 16 ROIs' fp32 sums (64 B each)
    assert r.buffers["ub"]["used"] == 2 * 16 * (A.ub_grid(shape, None, A.opts(o)) * 128 + 32) + 16 * 64


# torchvision's CPU roi_align in float32 (every operation rounded to float32 in its order: a
# line-by-line port of roi_align_kernel.cpp), channel 0 of 3 ROIs x 2 x 2 bins; feat below
TV_FP32 = [
    ((0.0625, 2, True), [-0.02123399, -0.08541405, -0.0930223, -0.11039722, 0.20696019, -0.17962448, 0.17178537,
                         0.05659982, -0.6122179, 0.45957747, 0.37320018, 0.04177548]),
    ((0.1, -1, False), [0.0006129962, -0.00032456283, -0.00020224217, 0.00055328826, 0.004855543, -0.0015623966,
                        0.0, 0.0, -0.0036363318, 0.0, 0.0074643428, 0.0]),
    ((0.0625, 0, True), [-6.0072965e-05, -0.004912392, -0.004154205, -0.005977733, 0.060835272, -0.060260843,
                         0.05729305, -0.012279612, -0.025977261, 0.026884131, 0.015024595, 0.0011515111]),
]


@pytest.mark.parametrize("case", TV_FP32, ids=lambda c: str(c[0]))
def test_fp32_matches_torchvision_float32_coordinates(case):
    """fp32 coordinates rounded as torchvision rounds them: sampling points computed in float64
    moved the result 1.1e-6 (the gate's atol is 1.9e-6; a kernel computing as torchvision does
    was rejected at the study shape); now within a few float32 ulps, reference and kernel."""
    (scale, sr, aligned), want = case
    yy, xx, cc = np.meshgrid(np.arange(24), np.arange(31), np.arange(2), indexing="ij")
    feat = np.sin(0.9 * yy + 1.3 * xx + cc).astype(np.float32)[None]
    rois = np.array([[0, 13.3, 7.1, 301.7, 211.9], [0, -20.2, 101.5, 90.3, 400.77], [0, 250.1, 3.3, 497.9, 377.7]])
    o = {"spatial_scale": scale, "sampling_ratio": sr, "aligned": aligned}
    inputs = (feat, rois, np.array([2, 2]))
    p = {"tile_rois": 2, "tile_bins": 3, "tile_c": 2, "buffer_num": 2, "cores": 2}
    for got in (A.reference(inputs, "fp32", options=o), A.execute(inputs, p, "fp32", HW, options=o)):
        assert np.max(np.abs(got[..., 0].ravel().astype(np.float64) - want)) <= 2.5e-7


_TINY = {"tile_rois": 1, "tile_bins": 4, "tile_c": 4, "buffer_num": 1, "cores": 1}


@pytest.mark.parametrize("batch", [2, 5, -1, 1e6, 0.5, np.nan])
def test_roi_batch_index_outside_the_features_is_an_input_error(batch):
    """rois[:, 0] indexed the features unchecked: 1e6 crashed the process, 2 (of 2 images) read
    garbage and -1 the last image, in execute and in the reference alike."""
    feat = np.ones((2, 8, 8, 4), np.float32)
    rois = np.array([[0, 0, 0, 4, 4.0], [batch, 0, 0, 4, 4.0]])
    inputs = (feat, rois, np.array([2, 2]))
    for run in (lambda: A.execute(inputs, _TINY, "fp32", HW, options={"spatial_scale": 1.0}),
                lambda: A.reference(inputs, "fp32", options={"spatial_scale": 1.0})):
        with pytest.raises(InputError, match=r"rois\[1, 0\]: ROI row 1 has batch index .* expected a whole number "
                                             r"in \[0, 2\)"):
            run()


@pytest.mark.parametrize("inputs, field", [
    ((np.ones((8, 8, 4)), np.array([[0, 0, 0, 4, 4.0]]), np.array([2, 2])), "features"),
    ((np.ones((1, 8, 8, 4)), np.array([[0, 0, 4, 4.0]]), np.array([2, 2])), "rois"),
    ((np.ones((1, 8, 8, 4)), np.array([[0, 0, 0, 4, 4.0]]), np.array([2, 0])), "pooled"),
])
def test_execute_names_a_malformed_input(inputs, field):
    with pytest.raises(InputError, match=f"^{field}: expected"):
        A.execute(inputs, _TINY, "fp32", HW, options={"spatial_scale": 1.0})


@pytest.mark.parametrize("value", [3.0, 0.7])
def test_fp16_bins_sum_in_fp32(value):
    """One full ROI over a constant 24 x 24 fp16 map, adaptive sampling (529 points, 2116
    weighted terms in one bin): the fp16 running sum stalled and the average came out 22% off
    (3.66 for 3.0); summed in fp32 and rounded once it is the constant."""
    feat = np.full((1, 24, 24, 16), value, np.float16)
    inputs = (feat, np.array([[0, 0, 0, 23.0, 23.0]]), np.array([1, 1]))
    o = {"spatial_scale": 1.0, "sampling_ratio": 0, "aligned": False, "roi_max": 1.0}
    p = {"tile_rois": 1, "tile_bins": 1, "tile_c": 16, "buffer_num": 1, "cores": 1}
    got = A.execute(inputs, p, "fp16", HW, options=o)
    assert np.all(got == np.float16(value)) and np.all(A.reference(inputs, "fp16", options=o) == np.float16(value))


def test_the_gate_catches_a_kernel_summing_fp16_in_fp16(monkeypatch):
    """make_inputs drew zero-mean features, whose bin sums stay near 0, and the tolerance was 32
    fp16 eps absolute: a kernel keeping fp16 sums passed. Non-negative features and a tolerance
    of an ulp or so of the output reject it (here at the study's sampling, 16 terms a bin)."""
    shape = {"n": 1, "c": 16, "h": 32, "w": 32, "rois": 8, "pooled_h": 7, "pooled_w": 7}
    o = {"spatial_scale": 0.25, "sampling_ratio": 2}
    p = A.default_params(shape, "fp16", HW, options=o)
    inputs = A.make_inputs(shape, "fp16", options=o)
    rtol, atol = A.tolerance("fp16", shape, p)
    ref = A.reference(inputs, "fp16", options=o).astype(np.float64)

    def within(got):
        return bool(np.all(np.abs(got.astype(np.float64) - ref) <= atol + rtol * np.abs(ref)))

    assert within(A.execute(inputs, p, "fp16", HW, options=o))
    monkeypatch.setattr(A, "ACC", "fp16")
    assert not within(A.execute(inputs, p, "fp16", HW, options=o))


@pytest.mark.parametrize("rois", [94, 100, 1000])
def test_the_default_uses_every_core_it_asks_for(rois):
    """The default asked for min(48, tiles) cores: 94 one-ROI tiles took 2 a core on 47 of the 48
    it launched. It now asks for the cores its tiles keep busy, no slower than asking for all."""
    shape = {"n": 1, "c": 16, "h": 32, "w": 32, "rois": rois, "pooled_h": 7, "pooled_w": 7}
    o = {"spatial_scale": 0.25, "sampling_ratio": 2}
    p = A.default_params(shape, "fp16", HW, options=o)
    r = A.simulate(shape, p, "fp16", HW, options=o)
    every = A.simulate(shape, {**p, "cores": min(HW.vector_cores, A._ntiles(shape, p))}, "fp16", HW, options=o)
    assert r.block_dim == p["cores"] and r.cycles <= every.cycles


def test_a_box_larger_than_the_tiling_holds_is_an_input_error_naming_it():
    """The default tiling holds the grid of roi_max's boxes (5 x 5 points a bin here, 47 at most);
    a whole-image box (10 x 10) raised a raw InfeasibleConfig ("UB overflow") out of execute. A
    box past roi_max whose grid the tiling still holds (6 x 6) runs, as before; a tiling that does
    not hold even roi_max's grid stays infeasible."""
    shape = {"n": 1, "c": 256, "h": 64, "w": 64, "rois": 4, "pooled_h": 7, "pooled_w": 7}
    o = {"spatial_scale": 0.25, "sampling_ratio": 0, "aligned": True}
    p = A.default_params(shape, "fp16", HW, options=o)
    feat = np.ones((1, 64, 64, 256), np.float16)
    rois = np.array([[0, 0, 0, 128, 128], [0, 0, 0, 160, 160], [0, 0, 0, 8, 8], [0, 0, 0, 256, 256]], dtype=float)
    pooled = np.array([7, 7])
    assert np.allclose(A.execute((feat, rois[:3], pooled), p, "fp16", HW, options=o), 1.0, rtol=1e-2)
    with pytest.raises(InputError, match=r"^rois\[3\]: ROI row 3 \(x1, y1, x2, y2\) = \(0, 0, 256, 256\) needs a "
                                         r"10 x 10 sampling grid a bin, more than the tiling holds in UB .* sized for "
                                         r"boxes up to roi_max 0\.5 of the image side \(25 points a bin\); tune with "
                                         r"a larger roi_max \(inputs\.roi_max\)$"):
        A.execute((feat, rois, pooled), p, "fp16", HW, options=o)
    with pytest.raises(InfeasibleConfig, match=r"^UB overflow"):
        A.execute((feat, rois, pooled), {**p, "tile_bins": 49}, "fp16", HW, options=o)


@pytest.mark.parametrize("roi, aligned", [
    ([0, -1e30, 0, 1e30, 2], True),  # 2 x 2e30 points a bin
    ([0, 0, -1e38, 2, 1e38], False),  # 2e38 rows: near float32's largest
    ([0, 1e30, 0, -1e30, 2], True),  # reversed: no points, but a loop of -2e30 columns
    ([0, 0, 0, 65, 64], False),  # 64 x 65: one side past the largest sampling_ratio's 64 x 64
])
def test_a_box_past_the_largest_sampling_grid_is_an_input_error(roi, aligned):
    """A box of 1e30 took execute's int grid to -2**63 (zeros out, its UB check fooled alike) and
    set the reference looping over 2e30 points; both refuse it before running (execute first: it
    returned)."""
    feat = np.ones((1, 64, 64, 1), np.float32)
    o = {"spatial_scale": 1.0, "sampling_ratio": 0, "aligned": aligned}
    inputs = (feat, np.array([[0, 0, 0, 2, 2.0], roi]), np.array([1, 1]))
    p = {"tile_rois": 1, "tile_bins": 1, "tile_c": 1, "buffer_num": 1, "cores": 1}
    for run in (lambda: A.execute(inputs, p, "fp32", HW, options=o), lambda: A.reference(inputs, "fp32", options=o)):
        with pytest.raises(InputError, match=r"^rois\[1\]: ROI row 1 \(x1, y1, x2, y2\) = .* needs a .* adaptive "
                                             r"sampling grid a bin: past 4,096 points a bin or on a side"):
            run()


def test_the_largest_sampling_grid_is_sampled_and_reversed_boxes_sample_nothing():
    """64 x 64 points a bin (the bound) is no error for the reference, a small reversed box
    (aligned: a negative side) samples nothing, and a huge box's grid is no longer 1 to ub_grid."""
    feat = np.ones((1, 64, 64, 1), np.float32)
    o = {"spatial_scale": 1.0, "sampling_ratio": 0, "aligned": True}
    rois = np.array([[0, 0.5, 0.5, 64.5, 64.5], [0, 100, 0, 0, 2]])
    assert A.reference((feat, rois, np.array([1, 1])), "fp32", options=o).ravel().tolist() == [1.0, 0.0]
    shape = {"n": 1, "c": 1, "h": 64, "w": 64, "rois": 1, "pooled_h": 1, "pooled_w": 1}
    assert A.ub_grid(shape, rois, A.opts(o)) == A.MAX_GRID
    assert A.ub_grid(shape, np.array([[0, -1e30, 0, 1e30, 2]]), A.opts(o)) > A.MAX_GRID
    sr = next(opt for opt in registry.get("roi_align").options if opt.name == "sampling_ratio")
    assert A.MAX_GRID == sr.high ** 2  # the largest sampling_ratio's grid
