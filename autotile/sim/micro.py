"""Micro-operations: one Mmad, copy or vector instruction on one core, through the engine.

The same ``@njit`` engine helpers the kernels call (``engine.mmad``, ``engine.copy``,
``engine.vector``) time a single operation or a back-to-back series of identical ones, so the
figures here are exactly what a kernel would pay. Calibration predicts measurements through
these functions, and the anchors benchmark reads them. An operation whose operands do not fit
the buffers it reads and writes (``sim.footprint``) is refused: no kernel could issue it.

>>> from autotile.hardware import load_profile
>>> r = micro("mmad", {"m": 32, "k": 16, "n": 16, "repeat": 16}, "fp16", load_profile())
>>> 4.0 < r.cycles_per_op < 6.0
True
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from autotile.dtypes import DTYPES
from autotile.errors import InputError
from autotile.hardware import HardwareProfile
from autotile.hardware.ops import VECTOR_OPS, signature_problem
from autotile.sim import engine as E
from autotile.sim.costs import cost_vector
from autotile.sim.footprint import DTYPE_BYTES, copy_uses, mmad_uses, overflow, vector_uses

OPS = ("mmad", "copy", "vector")
KEYS = {
    "mmad": {"m": True, "k": True, "n": True, "repeat": False},
    "copy": {"path": True, "bytes": True, "repeat": False},
    "vector": {"op": True, "elems": False, "repeat": False},
}
MAX_REPEAT = 1_000_000  # back-to-back operations (the schedule records each)


@dataclass(frozen=True)
class MicroResult:
    """One micro-operation's timing. ``cycles`` is until the last result is usable."""

    op: str
    hw: str
    dtype: str
    params: dict
    cycles: float
    cycles_per_op: float
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"op": self.op, "hw": self.hw, "dtype": self.dtype, "params": dict(self.params),
                "cycles": round(self.cycles, 4), "cycles_per_op": round(self.cycles_per_op, 4),
                **self.extra}


# -- engine runs over plain arrays (the fitter calls these with trial constants) ----------------

def run_mmad(cost: np.ndarray, m: int, k: int, n: int, c0: int, repeat: int) -> tuple[float, float]:
    """(cycles until the last result is usable, steady-state cycles per Mmad) of ``repeat`` Mmads."""
    st = E.new_state(repeat)
    done = 0.0
    for _ in range(repeat):
        done = E.mmad(st, cost, m, k, n, c0, 0.0)
    return float(done), _steady(st, repeat, done)


def run_copy(cost: np.ndarray, path: int, nbytes: float, repeat: int) -> tuple[float, float]:
    """(cycles until the last copy's data is usable, steady-state cycles per copy)."""
    st = E.new_state(repeat)
    done = 0.0
    for _ in range(repeat):
        done = E.copy(st, cost, path, float(nbytes), 0.0)
    return float(done), _steady(st, repeat, done)


def run_vector(cost: np.ndarray, vrow: np.ndarray, repeats: int) -> tuple[float, int]:
    """(cycles, instructions issued) of one vector op over ``repeats`` repeats (split at max)."""
    st = E.new_state(0)
    end = E.vector(st, cost, vrow.reshape(1, 3), 0, repeats, 0.0)
    return float(end), int(st.counts[4])


def _steady(st, repeat: int, done: float) -> float:
    """Per-op cost from the schedule: (end_R - end_1) / (R - 1); the whole time when R = 1."""
    if repeat == 1:
        return done
    tr = st.trace[: st.ntrace[0]]
    return float((tr[-1, 2] - tr[0, 2]) / (repeat - 1))


# -- validation and the public entry point ---------------------------------------------------

def _positive_int(params: dict, key: str, default=None) -> int:
    """A positive integer no larger than the engine handles (``repeat`` also bounds the trace
    the schedule keeps, so it is capped lower)."""
    from autotile.space.loader import MAX_DIM  # sizes: as spec shapes

    v = params.get(key, default)
    top = MAX_REPEAT if key == "repeat" else MAX_DIM
    if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v or not 1 <= v <= top:
        raise InputError(f"{key}={v!r}: expected a positive integer up to {top}")
    return int(v)


def _check_keys(kind: str, params: dict) -> None:
    allowed = KEYS[kind]
    for k in params:
        if k not in allowed:
            raise InputError(f"micro {kind}: unknown parameter {k!r}, expected {', '.join(allowed)}")
    for k, required in allowed.items():
        if required and k not in params:
            raise InputError(f"micro {kind}: missing parameter {k!r}")


