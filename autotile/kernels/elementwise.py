"""Elementwise add / mul / relu on the Vector unit (and a plain Scalar loop for comparison).

The op kind is an option (spec ``inputs: {kind: add|mul|relu}``, default add), not a tiling
param: it changes what is computed, not how. Tiles of ``tile_len`` elements per input in UB with
``buffer_num`` slots (copy-in on MTE2, one vector instruction, copy-out on MTE3); ``cores``
splits n. A dtype the Vector has no arithmetic for (bf16 on the 910B) is converted to fp32
(a VCONV per input), computed in fp32 and converted back (VCONV): fp32's 24 bits round a sum or
product of two bf16 values so that rounding it again to bf16 gives the correctly rounded result.
The Scalar loop loads each input element, does one ALU op and stores the result.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from autotile.errors import InfeasibleConfig, InputError
from autotile.hardware import HardwareProfile
from autotile.kernels import _common as C
from autotile.kernels import dtype_emul
from autotile.sim import engine as E
from autotile.sim.costs import cost_vector
from autotile.sim.result import CoreRun, assemble, infeasible

UNITS = ("vector", "scalar")
DIMS = ("n",)
KINDS = {"add": (2, "vadd", "add"), "mul": (2, "vmul", "mul"), "relu": (1, "vrelu", "cmp")}
ADD, MUL, RELU = range(3)
Q_IN, Q_OUT = 0, 1


@njit(cache=True)
def core(st, cost, vcost, lanes, L, tile, depth, nin, in_bytes, scalar_unit, per_elem, onchip, execute,
         a, b, y, start, kind, code, out_code):
    """One core's y = op(a, b) over [start, start+L); returns the end time.

    The vector instructions are ``vcost``'s rows in order, row k over ``lanes[k]`` elements a
    repeat; the arithmetic rounds to ``code``, the result to ``out_code``."""
    E.set_queue(st, Q_IN, depth)
    E.set_queue(st, Q_OUT, depth)
    t = 0.0
    for ti in range((L + tile - 1) // tile):
        ln = min(tile, L - ti * tile)
        slot, free = E.alloc(st, Q_IN)
        ready = free
        if not onchip:
            for _ in range(nin):
                ready = max(ready, C.gm_in(st, cost, ln * in_bytes, free))
        oslot, ofree = E.alloc(st, Q_OUT)
        ready = max(ready, ofree)
        if scalar_unit:
            t = E.scalar(st, cost, ln, per_elem, ready)
        else:
            t = ready
            for r in range(len(lanes)):
                t = C.vrun(st, cost, vcost, r, ln, lanes[r], t)
        E.release(st, Q_IN, slot, t)
        done = t if onchip else C.gm_out(st, cost, ln * in_bytes, t)
        E.release(st, Q_OUT, oslot, t if onchip else st.pipe_free[E.MTE3])
        if execute:
            for i in range(ln):
                k = start + ti * tile + i
                if kind == ADD:
                    y[k] = C.rnd(C.rnd(a[k] + b[k], code), out_code)
                elif kind == MUL:
                    y[k] = C.rnd(C.rnd(a[k] * b[k], code), out_code)
                else:  # max(x, 0): NaN propagates (as np.maximum, torch.relu); -0.0 gives +0.0
                    y[k] = a[k] if a[k] > 0.0 or a[k] != a[k] else 0.0
        t = max(t, done)
    return t


def kind_of(options: dict | None) -> str:
    """The op kind of ``options`` (add by default), all options checked."""
    return C.op_options("elementwise", options)["kind"]


def check(shape, params, dtype, hw, unit, kind, options=None):
    """Validate a tiling; returns (params, buffers) or raises InfeasibleConfig. With ``options``
    data on_chip, a core's whole slice of the inputs and of y sits in UB in place of the streamed
    tiles (nothing is copied in or out), and must fit there."""
    C.check_shape(shape, DIMS)
    C.check_dtype(hw, unit, dtype)
    p = C.ints(params, ("tile_len", "buffer_num", "cores"))
    nin = KINDS[kind][0]
    nb = C.BYTES[dtype]
    ub = hw.align["ub"]  # every UB buffer starts on the profile's granule, as matmul's buffers do
    used = (nin + 1) * p["buffer_num"] * C.align(p["tile_len"] * nb, ub)
    work = 0
    if unit == "vector" and C.compute_dtype(hw, dtype) != dtype:  # an fp32 work tile per input
        work = nin * C.align(p["tile_len"] * 4, ub)
    used += work
    if C.on_chip("elementwise", options):
        per = C.core_slice(shape["n"], p["cores"])
        used = C.resident("ub", (nin + 1) * C.align(per * nb, ub), hw.ub_bytes, work=work,
                          what="a and b and y" if nin > 1 else "a and y", n=shape["n"], per=per, dtype=dtype)
    bufs = {"ub": {"used": used, "capacity": hw.ub_bytes}}
    if used > hw.ub_bytes:
        raise InfeasibleConfig(f"UB overflow: the tiling needs {used} bytes, UB holds {hw.ub_bytes}")
    C.check_spread(p, hw, max_cores=hw.vector_cores, unit="vector", work=-(-shape["n"] // 16),
                   what=f"16-element blocks of n={shape['n']}")
    return p, bufs


def _vector_program(vop: str, nin: int, dtype: str, cd: str, hw: HardwareProfile, scalar_unit: bool):
    """(cost rows, lanes per row) of one tile's vector instructions, computing in ``cd``: the op
    alone, or a VCONV of each input to ``cd`` (a repeat reads the profile's bytes per repeat of the source), the op,
    and a VCONV back (``cd``'s lanes)."""
    if scalar_unit:
        return np.zeros((1, 3)), np.zeros(0, dtype=np.int64)
    body, lanes = C.converted([(vop, "_".join([cd] * (nin + 1)))], dtype, cd, hw, inputs=nin)
    return C.vtable(hw, body), np.array(lanes, dtype=np.int64)


def _run(shape, p, dtype, hw, unit, kind, onchip, execute=False, a=None, b=None, trace_capacity=0):
    nin, vop, sop = KINDS[kind]
    classes = C.split(shape["n"], p["cores"], 16)
    active = sum(c for c, _, _ in classes)  # the cores the split gives work: they share HBM
    # reads and writes stream together and share HBM: nin input tiles per output tile
    cost = cost_vector(hw, dtype, active_cores=active, write_share=None if onchip else 1.0 / (nin + 1))
    scalar_unit = unit == "scalar"
    cd = dtype if scalar_unit else C.compute_dtype(hw, dtype)
    vcost, lanes = _vector_program(vop, nin, dtype, cd, hw, scalar_unit)
    per = C.scalar_per_elem(hw, (("load", nin), (sop, 1), ("store", 1))) if scalar_unit else 0.0
    a = np.zeros(1) if a is None else a
    b = a if b is None else b
    y = np.zeros_like(a)
    runs, traces = [], []
    args = (cost, vcost, lanes)
    for count, L, start in classes:
        st = C.new_state(trace_capacity)
        for extra in range(count if execute else 1):
            core(st if extra == 0 else C.new_state(0), *args, L, p["tile_len"], p["buffer_num"], nin,
                 C.BYTES[dtype], scalar_unit, per, onchip, execute, a, b, y, start + extra * L,
                 tuple(KINDS).index(kind), C.CODES[cd], C.CODES[dtype])
        runs.append(CoreRun.from_state(st, count))
        traces.append((count, E.recorded(st)))
    return runs, y, traces


def simulate(shape: dict, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
             options: dict | None = None, trace_capacity: int = 0, want_traces: bool = False):
    """Count mode for one tiling; returns a SimResult (and traces)."""
    shape = {"n": int(shape["n"])}
    unit = unit or UNITS[0]
    try:
        if unit not in UNITS:
            raise InfeasibleConfig(f"unit={unit!r}, expected one of {UNITS}")
        kind = kind_of(options)
        onchip = C.on_chip("elementwise", options)
        p, bufs = check(shape, params, dtype, hw, unit, kind, options)
    except InfeasibleConfig as exc:
        res = infeasible("elementwise", unit, dtype, shape, params, exc.reason)
        return (res, []) if want_traces else res
    runs, _, traces = _run(shape, p, dtype, hw, unit, kind, onchip, trace_capacity=trace_capacity)
    n, nin = shape["n"], KINDS[kind][0]
    res = assemble(op="elementwise", unit=unit, dtype=dtype, shape=shape, params=params, hw=hw, runs=runs,
                   useful_flops=float(n), peak_flops=hw.peak_flops(unit, dtype),
                   must_move_bytes=None if onchip else float((nin + 1) * n * C.BYTES[dtype]), l2_hit=0.0,
                   buffers=bufs)
    return (res, traces) if want_traces else res


def _operands(inputs: tuple, kind: str) -> tuple[np.ndarray, np.ndarray | None]:
    """(a, b) of ``inputs`` as float64 (b None for relu), or an InputError naming the bad input:
    as many 1-D arrays of one length as ``kind`` takes. Execute and the reference both check
    (the reference of add given one array raised a bare IndexError)."""
    nin = KINDS[kind][0]
    if len(inputs) != nin:
        raise InputError(f"expected {nin} input array{'s' if nin > 1 else ''} for {kind}, got {len(inputs)}",
                         field="inputs")
    arrays = {name: C.input_array(x, name, 1) for name, x in zip(("a", "b"), inputs)}
    C.same_length(arrays)
    a = np.ascontiguousarray(arrays["a"], dtype=np.float64)
    return a, np.ascontiguousarray(arrays["b"], dtype=np.float64) if nin > 1 else None


def execute(inputs: tuple, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
            options: dict | None = None) -> np.ndarray:
    """Execute mode: the same loop nest; returns y rounded to ``dtype``."""
    unit = unit or UNITS[0]
    kind = kind_of(options)
    a, b = _operands(inputs, kind)
    shape = {"n": a.shape[0]}
    p, _ = check(shape, params, dtype, hw, unit, kind, options)
    _, y, _ = _run(shape, p, dtype, hw, unit, kind, C.on_chip("elementwise", options), execute=True, a=a, b=b)
    return dtype_emul.round_to(y, dtype)


def reference(inputs: tuple, dtype: str, *, options: dict | None = None) -> np.ndarray:
    """NumPy reference in float64, rounded to ``dtype``."""
    kind = kind_of(options)
    a, b = _operands(inputs, kind)
    if kind == "relu":
        return dtype_emul.round_to(np.maximum(a, 0.0), dtype)
    return dtype_emul.round_to(a + b if kind == "add" else a * b, dtype)


verify_shape = C.verify_shape_1d  # a huge n is verified on a smaller n of the same structure


def make_inputs(shape: dict, dtype: str, seed: int = 0, *, options: dict | None = None) -> tuple:
    """One (relu) or two inputs uniform in [-4, 4], representable in ``dtype``."""
    rng = np.random.default_rng(seed)
    nin = KINDS[kind_of(options)][0]
    return tuple(dtype_emul.round_to(rng.uniform(-4, 4, shape["n"]), dtype) for _ in range(nin))


def tolerance(dtype: str, shape: dict, params: dict | None = None,
              unit: str | None = None, inputs: tuple | None = None) -> tuple[float, float]:
    """One rounding of the result: exact match expected (the kernel rounds like the reference)."""
    return 0.0, 0.0


def default_params(shape: dict, dtype: str, hw: HardwareProfile, unit: str | None = None,
                   options: dict | None = None) -> dict:
    """Baseline: tiles double-buffered, several a core of 1-8 KiB (``stream_tile``; smaller if UB
    cannot hold them), the cores ``default_cores`` gives."""
    n = shape["n"]
    unit = unit or UNITS[0]
    cores = C.default_cores(n, unit, hw)
    p = {"tile_len": C.stream_tile(-(-n // cores), C.BYTES[dtype]), "buffer_num": 2, "cores": cores}
    kind = kind_of(options)
    return C.fit_default(p, lambda q: check(shape, q, dtype, hw, unit, kind))
