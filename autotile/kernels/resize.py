"""Resize (nearest / bilinear interpolation, PyTorch ``interpolate`` semantics) on the Vector unit.

Options (the spec's ``inputs:``): ``mode`` nearest | bilinear, ``layout`` NCHW | NHWC,
``align_corners`` (bilinear only; true with nearest is refused, as PyTorch refuses it). Source
indices and weights follow PyTorch's rules (ATen UpSample.h) with its float32 arithmetic (the
opmath type of fp16 and fp32; the source coordinate's multiply-add fused, as compiled PyTorch
does): nearest ``min(floor(dst * in/out), in-1)``; bilinear ``dst * (in-1)/(out-1)`` with
align_corners, else ``(dst + 0.5) * in/out - 0.5`` clamped at 0, ``lambda1`` its fraction and
``lambda0 = 1 - lambda1`` in the dtype; the neighbour is ``i0 + 1`` unless ``i0`` is the last
index; an unchanged size is a copy. The host computes these index/weight tables and leaves them
in GM: two 4-byte entries per output column.

The output is cut into tiles of ``tile_c`` channels x ``tile_h`` rows x ``tile_w`` columns,
walked in layout order and split over ``cores`` in contiguous runs. Per tile:

* MTE2 copies the tile's columns of the index/weight tables: into the input slot with every
  tile, or once per core when a tile spans the whole output width (the tables then stay in UB).
* MTE2 copies the distinct source rows the tile's output rows need (2 per output row for
  bilinear, 1 for nearest; rows shared by neighbours once), each over the tile's source column
  span; one DataCopy per run of consecutive rows (NCHW: per channel; NHWC with a channel tile
  narrower than C: per row), two runs one where the rows between them are fewer bytes than a
  DataCopy's issue streams (``row_gap``: the skipped rows are brought in too). Where output columns lie far apart in the source
  (``gathers_columns``: more than ``GATHER_GAP_BYTES`` skipped between two columns' windows),
  each output column's window (its 2 source columns for bilinear, 1 for nearest) is copied
  apart instead, one DataCopy per column and run of rows, as the rows are. Every burst is
  padded to 32 B.
* The Vector gathers the source points (VGATHER per lane; in NHWC whole channel vectors move by
  VCOPY when 32 B aligned), weights them (per-column weight vectors, per-row scalars with VMULS,
  which in NHWC is also per pixel) and adds; the S pipe computes each row's index and weights.
* MTE3 writes the tile back. Input and output tiles each sit in queues of ``buffer_num`` slots.

An unchanged size (``unchanged``) is a copy: each tile goes in and back out of the same slot, with
no tables, indices or vector work.

Arithmetic is in the input dtype, rounded after every vector op (execute mode).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from autotile.errors import InfeasibleConfig, InputError
from autotile.hardware import HardwareProfile
from autotile.kernels import _common as C
from autotile.kernels import dtype_emul, registry
from autotile.sim import engine as E
from autotile.sim.costs import cost_vector, write_fraction
from autotile.sim.result import CoreRun, assemble, infeasible

UNITS = ("vector",)
DIMS = ("n", "c", "h_in", "w_in", "h_out", "w_out")
PARAMS = registry.get("resize").needs("vector")
_OPTIONS = {o.name: o for o in registry.get("resize").options}
MODES, LAYOUTS = _OPTIONS["mode"].choices, _OPTIONS["layout"].choices
Q_IN, Q_OUT = 0, 1
V_GATHER, V_COPY, V_MUL, V_MULS, V_ADD = range(5)
ROW_SCALAR_OPS = 4  # per output row: source index, floor, two weights
IP_LEN = 17


F32 = np.float32


def src_index(out_size: int, in_size: int, mode: str, align_corners: bool):
    """(i0, i1, lambda1) per output index: the two source indices and the weight of i1.

    PyTorch's arithmetic for fp16/fp32 inputs (ATen UpSample.h ``nearest_idx`` and
    ``compute_source_index_and_lambda``): the scale, the source coordinate and lambda in float32,
    every operation rounded (the coordinate's multiply-add once, as fused), and a plain copy when ``out == in`` (nearest also shifts when
    ``out == 2 * in``). Float64 picked another source pixel for thousands of size pairs.
    """
    dst = np.arange(out_size)
    if out_size == in_size:
        return dst, dst.copy(), np.zeros(out_size)
    if mode == "nearest":
        i0 = dst >> 1 if out_size == 2 * in_size else \
            np.minimum(np.floor(dst.astype(F32) * (F32(in_size) / F32(out_size))).astype(np.int64), in_size - 1)
        return i0, i0.copy(), np.zeros(out_size)
    src = _linear_source(out_size, in_size, align_corners)
    i0 = np.minimum(np.floor(src).astype(np.int64), in_size - 1)
    i1 = np.where(i0 < in_size - 1, i0 + 1, i0)
    return i0, i1, np.clip(src - i0.astype(F32), F32(0), F32(1)).astype(np.float64)


def _linear_source(out_size: int, in_size: int, align_corners: bool) -> np.ndarray:
    """ATen's ``area_pixel_compute_source_index`` in float32: ``dst * (in-1)/(out-1)`` with
    align_corners, else ``scale * (dst + 0.5) - 0.5`` clamped at 0, the multiply-add rounded
    once as PyTorch's compiled code fuses it (torch 2.13 on CPU: in=2, out=50, dst=37 gives
    0.99999994, where rounding the product first gives 1.0 and another source pixel). The
    float64 product of two float32 values is exact, so float64 then one rounding is the fma."""
    dst = np.arange(out_size).astype(F32)
    if align_corners:
        return (F32(in_size - 1) / F32(out_size - 1) if out_size > 1 else F32(0)) * dst
    scale = np.float64(F32(in_size) / F32(out_size))
    return np.maximum((scale * (dst + F32(0.5)).astype(np.float64) - 0.5).astype(F32), F32(0))


@njit(cache=True)
def _row_runs(h0, h1, r0, rh, mark, stamp, gap):
    """(source rows copied, DataCopies' runs of them) for the output rows r0..r0+rh-1: the
    distinct rows they read, in runs of consecutive ones; two runs at most ``gap`` rows apart
    are one run that brings the skipped rows in too (``row_gap``, ``core``)."""
    lo = h0[r0]
    hi = h1[r0 + rh - 1]
    for r in range(r0, r0 + rh):
        mark[h0[r]] = stamp
        mark[h1[r]] = stamp
        lo = min(lo, h0[r])
        hi = max(hi, h1[r])
    rows = 0
    runs = 0
    skipped = 0  # unread rows since the last run
    for s in range(lo, hi + 1):
        if mark[s] != stamp:
            skipped += 1
            continue
        if runs == 0 or skipped > gap:
            runs += 1
        elif skipped > 0:
            rows += skipped  # streamed through rather than issuing another DataCopy
        rows += 1
        skipped = 0
    return rows, runs


@njit(cache=True)
def _al32(v):
    return (v + 31) // 32 * 32


@njit(cache=True)
def _source_row(w0, w1, x0, cw, apart, pix, per_pixel):
    """(bytes, DataCopies) of one source row for output columns x0..x0+cw-1: the span they cover,
    or (``apart``) each column's window; ``pix`` bytes a source column, bursts padded to 32 B
    (``per_pixel``: one burst a column, already padded)."""
    if apart:
        nbytes = 0
        for x in range(x0, x0 + cw):
            win = w1[x] - w0[x] + 1
            nbytes += win * pix if per_pixel else _al32(win * pix)
        return nbytes, cw
    span = w1[x0 + cw - 1] - w0[x0] + 1
    return (span * pix if per_pixel else _al32(span * pix)), 1


@njit(cache=True)
def _pixel(src, nhwc, b, ch, y, x):
    if nhwc:
        return src[b, y, x, ch]
    return src[b, ch, y, x]


@njit(cache=True)
def core(st, cost, vcost, ip, h0, h1, hl, w0, w1, wl, t0, t1, mark, execute, src, dst, code):
    """Tiles t0..t1-1 of the output on one core; returns the end time."""
    C_, Ho, Wo = ip[1], ip[4], ip[5]
    th, tw, tc, depth, nb, lanes, bil, nhwc = ip[6], ip[7], ip[8], ip[9], ip[10], ip[11], ip[12], ip[13]
    apart = ip[14] == 1  # each output column's source window copied apart
    most_gap = ip[15]  # source rows a run of rows may stream through (UB counts them: row_gap)
    issue_bytes = cost[3 * E.GM_UB] * cost[3 * E.GM_UB + 1]  # what a copy's issue streams here
    same = ip[16] == 1  # an unchanged size: each tile goes back out of its input slot
    E.set_queue(st, Q_IN, 2 * depth if same else depth)  # a copy binds the output's slots in too
    E.set_queue(st, Q_OUT, depth)
    nct = (C_ + tc - 1) // tc
    nht = (Ho + th - 1) // th
    nwt = (Wo + tw - 1) // tw
    t = 0.0
    npts = 4 if bil else 1
    resident = nwt == 1  # every tile needs every column: the tables are loaded once
    tables_ready = 0.0
    if resident and t1 > t0 and not same:
        tables_ready = E.copy(st, cost, E.GM_UB, float(2 * ((Wo * 4 + 31) // 32) * 32), 0.0)
    for ti in range(t0, t1):
        if nhwc:
            ct = ti % nct
            wt = (ti // nct) % nwt
            ht = (ti // (nct * nwt)) % nht
            b = ti // (nct * nwt * nht)
        else:
            wt = ti % nwt
            ht = (ti // nwt) % nht
            ct = (ti // (nwt * nht)) % nct
            b = ti // (nwt * nht * nct)
        r0, x0, c0 = ht * th, wt * tw, ct * tc
        rh, cw, cc = min(th, Ho - r0), min(tw, Wo - x0), min(tc, C_ - c0)
        per_pixel = nhwc == 1 and cc < C_  # a burst a source pixel (part of its channels)
        pix = _al32(cc * nb) if per_pixel else (C_ * nb if nhwc else nb)
        row_bytes, per_row = _source_row(w0, w1, x0, cw, apart, pix, per_pixel)
        # unread rows a run streams through: fewer bytes than a copy's issue streams on this
        # core with the others sharing HBM (48 cores: ~520 B), at most what UB counts
        gap = min(most_gap, int(issue_bytes * per_row // row_bytes))
        rows, runs = _row_runs(h0, h1, r0, rh, mark, ti + 1, gap)
        if nhwc:
            if cc == C_:
                nbytes, ncopy = rows * row_bytes, runs * per_row
                obytes, ocopy = rh * _al32(cw * C_ * nb), 1
            else:
                nbytes, ncopy = rows * row_bytes, rows * per_row
                obytes, ocopy = rh * cw * _al32(cc * nb), rh
        else:
            nbytes, ncopy = cc * rows * row_bytes, cc * runs * per_row
            obytes, ocopy = cc * rh * _al32(cw * nb), cc
        # copy in: one DataCopy per run of rows (and column, copied apart)
        slot, free = E.alloc(st, Q_IN)
        ready = max(free, tables_ready)
        if not resident and not same:  # this tile's columns of the two tables, in its input slot
            ready = max(ready, E.copy(st, cost, E.GM_UB, float(2 * ((cw * 4 + 31) // 32) * 32), free))
        for _ in range(ncopy):
            ready = max(ready, E.copy(st, cost, E.GM_UB, float(nbytes / ncopy), free))
        if same:  # a copy: no indices, weights or vector work, no output slot
            t = ready
            for _ in range(ocopy):
                E.copy(st, cost, E.UB_GM, float(obytes / ocopy), ready)
            E.release(st, Q_IN, slot, st.pipe_free[E.MTE3])
        else:
            # row indices and weights on the S pipe
            ready = max(ready, E.scalar(st, cost, ROW_SCALAR_OPS * rh, cost[E.C_SCALAR], free))
            oslot, ofree = E.alloc(st, Q_OUT)
            ready = max(ready, ofree)
            n_el = cc * rh * cw
            block = nhwc and (cc * nb) % 32 == 0
            t = C.vrun(st, cost, vcost, V_COPY if block else V_GATHER, npts * n_el, lanes, ready)
            if bil:
                if nhwc:
                    for _ in range(rh * cw):  # horizontal weight per pixel
                        t = C.vrun(st, cost, vcost, V_MULS, npts * cc, lanes, t)
                else:
                    t = C.vrun(st, cost, vcost, V_MUL, npts * n_el, lanes, t)
                t = C.vrun(st, cost, vcost, V_ADD, 2 * n_el, lanes, t)
                for _ in range(2 * rh * (1 if nhwc else cc)):  # vertical weight per row
                    t = C.vrun(st, cost, vcost, V_MULS, n_el // (rh * (1 if nhwc else cc)), lanes, t)
                t = C.vrun(st, cost, vcost, V_ADD, n_el, lanes, t)
            E.release(st, Q_IN, slot, t)
            done = t
            for _ in range(ocopy):
                done = max(done, E.copy(st, cost, E.UB_GM, float(obytes / ocopy), t))
            E.release(st, Q_OUT, oslot, st.pipe_free[E.MTE3])
        if execute:
            for ch in range(c0, c0 + cc):
                for r in range(r0, r0 + rh):
                    a1 = C.rnd(hl[r], code)
                    a0 = C.rnd(1.0 - a1, code)  # lambda0 = 1 - lambda1 in the dtype, as PyTorch
                    for x in range(x0, x0 + cw):
                        v00 = _pixel(src, nhwc, b, ch, h0[r], w0[x])
                        if bil:
                            b1 = C.rnd(wl[x], code)
                            b0 = C.rnd(1.0 - b1, code)
                            top = C.rnd(C.rnd(v00 * b0, code) + C.rnd(_pixel(src, nhwc, b, ch, h0[r], w1[x]) * b1, code), code)
                            bot = C.rnd(C.rnd(_pixel(src, nhwc, b, ch, h1[r], w0[x]) * b0, code)
                                        + C.rnd(_pixel(src, nhwc, b, ch, h1[r], w1[x]) * b1, code), code)
                            v00 = C.rnd(C.rnd(top * a0, code) + C.rnd(bot * a1, code), code)
                        if nhwc:
                            dst[b, r, x, ch] = v00
                        else:
                            dst[b, ch, r, x] = v00
    return max(t, st.pipe_free[E.MTE3])


# ---------------------------------------------------------------------------------------
# Python side


def _al(a: int, b: int = 32) -> int:
    return -(-a // b) * b


def opts(options: dict | None) -> tuple[str, str, bool]:
    """(mode, layout, align_corners) from the op options, validated."""
    o = C.op_options("resize", options)
    return o["mode"], o["layout"], o["align_corners"]


def _tables(shape, mode, ac):
    h0, h1, hl = src_index(shape["h_out"], shape["h_in"], mode, ac)
    w0, w1, wl = src_index(shape["w_out"], shape["w_in"], mode, ac)
    return h0, h1, hl, w0, w1, wl


def unchanged(shape: dict) -> bool:
    """Whether the output has the input's size: PyTorch then copies (``src_index`` is the
    identity, weights 0), so the kernel moves each tile in and back out of the same slot, in a
    queue of 2 x ``buffer_num`` slots, with no vector work (it ran the full bilinear gather and
    weighting: 256 x 256 x 64 fp16, 36,903 cycles, vector bound)."""
    return shape["h_in"] == shape["h_out"] and shape["w_in"] == shape["w_out"]


def span_bound(w_in: int, w_out: int, tw: int, mode: str, align_corners: bool) -> int:
    """Source columns a tile of ``tw`` output columns reads at most (``i1`` of its last column
    minus ``i0`` of its first, plus one): the closed form UB is sized by where a tile copies the
    span (``source_row_bytes``), which a spec can state (``studies/resize.yaml``).

    An unchanged width is a copy: ``tw``. Otherwise the source coordinate moves ``s = num / den``
    per output column (``w_in / w_out``; bilinear with align_corners ``(w_in-1) / (w_out-1)``), so
    over a tile by ``(tw-1) * s`` plus the float32 rounding of the scale and the two coordinates,
    under ``4 * w_in * 2**-24 = w_in / 2**22``, which is less than ``(slack + 1) / den`` with
    ``slack = w_in * w_out // 2**22`` (0 while ``w_in * w_out < 2**22``). Their floors (``i0``)
    then differ by at most ``((tw-1) * num + slack) // den + 1``; plus one for the count, and one
    more for bilinear's right neighbour; never more than ``w_in``. Clamping at 0 and at
    ``w_in - 1`` only narrows a tile. Measured over many sizes (tests/test_resize.py): at most two
    columns more than the widest tile reads, mostly none or one.
    """
    tw = min(tw, w_out)
    if w_in == w_out:
        return tw
    bilinear = mode == "bilinear"
    num, den = (w_in - 1, max(w_out - 1, 1)) if bilinear and align_corners else (w_in, w_out)
    slack = w_in * w_out // 2**22
    return min(w_in, ((tw - 1) * num + slack) // den + (3 if bilinear else 2))


def check(shape: dict, params: dict, dtype: str, hw: HardwareProfile, options: dict | None):
    """Validate; returns (params clamped to the shape, buffers, (mode, layout, align_corners)).

    UB holds ``buffer_num`` slots of the source rows (``source_row_bytes``: ``span_bound``
    columns, or each column's window; ``source_rows`` of them) and of the output
    tile, every row's burst padded to 32 B, the gathered points (4 for bilinear) and the two
    index/weight tables over the tile's columns (``tables_bytes``; sized by the whole width,
    every tiling was infeasible from w_out ~ 24,576). An ``unchanged`` size (a copy) holds
    2 x ``buffer_num`` slots of a tile in one queue (in and out bound: a tile goes back out of
    the slot it came in), the input and output slots an interpolation's tile takes."""
    C.check_shape(shape, DIMS)
    mode, layout, ac = opts(options)
    p = C.ints(params, PARAMS)
    p["tile_h"], p["tile_w"], p["tile_c"] = (min(p["tile_h"], shape["h_out"]), min(p["tile_w"], shape["w_out"]),
                                             min(p["tile_c"], shape["c"]))
    nb = C.BYTES[dtype]
    th, tw, tc, Cn = p["tile_h"], p["tile_w"], p["tile_c"], shape["c"]
    rows = source_rows(shape, th, tw, tc, nb, mode, layout, ac)
    inb = (tc if layout == "NCHW" else 1) * rows * source_row_bytes(shape, tw, tc, nb, mode, layout, ac)
    if layout == "NCHW":
        outb = tc * th * _al(tw * nb)
    elif tc == Cn:
        outb = th * _al(tw * Cn * nb)
    else:
        outb = th * tw * _al(tc * nb)
    work = 4 * _al(tc * th * tw * nb) if mode == "bilinear" else _al(tc * th * tw * nb)
    used = p["buffer_num"] * (inb + outb) + work + tables_bytes(shape["w_out"], tw, p["buffer_num"])
    if unchanged(shape):  # a copy: in and out slots bound into one queue, the same bytes a tile
        used = 2 * p["buffer_num"] * inb
    bufs = {"ub": {"used": used, "capacity": hw.ub_bytes}}
    if used > hw.ub_bytes:
        raise InfeasibleConfig(f"UB overflow: the tiling needs {used} bytes (source rows, output tile, "
                               f"gathered points), UB holds {hw.ub_bytes}")
    C.check_spread(p, hw, max_cores=hw.vector_cores, unit="vector", work=_ntiles(shape, p), what="tiles")
    return p, bufs, (mode, layout, ac)


