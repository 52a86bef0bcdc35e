"""ROI Align with average pooling (torchvision ``roi_align`` semantics) on the Vector unit.

Features are channels-last in GM (``[n, h, w, c]``, the layout NC1HWC0 kernels read: a pixel's
channels are one contiguous vector) and the output is ``[rois, pooled_h, pooled_w, c]``. ROIs are
``[rois, 5]`` rows ``(batch, x1, y1, x2, y2)`` in input-image coordinates. Options: ``spatial_scale``,
``sampling_ratio`` (-1 or 0: adaptive ``ceil(roi_size / pooled)``), ``aligned``, and the ROI generator
(``roi_seed``, ``roi_min`` / ``roi_max``: box sides as fractions of the image, log-uniform), since
the cost depends on the boxes: bigger boxes mean more sampling points per bin.

The sampling coordinates (the ROI and scale, box and bin sizes, each point's y and x, the
bilinear fractions) are float32 for every dtype, each operation rounded in torchvision's order,
so fp32 agrees with torchvision to a few ulps. For fp16 inputs an NPU kernel computes them in
float32 too; torchvision's CPU kernel computes them in half precision, an artifact of its
templated scalar type (coordinates of hundreds then snap to 0.25 or more), which is not followed.

The work is cut into tiles of ``tile_rois`` ROIs x ``tile_bins`` output bins x ``tile_c``
channels, split over ``cores`` in contiguous runs. Per ROI the S pipe computes the box, bin sizes
and grid; per sampling point it computes y, x, the clamps and four weights. Each point inside
the map costs one DataCopy (MTE2) of its 2 x 2 neighbourhood (two row bursts of two pixels'
``tile_c`` channels, 32 B padded) and four VAXPYs into the bin's accumulator (zeroed by VDUP);
each ROI's bins are scaled by 1 / count (VMULS) and the tile goes back by MTE3. The accumulators
are fp32 for every dtype, as an NPU kernel keeps them: fp16 features enter VAXPY's mixed form
(fp16 source and weight, fp32 sum) and a VCONV per tile rounds the averages to fp16 once (fp16
sums drifted 22% on a constant map). Input and output tiles sit in queues of ``buffer_num``
slots; fp16's fp32 sums take one more tile of UB. UB is sized for ``sampling_ratio ** 2`` points per
bin; with adaptive sampling, for the grid of the largest box the ROI generator can draw
(``roi_max`` of the image side: the host tiles before the ROIs exist), or of the given ROIs if
one of them has more and the tiling still holds it (else an InputError naming that ROI and
roi_max). A spec's constraint computes the same (``studies/roi_align.yaml``). A check
generates ROIs only where it needs them (adaptive sampling, at most ``EXACT_ROIS``). A given
ROI past ``MAX_GRID`` points a bin is refused (``check_boxes``).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from autotile.errors import InfeasibleConfig, InputError
from autotile.hardware import HardwareProfile
from autotile.kernels import _common as C
from autotile.kernels import dtype_emul, registry
from autotile.kernels.roi_align_ub import (
    ACC,
    MAX_GRID,
    MAX_ROI_BYTES,
    MAX_SIDE,
    rois_problem,
    ub_used,
)
from autotile.sim import engine as E
from autotile.sim.costs import cost_vector, l2_hit_fraction, write_fraction
from autotile.sim.result import CoreRun, assemble, infeasible

UNITS = ("vector",)
DIMS = ("n", "c", "h", "w", "rois", "pooled_h", "pooled_w")
PARAMS = registry.get("roi_align").needs("vector")
Q_IN, Q_OUT = 0, 1
V_DUP, V_AXPY, V_MULS, V_CONV = range(4)
ROI_SCALAR_OPS = 12  # box scaling, offsets, sizes, bin sizes, grid, count
SAMPLE_SCALAR_OPS = 10  # y, x, range test, clamps, floors, four weights
# a check of more ROIs than this (adaptive sampling) sizes UB by ``ub_grid``'s closed form of the
# generator's largest box without generating them, so a lookup of 2**31-1 ROIs answers at once;
# with a fixed sampling ratio a check never generates them
EXACT_ROIS = 1 << 16


@njit(cache=True)
def _box(roi, scale, aligned, ph, pw):
    """(start_h, start_w, bin_h, bin_w) of one ROI, as torchvision computes them for fp32: the
    ROI, the scale and each operation rounded to float32."""
    f = np.float32
    s = f(scale)
    off = f(0.5) if aligned else f(0.0)
    sw = f(f(f(roi[1]) * s) - off)
    sh = f(f(f(roi[2]) * s) - off)
    rw = f(f(f(f(roi[3]) * s) - off) - sw)
    rh = f(f(f(f(roi[4]) * s) - off) - sh)
    if not aligned:
        rw = f(max(rw, f(1.0)))
        rh = f(max(rh, f(1.0)))
    return sh, sw, f(rh / f(ph)), f(rw / f(pw))


@njit(cache=True)
def _side(size, sr):
    """A bin's sampling grid side, as a float: ``sr``, or adaptive (``sr`` <= 0) ``ceil(size)``,
    0 (no points) for a size that is not finite (a NaN or infinite coordinate). A float, since
    a huge finite box (1e30) took an int to -2**63 (``check_boxes`` refuses it)."""
    if sr > 0:
        return float(sr)
    return float(np.ceil(size)) if math.isfinite(size) else 0.0


@njit(cache=True)
def _roi_geometry(roi, scale, sr, aligned, ph, pw):
    """(start_h, start_w, bin_h, bin_w, grid_h, grid_w) of one ROI of sane size (``check_boxes``)."""
    sh, sw, bh, bw = _box(roi, scale, aligned, ph, pw)
    return sh, sw, bh, bw, int(_side(bh, sr)), int(_side(bw, sr))


@njit(cache=True)
def _coord(start, b, size, i, grid):
    """Sampling coordinate ``start + b * size + (i + 0.5) * size / grid`` of bin ``b``, point
    ``i``, each operation rounded to float32 in torchvision's order."""
    f = np.float32
    return f(f(start + f(f(b) * size)) + f(f(f(i + 0.5) * size) / f(grid)))