def vector_signature(hw: HardwareProfile, op: str, dtype: str) -> tuple[str, str | None]:
    """(signature to cost, how a plain dtype chose it; None when ``dtype`` is the signature).

    Costed by the exact signature, never another's cost: a signature (``fp16_fp16_fp32``) must be
    a real one of ``op`` (``ops.signature_problem``) that the profile costs. A plain dtype is that
    dtype throughout (fp16: ``fp16_fp16_fp16``) when the profile costs it, else the profile's one
    signature of ``op`` from that dtype; several, or none, is an InputError listing them. (The
    first signature from the dtype was taken: VMLA fp16 was costed as fp16_fp16_fp32 and said to
    be exact, and fp16_bf16_int8, no instruction, as fp16_fp16_fp16.)"""
    if op not in hw.vector:
        raise InputError(f"vector op {op!r} is not in hardware profile {hw.reference} "
                         f"(it has {', '.join(sorted(hw.vector))})")
    table = hw.vector[op]
    parts = dtype.split("_")
    if any(p not in DTYPE_BYTES for p in parts):
        raise InputError(f"dtype {dtype!r}: expected a dtype or a signature like fp16_fp16_fp32")
    if len(parts) > 1:
        problem = signature_problem(op, dtype)
        if problem:
            raise InputError(f"--dtype {dtype}: {problem}")
        if dtype not in table:
            raise InputError(f"vector op {op} has no cost for {dtype} in {hw.reference} (it has {', '.join(table)}): "
                             "expected one of those, or add it to the profile")
        return dtype, None
    same = "_".join([dtype] * VECTOR_OPS[op])
    if same in table:
        others = [s for s in table if s != same and s.split("_")[0] == dtype]
        also = f"; the profile also costs {', '.join(others)}: give one as --dtype" if others else ""
        return same, f"{dtype} throughout{also}"
    from_dtype = [s for s in table if s.split("_")[0] == dtype]
    if len(from_dtype) == 1:
        return from_dtype[0], f"the profile's only {op} signature from {dtype}"
    what = (f"several {op} signatures from {dtype} ({', '.join(from_dtype)}) and none {dtype} throughout: "
            "expected one of them as --dtype" if from_dtype else
            f"no {op} signature from {dtype} (it has {', '.join(table)})")
    raise InputError(f"--dtype {dtype}: {hw.reference} has {what}")


# ops whose repeat spans 256 B of their widest operand (the accumulator they read and write),
# not of their first source: VMLA fp16_fp16_fp32 takes 64 lanes a repeat, as weighted_sum issues
# it and as the CSV measures it (1024 elements at repeat 15: 75 cycles, ~5 a repeat)
WIDEST_OPERAND_OPS = frozenset({"vmla"})


def lanes(hw: HardwareProfile, op: str, signature: str) -> int:
    """Elements per repeat of ``op`` over ``signature``: ``vector_bytes_per_repeat`` (256 B) of
    its widest operand for VMLA, of its first source for every other op. The measurements say
    so for the mixed ones: VCONV repeats over 256 B of its source (fp16_fp32 128 elements a
    repeat, fp32_fp16 64, int8_fp16 256) and VAXPY fp16_fp16_fp32 over 128 fp16, as the
    kernels issue them (``kernels._common.converted``, roi_align's VAXPY)."""
    dtypes = signature.split("_")
    width = max(DTYPE_BYTES[d] for d in dtypes) if op in WIDEST_OPERAND_OPS else DTYPE_BYTES[dtypes[0]]
    return hw.vector_bytes_per_repeat // width


def _chip_has(hw: HardwareProfile, unit: str | None, dtype: str) -> None:
    """Refuse a dtype the chip (or its ``unit``) does not compute in: bf16 on the 910A / 310P."""
    problem = hw.dtype_problem(unit, dtype)
    if problem:
        raise InputError(f"--dtype {dtype}: {problem}")


def _fits(given: str, uses, hw: HardwareProfile) -> None:
    """Refuse an operation whose operands overflow an on-chip buffer of ``hw``."""
    problem = overflow(uses, hw)
    if problem:
        raise InputError(f"{given}: {problem}")


def micro(kind: str, params: dict, dtype: str | None, hw: HardwareProfile) -> MicroResult:
    """Simulate one micro-operation (``mmad``, ``copy`` or ``vector``) on one core of ``hw``."""
    if kind not in OPS:
        raise InputError(f"unknown micro-operation {kind!r}, expected one of {', '.join(OPS)}")
    params = dict(params)
    _check_keys(kind, params)
    if kind == "mmad":
        return _micro_mmad(params, dtype or "fp16", hw)
    if kind == "copy":
        return _micro_copy(params, dtype or "fp16", hw)
    return _micro_vector(params, dtype or "fp16", hw)


