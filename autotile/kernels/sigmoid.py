"""Sigmoid ``1 / (1 + exp(-x))``: exact and approximate variants on the Scalar and Vector units.

Variants (param ``variant``): ``exact``; ``poly``, a clamped odd cubic ``0.5 + a x + b x^3`` on
``[-c, c]`` (minimax coefficients from ``fit_poly``, max error ~2%); ``lut_nearest`` and
``lut_linear``, a 256-entry table over [-8, 8] (nearest entry, or linear interpolation between
two). Vector supports exact (VMULS, VEXP, VADDS, VREC) and poly (VMAXS, VMINS, VMUL, VMULS, VADDS,
VMUL, VADDS); bf16 is converted to fp32 around the math (VCONV). Scalar computes in fp32 with
per-element op counts priced from the profile's scalar costs. Tiles of ``tile_len`` elements in
UB with ``buffer_num`` slots; ``cores`` splits n. ``{"data": "on_chip"}`` skips GM copies (a
core's x and y then sit whole in UB, and must fit there).
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
from autotile.sim.result import CoreRun, assemble, infeasible

UNITS = ("vector", "scalar")
DIMS = ("n",)
VARIANTS = {u: registry.get("sigmoid").admits(u, "variant") for u in UNITS}
EXACT, POLY, LUT_N, LUT_L = range(4)
VARIANT_CODE = {"exact": EXACT, "poly": POLY, "lut_nearest": LUT_N, "lut_linear": LUT_L}
# minimax clamped odd cubic on [-8, 8] (see fit_poly): a, b, clamp c
POLY_A, POLY_B, POLY_C = 0.21704975785911662, -0.006601016959678638, 3.31065247891911
LUT_SIZE, LUT_LO, LUT_HI = 256, -8.0, 8.0
# scalar op counts per element: (op name, count)
SCALAR_OPS = {
    "exact": (("load", 1), ("mul", 1), ("exp", 1), ("add", 1), ("div", 1), ("store", 1)),
    "poly": (("load", 1), ("cmp", 2), ("mul", 3), ("add", 2), ("store", 1)),
    # the tables' clamp: two compares; the NaN test sits on the branch where x >= -8 fails (NaN,
    # or below the table), which make_inputs' [-8, 8] never takes
    "lut_nearest": (("load", 2), ("cmp", 2), ("mul", 1), ("add", 1), ("store", 1)),
    "lut_linear": (("load", 3), ("cmp", 2), ("mul", 2), ("add", 5), ("store", 1)),
}
Q_IN, Q_OUT = 0, 1
# verification's tails beyond make_inputs' [-8, 8]: |x| up to 20 (a table clamped at -8 is 7x off
# at -10 and 55x at -12). A variant admitted on its error is held there to that error plus
# sigmoid(-8) (and its rounding in bf16), what saturating at +-8 (the tables, the accuracy range)
# costs beyond it
TAIL_LO, TAIL_HI = 8.0, 20.0
TAIL_ERROR = float(1 / (1 + np.exp(8.0))) * (1 + 2.0 ** -8)
SMALLEST_NORMAL = {"fp32": 2.0 ** -126, "fp16": 2.0 ** -14, "bf16": 2.0 ** -126}


def fit_poly(grid: int = 20001) -> tuple[float, float, float, float]:
    """Minimax fit of the clamped odd cubic on [-8, 8]; returns (a, b, c, max abs error)."""
    from scipy.optimize import minimize

    x = np.linspace(-8, 8, grid)
    s = 1 / (1 + np.exp(-x))

    def err(p):
        xc = np.clip(x, -p[2], p[2])
        return np.max(np.abs(0.5 + p[0] * xc + p[1] * xc ** 3 - s))

    best = min((minimize(err, [0.2, -0.005, c0], method="Nelder-Mead",
                         options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000})
                for c0 in np.linspace(2, 5, 13)), key=lambda r: r.fun)
    return float(best.x[0]), float(best.x[1]), float(best.x[2]), float(best.fun)


def lut_table() -> np.ndarray:
    """The 256 sigmoid values at the table's grid points over [-8, 8], in fp32."""
    x = np.linspace(LUT_LO, LUT_HI, LUT_SIZE)
    return (1 / (1 + np.exp(-x))).astype(np.float32).astype(np.float64)