# A tile copies each output column's source window apart (2 columns for bilinear, 1 for nearest)
# rather than the span its columns cover where the source skipped between two windows exceeds
# GATHER_GAP_BYTES: one DataCopy's issue (43 cycles on the bundled profiles) streams ~1.8 KB at a
# core's 42.2 B/cycle, so past 2 KiB the extra copy costs less than streaming the gap. Copying the
# span, a 2-column tile of 25,000 to 4 columns (fp32) read 6,252 source columns a row to use 4:
# one-row tiles of 64 channels, 512 to 64 rows, took 509,253 cycles (1 column: 54,953; now
# 31,628 with 2).
GATHER_GAP_BYTES = 2048


def pixel_bytes(c: int, tc: int, nb: int, layout: str) -> int:
    """Bytes a tile's copy moves per source column of a row: NCHW one element; NHWC the
    pixel's channels (all ``c`` in one burst with the row, else the tile's ``tc`` padded to 32 B)."""
    if layout == "NCHW":
        return nb
    return c * nb if tc >= c else _al(tc * nb)


def gathers_columns(shape: dict, tc: int, nb: int, mode: str, layout: str) -> bool:
    """Whether a tile copies each output column's source window apart: the source between two
    output columns' windows (``w_in / w_out`` columns less the window) exceeds GATHER_GAP_BYTES."""
    window = 2 if mode == "bilinear" else 1
    gap = (shape["w_in"] - window * shape["w_out"]) * pixel_bytes(shape["c"], tc, nb, layout)
    return gap > GATHER_GAP_BYTES * shape["w_out"]


