"""Features for the learned models: numbers that make the simulator's physics learnable.

``shape_features`` describes a problem (op, shape, dtype, data placement): log2 of each
dimension, its padding to the 16-element and 256-element (fractal) granularities, dtype bytes
and the dtype itself (one-hot), bytes moved, FLOPs and arithmetic intensity; a unit selector
takes it as ``selector_features`` makes it (how n splits over the cores, padded counts) and
fits its cycles on ``work_basis`` first. ``config_features`` adds one tiling: its params
(log2 of integers, one-hot of categorical values) and closed-form estimates of the loop nest's
work per core (blocks, padded MACs, GM -> L1 and L1 -> L0 traffic, FixPipe bytes). Every value
is a plain float; ``matrix`` turns dicts into an array in a fixed column order.

>>> f = shape_features("weighted_sum", {"n": 4096}, "fp16", "gm")
>>> f["n.log2"], f["dtype_bytes"], f["on_chip"]
(12.0, 2.0, 0.0)
"""

from __future__ import annotations

import functools
import math

import numpy as np

from autotile import dtypes as dtypes_mod
from autotile.sim import l2

# op -> (elements read, elements written, flops) as functions of the shape
WORK = {
    "weighted_sum": lambda s: (2 * s["n"], 1, 2 * s["n"]),
    "global_sum": lambda s: (s["n"], 1, s["n"]),
    "sigmoid": lambda s: (s["n"], s["n"], 4 * s["n"]),
    "elementwise": lambda s: (2 * s["n"], s["n"], s["n"]),
    "copy": lambda s: (s["n"], s["n"], 0),
    "matmul": lambda s: (s["m"] * s["k"] + s["k"] * s["n"], s["m"] * s["n"], 2 * s["m"] * s["n"] * s["k"]),
}


def _lg(x: float) -> float:
    return math.log2(max(float(x), 1e-9))