@njit(cache=True)
def _elem(v, variant, code, table):
    """One element's sigmoid with rounding to ``code`` after every operation."""
    if variant == EXACT:
        e = C.rnd(np.exp(C.rnd(-v, code)), code)
        return C.rnd(1.0 / C.rnd(e + 1.0, code), code)
    if variant == POLY:
        xc = min(max(v, -POLY_C), POLY_C)
        x2 = C.rnd(xc * xc, code)
        t = C.rnd(C.rnd(x2 * POLY_B, code) + POLY_A, code)
        return C.rnd(C.rnd(t * xc, code) + 0.5, code)
    if v != v:  # NaN has no table entry: its index was int(NaN), a read outside the table
        return v
    xc = min(max(v, LUT_LO), LUT_HI)
    pos = C.rnd((xc - LUT_LO) * ((LUT_SIZE - 1) / (LUT_HI - LUT_LO)), code)
    if variant == LUT_N:
        return table[int(np.round(pos))]
    i = min(int(np.floor(pos)), LUT_SIZE - 2)
    f = C.rnd(pos - i, code)
    return C.rnd(table[i] + C.rnd(f * C.rnd(table[i + 1] - table[i], code), code), code)


@njit(cache=True)
def core(st, cost, vcost, nvops, lanes, L, tile, depth, in_bytes, scalar_unit, per_elem, onchip,
         execute, x, y, start, variant, code, out_code, table):
    """One core's sigmoid over x[start:start+L] into y; returns the end time."""
    E.set_queue(st, Q_IN, depth)
    E.set_queue(st, Q_OUT, depth)
    t = 0.0
    tready = 0.0
    if scalar_unit and variant >= LUT_N and not onchip:
        tready = C.gm_in(st, cost, LUT_SIZE * 4, 0.0)
    for ti in range((L + tile - 1) // tile):
        ln = min(tile, L - ti * tile)
        slot, free = E.alloc(st, Q_IN)
        ready = free
        if not onchip:
            ready = C.gm_in(st, cost, ln * in_bytes, free)
        oslot, ofree = E.alloc(st, Q_OUT)
        ready = max(ready, ofree, tready)
        if scalar_unit:
            t = E.scalar(st, cost, ln, per_elem, ready)
        else:
            t = ready
            for k in range(nvops):
                t = C.vrun(st, cost, vcost, k, ln, lanes[k], t)
        E.release(st, Q_IN, slot, t)
        done = t
        if not onchip:
            done = C.gm_out(st, cost, ln * in_bytes, t)
        E.release(st, Q_OUT, oslot, st.pipe_free[E.MTE3] if not onchip else t)
        if execute:
            for i in range(ln):
                k = start + ti * tile + i
                y[k] = C.rnd(_elem(x[k], variant, code, table), out_code)
        t = max(t, done)
    return t


# ---------------------------------------------------------------------------------------
# Python side


def _vector_program(variant: str, dtype: str, hw: HardwareProfile):
    """(cost rows, lanes per row) of the vector instruction sequence for one tile."""
    cd = C.compute_dtype(hw, dtype)  # bf16 on the 910B: fp32
    s3, s2 = f"{cd}_{cd}_{cd}", f"{cd}_{cd}"
    body = ([("vmuls", s3), ("vexp", s2), ("vadds", s3), ("vrec", s2)] if variant == "exact" else
            [("vmaxs", s3), ("vmins", s3), ("vmul", s3), ("vmuls", s3), ("vadds", s3), ("vmul", s3), ("vadds", s3)])
    body, lanes = C.converted(body, dtype, cd, hw)
    return C.vtable(hw, body), np.array(lanes, dtype=np.int64)


def check(shape, params, dtype, hw, unit, options=None):
    """Validate a tiling; returns (params, buffers) or raises InfeasibleConfig. With ``options``
    data on_chip, a core's whole slice of x and of y sits in UB in place of the streamed tiles
    (nothing is copied in or out), and must fit there."""
    C.check_shape(shape, DIMS)
    C.check_dtype(hw, unit, dtype)
    p = C.ints(params, ("tile_len", "buffer_num", "cores"))
    p["variant"] = C.choice(params, "variant", VARIANTS[unit])
    nb = C.BYTES[dtype]
    ub = hw.align["ub"]  # every UB buffer starts on the profile's granule, as matmul's buffers do
    used = 2 * p["buffer_num"] * C.align(p["tile_len"] * nb, ub)
    work = 0
    if unit == "scalar" and p["variant"].startswith("lut"):
        work += LUT_SIZE * 4
    if unit == "vector" and C.compute_dtype(hw, dtype) != dtype:  # the fp32 tile the math runs on
        work += C.align(p["tile_len"] * 4, ub)
    used += work
    if C.on_chip("sigmoid", options):
        per = C.core_slice(shape["n"], p["cores"])
        used = C.resident("ub", 2 * C.align(per * nb, ub), hw.ub_bytes, work=work, what="x and y",
                          n=shape["n"], per=per, dtype=dtype)
    bufs = {"ub": {"used": used, "capacity": hw.ub_bytes}}
    if used > hw.ub_bytes:
        raise InfeasibleConfig(f"UB overflow: the tiling needs {used} bytes, UB holds {hw.ub_bytes}")
    C.check_spread(p, hw, max_cores=hw.vector_cores, unit="vector", work=-(-shape["n"] // 16),
                   what=f"16-element blocks of n={shape['n']}")
    return p, bufs


def _run(shape, p, dtype, hw, unit, onchip, execute=False, x=None, trace_capacity=0):
    classes = C.split(shape["n"], p["cores"], 16)
    active = sum(c for c, _, _ in classes)  # the cores the split gives work: they share HBM
    # the input and output streams share HBM half and half
    cost = cost_vector(hw, dtype, active_cores=active, write_share=None if onchip else 0.5)
    scalar_unit = unit == "scalar"
    if scalar_unit:
        vcost, lanes = np.zeros((1, 3)), np.zeros(1, dtype=np.int64)
        per = C.scalar_per_elem(hw, SCALAR_OPS[p["variant"]])
        code = C.FP32
    else:
        vcost, lanes = _vector_program(p["variant"], dtype, hw)
        per = 0.0
        code = C.CODES[C.compute_dtype(hw, dtype)]
    x = np.zeros(1) if x is None else x
    y = np.zeros_like(x)
    table = lut_table()
    runs, traces = [], []
    for count, L, start in classes:
        st = C.new_state(trace_capacity)
        core(st, cost, vcost, len(lanes) if not scalar_unit else 0, lanes, L, p["tile_len"], p["buffer_num"],
             C.BYTES[dtype], scalar_unit, per, onchip, execute, x, y, start, VARIANT_CODE[p["variant"]], code,
             C.CODES[dtype], table)
        if execute:  # the other cores of this class compute their own slices
            for extra in range(1, count):
                core(C.new_state(0), cost, vcost, len(lanes) if not scalar_unit else 0, lanes, L, p["tile_len"],
                     p["buffer_num"], C.BYTES[dtype], scalar_unit, per, onchip, execute, x, y, start + extra * L,
                     VARIANT_CODE[p["variant"]], code, C.CODES[dtype], table)
        runs.append(CoreRun.from_state(st, count))
        traces.append((count, E.recorded(st)))
    return runs, y, traces


def simulate(shape: dict, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
             options: dict | None = None, trace_capacity: int = 0, want_traces: bool = False):
    """Count mode: one tiling and variant on one unit; returns a SimResult (and traces)."""
    shape = {"n": int(shape["n"])}
    unit = unit or UNITS[0]
    try:
        if unit not in UNITS:
            raise InfeasibleConfig(f"unit={unit!r}, expected one of {UNITS}")
        onchip = C.on_chip("sigmoid", options)
        p, bufs = check(shape, params, dtype, hw, unit, options)
    except InfeasibleConfig as exc:
        res = infeasible("sigmoid", unit, dtype, shape, params, exc.reason)
        return (res, []) if want_traces else res
    runs, _, traces = _run(shape, p, dtype, hw, unit, onchip, trace_capacity=trace_capacity)
    n = shape["n"]
    res = assemble(op="sigmoid", unit=unit, dtype=dtype, shape=shape, params=params, hw=hw, runs=runs,
                   useful_flops=4.0 * n, peak_flops=hw.peak_flops(unit, dtype),
                   must_move_bytes=None if onchip else 2.0 * n * C.BYTES[dtype], l2_hit=0.0, buffers=bufs)
    return (res, traces) if want_traces else res


def execute(inputs: tuple, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
            options: dict | None = None) -> np.ndarray:
    """Execute mode: the same loop nest computing y; returns y rounded to ``dtype``."""
    x = C.input_array(inputs[0], "x", 1)
    unit = unit or UNITS[0]
    shape = {"n": int(x.shape[0])}
    p, _ = check(shape, params, dtype, hw, unit, options)
    _, y, _ = _run(shape, p, dtype, hw, unit, C.on_chip("sigmoid", options), execute=True,
                   x=np.ascontiguousarray(x, dtype=np.float64))
    return dtype_emul.round_to(y, dtype)


def reference(inputs: tuple, dtype: str, *, options: dict | None = None) -> np.ndarray:
    """float64 sigmoid, rounded to ``dtype``."""
    (x,) = inputs
    return dtype_emul.round_to(1.0 / (1.0 + np.exp(-x.astype(np.float64))), dtype)


verify_shape = C.verify_shape_1d  # a huge n is verified on a smaller n of the same structure


def make_inputs(shape: dict, dtype: str, seed: int = 0, *, options: dict | None = None) -> tuple:
    """x uniform in [-8, 8], representable in ``dtype``."""
    rng = np.random.default_rng(seed)
    return (dtype_emul.round_to(rng.uniform(-8, 8, shape["n"]), dtype),)


def tail_inputs(shape: dict, dtype: str, seed: int = 0, *, options: dict | None = None) -> tuple:
    """x with |x| uniform in [8, 20], either sign, representable in ``dtype``: what verification
    checks besides make_inputs (the accuracy range of the error objectives) so that an inexact
    variant passes as exact on neither."""
    rng = np.random.default_rng(seed)
    mag = rng.uniform(TAIL_LO, TAIL_HI, shape["n"])
    return (dtype_emul.round_to(np.where(rng.random(shape["n"]) < 0.5, -mag, mag), dtype),)


def tolerance(dtype: str, shape: dict, params: dict | None = None,
              unit: str | None = None, inputs: tuple | None = None) -> tuple[float, float]:
    """(rtol, atol) of the exact variant as ``unit`` (default: the Vector) computes ``dtype``, 1.5x
    its worst case. In the output's dtype (fp32 on either unit, fp16 on the Vector): three
    roundings (exp, whose error reaches y damped by e/(1+e) <= 1, add, reciprocal) and the
    reference's one, at most ~4 u of y (measured 2.42 u, 2 ulp, over x in [-8, 8]): rtol 6 u.
    In fp32, rounded once (bf16 on either unit, fp16 on the Scalar): the fp32 error (~3 x 2**-24)
    moves the output by at most one ulp of the dtype, 2 u relative (measured 0 in bf16 over every
    bf16 x in [-8, 8]; one ulp, 2 u, in fp16 on the Scalar): rtol 3 u. Outputs near 0 are checked
    to their own precision (0 in place of sigmoid(-8) = 3.4e-4 fails); atol is the dtype's
    smallest normal number, below which it has no relative precision (the exact fp16 Vector form's
    exp overflows below x ~ -11 and returns 0: at most 1.7e-5 off). The approximate variants
    (poly, lut_*) fail this; a study admits them through an error objective or ``limits``, and
    verification then holds them to the error the study recorded."""
    unit = unit or UNITS[0]
    in_dtype = dtype == "fp32" or (dtype == "fp16" and unit == "vector")
    return (6 if in_dtype else 3) * C.eps(dtype), SMALLEST_NORMAL[dtype]


def errors(variant: str, unit: str, dtype: str, hw: HardwareProfile, n: int = 4096, seed: int = 0) -> dict:
    """Max absolute and relative error of a variant from execute mode, against float64."""
    (x,) = make_inputs({"n": n}, dtype, seed)
    p = {"tile_len": min(n, 2048), "buffer_num": 2, "cores": 1, "variant": variant}
    y = execute((x,), p, dtype, hw, unit=unit).astype(np.float64)
    ref = 1.0 / (1.0 + np.exp(-x.astype(np.float64)))
    return {"max_abs_error": float(np.max(np.abs(y - ref))), "max_rel_error": float(np.max(np.abs(y - ref) / ref))}


def default_params(shape: dict, dtype: str, hw: HardwareProfile, unit: str | None = None,
                   options: dict | None = None) -> dict:
    """Baseline: exact variant, tiles double-buffered, several a core of 1-8 KiB (``stream_tile``;
    smaller if UB cannot hold them), the cores ``default_cores`` gives (every core from 6 Ki
    elements on the Vector, 1.5 Ki on the Scalar)."""
    n = shape["n"]
    unit = unit or UNITS[0]
    cores = C.default_cores(n, unit, hw)
    p = {"tile_len": C.stream_tile(-(-n // cores), C.BYTES[dtype]), "buffer_num": 2, "cores": cores,
         "variant": "exact"}
    return C.fit_default(p, lambda q: check(shape, q, dtype, hw, unit))