def source_row_bytes(shape: dict, tw: int, tc: int, nb: int, mode: str, layout: str, ac: bool) -> int:
    """UB bytes of one source row (NCHW: of one channel) a tile of ``tw`` columns and ``tc``
    channels copies at most: the ``span_bound`` columns, or ``tw`` windows of 2 columns (1 for
    nearest) when it ``gathers_columns``; one burst padded to 32 B (NHWC with part of C: a burst a
    pixel)."""
    pix = pixel_bytes(shape["c"], tc, nb, layout)
    per_pixel = layout == "NHWC" and tc < shape["c"]
    if gathers_columns(shape, tc, nb, mode, layout):
        window = 2 if mode == "bilinear" else 1
        return tw * (window * pix if per_pixel else _al(window * pix))
    span = span_bound(shape["w_in"], shape["w_out"], tw, mode, ac)
    return span * pix if per_pixel else _al(span * pix)


def row_gap(shape: dict, tw: int, tc: int, nb: int, mode: str, layout: str, ac: bool) -> int:
    """Unread source rows a tile's copy of a run of rows may stream through rather than issue
    another DataCopy, by the columns' rule (``GATHER_GAP_BYTES``): their bytes, a row's
    ``source_row_bytes`` per DataCopy it takes (NCHW per channel), at most GATHER_GAP_BYTES.
    UB is sized by it; ``core`` streams fewer, as many as a copy's issue streams at the read
    rate the core gets with the others sharing HBM (1,815 B on one core of the bundled profiles,
    ~520 B on 48): merging 1,280 B fp16 rows of 480 x 640 to 224 x 224 on 48 cores took 6,326
    cycles against 6,226. 0 where rows are copied one by one anyway (NHWC with part of C).
    Without it, 64 channels of 7 x 33 to 3 x 11 (fp32 bilinear, 4 x 16 x 8 tiles, one core)
    took 129 copies and more cycles than 4 x 11 did (11,824 against 10,241)."""
    if layout == "NHWC" and tc < shape["c"]:
        return 0
    per_row = tw if gathers_columns(shape, tc, nb, mode, layout) else 1  # DataCopies a row takes
    return GATHER_GAP_BYTES * per_row // source_row_bytes(shape, tw, tc, nb, mode, layout, ac)


