"""Matmul C = A @ B on the Vector unit, for shapes too small to fill the cube's fractals.

Each core owns a run of ``tile_m``-row tiles of C. It loads B (K x N) into UB once and converts
it to fp32 (VCONV); then per tile A's rows come in through a queue of ``buffer_num`` slots, and
each row of C is built as an outer-product sweep: VDUP zeroes the fp32 row, then for every k the
S pipe reads A[i, k] and one VAXPY adds A[i, k] * B[k, :] (N lanes). The tile is converted to the
output dtype (VCONV) and written back by MTE3. fp32 accumulation, like the cube's L0C.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from autotile.errors import InfeasibleConfig, InputError
from autotile.hardware import HardwareProfile
from autotile.kernels import _common as C
from autotile.kernels import dtype_emul, registry
from autotile.sim import engine as E
from autotile.sim.costs import cost_vector, hbm_load, write_fraction
from autotile.sim.result import CoreRun, assemble, infeasible

PARAMS = registry.get("matmul").needs("vector")
DTYPES = ("fp16", "fp32", "bf16")
Q_IN, Q_OUT = 0, 1
V_CONV_IN, V_DUP, V_AXPY, V_CONV_OUT = range(4)


@njit(cache=True)
def core(st, cost, vcost, m0, rows, K, N, tm, depth, nb, in_lanes, acc_lanes, execute, a, b, c):
    """Rows m0..m0+rows-1 of C on one core; returns the end time. ``in_lanes`` / ``acc_lanes``:
    elements of the input dtype / of the fp32 accumulator per vector repeat (the profile's)."""
    E.set_queue(st, Q_IN, depth)
    E.set_queue(st, Q_OUT, depth)
    bready = C.gm_in(st, cost, K * N * nb, 0.0)
    if nb != 4:
        bready = C.vrun(st, cost, vcost, V_CONV_IN, K * N, in_lanes, bready)
    t = bready
    for ti in range((rows + tm - 1) // tm):
        r0 = m0 + ti * tm
        rr = min(tm, m0 + rows - r0)
        slot, free = E.alloc(st, Q_IN)
        ready = C.gm_in(st, cost, rr * K * nb, free)
        oslot, ofree = E.alloc(st, Q_OUT)
        t = max(t, ofree, ready)
        for i in range(rr):
            t = C.vrun(st, cost, vcost, V_DUP, N, acc_lanes, t)
            s = E.scalar(st, cost, K, cost[E.C_SCALAR], ready)  # A[i, k] into a register
            t = max(t, s)
            for _ in range(K):
                t = C.vrun(st, cost, vcost, V_AXPY, N, acc_lanes, t)
            if execute:
                for j in range(N):
                    acc = 0.0
                    for k in range(K):
                        acc = C.rnd(acc + a[r0 + i, k] * b[k, j], C.FP32)
                    c[r0 + i, j] = acc
        E.release(st, Q_IN, slot, t)
        if nb != 4:
            t = C.vrun(st, cost, vcost, V_CONV_OUT, rr * N, acc_lanes, t)
        C.gm_out(st, cost, rr * N * nb, t)
        E.release(st, Q_OUT, oslot, st.pipe_free[E.MTE3])
    return max(t, st.pipe_free[E.MTE3])


def check(shape: dict, params: dict, dtype: str, hw: HardwareProfile) -> tuple[dict, dict]:
    """Validate a tiling; returns (params, buffers) or raises InfeasibleConfig."""
    C.check_shape(shape, ("m", "n", "k"))
    if dtype not in DTYPES:
        raise InfeasibleConfig(f"the vector matmul supports {DTYPES}, not {dtype}")
    C.check_dtype(hw, "vector", dtype)
    p = C.ints(params, PARAMS)
    M, N, K = shape["m"], shape["n"], shape["k"]
    nb = C.BYTES[dtype]
    al = lambda v: -(-v // 32) * 32  # noqa: E731
    used = al(K * N * nb) + al(K * N * 4) + p["buffer_num"] * (al(p["tile_m"] * K * nb) + al(p["tile_m"] * N * nb)) \
        + al(p["tile_m"] * N * 4)
    bufs = {"ub": {"used": used, "capacity": hw.ub_bytes}}
    if used > hw.ub_bytes:
        raise InfeasibleConfig(f"UB overflow: B, its fp32 copy and the A / C tiles need {used} bytes, "
                               f"UB holds {hw.ub_bytes}")
    C.check_spread(p, hw, max_cores=hw.vector_cores, unit="vector", work=-(-M // p["tile_m"]), what="row tiles")
    return p, bufs


def _run(shape, p, dtype, hw, execute=False, a=None, b=None, trace_capacity=0):
    """Simulate each core class (computing C in execute mode); returns (runs, C, traces).

    A's tiles come in while C's go out, so reads and writes share HBM as much as a first pass
    with whole shares (a lower bound of the duration) says they load it; B's load runs alone.
    """
    M, N, K = shape["m"], shape["n"], shape["k"]
    ntiles = -(-M // p["tile_m"])
    per = -(-ntiles // p["cores"]) * p["tile_m"]
    starts = list(range(0, M, per))
    conv = dtype != "fp32"  # fp16 and bf16 in and out through fp32 (VCONV)
    vcost = C.vtable(hw, [("vconv", f"{dtype}_fp32") if conv else None, ("vdup", "fp32_fp32"),
                          ("vaxpy", "fp32_fp32_fp32"), ("vconv", f"fp32_{dtype}") if conv else None])
    a = np.zeros((1, 1)) if a is None else a
    b = np.zeros((1, 1)) if b is None else b
    c = np.zeros((M, N) if execute else (1, 1))

    def classes(cost, execute, capacity):
        """rows -> [count, state]: cores with the same row count run the same program."""
        out = {}
        for m0 in starts:
            rows = min(per, M - m0)
            if rows in out and not execute:
                out[rows][0] += 1
                continue
            st = C.new_state(capacity)
            core(st, cost, vcost, m0, rows, K, N, p["tile_m"], p["buffer_num"], C.BYTES[dtype], C.lanes(dtype, hw),
                 C.lanes("fp32", hw), execute, a, b, c)
            if rows in out:
                out[rows][0] += 1
            else:
                out[rows] = [1, st]
        return out

    first = classes(cost_vector(hw, dtype, active_cores=len(starts)), False, 0)
    lower = max(st.pipe_free.max() for _, st in first.values())
    nb = C.BYTES[dtype]
    reads, writes = (M * K + len(starts) * K * N) * nb, M * N * nb
    cost = cost_vector(hw, dtype, active_cores=len(starts), write_share=write_fraction(reads, writes),
                       hbm_load=hbm_load(hw, len(starts), len(starts), reads + writes, lower))
    final = classes(cost, execute, trace_capacity)
    runs = [CoreRun.from_state(st, n) for n, st in final.values()]
    return runs, c, [(n, E.recorded(st)) for n, st in final.values()]


def simulate(shape, params, dtype, hw, *, trace_capacity=0, want_traces=False):
    """Count mode; a SimResult (and traces)."""
    shape = {d: int(shape[d]) for d in ("m", "n", "k")}
    try:
        p, bufs = check(shape, params, dtype, hw)
    except InfeasibleConfig as exc:
        res = infeasible("matmul", "vector", dtype, shape, params, exc.reason)
        return (res, []) if want_traces else res
    runs, _, traces = _run(shape, p, dtype, hw, trace_capacity=trace_capacity)
    M, N, K = shape["m"], shape["n"], shape["k"]
    nb = C.BYTES[dtype]
    res = assemble(op="matmul", unit="vector", dtype=dtype, shape=shape, params=params, hw=hw, runs=runs,
                   useful_flops=2.0 * M * N * K, peak_flops=hw.peak_flops("vector", dtype),
                   must_move_bytes=float((M * K + K * N + M * N) * nb), l2_hit=0.0, buffers=bufs)
    return (res, traces) if want_traces else res


def shape_of(inputs: tuple) -> dict:
    """``{m, n, k}`` of A (M x K) and B (K x N); an InputError naming the input that does not fit
    (execute indexes them in Numba, which checks no bounds)."""
    if len(inputs) != 2:
        raise InputError(f"expected two inputs, A (M x K) and B (K x N), got {len(inputs)}", field="inputs")
    a, b = C.input_array(inputs[0], "A", 2), C.input_array(inputs[1], "B", 2)
    if b.shape[0] != a.shape[1]:
        raise InputError(f"expected {a.shape[1]} rows, as A {a.shape} has columns, got {b.shape[0]}", field="B")
    return {"m": int(a.shape[0]), "n": int(b.shape[1]), "k": int(a.shape[1])}


def execute(inputs, params, dtype, hw) -> np.ndarray:
    """Execute mode: C rounded to ``dtype``."""
    shape = shape_of(inputs)
    a, b = np.asarray(inputs[0]), np.asarray(inputs[1])
    p, _ = check(shape, params, dtype, hw)
    _, c, _ = _run(shape, p, dtype, hw, execute=True, a=np.ascontiguousarray(a, dtype=np.float64),
                   b=np.ascontiguousarray(b, dtype=np.float64))
    return dtype_emul.round_to(c, dtype)


def default_params(shape: dict, dtype: str, hw: HardwareProfile) -> dict:
    """Baseline: 8-row tiles double buffered, one core per tile (up to every vector core); rows
    halved until UB fits, then single buffered; the first if none fits (B stays whole in UB).
    The 8 rows were kept whatever K: 64 x 16 x 1024 fp32 needed 198,144 bytes of UB and had no
    feasible default; 4 rows a tile fit (15,765 cycles)."""
    tried = []
    for depth in (2, 1):
        tm = min(8, shape["m"])
        while True:
            p = {"tile_m": tm, "buffer_num": depth, "cores": min(hw.vector_cores, -(-shape["m"] // tm))}
            try:
                check(shape, p, dtype, hw)
                return p
            except InfeasibleConfig:
                tried.append(p)
            if tm == 1:
                break
            tm //= 2
    return tried[0]
