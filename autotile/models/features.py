"""Features for the learned models: numbers that make the simulator's physics learnable.

``shape_features`` describes a problem (op, shape, dtype, data placement): log2 of each
dimension, its padding to the 16-element and 256-element (fractal) granularities, dtype bytes,
bytes moved, FLOPs and arithmetic intensity. ``config_features`` adds one tiling: its params
(log2 of integers, one-hot of categorical values) and closed-form estimates of the loop nest's
work per core (blocks, padded MACs, GM -> L1 and L1 -> L0 traffic, FixPipe bytes). Every value
is a plain float; ``matrix`` turns dicts into an array in a fixed column order.

>>> f = shape_features("weighted_sum", {"n": 4096}, "fp16", "gm")
>>> f["n.log2"], f["dtype_bytes"], f["on_chip"]
(12.0, 2.0, 0.0)
"""

from __future__ import annotations

import math

import numpy as np

from autotile import dtypes as dtypes_mod

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


def matmul_physics(shape: dict, dtype: str, params: dict, cube_cores: int = 24) -> dict:
    """Closed-form work of one full core block of the TCubeTiling loop nest (see kernels.matmul)."""
    dt = dtypes_mod.get(dtype)
    nb, c0 = dt.bytes, dt.c0
    M, N, K = int(shape["m"]), int(shape["n"]), int(shape["k"])
    p = {k: v for k, v in params.items()}
    bm, bn, bk = int(p["base_m"]), int(p["base_n"]), int(p["base_k"])
    scm, scn = min(int(p["single_core_m"]), M), min(int(p["single_core_n"]), N)
    sm_, sn_, ska, skb = int(p["step_m"]), int(p["step_n"]), int(p["step_ka"]), int(p["step_kb"])
    slots_a = max(1, int(p["depth_a1"]) // (sm_ * ska))
    slots_b = max(1, int(p["depth_b1"]) // (sn_ * skb))
    cores = _cdiv(M, scm) * _cdiv(N, scn)
    mt, nt, kt = _cdiv(scm, bm), _cdiv(scn, bn), _cdiv(K, bk)
    kag, kbg = _cdiv(kt, ska), _cdiv(kt, skb)
    n_first = p.get("iterate_order") == "n_first"
    # GM -> L1: the panel of the operand walked by the outer loop stays resident when all its
    # K groups fit in its slots; the inner operand is reloaded per outer step unless all fits
    a_full, b_full = scm * K * nb, scn * K * nb
    a_group, b_group = min(sm_ * bm, scm) * K * nb, min(sn_ * bn, scn) * K * nb

    def traffic(outer_full, outer_group, outer_res, inner_full, inner_group, inner_groups, inner_slots,
                inner_kg, o_t, i_t):
        outer = outer_full if outer_res else o_t * i_t * outer_group
        if inner_groups * inner_kg <= inner_slots:
            inner = inner_full
        elif inner_kg <= inner_slots:
            inner = o_t * inner_full
        else:
            inner = o_t * i_t * inner_group
        return outer, inner

    if n_first:
        a_bytes, b_bytes = traffic(a_full, a_group, kag <= slots_a, b_full, b_group, _cdiv(nt, sn_), slots_b,
                                   kbg, mt, nt)
    else:
        b_bytes, a_bytes = traffic(b_full, b_group, kbg <= slots_b, a_full, a_group, _cdiv(mt, sm_), slots_a,
                                   kag, nt, mt)
    steps = mt * nt * kt
    bmp, bnp, bkp = _al(bm, 16), _al(bn, 16), _al(bk, c0)
    fractals = steps * (bmp // 16) * (bnp // 16) * (bkp // c0)
    l0a = steps * bmp * bkp * nb
    l0b = steps * bkp * bnp * nb
    out = mt * nt * bm * _al(bn * (4 if dt.name == "int8" else nb), 32)
    gm = a_bytes + b_bytes
    est = {"mte2": gm / 64.0, "mte1": l0a / 256.0 + l0b / 128.0, "cube": float(fractals),
           "fix": out / 128.0}
    bound = max(est.values())
    f = {"mm.cores": float(cores), "mm.cores.frac": cores / cube_cores, "mm.blocks.log2": _lg(mt * nt),
         "mm.steps.log2": _lg(steps), "mm.kt.log2": _lg(kt), "mm.fractals.log2": _lg(fractals),
         "mm.pad_waste": fractals * 16 * 16 * c0 / max(1, scm * scn * K) - 1.0,
         "mm.gm_a.log2": _lg(a_bytes), "mm.gm_b.log2": _lg(b_bytes), "mm.gm.log2": _lg(gm),
         "mm.gm_total.log2": _lg(gm * cores), "mm.l0.log2": _lg(l0a + l0b), "mm.out.log2": _lg(out),
         "mm.bound.log2": _lg(bound), "mm.sum.log2": _lg(sum(est.values())),
         "mm.mmad_overhead.log2": _lg(steps * 3 + fractals)}
    for k, v in est.items():
        f[f"mm.{k}.log2"] = _lg(v)
        f[f"mm.{k}.share"] = v / bound
    return f


def config_features(op: str, shape: dict, dtype: str, unit: str, params: dict, data: str = "gm",
                    cube_cores: int = 24) -> dict:
    """Problem + tiling features of one configuration."""
    f = shape_features(op, shape, dtype, data)
    f.update(param_features(params))
    if op == "matmul" and "base_m" in params:
        f.update(matmul_physics(shape, dtype, params, cube_cores))
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