def source_rows(shape: dict, th: int, tw: int, tc: int, nb: int, mode: str, layout: str, ac: bool) -> int:
    """Source rows a tile of ``th`` output rows copies at most: the distinct ones it reads (2 per
    output row for bilinear, 1 for nearest or an unchanged height, ``D``), and where runs of them are merged
    (``row_gap``: ``g`` rows) the skipped ones too, at most ``g`` between two of the D rows and
    never past the rows the tile spans (``span_bound`` of the rows), or ``h_in``."""
    d = min(shape["h_in"], (2 if mode == "bilinear" and shape["h_in"] != shape["h_out"] else 1) * th)
    g = row_gap(shape, tw, tc, nb, mode, layout, ac)
    if g == 0:
        return d
    return max(d, min(span_bound(shape["h_in"], shape["h_out"], th, mode, ac), d + (d - 1) * g))


def tables_bytes(w_out: int, tw: int, buffer_num: int) -> int:
    """UB of the index/weight tables (two 4-byte entries per column): the whole width once when
    a tile of ``tw`` columns spans it, else the tile's columns in each of the ``buffer_num`` slots."""
    return 2 * _al(tw * 4) * (1 if tw >= w_out else buffer_num)


def _ntiles(shape, p):
    return (shape["n"] * -(-shape["c"] // p["tile_c"]) * -(-shape["h_out"] // p["tile_h"])
            * -(-shape["w_out"] // p["tile_w"]))


def _run(shape, p, dtype, hw, mo, execute=False, src=None, trace_capacity=0):
    """Simulate each core's run of tiles (computing them in execute mode); returns (runs, dst, traces)."""
    mode, layout, ac = mo
    nhwc = layout == "NHWC"
    h0, h1, hl, w0, w1, wl = _tables(shape, mode, ac)
    sig = f"{dtype}_{dtype}"
    vcost = C.vtable(hw, [("vgather", sig), ("vcopy", sig), ("vmul", f"{sig}_{dtype}"), ("vmuls", f"{sig}_{dtype}"),
                          ("vadd", f"{sig}_{dtype}")])
    nb = C.BYTES[dtype]
    need_read, need_write = must_move(shape, (h0, h1, w0, w1), nb)
    T = _ntiles(shape, p)
    per = -(-T // p["cores"])
    active = -(-T // per)
    ip = np.array([shape["n"], shape["c"], shape["h_in"], shape["w_in"], shape["h_out"], shape["w_out"],
                   p["tile_h"], p["tile_w"], p["tile_c"], p["buffer_num"], nb, C.lanes(dtype, hw),
                   int(mode == "bilinear" and not unchanged(shape)), int(nhwc),
                   int(gathers_columns(shape, p["tile_c"], nb, mode, layout)),
                   row_gap(shape, p["tile_w"], p["tile_c"], nb, mode, layout, ac), int(unchanged(shape))],
                  dtype=np.int64)
    if src is None:
        src = np.zeros((1, 1, 1, 1))
    oshape = ((shape["n"], shape["h_out"], shape["w_out"], shape["c"]) if nhwc else
              (shape["n"], shape["c"], shape["h_out"], shape["w_out"]))
    dst = np.zeros(oshape if execute else (1, 1, 1, 1))
    mark = np.zeros(shape["h_in"], dtype=np.int64)

    def cores(write_share, capacity):
        cost = cost_vector(hw, dtype, active_cores=active, write_share=write_share)
        out = []
        for k in range(active):
            st = C.new_state(capacity)
            mark[:] = 0
            core(st, cost, vcost, ip, h0, h1, hl, w0, w1, wl, k * per, min(T, (k + 1) * per), mark, execute,
                 src, dst, C.CODES[dtype])
            out.append(st)
        return out

    # HBM is split between reads and writes by their share of the traffic: first from the bytes
    # that must move, then (if tiles re-read source rows enough to matter) from the simulated ones
    guess = write_fraction(need_read, need_write)
    states = cores(guess, trace_capacity)
    simulated = write_fraction(sum(st.path_bytes[E.GM_UB] for st in states),
                               sum(st.path_bytes[E.UB_GM] for st in states))
    if abs(simulated - guess) > 0.02:
        states = cores(simulated, trace_capacity)
    runs = [CoreRun.from_state(st, 1) for st in states]
    traces = [(1, E.recorded(st)) for st in states]
    return runs, dst, traces, need_read + need_write


def count_work(shape: dict, params: dict, dtype: str, options: dict | None = None) -> dict:
    """What count mode's run time follows (``sim_budget`` rates it): ``tiles``; ``copies`` (the
    DataCopies of source rows, by runs of rows, apart per column where the tile ``gathers_columns``,
    and of outputs); ``row_ops`` (bilinear's vector ops issued per row, and in NHWC per pixel);
    ``tables`` (output rows and columns indexed on the host) and ``marks`` (source rows cleared
    per core). Closed forms from ``core``'s loop, near it rather than exact: a run of rows is
    taken as a tile's when the rows are dense or the source skips at most ``row_gap`` rows
    between output rows, and as each row's when it skips more."""
    mode, layout, ac = opts(options)
    p = C.ints(params, PARAMS)
    n, c, h_in, h_out, w_out = (int(shape[d]) for d in ("n", "c", "h_in", "h_out", "w_out"))
    th, tw, tc = min(p["tile_h"], h_out), min(p["tile_w"], w_out), min(p["tile_c"], c)
    nct, nht, nwt = -(-c // tc), -(-h_out // th), -(-w_out // tw)
    tiles = n * nct * nht * nwt
    bil = mode == "bilinear"
    per_row = w_out if gathers_columns(shape, tc, C.BYTES[dtype], mode, layout) else nwt  # copies a source row
    skipped = h_in // h_out - (2 if bil else 1)  # unread source rows between two output rows
    runs = h_out if skipped > row_gap(shape, tw, tc, C.BYTES[dtype], mode, layout, ac) and skipped > 0 else nht
    if layout == "NCHW":
        copies, row_ops = n * c * (runs * per_row + nht * nwt), 2 * n * c * h_out * nwt if bil else 0
    else:
        rows = runs if tc == c else min(h_out * (2 if bil else 1), nht * h_in)
        copies = n * nct * rows * per_row + (tiles if tc == c else n * h_out * nwt * nct)
        row_ops = n * nct * h_out * (w_out + 2 * nwt) if bil else 0
    return {"tiles": tiles, "copies": copies, "row_ops": row_ops, "tables": h_out + int(shape["w_out"]),
            "marks": h_in * max(1, min(p["cores"], tiles)), "bilinear": bil}


def must_move(shape: dict, tables: tuple, nb: int) -> tuple[float, float]:
    """(read, write) bytes the op cannot avoid moving: the source pixels its output samples
    (distinct sampled rows x distinct sampled columns, per plane) and the output."""
    h0, h1, w0, w1 = tables
    rows = np.union1d(h0, h1).size
    cols = np.union1d(w0, w1).size
    planes = shape["n"] * shape["c"]
    return float(planes * rows * cols * nb), float(planes * shape["h_out"] * shape["w_out"] * nb)


def simulate(shape: dict, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
             options: dict | None = None, trace_capacity: int = 0, want_traces: bool = False):
    """Count mode: one tiling; returns a SimResult (and traces)."""
    shape = {d: int(shape[d]) for d in DIMS}
    unit = unit or UNITS[0]
    try:
        if unit not in UNITS:
            raise InfeasibleConfig(f"unit={unit!r}, expected one of {UNITS}")
        p, bufs, mo = check(shape, params, dtype, hw, options)
    except InfeasibleConfig as exc:
        res = infeasible("resize", unit, dtype, shape, params, exc.reason)
        return (res, []) if want_traces else res
    runs, _, traces, moved = _run(shape, p, dtype, hw, mo, trace_capacity=trace_capacity)
    outs = shape["n"] * shape["c"] * shape["h_out"] * shape["w_out"]
    flops = outs * (7.0 if mo[0] == "bilinear" and not unchanged(shape) else 0.0)  # 4 mul, 3 add an output
    res = assemble(op="resize", unit=unit, dtype=dtype, shape=shape, params=params, hw=hw, runs=runs,
                   useful_flops=flops, peak_flops=hw.peak_flops("vector", dtype), must_move_bytes=float(moved),
                   l2_hit=0.0, buffers=bufs)
    return (res, traces) if want_traces else res


def execute(inputs: tuple, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
            options: dict | None = None) -> np.ndarray:
    """Execute mode: the same tiles computing the output (rounded like the Vector would)."""
    shape = shape_of(inputs, options=options)
    p, _, mo = check(shape, params, dtype, hw, options)
    x = np.ascontiguousarray(inputs[0], dtype=np.float64)
    _, dst, _, _ = _run(shape, p, dtype, hw, mo, execute=True, src=x)
    return dtype_emul.round_to(dst, dtype)


def shape_of(inputs: tuple, options: dict | None = None) -> dict:
    """The shape of ``(x, sizes)``: x ``[n, c, h_in, w_in]`` (``[n, h_in, w_in, c]`` when the
    options' layout is NHWC), sizes ``[h_out, w_out]``; an InputError naming the input that does
    not fit (execute indexes them in Numba, which checks no bounds)."""
    if len(inputs) != 2:
        raise InputError(f"expected two inputs, x and sizes [h_out, w_out], got {len(inputs)}", field="inputs")
    x, sizes = C.input_array(inputs[0], "x", 4), C.input_array(inputs[1], "sizes", 1)
    if sizes.shape != (2,) or not np.all(np.mod(sizes, 1) == 0):
        raise InputError(f"expected two whole output sizes (h_out, w_out), got {sizes.tolist()}", field="sizes")
    n, a, b, c = (int(v) for v in x.shape)
    c, h, w = (c, a, b) if opts(options)[1] == "NHWC" else (a, b, c)
    return {"n": n, "c": c, "h_in": h, "w_in": w, "h_out": int(sizes[0]), "w_out": int(sizes[1])}


def reference(inputs: tuple, dtype: str, *, options: dict | None = None) -> np.ndarray:
    """NumPy reference of torch.nn.functional.interpolate(size=...) for fp16/fp32 inputs.

    Source indices and weights as PyTorch computes them (ATen UpSample.h): the scale and source
    coordinate in float32 (PyTorch's opmath type for fp16 and fp32), a copy when a size is
    unchanged and nearest's shift when it doubles; bilinear weights ``lambda1`` and
    ``lambda0 = 1 - lambda1`` held in the dtype. The interpolation itself is exact (float64),
    rounded once to ``dtype``. Written from those formulas, vectorized over the whole tensor.
    """
    x, sizes = inputs
    mode, layout, ac = opts(options)
    xs = np.asarray(x, dtype=np.float64)
    if layout == "NHWC":
        xs = xs.transpose(0, 3, 1, 2)
    H, W = xs.shape[2], xs.shape[3]
    Ho, Wo = int(sizes[0]), int(sizes[1])
    if mode == "nearest":
        out = xs[:, :, _ref_nearest(H, Ho)][:, :, :, _ref_nearest(W, Wo)]
    else:
        y0, y1, ky, ly = _ref_linear(H, Ho, ac, dtype)
        x0, x1, kx, lx = _ref_linear(W, Wo, ac, dtype)
        ky, ly, kx, lx = ky[:, None], ly[:, None], kx[None, :], lx[None, :]
        g = lambda yy, xx: xs[:, :, yy][:, :, :, xx]  # noqa: E731
        out = ky * (kx * g(y0, x0) + lx * g(y0, x1)) + ly * (kx * g(y1, x0) + lx * g(y1, x1))
    if layout == "NHWC":
        out = out.transpose(0, 2, 3, 1)
    return dtype_emul.round_to(out, dtype)


def _ref_nearest(i_: int, o_: int) -> np.ndarray:
    """The reference's nearest source index per output index (``nearest_idx``)."""
    d = np.arange(o_)
    if o_ in (i_, 2 * i_):
        return d * i_ // o_
    return np.minimum(np.floor(d.astype(np.float32) * (np.float32(i_) / np.float32(o_))).astype(int), i_ - 1)


def _ref_linear(i_: int, o_: int, ac: bool, dtype: str):
    """The reference's (i0, i1, lambda0, lambda1) per output index, the weights in ``dtype``."""
    if o_ == i_:
        d = np.arange(o_)
        return d, d, np.ones(o_), np.zeros(o_)
    d = np.arange(o_).astype(np.float32)
    f = np.float32
    if ac:
        s = d * (f(i_ - 1) / f(o_ - 1)) if o_ > 1 else 0 * d
    else:
        s = np.clip(((d + f(0.5)).astype(np.float64) * float(f(i_) / f(o_)) - 0.5).astype(f), f(0), None)  # one rounding
    lo = np.floor(s).astype(int).clip(max=i_ - 1)
    lam = dtype_emul.round_to(np.clip(s - lo.astype(f), f(0), f(1)).astype(np.float64), dtype)
    return lo, np.minimum(lo + 1, i_ - 1), dtype_emul.round_to(1 - lam, dtype), lam


def io_elements(shape: dict) -> int:
    """Elements of the input and the output: what an execute-mode run holds in memory."""
    return shape["n"] * shape["c"] * (shape["h_in"] * shape["w_in"] + shape["h_out"] * shape["w_out"])


def make_inputs(shape: dict, dtype: str, seed: int = 0, *, options: dict | None = None) -> tuple:
    """(x uniform in [-1, 1] in the layout of ``options``, sizes = [h_out, w_out]) as ONNX Resize takes them."""
    rng = np.random.default_rng(seed)
    layout = opts(options)[1]
    dims = ((shape["n"], shape["h_in"], shape["w_in"], shape["c"]) if layout == "NHWC" else
            (shape["n"], shape["c"], shape["h_in"], shape["w_in"]))
    return dtype_emul.round_to(rng.uniform(-1, 1, dims), dtype), np.array([shape["h_out"], shape["w_out"]])


def tolerance(dtype: str, shape: dict, params: dict | None = None,
              unit: str | None = None, inputs: tuple | None = None) -> tuple[float, float]:
    """(rtol, atol): ~7 roundings of values bounded by 1 in the compute dtype, plus rounded weights."""
    eps = C.eps(dtype)
    return 0.0, 12 * eps


# The default's output tile: ~8 KiB (NCHW: whole rows, then whole planes of several channels when
# a plane is smaller), then halved (channels, rows, columns) until every core gets SPREAD_TILES
# tiles, as long as a tile keeps MIN_TILE_BYTES; powers of two where channels are grouped or a
# dimension is cut. One channel a tile left 16 x 512 planes of 14 x 14 fp16 (nearest) at 24,576
# cycles, 16 channels take 15,808 (bench/resize_default.py's grid best: 14,662); 1024-column
# tiles put one 8192-column fp32 row on 8 cores, 1,172 cycles against 539 (128 columns, 32 cores).
TILE_BYTES = 8192
SPREAD_TILES = 4
MIN_TILE_BYTES = 512
# Where each column's window is copied apart, a tile is sized by the bytes it copies in
# (``element_bytes``) and cut down to MIN_APART_BYTES of them (one window of two source rows):
# every window is a DataCopy of its own, so a tile of one already costs about its fixed copies
# (its tables in, its output out). At 512 B, 2 x 13 outputs of 621 x 9,243 to 3 x 13 (fp32
# nearest NHWC) stayed in 24-output tiles on 4 cores, 1,347 cycles (437 now, the old default
# 1,150); at 128 B, 4 channels of 8 x 25,000 to 2 x 2 (fp32 NHWC) 416 cycles, 359 now.
MIN_APART_BYTES = 64


def _pow2_floor(v: int) -> int:
    return 1 << (max(1, v).bit_length() - 1)


def default_params(shape: dict, dtype: str, hw: HardwareProfile, unit: str | None = None,
                   options: dict | None = None) -> dict:
    """Baseline (``options`` gives the layout; NCHW without): an output tile near ``TILE_BYTES``
    (NCHW: whole rows of one channel, or whole planes of several when a plane is smaller; NHWC:
    every channel up to 256, whole rows where one fits, else a squarish block of pixels; where
    a tile ``gathers_columns``, ``_apart_tile``), cut until each core has ``SPREAD_TILES`` tiles
    of at least ``MIN_TILE_BYTES`` (``MIN_APART_BYTES``), then halved until UB fits
    (``FIT_STEPS``: double buffered with 16 columns or more, then fewer columns, then single
    buffered); as few cores as keep the most tiles a core takes at its lowest over all the
    cores the tiles allow."""
    mode, layout, _ = opts(options)
    Ho, Wo, Cn = shape["h_out"], shape["w_out"], shape["c"]
    nb = C.BYTES[dtype]
    narrowest, least = 16, MIN_TILE_BYTES  # columns cut to 16 at the least: long bursts
    if gathers_columns(shape, min(Cn, 256), nb, mode, layout):  # a DataCopy a column anyway
        nb = element_bytes(shape, min(Cn, 256), nb, mode, layout)
        (p, order), narrowest, least = _apart_tile(shape, nb, layout), 1, MIN_APART_BYTES
    elif layout == "NHWC":
        tc = min(Cn, 256)
        px = max(1, TILE_BYTES // (tc * nb))  # pixels a tile holds
        if Wo <= px:  # whole rows
            tw, th = Wo, max(1, min(Ho, px // Wo))
        else:  # a squarish block, whose rows share source rows (a one-row tile of a 2x
            # upsampling reads each source row twice), at least 16 columns wide
            th = max(1, min(Ho, _pow2_floor(max(1, math.isqrt(px)))))
            tw = min(Wo, max(16, px // th))
        p, order = {"tile_h": th, "tile_w": tw, "tile_c": tc}, ("tile_h", "tile_w", "tile_c")
    else:
        tw = min(Wo, 1024)
        th = max(1, min(Ho, TILE_BYTES // (tw * nb)))
        tc = min(Cn, 256, _pow2_floor(TILE_BYTES // (Ho * tw * nb))) if th == Ho else 1
        p, order = {"tile_h": th, "tile_w": tw, "tile_c": tc}, ("tile_c", "tile_h", "tile_w")
    p.update(buffer_num=2, cores=1)
    while (_ntiles(shape, p) < SPREAD_TILES * hw.vector_cores
           and p["tile_h"] * p["tile_w"] * p["tile_c"] * nb >= 2 * least):
        cut = next((k for k in order if p[k] > (narrowest if k == "tile_w" else 1)), None)
        if cut is None:
            break
        p[cut] = _pow2_floor(p[cut] - 1) if p[cut] & (p[cut] - 1) == 0 else _pow2_floor(p[cut])
    return C.first_fitting(_fit(shape, {**p, "buffer_num": depth}, cols, dtype, hw, options)
                           for depth, cols in FIT_STEPS)


def element_bytes(shape: dict, tc: int, nb: int, mode: str, layout: str) -> int:
    """Bytes a tile that ``gathers_columns`` copies in per output element, by which the default
    sizes it: a 32 B burst a window and source row (NCHW bilinear: 64 B, where the element is 2
    or 4). Sized by the output, a tile of 25,000 to 2 columns, 2 rows and 4 channels (fp32) kept
    all 16 outputs on one core: 1,215 cycles, 359 with one a tile on 16."""
    rows = 2 if mode == "bilinear" and shape["h_in"] > 1 else 1
    window = source_row_bytes(shape, 1, tc, nb, mode, layout, False)  # one column's, one row
    return max(nb, -(-rows * window // (tc if layout == "NHWC" else 1)))


def _apart_tile(shape: dict, eb: int, layout: str) -> tuple[dict, tuple]:
    """(first tile, the order it is cut in) where each column's window is copied apart:
    ``TILE_BYTES`` at ``eb`` an element, tall and narrow and cut in columns before rows, since a
    column's source rows are one DataCopy a run of rows however many output rows read them
    (one-row tiles copied each window once an output row: 16 channels of 48 x 215,108 to
    64 x 61, fp32 nearest, 155,120 cycles, 8,064 with 64 rows); NHWC keeps every channel (up
    to 256): a pixel's are one DataCopy."""
    Ho, Wo, Cn = shape["h_out"], shape["w_out"], shape["c"]
    if layout == "NHWC":
        tc = min(Cn, 256)
        th = min(Ho, max(1, TILE_BYTES // (tc * eb)))
        tw = min(Wo, max(1, TILE_BYTES // (tc * eb * th)))
        return {"tile_h": th, "tile_w": tw, "tile_c": tc}, ("tile_w", "tile_h")
    th = min(Ho, max(1, TILE_BYTES // eb))
    tw = min(Wo, max(1, TILE_BYTES // (th * eb)))
    tc = min(Cn, 256, _pow2_floor(max(1, TILE_BYTES // (th * tw * eb)))) if (th, tw) == (Ho, Wo) else 1
    return {"tile_h": th, "tile_w": tw, "tile_c": tc}, ("tile_c", "tile_w", "tile_h")


# How the default is made to fit UB, in turn until one fits: (buffer_num, the narrowest tile_w).
# Columns below 16 come second: a tile that copies the span of its columns reads about tile_w
# times the downsampling ratio of them (where it copies each column's window apart, a 32 B
# burst a column and row, so its first tile is already narrow). Single buffering is the last resort.
FIT_STEPS = ((2, 16), (2, 1), (1, 1))


def _fit(shape, p, narrowest, dtype, hw, options) -> tuple[dict, bool]:
    """(``p`` halved until UB fits: rows, then columns down to ``narrowest``, then channels;
    whether it fits), with the cores its tiles keep busy."""
    while True:
        p["cores"] = C.busy_cores(_ntiles(shape, p), hw.vector_cores)
        try:
            check(shape, p, dtype, hw, options)
            return p, True
        except InfeasibleConfig:
            if p["tile_h"] > 1:
                p["tile_h"] //= 2
            elif p["tile_w"] > narrowest:
                p["tile_w"] //= 2
            elif p["tile_c"] > 1:
                p["tile_c"] //= 2
            else:
                return p, False
