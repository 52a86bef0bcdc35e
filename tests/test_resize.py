"""resize: the reference against PyTorch's documented outputs, execute mode against the reference."""

import itertools

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from tablekit import default_table

from autotile.hardware import load_profile
from autotile.kernels import resize as R
from autotile.tables.lookup import Lookup
from tests.conftest import MAX_DIM, ROOT, peak_memory

HW = load_profile()


def _ref(x, ho, wo, **opts):
    return R.reference((np.asarray(x, dtype=np.float32)[None, None], np.array([ho, wo])), "fp32", options=opts)[0, 0]


def test_reference_matches_pytorch_documented_values():
    x = [[1.0, 2.0], [3.0, 4.0]]
    # F.interpolate(x, size=4, mode="bilinear", align_corners=False)
    assert np.allclose(_ref(x, 4, 4, mode="bilinear"), [[1.0, 1.25, 1.75, 2.0], [1.5, 1.75, 2.25, 2.5],
                                                         [2.5, 2.75, 3.25, 3.5], [3.0, 3.25, 3.75, 4.0]])
    # align_corners=True keeps the corners and spaces the rest evenly
    assert np.allclose(_ref(x, 3, 3, mode="bilinear", align_corners=True), [[1, 1.5, 2], [2, 2.5, 3], [3, 3.5, 4]])
    assert np.allclose(_ref(x, 4, 4, mode="nearest"), [[1, 1, 2, 2], [1, 1, 2, 2], [3, 3, 4, 4], [3, 3, 4, 4]])
    row = np.arange(5.0)[None]
    assert np.allclose(_ref(row, 1, 3, mode="nearest"), [[0, 1, 3]])  # floor(d * 5/3)
    # downsampling by 2 without align_corners averages pixel pairs
    assert np.allclose(_ref(np.arange(8.0)[None], 1, 4, mode="bilinear"), [[0.5, 2.5, 4.5, 6.5]])


# -- PyTorch's index arithmetic, restated from ATen's UpSample.h for fp16/fp32 inputs ---------

F = np.float32


def _torch_nearest(i: int, o: int) -> np.ndarray:
    """nearest_idx: a copy when o == i, a shift when o == 2 i, else
    min(floorf(dst * ((float)i / o)), i - 1) with every operation in float32."""
    d = np.arange(o)
    if o == i:
        return d
    if o == 2 * i:
        return d >> 1
    return np.minimum(np.floor(d.astype(F) * (F(i) / F(o))).astype(np.int64), i - 1)


