"""Weighted sum ``out = sum(w[i] * x[i])`` on the Vector, Scalar or Cube unit.

Units and their loop nests (one @njit core per unit, count and execute mode alike):

* vector: tiles of ``tile_len`` elements of x and w in UB (``buffer_num`` slots); VMUL then either
  a VADD into a tile-wide accumulator (``reduction="tree"``: at the end a VADD tree over the
  accumulator's repeats and one in-repeat VCADD) or a VMLA into it (``reduction="vmla"``).
  ``acc_dtype`` fp32 converts the fp16 products (VCONV) and accumulates in fp32; fp16 accumulates
  fp16 input only. A dtype the Vector has no arithmetic for (bf16 on the 910B) is converted to
  fp32 first, x and w both (VCONV), and multiplied and accumulated in fp32.
* scalar: the plain loop on the S pipe (2 loads issuing beside a mul and an add per element),
  tiles copied into UB. ``acc_dtype`` fp16 (a running sum rounded to fp16) is for fp16 input
  only, as on the Vector: fp32 and bf16 input accumulate in fp32.
* cube: ``cube_form="trace"`` maps both vectors onto [16 x n/16] fractals (block-wise, so a
  contiguous vector already is the zZ / nZ fractal order) and takes the trace of A @ B^T; the
  ``naive`` form pads [1 x n] @ [n x 1] to 16 x 16 fractals (wasting 255/256 of the cube). The
  rearrangement is real work: the Mmad's fractal-view setup on the S pipe (trace), or the scatter
  of each 16 elements into fractal row 0 on MTE1 (naive). The extraction is real too: FixPipe
  moves the diagonal (16 fp32) from L0C to L1 and the S pipe sums it. A partial last fractal
  holds zeros past the data in both framings. The loads move only the data (``ln`` elements a
  tile, what GM holds: a padded copy would read past the end of x on the last core); the zeros
  past it are a constant fill on chip (at most 255 elements an operand, not GM traffic), which
  does not depend on the data, so it is issued with the load and lands within the load's GM round
  trip (~200 cycles): it is not charged, and n = 500 costs no more than n = 512.

``cores`` > 1 splits n; each core writes its partial to GM and one core combines them after all
finish. Options: ``{"data": "on_chip"}`` is the published table's framing (inputs already in the
unit's own buffers: UB for vector and scalar, L0A/L0B for the cube, L1 for its naive form, whose
scatter reads there; single-core result left on chip; a core whose slice those buffers cannot hold
is infeasible), ``"gm"`` (default) is what a real kernel sees.
"""

from __future__ import annotations

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
REDUCTIONS = registry.get("weighted_sum").admits("vector", "reduction")
ACC = registry.get("weighted_sum").admits("vector", "acc_dtype")
FORMS = registry.get("weighted_sum").admits("cube", "cube_form")
Q_IN = 0
SETUP_OPS = 4  # scalar ops that set up the Mmad's fractal view (K, strides, pad)
SCALAR_LOOP = (("load", 2), ("mul", 1), ("add", 1))  # the S pipe's ops an element

# vector cost rows
V_MUL, V_CONV, V_ADD, V_MLA, V_CADD, V_CONV_IN = range(6)


@njit(cache=True)
def vector_core(st, cost, vcost, L, tile, depth, in_lanes, acc_lanes, in_bytes, vmla, conv, conv_in,
                onchip, execute, x, w, start, in_code, acc_code, acc):
    """One core's weighted sum of x[start:start+L]; returns (partial, time it is usable in UB).

    ``conv_in``: x and w are converted to fp32 (VCONV) and the products made in fp32
    (``in_code``), ``acc_lanes`` a repeat."""
    E.set_queue(st, Q_IN, depth)
    ntile = (L + tile - 1) // tile
    width = min(tile, L)
    t = 0.0
    for ti in range(ntile):
        ln = min(tile, L - ti * tile)
        slot, free = E.alloc(st, Q_IN)
        ready = free
        if not onchip:
            ready = max(C.gm_in(st, cost, ln * in_bytes, free), C.gm_in(st, cost, ln * in_bytes, free))
        if conv_in:
            ready = C.vrun(st, cost, vcost, V_CONV_IN, ln, in_lanes, ready)
            ready = C.vrun(st, cost, vcost, V_CONV_IN, ln, in_lanes, ready)
        if vmla and ti > 0:
            t = C.vrun(st, cost, vcost, V_MLA, ln, acc_lanes if conv or conv_in else in_lanes, ready)
        else:
            t = C.vrun(st, cost, vcost, V_MUL, ln, acc_lanes if conv_in else in_lanes, ready)
            if conv:
                t = C.vrun(st, cost, vcost, V_CONV, ln, in_lanes, t)
            if ti > 0:
                t = C.vrun(st, cost, vcost, V_ADD, ln, acc_lanes, t)
        E.release(st, Q_IN, slot, t)
        if execute:
            for i in range(ln):
                k = start + ti * tile + i
                if vmla and ti > 0:
                    acc[i] = C.rnd(acc[i] + x[k] * w[k], acc_code)
                else:
                    p = C.rnd(x[k] * w[k], in_code)
                    acc[i] = p if ti == 0 else C.rnd(acc[i] + p, acc_code)
    # VADD tree over the accumulator's repeats, then one in-repeat VCADD
    res, t = C.vadd_tree(st, cost, vcost, V_ADD, V_CADD, width, acc_lanes, t, execute, acc, acc_code)
    return res, t