def _cdiv(a: int, b: int) -> int:
    return -(-int(a) // int(b))


def _al(a: int, b: int) -> int:
    return _cdiv(a, b) * b


def shape_features(op: str, shape: dict, dtype: str, data: str = "gm") -> dict:
    """Problem features; ``data`` is where the inputs live (``gm`` or ``on_chip``)."""
    nb = dtypes_mod.get(dtype).bytes
    f: dict = {"dtype_bytes": float(nb), "on_chip": float(data == "on_chip")}
    # the dtype one-hot: bf16 and fp16 have the same size but not the same cost (a bf16 reduction
    # always converts to fp32 first), which dtype_bytes alone cannot tell apart
    f.update({f"dtype.{name}": float(name == dtype) for name in dtypes_mod.DTYPES})
    total = 1
    for d, v in shape.items():
        v = int(v)
        total *= v
        f[f"{d}.log2"] = _lg(v)
        f[f"{d}.pad16"] = _al(v, 16) / v - 1.0
        f[f"{d}.pad256"] = _al(v, 256) / v - 1.0
        f[f"{d}.tail16"] = float(v % 16 != 0)
        f[f"{d}.tail256"] = float(v % 256 != 0)
        f[f"{d}.fractals.log2"] = _lg(_cdiv(v, 256))
        f[f"{d}.repeats.log2"] = _lg(_cdiv(v * nb, 256))  # 256-byte vector repeats
    read, written, flops = WORK.get(op, lambda s: (total, total, total))(shape)
    moved = (read + written) * nb
    f["bytes.log2"] = _lg(moved)
    f["flops.log2"] = _lg(max(flops, 1))
    f["intensity.log2"] = _lg(max(flops, 1) / moved)
    return f


def unit_cores(op: str, hw=None) -> dict:
    """{core kind: cores} of the kinds the units of ``op`` run on (the Cube's cores for cube, the
    Vector's for vector and scalar); ``hw`` None: the default profile."""
    from autotile.kernels import registry

    if hw is None:
        from autotile.hardware import load_profile

        hw = load_profile(None)
    kinds = {"cube" if u == "cube" else "vector" for u in registry.get(op).units}
    return {k: int(hw.cube_cores if k == "cube" else hw.vector_cores) for k in sorted(kinds)}


def _slices(n: int, data: str, cores: dict):
    """(kind, cores used, elements per core) of the widest split the tiling grid can give n."""
    from autotile.models.crossover import core_counts

    for kind, most in cores.items():
        c = max(core_counts(n, most, data == "on_chip"))
        yield kind, c, _al(_cdiv(n, c), 16)


def split_features(shape: dict, dtype: str, data: str, cores: dict) -> dict:
    """How a 1-D ``n`` splits over the cores of each kind in ``cores`` (``unit_cores``): the
    cores used, each core's slice (whole 16-element blocks), its 256-byte repeats and 256-element
    fractals, and the share of a slice the last core gets.

    The simulator pays per core slice, not per n: n = 64 fits 4 cores of 16 elements but n = 60
    has 3 blocks, so the grid's 2 cores get 32 elements each, and sigmoid's Scalar takes 703
    cycles against 495. Without these a model gave the sizes beside a power of two its cycles.
    """
    n = int(shape["n"])
    nb = dtypes_mod.get(dtype).bytes
    f = {}
    for kind, c, per in _slices(n, data, cores):
        f[f"split.{kind}.cores.log2"] = _lg(c)
        f[f"split.{kind}.per.log2"] = _lg(per)
        f[f"split.{kind}.repeats.log2"] = _lg(_cdiv(per * nb, 256))
        f[f"split.{kind}.fractals.log2"] = _lg(_cdiv(per, 256))
        f[f"split.{kind}.last"] = (n - n // per * per) / per
    return f


RATIOS = ("pad16", "pad256")  # shape_features' padding as a share of each dimension


def selector_features(f: dict, shape: dict, dtype: str, data: str, cores: dict) -> dict:
    """``f`` (``shape_features`` of the problem) as a unit selector takes it: with the padded
    counts the simulator pays for (32-byte GM bursts, ``split_features``) and without the padding
    shares. A share is largest at the smallest sizes, so trees split on it there, and 129 (15 of
    144 padded) went with the tiny sizes: elementwise's Vector was predicted 17% high on chip."""
    out = {k: v for k, v in f.items() if k.rsplit(".", 1)[-1] not in RATIOS}
    out["n.bursts.log2"] = _lg(_cdiv(int(shape["n"]) * dtypes_mod.get(dtype).bytes, 32))
    out.update(split_features(shape, dtype, data, cores))
    return out


def work_basis(shape: dict, dtype: str, data: str, cores: dict) -> list[float]:
    """The padded work a 1-D problem's cycles are close to a non-negative sum of: 1 (fixed
    costs), n, its 256-byte repeats, and per core kind the slice of the widest split with its
    repeats and fractals (see ``split_features``). The unit selector fits cycles on these and
    learns only the ratio to that fit: trees are flat between training sizes, so learned on log2
    cycles alone they were off by up to ~9% between two sweep sizes even where cycles are 2 n."""
    n = int(shape["n"])
    nb = dtypes_mod.get(dtype).bytes
    out = [1.0, float(n), float(_cdiv(n * nb, 256))]
    for _, _, per in _slices(n, data, cores):
        out += [float(per), float(_cdiv(per * nb, 256)), float(_cdiv(per, 256))]
    return out


def param_features(params: dict) -> dict:
    """log2 of each positive number, one-hot ``name=value`` for text values."""
    f = {}
    for k, v in params.items():
        if isinstance(v, str):
            f[f"p.{k}={v}"] = 1.0
        elif isinstance(v, bool):
            f[f"p.{k}"] = float(v)
        else:
            f[f"p.{k}.log2"] = _lg(v)
    return f


def stream_physics(shape: dict, dtype: str, params: dict) -> dict:
    """Per-core work of a tiled 1-D streaming kernel (tile_len, buffer_num, cores)."""
    n = int(shape["n"])
    nb = dtypes_mod.get(dtype).bytes
    cores = int(params.get("cores", 1))
    tile = int(params.get("tile_len", n))
    per = _al(_cdiv(n, cores), 16)
    ntile = _cdiv(per, tile)
    width = min(tile, per)
    reps = _cdiv(width * nb, 256)
    return {"x.per_core.log2": _lg(per), "x.tiles.log2": _lg(ntile), "x.width.log2": _lg(width),
            "x.tile_tail": float(per % tile != 0), "x.repeats.log2": _lg(ntile * reps),
            "x.bytes_per_core.log2": _lg(per * nb)}


def hw_constants(hw=None) -> dict:
    """The profile numbers the matmul estimates use (rates, issue costs, latencies), as plain
    floats a model file can store; ``hw`` None: the default profile."""
    if hw is None:
        from autotile.hardware import load_profile

        hw = load_profile(None)
    c = {"cube_cores": float(hw.cube_cores), "hbm": float(hw.hbm_bytes_per_cycle), "l2": float(hw.l2_bytes),
         "l1": float(hw.l1_bytes),
         "l2_read": float(hw.l2_read_bytes_per_cycle), "cube_issue": float(hw.cube.issue_cycles),
         "cube_lat": float(hw.cube.latency_cycles)}
    for path in ("gm_l1", "l1_l0a", "l1_l0b", "l0c_gm"):
        cp = hw.copy[path]
        c.update({f"{path}.rate": float(cp.bytes_per_cycle), f"{path}.issue": float(cp.issue_cycles),
                  f"{path}.lat": float(cp.latency_cycles)})
    for dt, v in hw.cube.macs_per_cycle.items():
        c[f"macs.{dt}"] = float(v)
    return c


def _blocks(total: int, block: int, align: int) -> tuple[int, int]:
    """(blocks, padded elements summed over them) of ``total`` cut into ``block``-sized pieces."""
    full, tail = divmod(total, block)
    return full + (tail > 0), full * _al(block, align) + (_al(tail, align) if tail else 0)


def _groups(total: int, block: int, step: int) -> list[tuple[int, int]]:
    """(count, (blocks, extent)) of the panel groups of ``step`` blocks that cover ``total``."""
    ext = step * block
    full, rem = divmod(total, ext)
    out = [(full, (step, ext))] if full else []
    if rem:
        out.append((1, (_cdiv(rem, block), rem)))
    return out


def _gm_panels(outer_res: bool, inner_all: bool, inner_res: bool, o_t: int, i_t: int,
               outer: tuple[float, float, int, int], inner: tuple[float, float, int, int]) -> tuple:
    """GM -> L1 (bytes, loads) of the outer and the inner operand of the loop nest.

    Mirrors the FIFO panel slots of ``kernels.matmul.core``: a set of panels that fits its slots
    is loaded once; one that does not is reloaded whenever the walk comes back to it (cyclic
    access evicts it). Each operand is (bytes of all its panels, the same weighted by the blocks
    each group spans, groups x K groups, blocks x K groups).
    """
    o_full, o_weighted, o_panels, o_block_panels = outer
    i_full, i_weighted, i_panels, i_block_panels = inner
    if outer_res:
        ob, ol = o_full, o_panels
    else:
        ob, ol = i_t * o_weighted, i_t * o_block_panels
    if inner_all:
        ib, il = i_full, i_panels
    elif inner_res:
        ib, il = o_t * i_full, o_t * i_panels
    else:
        ib, il = o_t * i_weighted, o_t * i_block_panels
    return ob, ol, ib, il


def matmul_physics(shape: dict, dtype: str, params: dict, cube_cores: int = 24, hw: dict | None = None) -> dict:
    """Closed-form work of one full core block (over its K range) of the TCubeTiling loop nest (see
    kernels.matmul).

    Besides bytes and fractals: copy counts (each GM copy pays an issue cost, the first one a
    latency), per-pipe busy estimates with the profile's rates (``hw``: ``hw_constants``), the
    L2 hit share and HBM time of the whole chip, the pipeline fill, the stalls single-buffered
    L0 queues add, and the imbalance between the full and the tail core blocks.
    """
    hw = hw or _default_hw()
    dt = dtypes_mod.get(dtype)
    nb, c0 = dt.bytes, dt.c0
    M, N, K = int(shape["m"]), int(shape["n"]), int(shape["k"])
    p = params
    bm, bn, bk = int(p["base_m"]), int(p["base_n"]), int(p["base_k"])
    scm, scn = min(int(p["single_core_m"]), M), min(int(p["single_core_n"]), N)
    sck = min(int(p.get("single_core_k", K)), K)  # a core's K range (absent: all of K)
    sm_, sn_, ska, skb = int(p["step_m"]), int(p["step_n"]), int(p["step_ka"]), int(p["step_kb"])
    slots_a = max(1, int(p["depth_a1"]) // (sm_ * ska))
    slots_b = max(1, int(p["depth_b1"]) // (sn_ * skb))
    cm, cn, ck = _cdiv(M, scm), _cdiv(N, scn), _cdiv(K, sck)
    cores = cm * cn * ck
    mt, fm = _blocks(scm, bm, 16)
    nt, fn = _blocks(scn, bn, 16)
    kt, fk = _blocks(sck, bk, c0)
    kag, kbg = _cdiv(kt, ska), _cdiv(kt, skb)
    mg, ng = _cdiv(mt, sm_), _cdiv(nt, sn_)
    n_first = p.get("iterate_order") == "n_first"
    # GM -> L1 panels: A rows x (K slice bytes, each row 32-byte aligned), B K rows x group columns
    kfull, krem = divmod(sck, ska * bk)
    a_cols = kfull * _al(ska * bk * nb, 32) + (_al(krem * nb, 32) if krem else 0)
    ga, gb = _groups(scm, bm, sm_), _groups(scn, bn, sn_)
    a_op = (scm * a_cols, a_cols * sum(c * b * e for c, (b, e) in ga), mg * kag, mt * kag)
    b_op = (sck * sum(c * _al(e * nb, 32) for c, (_, e) in gb), sck * sum(c * b * _al(e * nb, 32) for c, (b, e) in gb),
            ng * kbg, nt * kbg)
    if n_first:  # the outer loop walks the m blocks (A), the inner the n blocks (B)
        a_bytes, a_loads, b_bytes, b_loads = _gm_panels(kag <= slots_a, ng * kbg <= slots_b, kbg <= slots_b,
                                                        mt, nt, a_op, b_op)
    else:
        b_bytes, b_loads, a_bytes, a_loads = _gm_panels(kbg <= slots_b, mg * kag <= slots_a, kag <= slots_a,
                                                        nt, mt, b_op, a_op)
    steps = mt * nt * kt
    fractals = (fm // 16) * (fn // 16) * (fk // c0)
    l0a = nt * fm * fk * nb
    l0b = mt * fk * fn * nb
    ob = 4 if dt.name == "int8" or ck > 1 else nb  # split K: fp32 partials
    nfull, nrem = divmod(scn, bn)
    out = scm * (nfull * _al(bn * ob, 32) + (_al(nrem * ob, 32) if nrem else 0))  # FixPipe rows, 32 B aligned
    gm = a_bytes + b_bytes
    loads = a_loads + b_loads
    # chip: L2 hit share of the reads and the HBM time of all cores' traffic
    unique = (M * K + K * N) * nb
    total_read = gm * cores
    hit = max(0.0, 1.0 - unique / total_read) if total_read > 0 else 0.0
    footprint = unique + M * N * ob
    if footprint > hw["l2"]:
        hit *= hw["l2"] / footprint
    hbm_cycles = (total_read * (1.0 - hit) + M * N * ob) / hw["hbm"]
    read_rate = l2.read_rate(hw["hbm"] / cores, l2.l2_share(hw["l2_read"], cube_cores, cores), hit,
                             cap=hw["gm_l1.rate"])
    macs = hw.get(f"macs.{dt.name}", hw["macs.fp16"])
    busy = {"mte2": loads * hw["gm_l1.issue"] + gm / read_rate,
            "mte1": steps * (hw["l1_l0a.issue"] + hw["l1_l0b.issue"]) + l0a / hw["l1_l0a.rate"]
            + l0b / hw["l1_l0b.rate"],
            "cube": steps * hw["cube_issue"] + fractals * 16 * 16 * c0 / macs,
            "fix": mt * nt * hw["l0c_gm.issue"] + out / hw["l0c_gm.rate"]}
    per_step = {k: v / max(1, steps) for k, v in busy.items()}
    fill = (hw["gm_l1.lat"] + hw["l1_l0a.lat"] + hw["cube_lat"] + hw["l0c_gm.lat"]
            + busy["mte2"] / max(1, loads) * 2 + per_step["mte1"] + per_step["cube"] + busy["fix"] / (mt * nt))
    # single-buffered L0 queues serialize the stages they connect
    stall = 0.0
    if int(p["db_l0c"]) == 1:
        stall += mt * nt * (busy["fix"] / (mt * nt) + hw["cube_lat"])
    if int(p["db_l0a"]) == 1 or int(p["db_l0b"]) == 1:
        stall += steps * min(per_step["mte1"], per_step["cube"])
    if slots_a == 1 or slots_b == 1:
        stall += min(busy["mte2"], busy["cube"] + busy["mte1"])
    bound = max(busy.values())
    est = max(bound + fill + stall, hbm_cycles)
    # the tail core blocks (a remainder of M or N) against the full one
    tail_m = M - (cm - 1) * scm
    tail_n = N - (cn - 1) * scn
    f = {"mm.cores": float(cores), "mm.cores.frac": cores / cube_cores, "mm.blocks.log2": _lg(mt * nt),
         "mm.steps.log2": _lg(steps), "mm.kt.log2": _lg(kt), "mm.fractals.log2": _lg(fractals),
         "mm.pad_waste": fractals * 16 * 16 * c0 / max(1, scm * scn * sck) - 1.0, "mm.k_split": float(ck),
         "mm.gm_a.log2": _lg(a_bytes), "mm.gm_b.log2": _lg(b_bytes), "mm.gm.log2": _lg(gm),
         "mm.gm_total.log2": _lg(total_read), "mm.l0.log2": _lg(l0a + l0b), "mm.out.log2": _lg(out),
         "mm.loads.log2": _lg(loads), "mm.bytes_per_load.log2": _lg(gm / max(1, loads)),
         "mm.l2_hit": hit, "mm.hbm.log2": _lg(hbm_cycles), "mm.read_rate.log2": _lg(read_rate),
         "mm.bound.log2": _lg(bound), "mm.sum.log2": _lg(sum(busy.values())),
         "mm.fill.log2": _lg(fill), "mm.stall.log2": _lg(stall + 1.0), "mm.est.log2": _lg(est),
         "mm.est_serial.log2": _lg(sum(busy.values()) + fill),
         "mm.tail_m": tail_m / scm, "mm.tail_n": tail_n / scn,
         "mm.tail_work": (tail_m * tail_n) / (scm * scn),
         "mm.l1_used": (int(p["depth_a1"]) * _al(bm, 16) * _al(bk, c0) + int(p["depth_b1"]) * _al(bk, c0)
                        * _al(bn, 16)) * nb / hw["l1"],
         "mm.mmad_overhead.log2": _lg(steps * 3 + fractals)}
    for k, v in busy.items():
        f[f"mm.{k}.log2"] = _lg(v)
        f[f"mm.{k}.share"] = v / bound
    return f


@functools.cache
def _default_hw() -> dict:
    return hw_constants()


def config_features(op: str, shape: dict, dtype: str, unit: str, params: dict, data: str = "gm",
                    cube_cores: int = 24, hw: dict | None = None) -> dict:
    """Problem + tiling features of one configuration (``hw``: ``hw_constants`` of the profile)."""
    f = shape_features(op, shape, dtype, data)
    f.update(param_features(params))
    if op == "matmul" and "base_m" in params:
        f.update(matmul_physics(shape, dtype, params, cube_cores, hw))
    elif set(shape) == {"n"} and "tile_len" in params:
        f.update(stream_physics(shape, dtype, params))
    return f


def matrix(rows: list[dict], names: list[str]) -> np.ndarray:
    """Rows of feature dicts as a float array in ``names`` order (missing values are 0)."""
    out = np.zeros((len(rows), len(names)))
    index = {n: i for i, n in enumerate(names)}
    for r, f in enumerate(rows):
        for k, v in f.items():
            i = index.get(k)
            if i is not None:
                out[r, i] = v
    return out


def shape_ranges(rows) -> dict:
    """{data placement: {dim: [least, greatest]}} over the shapes of ``rows``: the region a
    model trained on them has seen (outside it, a prediction extrapolates)."""
    ranges: dict = {}
    for r in rows:
        span = ranges.setdefault(r.data, {})
        for d, v in r.shape.items():
            lo, hi = span.get(d, (v, v))
            span[d] = [min(lo, v), max(hi, v)]
    return ranges


def outside(ranges: dict, shape: dict, data: str = "gm") -> str | None:
    """Why ``shape`` lies outside ``ranges`` for ``data``, or None (also when nothing is known: a
    model saved without its ranges). A model whose ranges lack ``data`` was trained on none of it:
    said so, where it used to be None, as if every shape were inside."""
    span = ranges.get(data)
    if not span:
        if ranges:
            return f"the model has no training for data {data} (trained on data {', '.join(ranges)})"
        return None
    out = [f"{d}={v} (trained on {span[d][0]}..{span[d][1]})" for d, v in shape.items()
           if d in span and not span[d][0] <= v <= span[d][1]]
    return f"outside the training range for data {data}: {', '.join(out)}" if out else None