def _torch_linear(i: int, o: int, align: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """compute_source_index_and_lambda with an opmath (float32) scale: (i0, i1, lambda1)."""
    d = np.arange(o)
    if o == i:
        return d, d, np.zeros(o, dtype=F)
    if align:
        src = (F(i - 1) / F(o - 1) if o > 1 else F(0)) * d.astype(F)
    else:
        # fused multiply-add: the float64 product of float32 values and the -0.5 are exact here
        src = np.maximum((float(F(i) / F(o)) * (d + 0.5) - 0.5).astype(F), F(0))
    i0 = np.minimum(np.floor(src).astype(np.int64), i - 1)
    return i0, np.minimum(i0 + 1, i - 1), np.clip(src - i0.astype(F), F(0), F(1))


PAIRS = [(i, o) for i in range(1, 200) for o in range(1, 400)]


@pytest.mark.parametrize("i, o, dst, want", [(2, 50, 37, 0.99999994), (37, 100, 43, 15.595000267)])
def test_bilinear_source_matches_measured_pytorch(i, o, dst, want):
    """Coordinates torch 2.13 (CPU) computed for align_corners=False, where rounding the product
    before subtracting 0.5 gives 1.0 and 15.594999 (the first one another source pixel)."""
    i0, _, lam = R.src_index(o, i, "bilinear", False)
    assert i0[dst] + lam[dst] == pytest.approx(want, abs=1e-6) and i0[dst] == int(want)
    assert i0[dst] + lam[dst] == float(np.float32(want))


def test_nearest_indices_follow_pytorch_float32_arithmetic():
    """float64 arithmetic picked another source pixel for 2868 of these pairs (in=2, out=82,
    dst=41: 1 where PyTorch takes 0)."""
    for i, o in PAIRS:
        i0, i1, lam = R.src_index(o, i, "nearest", False)
        want = _torch_nearest(i, o)
        assert np.array_equal(i0, want) and np.array_equal(i1, want) and not lam.any(), (i, o)


@pytest.mark.parametrize("align", [False, True])
def test_bilinear_indices_and_weights_follow_pytorch_float32_arithmetic(align):
    for i, o in PAIRS[::3]:
        i0, i1, lam = R.src_index(o, i, "bilinear", align)
        want0, want1, want_lam = _torch_linear(i, o, align)
        assert np.array_equal(i0, want0) and np.array_equal(i1, want1), (i, o)
        assert np.array_equal(lam, want_lam.astype(np.float64)), (i, o)


@pytest.mark.parametrize("mode,align", [("nearest", False), ("bilinear", False), ("bilinear", True)])
def test_reference_follows_pytorch_float32_arithmetic(mode, align):
    """On a ramp (value = column) the reference's output is the PyTorch source coordinate:
    the index for nearest, i0 + lambda1 (its weights rounded to the dtype) for bilinear."""
    for i, o in PAIRS[::7]:
        out = _ref(np.arange(i, dtype=np.float64)[None], 1, o, mode=mode, align_corners=align)[0]
        if mode == "nearest":
            assert np.array_equal(out, _torch_nearest(i, o)), (i, o)
            continue
        i0, i1, lam = _torch_linear(i, o, align)
        want = (F(1) - lam).astype(np.float64) * i0 + lam.astype(np.float64) * i1
        assert np.array_equal(out, want.astype(F)), (i, o)


@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_execute_takes_pytorch_source_pixel(dtype):
    """in=2, out=82: output column 41 is source column 0 in PyTorch (float64 said 1)."""
    shape = {"n": 1, "c": 1, "h_in": 1, "w_in": 2, "h_out": 1, "w_out": 82}
    opts = {"mode": "nearest"}
    x = np.array([[[[0.25, 0.75]]]])
    p = {"tile_h": 1, "tile_w": 16, "tile_c": 1, "buffer_num": 2, "cores": 2}
    got = R.execute((x, np.array([1, 82])), p, dtype, HW, options=opts)[0, 0, 0]
    assert got[41] == 0.25 and got[42] == 0.75 and np.array_equal(got, x[0, 0, 0, _torch_nearest(2, 82)])
    assert R.simulate(shape, p, dtype, HW, options=opts).feasible


@settings(max_examples=25, deadline=None)
@given(n=st.integers(1, 2), c=st.integers(1, 5), hi=st.integers(1, 12), wi=st.integers(1, 12),
       ho=st.integers(1, 12), wo=st.integers(1, 40), th=st.integers(1, 5), tw=st.integers(1, 17),
       tc=st.integers(1, 4), cores=st.integers(1, 6), mode=st.sampled_from(R.MODES),
       layout=st.sampled_from(R.LAYOUTS), ac=st.booleans(), dtype=st.sampled_from(["fp32", "fp16"]))
def test_execute_matches_reference(n, c, hi, wi, ho, wo, th, tw, tc, cores, mode, layout, ac, dtype):
    shape = {"n": n, "c": c, "h_in": hi, "w_in": wi, "h_out": ho, "w_out": wo}
    opts = {"mode": mode, "layout": layout, "align_corners": ac and mode == "bilinear"}
    p = {"tile_h": th, "tile_w": tw, "tile_c": tc, "buffer_num": 2, "cores": cores}
    assume(R.simulate(shape, p, dtype, HW, options=opts).feasible)
    inputs = R.make_inputs(shape, dtype, seed=hi * 100 + wo, options=opts)
    got = R.execute(inputs, p, dtype, HW, options=opts).astype(np.float64)
    ref = R.reference(inputs, dtype, options=opts).astype(np.float64)
    rtol, atol = R.tolerance(dtype, shape)
    assert got.shape == ref.shape
    assert np.max(np.abs(got - ref)) <= atol


@pytest.mark.parametrize("mode,ac", [("nearest", False), ("bilinear", False), ("bilinear", True)])
@pytest.mark.parametrize("layout", R.LAYOUTS)
def test_default_params_simulate(mode, layout, ac):
    shape = {"n": 1, "c": 64, "h_in": 128, "w_in": 128, "h_out": 256, "w_out": 256}
    opts = {"mode": mode, "layout": layout, "align_corners": ac}
    r = R.simulate(shape, R.default_params(shape, "fp16", HW, options=opts), "fp16", HW, options=opts)
    assert r.feasible and r.cycles > 0 and 0 < r.pct_of_bandwidth <= 100


def _widest_span(w_in, w_out, tw, mode, ac) -> int:
    """Source columns the widest of the output's tw-column tiles really reads."""
    i0, i1, _ = R.src_index(w_out, w_in, mode, ac)
    starts = np.arange(0, w_out, min(tw, w_out))
    ends = np.minimum(starts + tw, w_out) - 1
    return int(np.max(i1[ends] - i0[starts] + 1))


def _span_cases(seed):
    rng = np.random.default_rng(seed)
    sizes = [(i, o) for i in range(1, 41) for o in range(1, 41)]
    sizes += [tuple(int(v) for v in rng.integers(1, 5000, 2)) for _ in range(300)]
    sizes += [tuple(int(v) for v in rng.integers(2000, 20000, 2)) for _ in range(60)]  # float32 rounding shows
    sizes += [(n, n - 1) for n in (2049, 4097, 8191, 16385)] + [(n - 1, n) for n in (2049, 4097, 8191, 16385)]
    for (i, o), (mode, ac) in itertools.product(sizes, [("nearest", False), ("bilinear", False), ("bilinear", True)]):
        for tw in (1, 2, 3, 7, 16, 17, 64, 100, 128, 1024):
            if tw <= o or tw == 16:
                yield i, o, tw, mode, ac


def test_span_bound_covers_every_tile_and_is_tight():
    """The UB check (and the spec's constraint) sizes a tile's source rows by a closed form of the
    index rule, with a slack for float32 rounding: never fewer columns than a tile reads (the
    buffers must fit), at most two more, and mostly exact or one more."""
    over = {}
    for i, o, tw, mode, ac in _span_cases(0):
        bound, real = R.span_bound(i, o, tw, mode, ac), _widest_span(i, o, tw, mode, ac)
        assert real <= bound <= real + 2, (i, o, tw, mode, ac, real, bound)
        over[bound - real] = over.get(bound - real, 0) + 1
    assert over.get(2, 0) < 0.01 * sum(over.values()), over


def test_bilinear_ub_counts_two_source_rows_per_output_row():
    shape = {"n": 1, "c": 1, "h_in": 4096, "w_in": 4096, "h_out": 2048, "w_out": 2048}
    p = {"tile_h": 8, "tile_w": 1024, "tile_c": 1, "buffer_num": 2, "cores": 1}
    near = R.simulate(shape, p, "fp16", HW, options={"mode": "nearest"})
    bil = R.simulate(shape, p, "fp16", HW, options={"mode": "bilinear"})
    assert near.feasible and not bil.feasible and "UB overflow" in bil.reason


def test_bilinear_reads_four_points_and_costs_more_than_nearest():
    shape = {"n": 1, "c": 8, "h_in": 64, "w_in": 64, "h_out": 128, "w_out": 128}
    p = {"tile_h": 8, "tile_w": 128, "tile_c": 1, "buffer_num": 2, "cores": 8}
    near = R.simulate(shape, p, "fp16", HW, options={"mode": "nearest"})
    bil = R.simulate(shape, p, "fp16", HW, options={"mode": "bilinear"})
    assert bil.cycles > near.cycles
    assert bil.pipes["v"]["busy_cycles"] > 4 * near.pipes["v"]["busy_cycles"]


def test_nhwc_narrow_channel_tiles_pay_burst_padding():
    shape = {"n": 1, "c": 64, "h_in": 64, "w_in": 64, "h_out": 64, "w_out": 64}
    opts = {"mode": "nearest", "layout": "NHWC"}
    full = R.simulate(shape, {"tile_h": 4, "tile_w": 64, "tile_c": 64, "buffer_num": 2, "cores": 16}, "fp16", HW,
                      options=opts)
    narrow = R.simulate(shape, {"tile_h": 4, "tile_w": 64, "tile_c": 1, "buffer_num": 2, "cores": 16}, "fp16", HW,
                        options=opts)
    assert narrow.bytes["gm_ub"] >= 15 * full.bytes["gm_ub"]  # 2 B channels padded to 32 B bursts
    assert narrow.cycles > full.cycles


def test_bad_options_are_infeasible_with_reason():
    shape = {"n": 1, "c": 1, "h_in": 8, "w_in": 8, "h_out": 4, "w_out": 4}
    p = {"tile_h": 1, "tile_w": 4, "tile_c": 1, "buffer_num": 1, "cores": 1}
    r = R.simulate(shape, p, "fp16", HW, options={"mode": "bicubic"})
    assert not r.feasible and "mode" in r.reason


def _run(shape, params=None, opts=None):
    p = params or R.default_params(shape, "fp16", HW, options=opts)
    r = R.simulate(shape, p, "fp16", HW, options=opts)
    assert r.feasible, r.reason
    return r


@pytest.mark.parametrize("small,near,params", [
    # upsampling a tiny image: the reads' share of HBM traffic rounded to 0 and starved them
    (16, 32, {"tile_h": 4, "tile_w": 512, "tile_c": 1, "buffer_num": 2, "cores": 48}),
    (1, 32, None),
])
def test_large_upsampling_costs_about_what_a_nearby_ratio_costs(small, near, params):
    shape = {"n": 1, "c": 1, "h_out": 1000, "w_out": 1000}
    a = _run({**shape, "h_in": small, "w_in": small}, params)
    b = _run({**shape, "h_in": near, "w_in": near}, params)
    assert 0.5 < a.cycles / b.cycles < 2


def test_large_downsampling_costs_grow_no_faster_than_the_reads():
    # the writes' share rounded to 0 (294 B written): 0.5 s for a 7x7 output
    shape = {"n": 1, "c": 3, "h_out": 7, "w_out": 7}
    p = {"tile_h": 4, "tile_w": 16, "tile_c": 1, "buffer_num": 2, "cores": 6}
    big = _run({**shape, "h_in": 1024, "w_in": 1024}, p)
    near = _run({**shape, "h_in": 256, "w_in": 256}, p)
    assert 1 <= big.cycles / near.cycles <= big.bytes["gm_read"] / near.bytes["gm_read"]


@pytest.mark.parametrize("mode", R.MODES)
@pytest.mark.parametrize("params", [{"tile_h": 1, "tile_w": 16, "tile_c": 1, "buffer_num": 2, "cores": 1}, None])
def test_downsampling_to_a_pixel_counts_only_the_pixels_it_reads(mode, params):
    # the whole 1000x1000 source counted as bytes that must move: 750-813% of HBM bandwidth
    opts = {"mode": mode}
    r = _run({"n": 1, "c": 1, "h_in": 1000, "w_in": 1000, "h_out": 1, "w_out": 1}, params, opts)
    assert 0 < r.pct_of_bandwidth <= 100


@pytest.mark.parametrize("mode", R.MODES)
def test_upsampling_must_read_the_whole_source(mode):
    shape = {"n": 2, "c": 3, "h_in": 5, "w_in": 7, "h_out": 11, "w_out": 8}
    h0, h1, _, w0, w1, _ = R._tables(shape, mode, False)
    assert R.must_move(shape, (h0, h1, w0, w1), 2) == (2 * 3 * 5 * 7 * 2, 2 * 3 * 11 * 8 * 2)




@pytest.mark.parametrize("mode", R.MODES)
def test_check_of_a_huge_output_needs_no_index_tables(mode):
    """check built the source indices of all h_out rows (and of every column) and used only the
    column spans: a lookup at h_out = 2**31-1 grew past 500 MB and was killed. It sizes UB by
    span_bound, a closed form."""
    p = {"tile_h": 64, "tile_w": 16, "tile_c": 1, "buffer_num": 2, "cores": 48}
    tall = {"n": 1, "c": 1, "h_in": 1, "w_in": 1, "h_out": MAX_DIM, "w_out": 1}
    (q, bufs, _), peak = peak_memory(lambda: R.check(tall, p, "fp16", HW, {"mode": mode}))
    assert q["tile_h"] == 64 and bufs["ub"]["used"] <= HW.ub_bytes and peak < 1 << 20

    (q, bufs, _), peak = peak_memory(lambda: R.check({**tall, "h_out": 1, "w_out": MAX_DIM}, p, "fp16", HW,
                                                     {"mode": mode}))
    assert q["tile_w"] == 16 and bufs["ub"]["used"] <= HW.ub_bytes and peak < 1 << 20


def test_lookup_of_a_huge_output_answers_in_bounded_memory():
    look = Lookup(default_table(ROOT / "studies" / "resize.yaml"))
    shape = {"n": 1, "c": 1, "h_in": 1, "w_in": 1, "h_out": MAX_DIM, "w_out": 1}
    m, peak = peak_memory(lambda: look.find(shape))
    assert m.match == "default" and peak < 4 << 20
    m, peak = peak_memory(lambda: look.find({**shape, "h_out": 1, "w_out": MAX_DIM}))
    assert m.match == "default" and peak < 4 << 20


def test_align_corners_only_with_bilinear():
    """mode nearest with align_corners true is refused (PyTorch raises; it was ignored); false
    or absent is accepted."""
    shape = {"n": 1, "c": 4, "h_in": 4, "w_in": 4, "h_out": 8, "w_out": 8}
    p = R.default_params(shape, "fp16", HW, options={"mode": "nearest"})
    r = R.simulate(shape, p, "fp16", HW, options={"mode": "nearest", "align_corners": True})
    assert not r.feasible and "align_corners: expected false with mode nearest" in r.reason
    for o in ({"mode": "nearest", "align_corners": False}, {"mode": "nearest"}, {"align_corners": True}):
        assert R.simulate(shape, p, "fp16", HW, options=o).feasible


@pytest.mark.parametrize("shape", [
    {"n": 1, "c": 64, "h_in": 128, "w_in": 128, "h_out": 256, "w_out": 256},  # 1024 tiles: 48 cores used 47
    {"n": 1, "c": 64, "h_in": 256, "w_in": 256, "h_out": 128, "w_out": 128},  # 256 tiles: 48 used 43
])
@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_the_default_uses_every_core_it_asks_for(shape, dtype):
    """The default's cores are all given tiles (block_dim = cores), no slower than asking for all."""
    p = R.default_params(shape, dtype, HW)
    r = R.simulate(shape, p, dtype, HW)
    every = R.simulate(shape, {**p, "cores": min(HW.vector_cores, R._ntiles(shape, p))}, dtype, HW)
    assert r.block_dim == p["cores"] and r.cycles <= every.cycles


WIDE = {"n": 1, "c": 1, "h_in": 1, "w_in": 48000, "h_out": 1, "w_out": 44100}


def test_a_wide_output_fits_ub_with_the_tiles_own_index_tables():
    """The index/weight tables were sized by the whole output width (2 x 44100 x 4 B), so no
    tiling of an output 24,576 or more wide fitted (tile_w 16, one buffer: 353,056 B of UB)."""
    from autotile.space import load_spec

    p = {"tile_h": 1, "tile_w": 16, "tile_c": 1, "buffer_num": 1, "cores": 48}
    r = R.simulate(WIDE, p, "fp16", HW)
    assert r.feasible and r.buffers["ub"]["used"] < 4096
    spec = load_spec(str(ROOT / "studies" / "resize.yaml"))
    space = spec.space(WIDE, "fp16")
    assert space.check(p) is None and space.evaluate(p)["ub_used"] == r.buffers["ub"]["used"]
    assert space.check(space.default_tiling()) is None


@pytest.mark.parametrize("tw,tiles,table", [(64, 1, 2 * 256), (16, 4, 2 * 64)])
def test_each_tile_loads_its_columns_of_the_tables(tw, tiles, table):
    """2 x 64 rows doubled to 4 x 64: every tile reads its 2 source rows, and the tables of its
    columns, 2 x 4 B each (32 B aligned): once for a tile as wide as the output, else per tile."""
    shape = {"n": 1, "c": 1, "h_in": 2, "w_in": 64, "h_out": 4, "w_out": 64}
    p = {"tile_h": 4, "tile_w": tw, "tile_c": 1, "buffer_num": 2, "cores": 1}
    r = R.simulate(shape, p, "fp16", HW, options={"mode": "nearest"})
    assert r.bytes["gm_read"] == tiles * (2 * tw * 2 + table)


@settings(max_examples=8, deadline=None)
@given(wi=st.integers(24_577, 40_000), wo=st.integers(24_577, 40_000), tw=st.sampled_from([16, 128, 1024]),
       mode=st.sampled_from(R.MODES), ac=st.booleans(), dtype=st.sampled_from(["fp32", "fp16"]))
def test_execute_of_a_wide_output_matches_reference(wi, wo, tw, mode, ac, dtype):
    """Widths past the old whole-width tables' limit (odd ones too) compute what the reference does."""
    shape = {"n": 1, "c": 2, "h_in": 3, "w_in": wi, "h_out": 2, "w_out": wo}
    opts = {"mode": mode, "align_corners": ac and mode == "bilinear"}
    p = {"tile_h": 2, "tile_w": tw, "tile_c": 1, "buffer_num": 2, "cores": 8}
    assert R.simulate(shape, p, dtype, HW, options=opts).feasible
    inputs = R.make_inputs(shape, dtype, seed=wo, options=opts)
    got = R.execute(inputs, p, dtype, HW, options=opts).astype(np.float64)
    ref = R.reference(inputs, dtype, options=opts).astype(np.float64)
    assert got.shape == ref.shape and np.max(np.abs(got - ref)) <= R.tolerance(dtype, shape)[1]


FAR = {"n": 1, "c": 64, "h_in": 512, "w_in": 25_000, "h_out": 64, "w_out": 4}  # 6,250 source columns apart


@pytest.mark.parametrize("layout", R.LAYOUTS)
@pytest.mark.parametrize("mode", R.MODES)
def test_columns_far_apart_copy_only_their_windows(mode, layout):
    """A tile copied the whole source span of its columns: 2 output columns of 25,000 to 4 read
    6,252 source columns a row to use 4, 410 MB for a 1 MB need (fp32 bilinear NCHW: 509,253
    cycles against 54,953 at 1 column). Each column's window is now copied apart, so a wider
    tile reads no more than a narrower one and costs no more."""
    opts = {"mode": mode, "layout": layout}
    assert R.gathers_columns(FAR, 1, 4, mode, layout)
    one, two = ({"tile_h": 1, "tile_w": tw, "tile_c": 1, "buffer_num": 2, "cores": 48} for tw in (1, 2))
    a, b = (R.simulate(FAR, p, "fp32", HW, options=opts) for p in (one, two))
    assert a.feasible and b.feasible
    assert b.bytes["gm_read"] <= a.bytes["gm_read"] and b.cycles <= a.cycles
    assert b.buffers["ub"]["used"] <= 2 * a.buffers["ub"]["used"]


def test_columns_apart_only_past_the_gap_a_copy_costs():
    """The window is copied apart where more than GATHER_GAP_BYTES lie between two columns'
    windows: NCHW fp32 bilinear at 25,000 to 48 (518.8 columns, 2,075 B) but not to 49 (508.2,
    2,033 B); NHWC by the bytes a source pixel moves (64 fp16 channels: 128 B; a 1-channel tile
    pads to 32 B)."""
    shape = {"n": 1, "c": 64, "h_in": 8, "w_in": 25_000, "h_out": 8, "w_out": 48}
    assert R.gathers_columns(shape, 1, 4, "bilinear", "NCHW")
    assert not R.gathers_columns({**shape, "w_out": 49}, 1, 4, "bilinear", "NCHW")
    nhwc = {**shape, "w_in": 1000, "w_out": 50}  # 18 source pixels between windows
    assert R.gathers_columns(nhwc, 64, 2, "bilinear", "NHWC")
    assert not R.gathers_columns(nhwc, 1, 2, "bilinear", "NHWC")


@settings(max_examples=20, deadline=None)
@given(wi=st.integers(3_000, 30_000), wo=st.integers(1, 6), ho=st.integers(1, 5), th=st.integers(1, 4),
       tw=st.integers(1, 6), c=st.integers(1, 80), tc=st.sampled_from([1, 3, 16, 80]),
       mode=st.sampled_from(R.MODES), layout=st.sampled_from(R.LAYOUTS), ac=st.booleans(),
       dtype=st.sampled_from(["fp32", "fp16"]))
def test_execute_with_columns_apart_matches_reference(wi, wo, ho, th, tw, c, tc, mode, layout, ac, dtype):
    """Tiles of several far-apart columns (which overflowed UB copying the span) compute what the
    reference does."""
    shape = {"n": 1, "c": c, "h_in": 3, "w_in": wi, "h_out": ho, "w_out": wo}
    opts = {"mode": mode, "layout": layout, "align_corners": ac and mode == "bilinear"}
    p = {"tile_h": th, "tile_w": tw, "tile_c": tc, "buffer_num": 2, "cores": 2}
    assume(R.gathers_columns(shape, min(tc, c), 4 if dtype == "fp32" else 2, mode, layout))
    assume(R._ntiles(shape, {**p, "tile_c": min(tc, c)}) >= 2)
    assert R.simulate(shape, p, dtype, HW, options=opts).feasible
    inputs = R.make_inputs(shape, dtype, seed=wi, options=opts)
    got = R.execute(inputs, p, dtype, HW, options=opts).astype(np.float64)
    ref = R.reference(inputs, dtype, options=opts).astype(np.float64)
    assert got.shape == ref.shape and np.max(np.abs(got - ref)) <= R.tolerance(dtype, shape)[1]


def test_the_bundled_spec_goes_below_16_columns_only_where_columns_lie_apart():
    """Its tile_w started at 16 everywhere, so 100,000 to 2 columns (fp32) had no feasible tiling
    (the span of 2 columns overflowed UB) and far-apart columns could not take the narrow tiles
    that keep a column's rows in one DataCopy; now 1 there, 16 where bursts are long."""
    from autotile.space import load_spec

    spec = load_spec(str(ROOT / "studies" / "resize.yaml"))
    far = spec.space({"n": 1, "c": 1, "h_in": 8, "w_in": 100_000, "h_out": 2, "w_out": 2}, "fp32", "vector")
    assert far.domain("tile_w", {"tile_h": 1})[0] == 1
    p = far.default_tiling()
    assert far.check(p) is None and R.simulate(far.shape, p, "fp32", HW).feasible
    near = spec.space({"n": 1, "c": 64, "h_in": 256, "w_in": 256, "h_out": 128, "w_out": 128}, "fp32", "vector")
    assert near.domain("tile_w", {"tile_h": 1})[0] == 16


GAPPY = {"n": 1, "c": 64, "h_in": 7, "w_in": 33, "h_out": 3, "w_out": 11}
GAPPY_TILES = {"tile_h": 4, "tile_w": 16, "tile_c": 8, "buffer_num": 1, "cores": 1}


@pytest.mark.parametrize("h_in", [5, 7, 13, 24])
@pytest.mark.parametrize("dtype", ["fp32", "fp16"])
def test_more_output_rows_never_cost_fewer_cycles(h_in, dtype):
    """Each run of source rows was a DataCopy however few rows lay between two runs: 7 x 33 to
    3 x 11 (64 fp32 channels, bilinear) took 129 copies and 11,824 cycles, to 4 x 11 65 copies
    and 10,241. A run now streams through a small gap (``row_gap``), so under a fixed tiling a
    downsampling to more rows costs no fewer cycles. (h_out = h_in reads each row once.)"""
    cycles = [R.simulate({**GAPPY, "h_in": h_in, "h_out": ho}, GAPPY_TILES, dtype, HW).cycles
              for ho in range(1, h_in)]
    assert all(a <= b for a, b in zip(cycles, cycles[1:])), cycles


def test_rows_a_few_hundred_bytes_apart_are_streamed_through_but_not_past_what_an_issue_streams(monkeypatch):
    """3x downsampling skips one 96-column row (384 B fp32) between output rows: one DataCopy a
    tile reads a third more bytes in fewer cycles. 480 x 640 to 224 x 224 (fp16) skips a 1,280 B
    row now and then: UB has room for it (``row_gap``), but on 48 cores sharing HBM a copy's
    issue streams ~520 B, so those rows stay apart (merged: 6,326 cycles against 6,226)."""
    down = {"n": 1, "c": 64, "h_in": 96, "w_in": 96, "h_out": 32, "w_out": 32}
    study = {"n": 2, "c": 3, "h_in": 480, "w_in": 640, "h_out": 224, "w_out": 224}
    pd, ps = R.default_params(down, "fp32", HW), R.default_params(study, "fp16", HW)
    assert ps["cores"] == 48 and R.row_gap(study, ps["tile_w"], 1, 2, "bilinear", "NCHW", False) >= 1
    merged, kept = R.simulate(down, pd, "fp32", HW), R.simulate(study, ps, "fp16", HW)
    monkeypatch.setattr(R, "row_gap", lambda *a: 0)
    apart = R.simulate(down, pd, "fp32", HW)
    assert merged.bytes["gm_read"] > 1.2 * apart.bytes["gm_read"] and merged.cycles < 0.9 * apart.cycles
    assert R.simulate(study, ps, "fp16", HW).cycles == kept.cycles


@settings(max_examples=40, deadline=None)
@given(hi=st.integers(2, 300), ho=st.integers(1, 60), wi=st.integers(1, 3000), wo=st.integers(1, 40),
       th=st.integers(1, 16), tw=st.integers(1, 64), c=st.integers(1, 20), tc=st.integers(1, 20),
       mode=st.sampled_from(R.MODES), layout=st.sampled_from(R.LAYOUTS), ac=st.booleans(),
       dtype=st.sampled_from(["fp32", "fp16"]))
def test_merged_runs_of_rows_bring_in_no_more_rows_than_ub_counts(hi, ho, wi, wo, th, tw, c, tc, mode, layout, ac,
                                                                 dtype):
    """The UB check counts ``source_rows`` a tile: every tile's copied rows, the skipped ones a
    merged run brings in too, fit in it."""
    shape = {"n": 1, "c": c, "h_in": hi, "w_in": wi, "h_out": ho, "w_out": wo}
    ac = ac and mode == "bilinear"
    th, tw, tc, nb = min(th, ho), min(tw, wo), min(tc, c), 4 if dtype == "fp32" else 2
    h0, h1, _, _, _, _ = R._tables(shape, mode, ac)
    gap = R.row_gap(shape, tw, tc, nb, mode, layout, ac)
    bound = R.source_rows(shape, th, tw, tc, nb, mode, layout, ac)
    mark = np.zeros(hi, dtype=np.int64)
    for k, r0 in enumerate(range(0, ho, th)):
        rows, runs = R._row_runs(h0, h1, r0, min(th, ho - r0), mark, k + 1, gap)
        assert rows <= bound and 1 <= runs <= rows


def test_the_bundled_spec_counts_the_rows_a_merged_run_brings_in():
    from autotile.space import load_spec

    space = load_spec(str(ROOT / "studies" / "resize.yaml")).space(GAPPY, "fp32", "vector")
    for th in (1, 2, 3):
        p = {**GAPPY_TILES, "tile_h": th}
        r = R.simulate(GAPPY, p, "fp32", HW)
        assert R.row_gap(GAPPY, 11, 8, 4, "bilinear", "NCHW", False) > 0
        assert space.evaluate(p)["ub_used"] == r.buffers["ub"]["used"]


SAME = {"n": 1, "c": 64, "h_in": 64, "w_in": 48, "h_out": 64, "w_out": 48}


@pytest.mark.parametrize("layout", R.LAYOUTS)
@pytest.mark.parametrize("mode", R.MODES)
def test_an_unchanged_size_is_a_copy(mode, layout):
    """PyTorch copies when the size is unchanged; the kernel ran the bilinear gather and weighting
    on the Vector (256 x 256 x 64 fp16: 36,903 cycles, vector bound, credited 7 FLOPs an output).
    Now each tile goes in and back out of one slot: no vector or scalar work, no index tables
    read, no FLOPs; the source read once and the output written once."""
    opts = {"mode": mode, "layout": layout}
    p = R.default_params(SAME, "fp16", HW, options=opts)
    r = R.simulate(SAME, p, "fp16", HW, options=opts)
    plane = 64 * 64 * 48 * 2
    assert r.feasible and r.pipes["v"]["busy_cycles"] == 0 and r.pipes["s"]["busy_cycles"] == 0
    assert r.pct_of_peak == 0 and r.bytes["gm_read"] == plane and r.bytes["gm_write"] == plane
    changed = R.simulate({**SAME, "h_in": 63}, p, "fp16", HW, options=opts)
    assert r.cycles < changed.cycles


@pytest.mark.parametrize("layout", R.LAYOUTS)
@pytest.mark.parametrize("mode,ac", [("nearest", False), ("bilinear", False), ("bilinear", True)])
def test_execute_of_an_unchanged_size_copies_the_input(mode, ac, layout):
    opts = {"mode": mode, "layout": layout, "align_corners": ac}
    shape = {**SAME, "c": 3}
    p = {"tile_h": 5, "tile_w": 16, "tile_c": 2, "buffer_num": 2, "cores": 4}
    inputs = R.make_inputs(shape, "fp16", seed=1, options=opts)
    got = R.execute(inputs, p, "fp16", HW, options=opts)
    assert np.array_equal(got, inputs[0]) and np.array_equal(got, R.reference(inputs, "fp16", options=opts))


def test_the_bundled_spec_counts_an_unchanged_size_as_a_copy():
    from autotile.space import load_spec

    space = load_spec(str(ROOT / "studies" / "resize.yaml")).space(SAME, "fp16", "vector")
    p = {"tile_h": 8, "tile_w": 48, "tile_c": 4, "buffer_num": 2, "cores": 16}
    r = R.simulate(SAME, p, "fp16", HW)
    assert r.buffers["ub"]["used"] == 2 * 2 * 4 * 8 * 96 == space.evaluate(p)["ub_used"]