def _micro_mmad(params, dtype, hw) -> MicroResult:
    if dtype not in DTYPES:
        raise InputError(f"mmad dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    _chip_has(hw, "cube", dtype)  # the 910A's cube has no bf16 rate: a division by zero
    m, k, n = (_positive_int(params, key) for key in ("m", "k", "n"))
    repeat = _positive_int(params, "repeat", 1)
    _fits(f"micro mmad m={m},k={k},n={n}", mmad_uses(m, k, n, dtype, hw), hw)
    cost = cost_vector(hw, dtype)
    cycles, per_op = run_mmad(cost, m, k, n, DTYPES[dtype].c0, repeat)
    macs = float(m) * k * n
    return MicroResult("mmad", hw.name, dtype, {"m": m, "k": k, "n": n, "repeat": repeat}, cycles, per_op, {
        "repeat": repeat,
        "macs_per_op": macs,
        "macs_per_cycle": round(macs / per_op, 2),
        "pct_of_cube_peak": round(100.0 * macs / per_op / hw.cube.macs_per_cycle[dtype], 2),
    })


def _micro_copy(params, dtype, hw) -> MicroResult:
    path = params["path"]
    if path not in E.PATH_NAMES:
        raise InputError(f"copy path {path!r}: expected one of {', '.join(E.PATH_NAMES)}")
    if dtype not in DTYPES:
        raise InputError(f"copy dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    _chip_has(hw, None, dtype)
    nbytes = _positive_int(params, "bytes")
    repeat = _positive_int(params, "repeat", 1)
    _fits(f"micro copy path={path},bytes={nbytes}", copy_uses(path, nbytes, hw), hw)
    cost = cost_vector(hw, dtype)
    cycles, per_op = run_copy(cost, E.PATH_NAMES.index(path), nbytes, repeat)
    bpc = nbytes / per_op
    rate = cost[3 * E.PATH_NAMES.index(path)]
    return MicroResult("copy", hw.name, dtype, {"path": path, "bytes": nbytes, "repeat": repeat}, cycles, per_op, {
        "repeat": repeat,
        "pipe": E.PIPE_NAMES[E.PATH_PIPE[E.PATH_NAMES.index(path)]],
        "bytes_per_cycle": round(bpc, 3),
        "gb_per_s": round(bpc * hw.clock_ghz, 3),
        "plateau_bytes_per_cycle": round(float(rate), 3),
        "pct_of_plateau": round(100.0 * bpc / rate, 2),
    })


def _micro_vector(params, dtype, hw) -> MicroResult:
    op = params["op"]
    if not isinstance(op, str):
        raise InputError(f"vector op {op!r}: expected a name such as vadd")
    sig, how = vector_signature(hw, op, dtype)
    if "elems" not in params and "repeat" not in params:
        raise InputError("micro vector: give elems=, repeat= or both")
    held = sig
    per = lanes(hw, op, held)
    elems = _positive_int(params, "elems") if "elems" in params else None
    repeat = _positive_int(params, "repeat") if "repeat" in params else -(-elems // per)
    if elems is None:
        elems = repeat * per
    elif -(-elems // per) != repeat:
        raise InputError(f"micro vector: elems={elems} takes {-(-elems // per)} repeats of {per} {held} "
                         f"lanes, not repeat={repeat}: give elems or repeat, or both consistent")
    tensors = vector_uses(op, held, elems, repeat, hw)
    _fits(f"micro vector op={op},elems={elems}", tensors, hw)
    vc = hw.vector[op][sig]
    cost = cost_vector(hw, "fp16")
    cycles, instructions = run_vector(cost, np.array([vc.startup, vc.per_repeat, vc.min_cycles]), repeat)
    return MicroResult("vector", hw.name, dtype, {"op": op, "elems": elems, "repeat": repeat}, cycles,
                       cycles / instructions, {
                           "signature": sig,
                           "signature_exact": how is None,  # --dtype gave the signature, not a plain dtype
                           **({} if how is None else {"note": f"--dtype {dtype} is a dtype, not a signature: "
                                                              f"costed as {op} {sig} ({how})"}),
                           "instructions": instructions,
                           "cycles_per_repeat": round(cycles / repeat, 4),
                           "lanes_per_repeat": per,
                       })
