"""resize's default tiling near the best of a small grid where one channel a tile, or 1024-column
tiles, left it far off (bench/resize_default.py measures the rest)."""

from __future__ import annotations

import dataclasses

import pytest

from autotile.hardware import load_profile
from autotile.kernels import _common as C
from autotile.kernels import resize as R

HW = load_profile()
SMALL_PLANES = {"n": 16, "c": 512, "h_in": 7, "w_in": 7, "h_out": 14, "w_out": 14}
ONE_ROW = {"n": 1, "c": 1, "h_in": 1, "w_in": 4096, "h_out": 1, "w_out": 8192}


def _cycles(shape, p, dtype, mode):
    r = R.simulate(shape, p, dtype, HW, options={"mode": mode})
    return r.cycles if r.feasible else float("inf")


def _on_busy_cores(shape, p):
    return {**p, "buffer_num": 2, "cores": C.busy_cores(R._ntiles(shape, p), HW.vector_cores)}


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_small_planes_take_several_channels_a_tile(mode):
    """One 14 x 14 channel a tile (392 B) spent the cores on per-tile costs: nearest 24,576 cycles
    against 14,594 with 4 channels (1.68x), bilinear 37,664 against 27,729 (1.36x)."""
    p = R.default_params(SMALL_PLANES, "fp16", HW, options={"mode": mode})
    grid = [_on_busy_cores(SMALL_PLANES, {"tile_h": th, "tile_w": 14, "tile_c": tc})
            for th in (7, 14) for tc in (1, 2, 4, 8, 16, 32, 64)]
    best = min(_cycles(SMALL_PLANES, q, "fp16", mode) for q in grid)
    assert p["tile_c"] > 1
    assert _cycles(SMALL_PLANES, p, "fp16", mode) <= 1.1 * best


@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_a_single_long_row_spreads_over_the_cores(mode):
    """1024-column tiles cut one 8192-column row into 8 tiles, so 8 cores: bilinear 1,172 cycles
    against 539 with 128-column tiles on 32 (2.2x). Each tile now loads its own index tables,
    which makes nearest's 128-column default 5.3% slower than its best tile width."""
    p = R.default_params(ONE_ROW, "fp32", HW, options={"mode": mode})
    grid = [_on_busy_cores(ONE_ROW, {"tile_h": 1, "tile_w": tw, "tile_c": 1}) for tw in (64, 128, 256, 512, 1024)]
    best = min(_cycles(ONE_ROW, q, "fp32", mode) for q in grid)
    assert p["cores"] >= 32
    assert _cycles(ONE_ROW, p, "fp32", mode) <= 1.1 * best


def test_a_tile_is_not_cut_below_the_minimum_to_feed_the_cores():
    """Spreading stops at MIN_TILE_BYTES: a tiny output stays in few tiles rather than 16-column
    slivers on every core."""
    shape = {"n": 1, "c": 1, "h_in": 4, "w_in": 64, "h_out": 8, "w_out": 128}
    p = R.default_params(shape, "fp32", HW)
    assert p["tile_h"] * p["tile_w"] * p["tile_c"] * 4 >= R.MIN_TILE_BYTES


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
@pytest.mark.parametrize("mode", ["nearest", "bilinear"])
def test_an_nhwc_upsampling_default_takes_rows_that_share_source_rows(mode, dtype):
    """NHWC with 64 channels took one output row of 64 pixels a tile, so a 2x upsampling read each
    source row twice: bilinear fp16 25,121 cycles against 17,701 with 8 x 16 pixels (1.42x)."""
    shape = {"n": 1, "c": 64, "h_in": 128, "w_in": 128, "h_out": 256, "w_out": 256}
    opts = {"mode": mode, "layout": "NHWC"}

    def cycles(p):
        r = R.simulate(shape, p, dtype, HW, options=opts)
        return r.cycles if r.feasible else float("inf")

    p = R.default_params(shape, dtype, HW, options=opts)
    grid = [_on_busy_cores(shape, {"tile_h": th, "tile_w": tw, "tile_c": 64})
            for th in (1, 2, 4, 8, 16) for tw in (16, 32, 64, 128)]
    assert p["tile_h"] > 1
    assert cycles(p) <= 1.05 * min(cycles(q) for q in grid)


@pytest.mark.parametrize("layout", ["NCHW", "NHWC"])
@pytest.mark.parametrize("w_in", [25_000, 100_000])
def test_a_heavy_width_downsampling_default_fits(w_in, layout):
    """When a tile copied the whole source span of its columns, 25,000 to 2 columns (fp32)
    overflowed UB at 2 columns, 1 row and 1 channel double-buffered (200,320 bytes), 100,000 to 2
    needed 800,384, and the default was that overflowing tiling. A column's window is now copied
    apart (32 B a row), and the default double-buffers."""
    shape = {"n": 1, "c": 4, "h_in": 8, "w_in": w_in, "h_out": 2, "w_out": 2}
    o = {"layout": layout}
    p = R.default_params(shape, "fp32", HW, options=o)
    r = R.simulate(shape, p, "fp32", HW, options=o)
    assert r.feasible and p["buffer_num"] == 2 and r.buffers["ub"]["used"] < 1024


@pytest.mark.parametrize("shape,mode", [
    ({"n": 1, "c": 64, "h_in": 512, "w_in": 25_000, "h_out": 64, "w_out": 4}, "bilinear"),
    ({"n": 2, "c": 16, "h_in": 48, "w_in": 215_108, "h_out": 64, "w_out": 61}, "nearest"),
])
def test_a_far_apart_downsampling_default_takes_tall_narrow_tiles(shape, mode):
    """Copying the span, the default fell back to one-row tiles of 2 columns (25,000 to 4, 64
    channels, fp32: 509,253 cycles, 410 MB read for 1 MB) and of 7 columns (215,108 to 61:
    1.84 M cycles). With each column's window copied apart, the default sizes a tile by the
    windows it copies and keeps a column's rows together (one DataCopy a run of rows): within
    1.25x of the best of a small grid (7,206 against 6,377, since runs of rows stream through
    small gaps; 8,064 against 7,336)."""
    o = {"mode": mode}
    p = R.default_params(shape, "fp32", HW, options=o)
    grid = [_on_busy_cores(shape, {"tile_h": th, "tile_w": tw, "tile_c": tc})
            for th in (1, 2, 4, 8, 16, 32, 64) for tw in (1, 2, 4, 8) for tc in (1, 2, 4)]
    best = min(_cycles(shape, q, "fp32", mode) for q in grid)
    assert _cycles(shape, p, "fp32", mode) <= 1.25 * best


def test_single_buffering_is_the_last_resort():
    """With a UB too small for the one-column tile double-buffered, the default is single-buffered."""
    shape = {"n": 1, "c": 1, "h_in": 8, "w_in": 25_000, "h_out": 2, "w_out": 2}
    small = dataclasses.replace(HW, ub_bytes=320)
    p = R.default_params(shape, "fp32", small)
    assert R.simulate(shape, p, "fp32", small).feasible and p["buffer_num"] == 1