@njit(cache=True)
def scalar_core(st, cost, L, tile, depth, in_bytes, per_elem, onchip, execute, x, w, start, acc_code):
    """The plain loop on the S pipe over x[start:start+L]; returns (partial, time done)."""
    E.set_queue(st, Q_IN, depth)
    ntile = (L + tile - 1) // tile
    t = 0.0
    s = 0.0
    for ti in range(ntile):
        ln = min(tile, L - ti * tile)
        slot, free = E.alloc(st, Q_IN)
        ready = free
        if not onchip:
            ready = max(C.gm_in(st, cost, ln * in_bytes, free), C.gm_in(st, cost, ln * in_bytes, free))
        t = E.scalar(st, cost, ln, per_elem, ready)
        E.release(st, Q_IN, slot, t)
        if execute:
            for i in range(ln):
                k = start + ti * tile + i
                s = C.rnd(s + x[k] * w[k], acc_code)
    return s, t


@njit(cache=True)
def cube_core(st, cost, L, tile, depth, trace, onchip, in_bytes, sc_add, sc_load, execute, x, w, start):
    """Cube weighted sum of x[start:start+L] in K chunks of ``tile`` elements.

    Returns (partial, time it is usable on the S side). Execute mode accumulates the 16 diagonal
    partials (trace) or the single product (naive) in fp32 as L0C does.
    """
    E.set_queue(st, Q_IN, depth)
    ntile = (L + tile - 1) // tile
    diag = np.zeros(16)
    last = 0.0
    # rearrangement (trace): the fractal view's setup on the S pipe
    setup = 0.0
    if trace:
        setup = E.scalar(st, cost, SETUP_OPS, sc_add, 0.0)
    for ti in range(ntile):
        ln = min(tile, L - ti * tile)
        slot, free = E.alloc(st, Q_IN)
        ready = max(free, setup)
        if trace:
            kk = (ln + 15) // 16  # columns of the [16 x K] view
            if not onchip:  # the data only: the fractals' padding is a fill on chip (docstring)
                ra = E.copy(st, cost, E.GM_L0A, float(ln * in_bytes), ready)
                rb = E.copy(st, cost, E.GM_L0B, float(ln * in_bytes), ready)
                ready = max(ra, rb)
            last = E.mmad(st, cost, 16, kk, 16, 16, ready)
        else:
            # [1 x ln] @ [ln x 1]: each 16 elements go to row 0 of a 16 x 16 fractal
            if not onchip:
                ra = E.copy(st, cost, E.GM_L1, float(ln * in_bytes), ready)
                rb = E.copy(st, cost, E.GM_L1, float(ln * in_bytes), ready)
                ready = max(ra, rb)
            ra = E.copy(st, cost, E.L1_L0A, float(((ln + 15) // 16) * 256 * in_bytes), ready)
            rb = E.copy(st, cost, E.L1_L0B, float(((ln + 15) // 16) * 256 * in_bytes), ready)
            last = E.mmad(st, cost, 1, ln, 1, 16, max(ra, rb))
        E.release(st, Q_IN, slot, st.pipe_free[E.M])
        if execute:
            for i in range(ln):
                k = start + ti * tile + i
                r = ((ti * tile + i) // 16) % 16 if trace else 0
                diag[r] = float(np.float32(diag[r] + x[k] * w[k]))
    # extraction: FixPipe moves the 16 x 16 fp32 result fractal (1 KiB) to L1, then the S pipe
    # sums the diagonal entries of the rows holding data; each load issues alongside the add that
    # consumes the previous one
    nd = min(16, (L + 15) // 16) if trace else 1
    t = E.copy(st, cost, E.L0C_L1, 1024.0, last)
    if trace:
        t = E.scalar(st, cost, nd, max(sc_load, sc_add), t)
    s = 0.0
    if execute:
        for r in range(nd):
            s = float(np.float32(s + diag[r]))
    return s, t


# ---------------------------------------------------------------------------------------
# Python side

def check(shape: dict, params: dict, dtype: str, hw: HardwareProfile, unit: str,
          options: dict | None = None) -> tuple[dict, dict]:
    """Validate a tiling; returns (params, buffers) or raises InfeasibleConfig.

    With ``options`` data on_chip, a core's whole slice of x and w sits in the unit's buffers in
    place of the streamed tiles (``_resident``), and must fit there."""
    C.check_shape(shape, DIMS)
    C.check_dtype(hw, unit, dtype)
    p = C.ints(params, ("tile_len", "buffer_num", "cores"))
    nb = C.BYTES[dtype]
    ub = hw.align["ub"]  # every UB buffer starts on the profile's granule, as matmul's buffers do
    work = 0  # the Vector's buffers beside x and w
    if unit in ("vector", "scalar"):
        p["acc_dtype"] = C.choice(params, "acc_dtype", ACC)
        accb = C.BYTES[p["acc_dtype"]]
        tiles = 2 * p["buffer_num"] * C.align(p["tile_len"] * nb, ub)
        if p["acc_dtype"] == "fp16" and dtype != "fp16":  # never an accumulator narrower than the input
            raise InfeasibleConfig(f"acc_dtype=fp16 with {dtype} input: the {unit.capitalize()} accumulates "
                                   f"{dtype} in fp32")
        if unit == "vector":
            p["reduction"] = C.choice(params, "reduction", REDUCTIONS)
            if C.compute_dtype(hw, dtype) != dtype:  # x and w converted: two fp32 tiles, the products in one
                work = 2 * C.align(p["tile_len"] * 4, ub) + C.align(p["tile_len"] * accb, ub)
            else:
                work = C.align(p["tile_len"] * max(accb, nb), ub) + C.align(p["tile_len"] * accb, ub)
        bufs = {"ub": {"used": tiles + work, "capacity": hw.ub_bytes}}
        max_cores = hw.vector_cores
    else:
        p["cube_form"] = C.choice(params, "cube_form", FORMS)
        if p["cube_form"] == "trace":
            blk = C.align(p["tile_len"], 256) * nb
        else:
            blk = -(-p["tile_len"] // 16) * 256 * nb
        bufs = {"l0a": {"used": p["buffer_num"] * C.align(blk, hw.align["l0a"]), "capacity": hw.l0a_bytes},
                "l0b": {"used": p["buffer_num"] * C.align(blk, hw.align["l0b"]), "capacity": hw.l0b_bytes}}
        max_cores = hw.cube_cores
    if C.on_chip("weighted_sum", options):
        bufs = _resident(bufs, shape["n"], p, dtype, hw, unit, work)
    C.check_capacity(bufs)
    C.check_spread(p, hw, max_cores=max_cores, unit=unit, work=-(-shape["n"] // 16),
                   what=f"16-element blocks of n={shape['n']}")
    return p, bufs


def _resident(bufs: dict, n: int, p: dict, dtype: str, hw: HardwareProfile, unit: str, work: int) -> dict:
    """The buffers on chip, where each core already holds its whole slice of x and w: in UB beside
    the Vector's products and accumulator (``work``; the tiles are views of the slice, nothing is
    copied in), in L0A and L0B as whole [16 x K] fractals for the cube's trace form (the Mmads read
    their K chunks there), in L1 for the naive form (its scatter into L0A/L0B tiles reads L1).
    Raises InfeasibleConfig when they do not fit (``_common.resident``)."""
    per = C.core_slice(n, p["cores"])
    nb = C.BYTES[dtype]
    where = {"n": n, "per": per, "dtype": dtype}
    if unit != "cube":
        used = C.resident("ub", 2 * C.align(per * nb, hw.align["ub"]), hw.ub_bytes, work=work, what="x and w",
                          **where)
        return {"ub": {"used": used, "capacity": hw.ub_bytes}}
    if p["cube_form"] == "naive":
        used = C.resident("l1", 2 * C.align(per * nb, hw.align["l1"]), hw.l1_bytes, what="x and w", **where)
        return {"l1": {"used": used, "capacity": hw.l1_bytes}, **bufs}
    whole = C.align(per, 256) * nb  # whole [16 x 16] fractals, on each buffer's granule
    x = C.resident("l0a", C.align(whole, hw.align["l0a"]), hw.l0a_bytes, what="x", **where)
    w = C.resident("l0b", C.align(whole, hw.align["l0b"]), hw.l0b_bytes, what="w", **where)
    return {"l0a": {"used": x, "capacity": hw.l0a_bytes}, "l0b": {"used": w, "capacity": hw.l0b_bytes}}


def _r(v: float, dtype: str) -> float:
    """One value rounded to ``dtype``."""
    return float(dtype_emul.round_to(np.array([v]), dtype)[0])


def _cost(shape, p, dtype, hw) -> np.ndarray:
    """The cost vector, HBM shared by the cores the split gives work (not ``cores``, which may
    ask for more than the 16-element granules fill)."""
    active = sum(c for c, _, _ in C.split(shape["n"], p["cores"], 16))
    return cost_vector(hw, dtype, active_cores=active)


def _run(shape, p, dtype, hw, unit, onchip, cost, execute=False, x=None, w=None, trace_capacity=0):
    """Simulate (and optionally compute) every core class plus the combine phase.

    Returns (runs, result value, traces).
    """
    n = shape["n"]
    classes = C.split(n, p["cores"], 16)
    nb = C.BYTES[dtype]
    in_code = C.CODES[dtype]
    x = np.zeros(1) if x is None else x
    w = np.zeros(1) if w is None else w
    sc_add = C.scalar_cost(hw, "add")
    sc_load = C.scalar_cost(hw, "load")
    sc_elem = C.scalar_per_elem(hw, SCALAR_LOOP)
    acc_dtype = p.get("acc_dtype", "fp32")
    acc_code = C.CODES[acc_dtype]
    accb = 4 if unit == "cube" else C.BYTES[acc_dtype]
    if unit == "vector":
        cd = C.compute_dtype(hw, dtype)  # bf16: multiplied in fp32 after a VCONV of x and w
        conv_in = cd != dtype
        conv = acc_dtype != cd  # the products converted to the accumulator's type
        in_code = C.CODES[cd]
        a3 = f"{acc_dtype}_{acc_dtype}_{acc_dtype}"
        rows = [("vmul", f"{cd}_{cd}_{cd}"), ("vconv", f"{cd}_{acc_dtype}") if conv else None, ("vadd", a3),
                ("vmla", f"{cd}_{cd}_{acc_dtype}") if p["reduction"] == "vmla" else None,
                ("vcadd", f"{acc_dtype}_{acc_dtype}"), ("vconv", f"{dtype}_{cd}") if conv_in else None]
        vcost = C.vtable(hw, rows)
    vcadd = C.vtable(hw, [("vcadd", f"{acc_dtype}_{acc_dtype}")]) if p["cores"] > 1 and unit == "vector" else np.zeros((1, 3))
    runs, parts, ends = [], [], []
    for count, L, start in classes:
        st = C.new_state(trace_capacity)
        if unit == "vector":
            acc = np.zeros(min(p["tile_len"], L))
            val, t = vector_core(st, cost, vcost, L, p["tile_len"], p["buffer_num"], C.lanes(dtype, hw),
                                 C.lanes(acc_dtype, hw), nb, p["reduction"] == "vmla", conv, conv_in, onchip, execute,
                                 x, w, start, in_code, acc_code, acc)
        elif unit == "scalar":
            val, t = scalar_core(st, cost, L, p["tile_len"], p["buffer_num"], nb, sc_elem,
                                 onchip, execute, x, w, start, acc_code)
        else:
            val, t = cube_core(st, cost, L, p["tile_len"], p["buffer_num"], p["cube_form"] == "trace", onchip, nb,
                               sc_add, sc_load, execute, x, w, start)
        if p["cores"] > 1 or not onchip:
            t = C.gm_out(st, cost, accb, t) if unit != "cube" else E.copy(st, cost, E.L0C_GM, 64.0, t)
        parts.append((val, count, L, start))
        ends.append(t)
        runs.append((st, count))
    combine = None
    if p["cores"] > 1:
        # all partials are in GM once the slowest core's write lands; core 0 combines them
        def combine(st):
            C.combine(st, cost, vcadd, sum(c for c, _, _ in classes), accb, max(ends), unit == "vector", sc_add, sc_load)
    out_runs, traces = C.runs_and_traces(runs, combine)
    return out_runs, parts, traces


def simulate(shape: dict, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
             options: dict | None = None, trace_capacity: int = 0, want_traces: bool = False):
    """Count mode: simulate one tiling on one unit; returns a SimResult (and traces)."""
    shape = {"n": int(shape["n"])}
    try:
        unit = C.unit_of(unit, UNITS)
        onchip = C.on_chip("weighted_sum", options)
        p, bufs = check(shape, params, dtype, hw, unit, options)
    except InfeasibleConfig as exc:
        res = infeasible("weighted_sum", unit or UNITS[0], dtype, shape, params, exc.reason)
        return (res, []) if want_traces else res
    cost = _cost(shape, p, dtype, hw)
    runs, _, traces = _run(shape, p, dtype, hw, unit, onchip, cost, trace_capacity=trace_capacity)
    n = shape["n"]
    nb = C.BYTES[dtype]
    peak = hw.peak_flops(unit, dtype)  # fp32 Mmads run at the cube's fp32 rate, so its fp32 peak
    res = assemble(op="weighted_sum", unit=unit, dtype=dtype, shape=shape, params=params, hw=hw, runs=runs,
                   useful_flops=2.0 * n, peak_flops=peak,
                   must_move_bytes=None if onchip else float(2 * n * nb), l2_hit=0.0, buffers=bufs)
    return (res, traces) if want_traces else res


def execute(inputs: tuple, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
            options: dict | None = None) -> np.ndarray:
    """Execute mode: the same loop nests computing the sum; returns a 0-d array of ``dtype`` values."""
    x, w = (C.input_array(v, name, 1) for v, name in zip(inputs, ("x", "w")))
    C.same_length({"x": x, "w": w})
    shape = {"n": int(x.shape[0])}
    unit = C.unit_of(unit, UNITS)
    onchip = C.on_chip("weighted_sum", options)
    p, _ = check(shape, params, dtype, hw, unit, options)
    cost = _cost(shape, p, dtype, hw)
    xs = np.ascontiguousarray(x, dtype=np.float64)
    ws = np.ascontiguousarray(w, dtype=np.float64)
    _, parts, _ = _run(shape, p, dtype, hw, unit, onchip, cost, execute=True, x=xs, w=ws)
    acc_dtype = "fp32" if unit == "cube" else p["acc_dtype"]
    total = 0.0
    for val, count, L, start in parts:
        total = float(_r(total + val, acc_dtype))
        for extra in range(1, count):  # other cores of this class: their own slices
            s = start + extra * L
            sub = {"n": L}
            _, sp, _ = _run(sub, {**p, "cores": 1}, dtype, hw, unit, onchip, cost, execute=True,
                            x=xs[s:s + L], w=ws[s:s + L])
            total = float(_r(total + sp[0][0], acc_dtype))
    return np.array(_r(total, dtype))


def reference(inputs: tuple, dtype: str, *, options: dict | None = None) -> np.ndarray:
    """float64 sum of the exact products, rounded to ``dtype``."""
    x, w = inputs
    return np.array(_r(float(np.dot(x.astype(np.float64), w.astype(np.float64))), dtype))


verify_shape = C.verify_shape_1d  # a huge n is verified on a smaller n of the same structure


def make_inputs(shape: dict, dtype: str, seed: int = 0, *, options: dict | None = None) -> tuple:
    """x uniform in [-1, 1], w uniform in [0, 1], both representable in ``dtype``."""
    rng = np.random.default_rng(seed)
    n = shape["n"]
    return (dtype_emul.round_to(rng.uniform(-1, 1, n), dtype), dtype_emul.round_to(rng.uniform(0, 1, n), dtype))


def tolerance(dtype: str, shape: dict, params: dict | None = None,
              unit: str | None = None, inputs: tuple | None = None) -> tuple[float, float]:
    """(rtol, atol) for make_inputs' data (products x*w of mean 0, rms 1/3) under the tiling's
    accumulation: fp32 on the cube (L0C) and wherever ``acc_dtype`` is fp32, fp16 otherwise and
    when no tiling is given (the loosest a correct kernel may be). Only the Vector rounds the
    products (VMUL in ``dtype``); the S pipe and the cube keep them exact until they are added.
    The accumulation's bound follows the tiling's order of additions (``adds``)."""
    unit = unit or UNITS[0]
    acc = "fp32" if unit == "cube" else (params or {}).get("acc_dtype", "fp16")
    order = adds(shape["n"], params, unit, acc) if params else None
    return C.sum_tolerance(shape["n"], dtype, acc, 1.0 / 3.0, rounded_products=unit == "vector", adds=order)


def adds(n: int, params: dict, unit: str, acc: str) -> tuple[float, float] | None:
    """``AddOrder.adds`` of the tiling, ``acc`` the accumulator: on every core, tile-wide lanes
    summed tile by tile, then a VADD tree and a VCADD (Vector), one running sum (Scalar, cube
    ``naive``) or 16 running sums, one per diagonal entry, summed in order (cube ``trace``); the
    cores' partials added one by one (``execute``). None if the params do not give the tiling."""
    form = params.get("cube_form")
    if unit == "cube" and form not in FORMS:
        return None

    def core_sum(core, L, tile):
        if unit == "vector":  # a lane's first product is in ``dtype``, not yet in ``acc``
            return core.tree(core.lanes(L, tile, first_rounded=True), C.REPEAT_BYTES // C.BYTES[acc])
        if unit == "scalar" or form == "naive":  # the first add rounds an exact product
            return float(core.lanes(L, 1, first_rounded=True)[0])
        # trace: 16-element blocks go round the 16 diagonal entries (``cube_core``)
        blocks = np.arange(-(-L // 16))
        rows = np.bincount(blocks % 16, weights=np.minimum(16, L - 16 * blocks), minlength=16)
        core.acc += float(np.sum(rows * (rows + 1) / 2))
        return core.sequential(rows[:min(16, len(blocks))])

    got = C.core_adds(n, params, core_sum)
    if got is None:
        return None
    order, parts = got
    order.sequential(parts, first_rounded=True)  # from 0: a lone lane's partial is rounded there
    return order.adds


# The Cube's partials leave each core through L0C -> GM and are summed after a cross-core sync:
# spreading costs ~400-600 cycles on any number of cores, which one core's Mmads reach at ~48 KiB
# read (fp16 n ~12 Ki, fp32 ~6 Ki); past it the spread should be wide, ~8 KiB read a core.
# One core per 4096 elements put fp16 n = 8192 on 2 cores (1,011 cycles against 736 on one) and
# fp32 n = 8192 on 2 (1,155 against 960 on 8). bench/default_cores.py.
CUBE_SPREAD_BYTES = 49152
CUBE_SLICE_BYTES = 8192


def _cube_cores(read_bytes: int, hw: HardwareProfile) -> int:
    """Cube cores of the default: one until the combine pays, then one per ``CUBE_SLICE_BYTES``."""
    if read_bytes < CUBE_SPREAD_BYTES:
        return 1
    return max(1, min(hw.cube_cores, read_bytes // CUBE_SLICE_BYTES))


def default_params(shape: dict, dtype: str, hw: HardwareProfile, unit: str | None = None,
                   options: dict | None = None) -> dict:
    """Baseline: 8 KiB tiles double-buffered (smaller where the profile's buffers cannot hold
    them), the cores ``default_cores`` gives a reduction, tree reduction in fp32."""
    unit = unit or UNITS[0]
    n = shape["n"]
    nb = C.BYTES[dtype]
    if unit == "cube":
        cores = _cube_cores(2 * n * nb, hw)
    else:
        cores = C.default_cores(n, unit, hw, combined=True, scalar_elem=C.scalar_per_elem(hw, SCALAR_LOOP),
                                read_bytes=2 * n * nb)
    per = -(-n // cores)
    if unit == "cube":  # a core's whole slice in one Mmad where L0A holds it: a second one costs its latency
        tile = min(1 << (per - 1).bit_length(), 4 * 8192 // nb)
    else:
        tile = min(C.align(per, 16), 8192 // nb)
    p = {"tile_len": tile, "buffer_num": 2, "cores": cores}
    if unit == "vector":
        p.update(reduction="tree", acc_dtype="fp32")
    elif unit == "scalar":
        p.update(acc_dtype="fp32")
    else:
        p.update(cube_form="trace")
    return C.fit_default(p, lambda q: check(shape, q, dtype, hw, unit))
