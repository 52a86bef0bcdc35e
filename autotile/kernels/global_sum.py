"""Global sum ``out = sum(x)`` of a whole tensor on the Vector, Scalar or Cube unit.

A two-level reduction on every unit: ``cores`` cores each reduce a contiguous slice of x (tiles of
``tile_len`` elements streamed GM -> on-chip buffer in a queue of ``buffer_num`` slots) and write
their partial to GM; after the slowest partial lands, one core reads the partials back and
combines them (``combine``: a Scalar loop as the seed talk says, or one VCADD on the Vector).

* vector: each tile is VADDed into a tile-wide UB accumulator (zeroed once by VDUP); fp16 input
  with ``acc_dtype`` fp32 (always for bf16) is converted first (VCONV). At the end a VADD tree
  over the accumulator's repeats and one in-repeat VCADD give the core's partial.
* scalar: a load and an add per element on the S pipe (fp32), tiles copied into UB.
* cube: the slice seen as a [K x 16] matrix B, summed by Mmads with a ones matrix A [16 x K]
  kept in L0A (one ones fractal loaded to L1, replicated into L0A by MTE1): L0C accumulates the
  16 column sums (every row of C is the same, so 15/16 of the cube's work is wasted). Tiles go
  GM -> L0B directly; the pad of a partial last fractal is zero-filled (MTE1) while its data comes
  in (it does not depend on the data). FixPipe writes the 16 x 16 fp32
  result fractal to GM and the combine core sums 16 values per core: the cube's partial is a
  vector, not a scalar.

With one core and a vector or scalar unit, the partial is the result (written once, no combine).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from autotile.errors import InfeasibleConfig
from autotile.hardware import HardwareProfile
from autotile.kernels import _common as C
from autotile.kernels import dtype_emul, registry
from autotile.sim import engine as E
from autotile.sim.costs import cost_vector
from autotile.sim.result import assemble, infeasible

UNITS = ("vector", "cube", "scalar")
DIMS = ("n",)
ACC = registry.get("global_sum").admits("vector", "acc_dtype")
COMBINES = registry.get("global_sum").admits("vector", "combine")
Q_IN = 0
SCALAR_LOOP = (("load", 1), ("add", 1))  # the S pipe's ops an element
V_DUP, V_CONV, V_ADD, V_CADD = range(4)  # vector cost rows
RESULT_FRACTAL = 16 * 16 * 4  # bytes FixPipe writes: one fp32 16 x 16 fractal


@njit(cache=True)
def vector_core(st, cost, vcost, L, tile, depth, in_lanes, acc_lanes, in_bytes, conv, execute, x, start,
                acc_code, acc):
    """One core's sum of x[start:start+L] on the Vector; returns (partial, time it is in UB)."""
    E.set_queue(st, Q_IN, depth)
    width = min(tile, L)
    t = C.vrun(st, cost, vcost, V_DUP, width, acc_lanes, 0.0)  # acc = 0
    for ti in range((L + tile - 1) // tile):
        ln = min(tile, L - ti * tile)
        slot, free = E.alloc(st, Q_IN)
        ready = C.gm_in(st, cost, ln * in_bytes, free)
        if conv:
            ready = C.vrun(st, cost, vcost, V_CONV, ln, in_lanes, ready)
        t = C.vrun(st, cost, vcost, V_ADD, ln, acc_lanes, max(ready, t))
        E.release(st, Q_IN, slot, t)
        if execute:
            for i in range(ln):
                acc[i] = C.rnd(acc[i] + x[start + ti * tile + i], acc_code)
    return C.vadd_tree(st, cost, vcost, V_ADD, V_CADD, width, acc_lanes, t, execute, acc, acc_code)


@njit(cache=True)
def scalar_core(st, cost, L, tile, depth, in_bytes, per_elem, execute, x, start):
    """The plain loop on the S pipe over x[start:start+L] (fp32); returns (partial, time done)."""
    E.set_queue(st, Q_IN, depth)
    t = 0.0
    s = 0.0
    for ti in range((L + tile - 1) // tile):
        ln = min(tile, L - ti * tile)
        slot, free = E.alloc(st, Q_IN)
        ready = C.gm_in(st, cost, ln * in_bytes, free)
        t = E.scalar(st, cost, ln, per_elem, ready)
        E.release(st, Q_IN, slot, t)
        if execute:
            for i in range(ln):
                s = C.rnd(s + x[start + ti * tile + i], C.FP32)
    return s, t


@njit(cache=True)
def cube_core(st, cost, L, tile, depth, in_bytes, c0, execute, x, start, colsum):
    """Column sums of x[start:start+L] seen as [K x 16], by ones[16 x K] @ B Mmads.

    Fills ``colsum`` (16 fp32 values) in execute mode; returns the time the result fractal
    is in GM.
    """
    E.set_queue(st, Q_IN, depth)
    width = min(tile, L)
    kmax = ((width + 15) // 16 + c0 - 1) // c0 * c0
    ones = E.copy(st, cost, E.GM_L1, float(16 * c0 * in_bytes), 0.0)
    ones = E.copy(st, cost, E.L1_L0A, float(16 * kmax * in_bytes), ones)
    last = 0.0
    for ti in range((L + tile - 1) // tile):
        ln = min(tile, L - ti * tile)
        slot, free = E.alloc(st, Q_IN)
        k = (ln + 15) // 16
        padded = (k + c0 - 1) // c0 * c0 * 16
        ready = E.copy(st, cost, E.GM_L0B, float(((ln * in_bytes + 31) // 32) * 32), free)
        if padded > ln:  # zero fill of the partial last fractal: of the free slot, beside the copy
            ready = max(ready, E.copy(st, cost, E.L1_L0B, float((padded - ln) * in_bytes), free))
        last = E.mmad(st, cost, 16, k, 16, c0, max(ready, ones))
        E.release(st, Q_IN, slot, st.pipe_free[E.M])
        if execute:
            blk = np.zeros(16)
            for i in range(ln):
                blk[i % 16] += x[start + ti * tile + i]
            for j in range(16):
                colsum[j] = C.rnd(colsum[j] + C.rnd(blk[j], C.FP32), C.FP32)
    return E.copy(st, cost, E.L0C_GM, float(RESULT_FRACTAL), last)


# ---------------------------------------------------------------------------------------
# Python side


def check(shape: dict, params: dict, dtype: str, hw: HardwareProfile, unit: str) -> tuple[dict, dict]:
    """Validate a tiling; returns (params, buffers) or raises InfeasibleConfig."""
    C.check_shape(shape, DIMS)
    C.check_dtype(hw, unit, dtype)
    p = C.ints(params, ("tile_len", "buffer_num", "cores"))
    nb = C.BYTES[dtype]
    tile = p["tile_len"]
    ub = hw.align["ub"]  # every UB buffer starts on the profile's granule, as matmul's buffers do
    if unit == "vector":
        p["acc_dtype"] = C.choice(params, "acc_dtype", ACC)
        p["combine"] = C.choice(params, "combine", COMBINES)
        if p["acc_dtype"] == "fp16" and dtype != "fp16":
            raise InfeasibleConfig(f"acc_dtype=fp16 with {dtype} input: accumulate {dtype} in fp32")
        accb = C.BYTES[p["acc_dtype"]]
        used = p["buffer_num"] * C.align(tile * nb, ub) + C.align(tile * accb, ub)
        if p["acc_dtype"] != dtype:
            used += C.align(tile * accb, ub)  # the converted tile
        bufs = {"ub": {"used": used, "capacity": hw.ub_bytes}}
        max_cores = hw.vector_cores
    elif unit == "scalar":
        bufs = {"ub": {"used": p["buffer_num"] * C.align(tile * nb, ub), "capacity": hw.ub_bytes}}
        max_cores = hw.vector_cores
    else:
        c0 = 8 if dtype == "fp32" else 16
        blk = C.align(-(-tile // 16), c0) * 16 * nb
        bufs = {"l1": {"used": 16 * c0 * nb, "capacity": hw.l1_bytes},
                "l0a": {"used": C.align(blk, hw.align["l0a"]), "capacity": hw.l0a_bytes},
                "l0b": {"used": p["buffer_num"] * C.align(blk, hw.align["l0b"]), "capacity": hw.l0b_bytes},
                "l0c": {"used": RESULT_FRACTAL, "capacity": hw.l0c_bytes}}
        max_cores = hw.cube_cores
    C.check_capacity(bufs)
    C.check_spread(p, hw, max_cores=max_cores, unit=unit, work=-(-shape["n"] // 16),
                   what=f"16-element blocks of n={shape['n']}")
    return p, bufs


def _vcost(hw, dtype, acc):
    return C.vtable(hw, [("vdup", f"{acc}_{acc}"), ("vconv", f"{dtype}_{acc}") if acc != dtype else None, ("vadd", f"{acc}_{acc}_{acc}"),
                         ("vcadd", f"{acc}_{acc}")])


def _run(shape, p, dtype, hw, unit, execute=False, x=None, trace_capacity=0):
    """Simulate every core class and the combine; in execute mode every core computes its slice.

    Returns (runs, partials in core order, traces).
    """
    n, nb = shape["n"], C.BYTES[dtype]
    classes = C.split(n, p["cores"], 16)
    active = sum(c for c, _, _ in classes)
    cost = cost_vector(hw, dtype, active_cores=active)
    x = np.zeros(1) if x is None else x
    sc_add, sc_load = C.scalar_cost(hw, "add"), C.scalar_cost(hw, "load")
    sc_elem = C.scalar_per_elem(hw, SCALAR_LOOP)
    acc_dtype = p.get("acc_dtype", "fp32")
    accb = 4 if unit != "vector" else C.BYTES[acc_dtype]
    if unit == "vector":
        vcost = _vcost(hw, dtype, acc_dtype)
    c0 = 8 if dtype == "fp32" else 16
    states, ends, parts = [], [], []
    for count, L, start in classes:
        for c in range(count if execute else 1):
            st = C.new_state(trace_capacity if c == 0 else 0)
            s = start + c * L
            if unit == "vector":
                acc = np.zeros(min(p["tile_len"], L))
                val, t = vector_core(st, cost, vcost, L, p["tile_len"], p["buffer_num"], C.lanes(dtype, hw),
                                     C.lanes(acc_dtype, hw), nb, acc_dtype != dtype, execute, x, s,
                                     C.CODES[acc_dtype], acc)
                parts.append([val])
            elif unit == "scalar":
                val, t = scalar_core(st, cost, L, p["tile_len"], p["buffer_num"], nb, sc_elem, execute, x, s)
                parts.append([val])
            else:
                colsum = np.zeros(16)
                t = cube_core(st, cost, L, p["tile_len"], p["buffer_num"], nb, c0, execute, x, s, colsum)
                parts.append(list(colsum))
            if unit != "cube":  # partial (or, on one core, the result) to GM
                t = C.gm_out(st, cost, accb if active > 1 else nb, t)
            if c == 0:
                states.append((st, count))
                ends.append(t)
    combine = None
    if active > 1 or unit == "cube":
        use_vector = unit == "vector" and p["combine"] == "vector"
        nparts = active * (16 if unit == "cube" else 1)
        cadd = _vcost(hw, dtype, acc_dtype)[V_CADD:] if use_vector else np.zeros((1, 3))

        def combine(st):
            C.combine(st, cost, cadd, nparts, accb, max(ends), use_vector, sc_add, sc_load)
    runs, traces = C.runs_and_traces(states, combine)
    return runs, parts, traces


def _scalar(v: float, dtype: str) -> np.ndarray:
    """A 0-d array holding ``v`` rounded to ``dtype``."""
    return dtype_emul.round_to(np.array([v]), dtype).reshape(())


def _combine_values(parts, p, unit) -> float:
    """The combine's arithmetic: a sequential fp32 Scalar sum, or VCADD's pairwise tree."""
    vals = [v for part in parts for v in part]
    if len(vals) == 1:
        return vals[0]
    if unit == "vector" and p["combine"] == "vector":
        code = C.CODES[p["acc_dtype"]]
        acc = np.array(vals, dtype=np.float64)
        return C.vcadd_exec(acc, len(vals), code)
    s = 0.0
    for v in vals:
        s = float(np.float32(s + v))
    return s


def simulate(shape: dict, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
             options: dict | None = None, trace_capacity: int = 0, want_traces: bool = False):
    """Count mode: simulate one tiling on one unit; returns a SimResult (and traces)."""
    shape = {"n": int(shape["n"])}
    try:
        unit = C.unit_of(unit, UNITS)
        p, bufs = check(shape, params, dtype, hw, unit)
    except InfeasibleConfig as exc:
        res = infeasible("global_sum", unit or UNITS[0], dtype, shape, params, exc.reason)
        return (res, []) if want_traces else res
    runs, _, traces = _run(shape, p, dtype, hw, unit, trace_capacity=trace_capacity)
    n = shape["n"]
    peak = hw.peak_flops(unit, dtype)
    res = assemble(op="global_sum", unit=unit, dtype=dtype, shape=shape, params=params, hw=hw, runs=runs,
                   useful_flops=float(n), peak_flops=peak, must_move_bytes=float(n * C.BYTES[dtype]),
                   l2_hit=0.0, buffers=bufs)
    return (res, traces) if want_traces else res


def execute(inputs: tuple, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
            options: dict | None = None) -> np.ndarray:
    """Execute mode: the same loop nests computing the sum; returns a 0-d array of ``dtype``."""
    x = C.input_array(inputs[0], "x", 1)
    shape = {"n": int(x.shape[0])}
    unit = C.unit_of(unit, UNITS)
    p, _ = check(shape, params, dtype, hw, unit)
    _, parts, _ = _run(shape, p, dtype, hw, unit, execute=True, x=np.ascontiguousarray(x, dtype=np.float64))
    return _scalar(_combine_values(parts, p, unit), dtype)


def reference(inputs: tuple, dtype: str, *, options: dict | None = None) -> np.ndarray:
    """float64 sum, rounded to ``dtype``."""
    return _scalar(float(np.sum(inputs[0].astype(np.float64))), dtype)


verify_shape = C.verify_shape_1d  # a huge n is verified on a smaller n of the same structure


def make_inputs(shape: dict, dtype: str, seed: int = 0, *, options: dict | None = None) -> tuple:
    """x uniform in [-1, 1], representable in ``dtype``."""
    rng = np.random.default_rng(seed)
    return (dtype_emul.round_to(rng.uniform(-1, 1, shape["n"]), dtype),)


def tolerance(dtype: str, shape: dict, params: dict | None = None,
              unit: str | None = None, inputs: tuple | None = None) -> tuple[float, float]:
    """(rtol, atol) for make_inputs' data (mean 0, rms 1/sqrt(3)) under the tiling's accumulation:
    fp32 on the cube and the S pipe, the Vector's ``acc_dtype`` otherwise; without a tiling, the
    loosest a correct kernel of ``dtype`` may be (fp16 accumulation only exists for fp16). The
    accumulation's bound follows the tiling's order of additions (``adds``)."""
    unit = unit or UNITS[0]
    if unit == "vector":
        acc = (params or {}).get("acc_dtype", "fp16" if dtype == "fp16" else "fp32")
    else:
        acc = "fp32"
    order = adds(shape["n"], params, unit, acc) if params else None
    return C.sum_tolerance(shape["n"], dtype, acc, 1.0 / math.sqrt(3.0), rounded_products=False, adds=order)


def adds(n: int, params: dict, unit: str, acc: str) -> tuple[float, float] | None:
    """``AddOrder.adds`` of the tiling, ``acc`` the accumulator: on every core, tile-wide lanes
    summed tile by tile, a VADD tree and a VCADD (Vector), one fp32 running sum (Scalar), or per
    tile 16 column sums rounded to fp32 and added onto L0C's (cube); the partials combined by
    VCADD (Vector ``combine: vector``) or by the Scalar loop in fp32. None if the params do not
    give the tiling."""
    def core_sum(core, L, tile):
        if unit == "vector":
            return core.tree(core.lanes(L, tile), C.REPEAT_BYTES // C.BYTES[acc])
        if unit == "scalar":
            return float(core.lanes(L, 1)[0])
        lens = np.minimum(tile, L - tile * np.arange(-(-L // tile)))
        cols = lens[:, None] // 16 + (np.arange(16) < lens[:, None] % 16)  # [tile, column] terms
        core.fp32 += float(cols.sum())  # each tile's column sums rounded to fp32
        return [core.sequential(cols[:, j], fp32=True) for j in range(16)]

    got = C.core_adds(n, params, core_sum)
    if got is None:
        return None
    order, parts = got
    if len(parts) > 1:
        if unit == "vector" and params.get("combine") == "vector":
            order.pairwise(parts)
        else:
            order.sequential(parts, fp32=True)
    return order.adds


def default_params(shape: dict, dtype: str, hw: HardwareProfile, unit: str | None = None,
                   options: dict | None = None) -> dict:
    """Baseline: 16 KiB tiles double-buffered, the cores ``default_cores`` gives a reduction,
    fp32 accumulation, Scalar combine (cube: 8 KiB tiles, so the ones block and two tiles fit
    L0A / L0B); smaller tiles where the profile's buffers cannot hold them."""
    unit = unit or UNITS[0]
    n, nb = shape["n"], C.BYTES[dtype]
    cores = C.default_cores(n, unit, hw, combined=True, scalar_elem=C.scalar_per_elem(hw, SCALAR_LOOP),
                            read_bytes=n * nb)
    per = -(-n // cores)
    tile = min(C.align(per, 16), (8192 if unit == "cube" else 16384) // nb)
    p = {"tile_len": tile, "buffer_num": 2, "cores": cores}
    if unit == "vector":
        p.update(acc_dtype="fp32", combine="scalar")
    return C.fit_default(p, lambda q: check(shape, q, dtype, hw, unit))