@njit(cache=True)
def _corners(y, x, H, W):
    """(valid, y_low, x_low, y_high, x_high, ly, lx, hy, hx) of a float32 sampling point,
    torchvision's rules: a point not inside [-1, H] x [-1, W] (NaN included) is outside; the
    fractions are float32 (``ly`` exact, ``hy = 1 - ly`` rounded)."""
    if not (y >= -1.0 and y <= H and x >= -1.0 and x <= W):
        return False, 0, 0, 0, 0, 0.0, 0.0, 0.0, 0.0
    y = max(float(y), 0.0)
    x = max(float(x), 0.0)
    yl, xl = int(y), int(x)
    if yl >= H - 1:
        yl = yh = H - 1
        y = float(yl)
    else:
        yh = yl + 1
    if xl >= W - 1:
        xl = xh = W - 1
        x = float(xl)
    else:
        xh = xl + 1
    ly, lx = y - yl, x - xl
    return True, yl, xl, yh, xh, ly, lx, float(np.float32(1.0 - ly)), float(np.float32(1.0 - lx))


@njit(cache=True)
def core(st, cost, vcost, vlanes, ip, fp, rois, t0, t1, execute, feat, out, code, acc_code):
    """Tiles t0..t1-1 on one core; returns the end time. ``vlanes``: elements per repeat of each
    ``vcost`` row; the weights round to ``code`` (the scalar of VAXPY), the sums to ``acc_code``;
    with ``ip[11]`` set, a VCONV takes each tile's accumulators to the output dtype (in execute
    mode the caller rounds ``out``)."""
    Cn, H, W, R, ph, pw = ip[0], ip[1], ip[2], ip[3], ip[4], ip[5]
    tr, tb, tc, depth, nb, conv = ip[6], ip[7], ip[8], ip[9], ip[10], ip[11]
    scale, sr, aligned, sc = fp[0], int(fp[1]), fp[2] > 0, fp[3]
    E.set_queue(st, Q_IN, depth)
    E.set_queue(st, Q_OUT, depth)
    nbins = ph * pw
    nct = (Cn + tc - 1) // tc
    nbt = (nbins + tb - 1) // tb
    cblk = ((tc * nb + 31) // 32) * 32
    pair = ((2 * tc * nb + 31) // 32) * 32 * 2 if tc == Cn else 4 * cblk  # 2 rows x 2 pixels
    t = 0.0
    for ti in range(t0, t1):
        ct = ti % nct
        bt = (ti // nct) % nbt
        rt = ti // (nct * nbt)
        c0, b0, r0 = ct * tc, bt * tb, rt * tr
        cc, bb, rr = min(tc, Cn - c0), min(tb, nbins - b0), min(tr, R - r0)
        slot, free = E.alloc(st, Q_IN)
        oslot, ofree = E.alloc(st, Q_OUT)
        t = C.vrun(st, cost, vcost, V_DUP, rr * bb * cc, vlanes[V_DUP], max(t, ofree))  # zero the accumulators
        for r in range(r0, r0 + rr):
            sh, sw, bh, bw, gh, gw = _roi_geometry(rois[r], scale, sr, aligned, ph, pw)
            s = E.scalar(st, cost, ROI_SCALAR_OPS, sc, free)
            count = max(gh * gw, 1)
            bidx = int(rois[r, 0])
            for bi in range(b0, b0 + bb):
                py, px = bi // pw, bi % pw
                s = E.scalar(st, cost, SAMPLE_SCALAR_OPS * gh * gw, sc, s)
                for iy in range(gh):
                    y = _coord(sh, py, bh, iy, gh)
                    for ix in range(gw):
                        x = _coord(sw, px, bw, ix, gw)
                        ok, yl, xl, yh, xh, ly, lx, hy, hx = _corners(y, x, H, W)
                        if not ok:
                            continue
                        ready = E.copy(st, cost, E.GM_UB, float(pair), s)
                        for _ in range(4):
                            t = C.vrun(st, cost, vcost, V_AXPY, cc, vlanes[V_AXPY], max(ready, t))
                        if execute:
                            w = (C.rnd(hy * hx, code), C.rnd(hy * lx, code), C.rnd(ly * hx, code),
                                 C.rnd(ly * lx, code))
                            for k in range(cc):
                                ch = c0 + k
                                a = out[r, py, px, ch]
                                a = C.rnd(a + w[0] * feat[bidx, yl, xl, ch], acc_code)
                                a = C.rnd(a + w[1] * feat[bidx, yl, xh, ch], acc_code)
                                a = C.rnd(a + w[2] * feat[bidx, yh, xl, ch], acc_code)
                                out[r, py, px, ch] = C.rnd(a + w[3] * feat[bidx, yh, xh, ch], acc_code)
                if execute:
                    inv = C.rnd(1.0 / count, acc_code)
                    for k in range(cc):
                        out[r, py, px, c0 + k] = C.rnd(out[r, py, px, c0 + k] * inv, acc_code)
            t = C.vrun(st, cost, vcost, V_MULS, bb * cc, vlanes[V_MULS], t)  # / count
        if conv:
            t = C.vrun(st, cost, vcost, V_CONV, rr * bb * cc, vlanes[V_CONV], t)
        E.release(st, Q_IN, slot, t)
        obytes = rr * (((bb * cc * nb + 31) // 32) * 32 if tc == Cn else bb * cblk)
        E.copy(st, cost, E.UB_GM, float(obytes), t)
        E.release(st, Q_OUT, oslot, st.pipe_free[E.MTE3])
    return max(t, st.pipe_free[E.MTE3])


# ---------------------------------------------------------------------------------------
# Python side


def opts(options: dict | None) -> dict:
    """The op options with defaults, validated (``registry``: torchvision's arguments and the ROI
    generator's)."""
    return C.op_options("roi_align", options)


def make_rois(shape: dict, options: dict | None = None) -> np.ndarray:
    """Seeded boxes ``(batch, x1, y1, x2, y2)`` inside the input image (feature size / scale).

    Sides are log-uniform between ``roi_min`` and ``roi_max`` of the image side (proposals span
    scales), positions uniform with the box inside the image. No side comes within 2**-20 of the
    scaled image side (+1) of ``roi_max`` of the side: the ROI's float32 rounding, of its corners,
    of the scale and of the scaled size (each at most 2**-24 of a coordinate), never carries a box
    past ``roi_max`` of the side, which ``ub_grid`` (and a spec) size UB by.
    """
    o = opts(options)
    rng = np.random.default_rng(o["roi_seed"])
    R = shape["rois"]
    scale = o["spatial_scale"]
    img_h, img_w = shape["h"] / scale, shape["w"] / scale
    lo, hi = math.log(o["roi_min"]), math.log(o["roi_max"])

    def sides(img):
        cap = max(o["roi_max"] * img - 2**-20 * (img + 1 / scale), 0.0)
        return np.minimum(np.exp(rng.uniform(lo, hi, R)) * img, cap)

    bh = sides(img_h)
    bw = sides(img_w)
    y1 = rng.uniform(0, 1, R) * (img_h - bh)
    x1 = rng.uniform(0, 1, R) * (img_w - bw)
    b = rng.integers(0, shape["n"], R).astype(np.float64)
    return np.stack([b, x1, y1, x1 + bw, y1 + bh], axis=1)


@njit(cache=True)
def _grid_sides(rois, scale, sr, aligned, ph, pw):
    """[rois, 2]: each ROI's sampling grid sides (rows, columns of a bin) as floats (``_side``)."""
    out = np.empty((rois.shape[0], 2))
    for i in range(rois.shape[0]):
        _, _, bh, bw = _box(rois[i], scale, aligned, ph, pw)
        out[i, 0] = _side(bh, sr)
        out[i, 1] = _side(bw, sr)
    return out


@njit(cache=True)
def _samples(rois, scale, sr, aligned, ph, pw):
    """Sampling points per bin, summed over ``rois`` (a Python loop took 1.5 s a million ROIs)."""
    total = 0
    for i in range(rois.shape[0]):
        _, _, _, _, gh, gw = _roi_geometry(rois[i], scale, sr, aligned, ph, pw)
        total += gh * gw
    return total


def grid_sides(rois, pooled_h: int, pooled_w: int, o: dict) -> np.ndarray:
    """[rois, 2] float sampling grid sides of ``rois`` (one loop in Numba: a Python loop over 256
    ROIs cost 1 ms per checked configuration)."""
    return _grid_sides(np.ascontiguousarray(rois, dtype=np.float64), float(o["spatial_scale"]),
                       int(o["sampling_ratio"]), bool(o["aligned"]), int(pooled_h), int(pooled_w))


def _points(sides: np.ndarray) -> np.ndarray:
    """Sampling points a bin of each ROI of ``grid_sides`` (a reversed box's negative side: none)."""
    return np.maximum(sides, 0.0).prod(axis=1)


def _max_grid(shape, rois, o) -> int:
    """The largest sampling grid of the ROIs (at least 1)."""
    return int(_points(grid_sides(rois, shape["pooled_h"], shape["pooled_w"], o)).max(initial=1.0))


def check_boxes(rois: np.ndarray, pooled, o: dict) -> None:
    """InputError for the first ROI whose adaptive sampling grid is beyond ``MAX_GRID``: more
    points a bin, or a longer side (a reversed box's too: the loops run over it), than the
    largest ``sampling_ratio`` gives. A box of 1e30 took the kernel's grid to -2**63 (zeros out)
    and the reference looped over 2.5e29 points; non-finite coordinates sample nothing, as before."""
    if int(o["sampling_ratio"]) > 0:
        return
    sides = grid_sides(rois, int(pooled[0]), int(pooled[1]), o)
    bad = np.flatnonzero((np.abs(sides).max(axis=1, initial=0.0) > MAX_GRID) | (_points(sides) > MAX_GRID))
    if bad.size:
        r = int(bad[0])
        raise InputError(f"ROI row {r} {_box_text(rois[r])} needs a {_grid_text(sides[r])} adaptive sampling "
                         f"grid a bin: past {MAX_GRID:,} points a bin or on a side (the largest sampling_ratio's "
                         f"{MAX_SIDE} x {MAX_SIDE}) a box is refused", field=f"rois[{r}]")


def _box_text(roi) -> str:
    return "(x1, y1, x2, y2) = (" + ", ".join(f"{float(v):g}" for v in roi[1:]) + ")"


def _grid_text(sides) -> str:
    return " x ".join(f"{float(v):g}" for v in sides)


def _roi_too_big(shape, p, dtype, hw, o, rois, used) -> InputError | None:
    """The InputError for the first of ``rois`` (given to execute, adaptive sampling) whose grid
    the tiling's UB cannot hold though it holds the grid of ``roi_max``'s boxes, which the tiling
    was sized for (a host tiles before the ROIs exist), else None: the tiling's own overflow."""
    widest = ub_grid(shape, None, o)
    args = (p["tile_rois"], p["tile_bins"], p["tile_c"], shape["c"], dtype, p["buffer_num"])
    if int(o["sampling_ratio"]) > 0 or ub_used(widest, *args) > hw.ub_bytes:
        return None
    sides = grid_sides(rois, shape["pooled_h"], shape["pooled_w"], o)
    bad = np.flatnonzero(ub_used(_points(sides), *args) > hw.ub_bytes)
    if not bad.size:
        return None
    r = int(bad[0])
    return InputError(f"ROI row {r} {_box_text(rois[r])} needs a {_grid_text(sides[r])} sampling grid a bin, "
                      f"more than the tiling holds in UB ({used:,} bytes needed, {hw.ub_bytes:,} held): it was "
                      f"sized for boxes up to roi_max {o['roi_max']:g} of the image side ({widest:,} points a bin); "
                      f"tune with a larger roi_max (inputs.roi_max)", field=f"rois[{r}]")


def ub_grid(shape: dict, rois, o: dict) -> int:
    """Sampling points per bin that UB is sized for: ``sampling_ratio ** 2``; adaptive (<= 0),
    ``ceil(side / pooled side)`` per side of the largest box the generator can draw, ``roi_max``
    of the image side (the ROIs come from a network at run time, after the host has tiled), or
    the largest grid of ``rois`` if that is more (ROIs from elsewhere). A closed form a spec can
    state: ``ceil(max(inputs.roi_max * shape.h, 1) / shape.pooled_h) * ...``."""
    sr = int(o["sampling_ratio"])
    if sr > 0:
        return sr * sr
    widest = math.ceil(max(o["roi_max"] * shape["h"], 1) / shape["pooled_h"]) \
        * math.ceil(max(o["roi_max"] * shape["w"], 1) / shape["pooled_w"])
    return widest if rois is None else max(widest, _max_grid(shape, rois, o))


def check(shape: dict, params: dict, dtype: str, hw: HardwareProfile, options: dict | None, rois=None):
    """Validate; returns (params, buffers, options, rois): ``rois`` as given, or the generated
    ones where the check needed them, else None (see :data:`EXACT_ROIS`)."""
    C.check_shape(shape, DIMS)
    o = opts(options)
    given = rois is not None
    if rois is None and (int(o["sampling_ratio"]) > 0 or shape["rois"] > EXACT_ROIS):
        grid = ub_grid(shape, None, o)  # sampling_ratio ** 2, or the generator's largest box
    else:
        rois = make_rois(shape, o) if rois is None else rois
        grid = ub_grid(shape, rois, o)
    p = C.ints(params, PARAMS)
    nbins = shape["pooled_h"] * shape["pooled_w"]
    p["tile_rois"], p["tile_bins"], p["tile_c"] = (min(p["tile_rois"], shape["rois"]), min(p["tile_bins"], nbins),
                                                   min(p["tile_c"], shape["c"]))
    used = ub_used(grid, p["tile_rois"], p["tile_bins"], p["tile_c"], shape["c"], dtype, p["buffer_num"])
    bufs = {"ub": {"used": used, "capacity": hw.ub_bytes}}
    if used > hw.ub_bytes:
        if given and (exc := _roi_too_big(shape, p, dtype, hw, o, rois, used)) is not None:
            raise exc
        raise InfeasibleConfig(f"UB overflow: the tiling needs {used} bytes ({grid} sampling points per bin at "
                               f"most, 2 x 2 neighbours each), UB holds {hw.ub_bytes}")
    C.check_spread(p, hw, max_cores=hw.vector_cores, unit="vector", work=_ntiles(shape, p), what="tiles")
    return p, bufs, o, rois


def _ntiles(shape, p):
    return (-(-shape["rois"] // p["tile_rois"]) * -(-shape["pooled_h"] * shape["pooled_w"] // p["tile_bins"])
            * -(-shape["c"] // p["tile_c"]))


def _program(dtype: str, hw: HardwareProfile) -> tuple[np.ndarray, np.ndarray]:
    """(cost rows, lanes per row) of VDUP, VAXPY, VMULS and VCONV: the bins accumulate in fp32
    whatever the dtype (fp16 sums of a few hundred points were 22% off); fp16 features go
    through VAXPY's mixed form (fp16 source and scalar, fp32 sum: a repeat reads 128 fp16 at 256 bytes,
    no VCONV on the way in) and one VCONV per tile takes the sums back to fp16."""
    rows = [("vdup", f"{ACC}_{ACC}"), ("vaxpy", f"{dtype}_{dtype}_{ACC}"), ("vmuls", f"{ACC}_{ACC}_{ACC}"),
            ("vconv", f"{ACC}_{dtype}") if dtype != ACC else None]
    lanes = [C.lanes(ACC, hw), C.lanes(dtype, hw), C.lanes(ACC, hw), C.lanes(ACC, hw)]
    return C.vtable(hw, rows), np.array(lanes, dtype=np.int64)


def _run(shape, p, dtype, hw, o, rois, execute=False, feat=None, trace_capacity=0):
    """Simulate each core's run of tiles (computing them in execute mode); returns (runs, out, traces)."""
    vcost, vlanes = _program(dtype, hw)
    T = _ntiles(shape, p)
    per = -(-T // p["cores"])
    active = -(-T // per)
    ip = np.array([shape["c"], shape["h"], shape["w"], shape["rois"], shape["pooled_h"], shape["pooled_w"],
                   p["tile_rois"], p["tile_bins"], p["tile_c"], p["buffer_num"], C.BYTES[dtype], int(dtype != ACC)],
                  dtype=np.int64)
    fp = np.array([float(o["spatial_scale"]), float(o["sampling_ratio"]), float(o["aligned"]),
                   C.scalar_cost(hw, "add")])
    feat = np.zeros((1, 1, 1, 1)) if feat is None else feat
    out = np.zeros((shape["rois"], shape["pooled_h"], shape["pooled_w"], shape["c"]) if execute else (1, 1, 1, 1))
    rois = np.ascontiguousarray(rois, dtype=np.float64)
    feat_bytes = shape["n"] * shape["h"] * shape["w"] * shape["c"] * C.BYTES[dtype]
    out_bytes = out.size * C.BYTES[dtype] if execute else shape["rois"] * shape["pooled_h"] * shape["pooled_w"] \
        * shape["c"] * C.BYTES[dtype]

    def cores(hit, write_share, capacity):
        cost = cost_vector(hw, dtype, active_cores=active, l2_hit=hit, write_share=write_share)
        states = []
        for k in range(active):
            st = C.new_state(capacity)
            core(st, cost, vcost, vlanes, ip, fp, rois, k * per, min(T, (k + 1) * per), execute, feat, out,
                 C.CODES[dtype], C.CODES[ACC])
            states.append(st)
        return states

    # neighbourhoods of nearby points overlap: re-reads of the feature map hit the shared L2;
    # the HBM reads left stream while the output tiles go back, and share HBM with them
    states = cores(0.0, None, 0)
    read = sum(st.path_bytes[E.GM_UB] for st in states)
    hit = l2_hit_fraction(hw, read, min(read, feat_bytes), feat_bytes + out_bytes)
    if execute:
        out[:] = 0.0
    states = cores(hit, write_fraction(read * (1.0 - hit), out_bytes), trace_capacity)
    runs = [CoreRun.from_state(st, 1) for st in states]
    return runs, out, [(1, E.recorded(st)) for st in states], hit, min(read, feat_bytes) + out_bytes


def require_simulable(shape: dict) -> None:
    """InputError unless count mode can hold the shape's seeded ROIs (``MAX_ROI_BYTES``)."""
    why = rois_problem({d: shape[d] for d in DIMS}, MAX_ROI_BYTES)
    if why is not None:
        raise InputError(why, field="shape.rois")


def simulate(shape: dict, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
             options: dict | None = None, trace_capacity: int = 0, want_traces: bool = False):
    """Count mode on the seeded ROIs of ``options``; returns a SimResult (and traces). A shape
    whose ROIs count mode cannot hold is an InputError (``require_simulable``)."""
    shape = {d: int(shape[d]) for d in DIMS}
    require_simulable(shape)
    unit = unit or UNITS[0]
    try:
        if unit not in UNITS:
            raise InfeasibleConfig(f"unit={unit!r}, expected one of {UNITS}")
        p, bufs, o, rois = check(shape, params, dtype, hw, options)
    except InfeasibleConfig as exc:
        res = infeasible("roi_align", unit, dtype, shape, params, exc.reason)
        return (res, []) if want_traces else res
    rois = make_rois(shape, o) if rois is None else rois
    runs, _, traces, hit, moved = _run(shape, p, dtype, hw, o, rois, trace_capacity=trace_capacity)
    samples = int(_samples(np.ascontiguousarray(rois, dtype=np.float64), float(o["spatial_scale"]),
                           int(o["sampling_ratio"]), bool(o["aligned"]), shape["pooled_h"], shape["pooled_w"]))
    flops = 8.0 * samples * shape["pooled_h"] * shape["pooled_w"] * shape["c"]  # 4 multiply-adds per point
    res = assemble(op="roi_align", unit=unit, dtype=dtype, shape=shape, params=params, hw=hw, runs=runs,
                   useful_flops=flops, peak_flops=hw.peak_flops("vector", dtype), must_move_bytes=float(moved),
                   l2_hit=hit, buffers=bufs)
    return (res, traces) if want_traces else res


def check_inputs(inputs: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(features, rois, pooled) of ``inputs``, or an InputError naming the bad one: ``[n, h, w,
    c]`` features, ``[rois, 5]`` boxes whose batch index is a whole number in [0, n) (the kernel
    and the reference index the features with it unchecked: 1e6 crashed, -1 read the last
    image), two positive pooled sizes. Non-finite coordinates are torchvision's: no points."""
    if len(inputs) != 3:
        raise InputError(f"expected three inputs, features [n, h, w, c], rois [rois, 5] and pooled "
                         f"[pooled_h, pooled_w], got {len(inputs)}", field="inputs")
    feat, rois, pooled = inputs
    feat = C.input_array(feat, "features", 4)
    rois = C.input_array(rois, "rois", 2)
    pooled = C.input_array(pooled, "pooled", 1)
    if rois.shape[1] != 5:
        raise InputError(f"expected rows (batch, x1, y1, x2, y2), got shape {rois.shape}", field="rois")
    if pooled.shape != (2,) or not np.all((pooled >= 1) & (np.mod(pooled, 1) == 0)):
        raise InputError(f"expected two positive whole sizes (pooled_h, pooled_w), got {pooled.tolist()}",
                         field="pooled")
    b = rois[:, 0]
    with np.errstate(invalid="ignore"):
        bad = np.flatnonzero(~((b >= 0) & (b < feat.shape[0]) & (np.mod(b, 1) == 0)))
    if bad.size:
        r = int(bad[0])
        raise InputError(f"ROI row {r} has batch index {float(rois[r, 0])}: expected a whole number in "
                         f"[0, {feat.shape[0]}) (the features hold {feat.shape[0]} images)", field=f"rois[{r}, 0]")
    return feat, rois, pooled


def execute(inputs: tuple, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
            options: dict | None = None) -> np.ndarray:
    """Execute mode: the same tiles computing ``[rois, pooled_h, pooled_w, c]``. A ROI whose
    sampling grid the tiling's UB cannot hold, though it holds ``roi_max``'s, is an InputError
    naming it, as is one past ``MAX_GRID`` (``check_boxes``)."""
    feat, rois, pooled = check_inputs(inputs)
    check_boxes(rois, pooled, opts(options))
    shape = shape_of(inputs)
    p, _, o, rois = check(shape, params, dtype, hw, options, rois)
    _, out, _, _, _ = _run(shape, p, dtype, hw, o, rois, execute=True, feat=np.ascontiguousarray(feat, dtype=np.float64))
    return dtype_emul.round_to(out, dtype)


def shape_of(inputs: tuple, options: dict | None = None) -> dict:
    """The shape of ``(features, rois, pooled)`` (``check_inputs``): all of it, the pooled
    sizes from the third input; ``options`` change none of it."""
    feat, rois, pooled = check_inputs(inputs)
    n, h, w, c = (int(v) for v in feat.shape)
    return {"n": n, "c": c, "h": h, "w": w, "rois": int(rois.shape[0]), "pooled_h": int(pooled[0]),
            "pooled_w": int(pooled[1])}


@np.errstate(invalid="ignore", over="ignore")  # NaN and inf coordinates sample nothing
def reference(inputs: tuple, dtype: str, *, options: dict | None = None) -> np.ndarray:
    """NumPy reference of torchvision.ops.roi_align, written from its documented algorithm: the
    sampling coordinates and bilinear fractions in float32, as torchvision computes them for fp32
    (each operation rounded, in its order), the weighted sums in float64, rounded once."""
    feat, rois, pooled = check_inputs(inputs)
    o = opts(options)
    check_boxes(rois, pooled, o)
    f = np.float32
    x = np.asarray(feat, dtype=np.float64)
    _, H, W, Cn = x.shape
    PH, PW = int(pooled[0]), int(pooled[1])
    scale, sr, aligned = f(o["spatial_scale"]), int(o["sampling_ratio"]), o["aligned"]
    out = np.zeros((rois.shape[0], PH, PW, Cn))
    off = f(0.5) if aligned else f(0.0)
    for i, (b, x1, y1, x2, y2) in enumerate(np.asarray(rois, dtype=np.float32)):
        sw, sh = f(x1 * scale) - off, f(y1 * scale) - off
        rw, rh = (f(x2 * scale) - off) - sw, (f(y2 * scale) - off) - sh
        if not aligned:
            rw, rh = max(rw, f(1.0)), max(rh, f(1.0))
        bh, bw = rh / f(PH), rw / f(PW)
        gh = sr if sr > 0 else math.ceil(bh) if math.isfinite(bh) else 0  # a NaN box: no points
        gw = sr if sr > 0 else math.ceil(bw) if math.isfinite(bw) else 0
        img = x[int(b)]
        for py in range(PH):
            for px in range(PW):
                acc = np.zeros(Cn)
                for iy in range(gh):
                    yy = (sh + f(py) * bh) + f(iy + 0.5) * bh / f(gh)
                    for ix in range(gw):
                        xx = (sw + f(px) * bw) + f(ix + 0.5) * bw / f(gw)
                        if not (-1.0 <= yy <= H and -1.0 <= xx <= W):  # outside, or NaN
                            continue
                        yy_, xx_ = max(float(yy), 0.0), max(float(xx), 0.0)
                        y0, x0 = int(yy_), int(xx_)
                        if y0 >= H - 1:
                            y0 = y1_ = H - 1
                            yy_ = float(y0)
                        else:
                            y1_ = y0 + 1
                        if x0 >= W - 1:
                            x0 = x1_ = W - 1
                            xx_ = float(x0)
                        else:
                            x1_ = x0 + 1
                        ly, lx = yy_ - y0, xx_ - x0
                        hy, hx = float(f(1 - ly)), float(f(1 - lx))
                        acc += (hy * hx * img[y0, x0] + hy * lx * img[y0, x1_]
                                + ly * hx * img[y1_, x0] + ly * lx * img[y1_, x1_])
                out[i, py, px] = acc / max(gh * gw, 1)
    return dtype_emul.round_to(out, dtype)


def io_elements(shape: dict) -> int:
    """Elements of the features, the ROIs and the output: what an execute-mode run holds in memory."""
    return (shape["n"] * shape["h"] * shape["w"] * shape["c"] + 5 * shape["rois"]
            + shape["rois"] * shape["pooled_h"] * shape["pooled_w"] * shape["c"])


FEAT_MAX = 2.0  # make_inputs' features: uniform in [0, FEAT_MAX)
ACC_ROUNDINGS = 64  # fp32 roundings a bin's sum may err by: ~sqrt of a few thousand additions


def edge_rois(shape: dict, rois: np.ndarray, options: dict | None = None) -> np.ndarray:
    """``rois`` with up to three boxes moved onto the feature map's edges, for execute mode to
    meet what the seeded boxes (all inside the image) never reach: the first straddles the line
    one pixel before the map (y and x = -1: points below it are outside, those just above clamp
    to 0), the middle one lies wholly past the far corner (every point outside: a zero output),
    the last straddles the far edges (y = h, x = w: points past them outside, those just below
    clamp to the last pixel). A kernel that never tests its points' range passed the gate.

    Each moved box keeps its batch index and sides, cut to ``EDGE_SIDE`` of the generator's cap:
    its corners are larger numbers than the seeded boxes', and their float32 rounding must not
    carry an adaptive grid past the one UB is sized by (``ub_grid``). Cost simulation keeps the
    seeded boxes (``make_rois``), on which every bundled study's costs were measured.
    """
    o = opts(options)
    out = np.array(rois, dtype=np.float64)
    R = out.shape[0]
    scale = o["spatial_scale"]
    off = 0.5 if o["aligned"] else 0.0  # torchvision's shift, in feature pixels
    for i, kind in zip(dict.fromkeys((0, R // 2, R - 1)), ("before", "past", "far")):
        sides = []
        for lo, hi, size in ((1, 3, shape["w"]), (2, 4, shape["h"])):  # x, then y
            side = min(out[i, hi] - out[i, lo], EDGE_SIDE * o["roi_max"] * size / scale)
            # a box's start, in feature pixels once scaled and shifted: centred on -1, past size + 1,
            # or centred on size
            start = {"before": -1.0 - side * scale / 2, "past": size + 1.0, "far": size - side * scale / 2}[kind]
            sides.append(((start + off) / scale, side))
        (x1, bw), (y1, bh) = sides
        out[i, 1:] = (x1, y1, x1 + bw, y1 + bh)
    return out


EDGE_SIDE = 0.9  # the largest side of an edge box, a fraction of the generator's largest (roi_max)


def make_inputs(shape: dict, dtype: str, seed: int = 0, *, options: dict | None = None) -> tuple:
    """(features [n, h, w, c] uniform in [0, 2), the options' seeded ROIs with three moved onto
    the map's edges (``edge_rois``), [pooled_h, pooled_w]).

    Non-negative, as post-ReLU features are: a bin's running sum grows with its points, so a sum
    kept in fp16 errs by far more than the output's rounding (zero-mean features kept the sums
    near 0, and a kernel summing in fp16 passed the gate)."""
    rng = np.random.default_rng(seed)
    feat = dtype_emul.round_to(rng.uniform(0, FEAT_MAX, (shape["n"], shape["h"], shape["w"], shape["c"])), dtype)
    rois = edge_rois(shape, make_rois(shape, options), options)
    return feat, rois, np.array([shape["pooled_h"], shape["pooled_w"]])


def tolerance(dtype: str, shape: dict, params: dict | None = None,
              unit: str | None = None, inputs: tuple | None = None) -> tuple[float, float]:
    """(rtol, atol) for make_inputs' non-negative features, relative to the output: its rounding
    to ``dtype`` and the weights' (each rounded to ``dtype``: with features >= 0 their errors add
    to at most u |out|) may leave it one ulp (2u |out|) from the reference's, allowed with half an
    ulp to spare, and the fp32 sums' error (``ACC_ROUNDINGS``); atol only for outputs of 0. A sum
    kept in fp16 is off by several ulps."""
    u32 = C.eps("fp32")
    return 3 * C.eps(dtype) + ACC_ROUNDINGS * u32, u32


def default_params(shape: dict, dtype: str, hw: HardwareProfile, unit: str | None = None,
                   options: dict | None = None) -> dict:
    """Baseline: one ROI per tile with all its bins and all channels, double buffered, as many
    cores as the tiles keep busy; bins, then channels, halved until UB fits (``FIT_STEPS``:
    double buffered to 16 channels, then single buffered, then down to one 32 B block)."""
    p = {"tile_rois": 1, "tile_bins": shape["pooled_h"] * shape["pooled_w"], "tile_c": shape["c"],
         "buffer_num": 2, "cores": 1}
    return C.first_fitting(_fit(shape, {**p, "buffer_num": depth}, fewest or 32 // C.BYTES[dtype], dtype, hw, options)
                           for depth, fewest in FIT_STEPS)


# How the default is made to fit UB, in turn until one fits: (buffer_num, the fewest channels; None:
# one 32 B block, below which a pixel's padding saves nothing). A big sampling grid (fp32, 64
# channels, sampling_ratio 20: 400 points a bin) overflowed at one bin of 16 channels double
# buffered and the default was that tiling; single buffered it runs 3.1 M cycles, 8 channels
# double buffered 4.8 M.
FIT_STEPS = ((2, 16), (1, 16), (1, None))


def _fit(shape, p, fewest, dtype, hw, options) -> tuple[dict, bool]:
    """(``p`` halved until UB fits: bins, then channels down to ``fewest``; whether it fits),
    with the cores its tiles keep busy."""
    while True:
        p["cores"] = C.busy_cores(_ntiles(shape, p), hw.vector_cores)
        try:
            check(shape, p, dtype, hw, options)
            return p, True
        except InfeasibleConfig:
            if p["tile_bins"] > 1:
                p["tile_bins"] = -(-p["tile_bins"] // 2)
            elif p["tile_c"] > fewest:
                p["tile_c"] //= 2
            else:
                return p, False
