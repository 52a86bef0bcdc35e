"""Copy: out = x, streamed GM -> UB -> GM by ``block_dim`` vector cores.

The tensor (``n`` elements; with the default int8 dtype, ``n`` bytes) is split into equal,
32 B-aligned per-core slices. Each core walks its slice in tiles of ``tile_bytes``: MTE2 copies
a tile into a UB slot, MTE3 copies it back out, and the slot is free for the next GM read once
MTE3 has read it. ``depth`` slots (1 = single buffer, 2 = double buffer, ...) let the reads of
later tiles overlap the writes and hide the GM latency. The reads and writes share the chip's HBM
bandwidth (half each), so the chip flattens near the HBM roofline as cores are added.

The same loop nest runs in count mode and in execute mode (it then moves the bytes).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from autotile.dtypes import get as get_dtype
from autotile.errors import InfeasibleConfig, InputError
from autotile.hardware import HardwareProfile
from autotile.kernels import _common as C
from autotile.kernels import dtype_emul, registry
from autotile.sim import engine as E
from autotile.sim.costs import cost_vector
from autotile.sim.result import CoreRun, assemble, infeasible

UNITS = ("vector",)
DIMS = ("n",)
PARAMS = registry.get("copy").needs("vector")
Q_UB = 0
ALIGN = 32
_EMPTY = np.zeros(1, dtype=np.uint8)


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@njit(cache=True)
def core(st, cost, nbytes, tile, depth, execute, src, dst, off):
    """One core copies ``nbytes`` (its slice, starting at byte ``off``) in tiles of ``tile``."""
    E.set_queue(st, Q_UB, depth)
    ub = np.zeros(tile if execute else 1, dtype=np.uint8)
    done = 0
    while done < nbytes:
        tb = min(tile, nbytes - done)
        slot, free = E.alloc(st, Q_UB)
        landed = E.copy(st, cost, E.GM_UB, float(tb), free)
        E.copy(st, cost, E.UB_GM, float(tb), landed)
        E.release(st, Q_UB, slot, st.pipe_free[E.MTE3])
        if execute:
            for i in range(tb):
                ub[i] = src[off + done + i]
            for i in range(tb):
                dst[off + done + i] = ub[i]
        done += tb


def _ints(params: dict) -> dict:
    p = {}
    for k in PARAMS:
        if k not in params:
            raise InfeasibleConfig(f"missing parameter {k}")
        v = params[k]
        if isinstance(v, bool) or int(v) != v or v < 1:
            raise InfeasibleConfig(f"{k}={v!r}, expected a positive integer")
        p[k] = int(v)
    return p


def slices(nbytes: int, block_dim: int) -> list[tuple[int, int]]:
    """(count, bytes) of the distinct per-core slices: 32 B-aligned full slices and a tail."""
    per = _cdiv(_cdiv(nbytes, block_dim), ALIGN) * ALIGN
    used = _cdiv(nbytes, per)
    tail = nbytes - (used - 1) * per
    out = [(used, per)] if tail == per else [(used - 1, per), (1, tail)]
    return [(c, b) for c, b in out if c > 0]


def check(shape: dict, params: dict, dtype: str, hw: HardwareProfile) -> tuple[dict, dict]:
    """Validate a tiling; returns (int params, buffers) or raises InfeasibleConfig."""
    C.check_shape(shape, DIMS)
    C.check_dtype(hw, "vector", dtype)
    p = _ints(params)
    if p["block_dim"] > hw.vector_cores:
        raise InfeasibleConfig(f"block_dim={p['block_dim']} exceeds the {hw.vector_cores} vector cores of {hw.name}")
    if p["tile_bytes"] % hw.align["ub"]:
        raise InfeasibleConfig(f"tile_bytes={p['tile_bytes']} is not a multiple of the {hw.align['ub']} B UB alignment")
    if p["depth"] > E.MAX_DEPTH:
        raise InfeasibleConfig(f"depth={p['depth']} exceeds the engine's {E.MAX_DEPTH} queue slots")
    used = p["depth"] * p["tile_bytes"]
    if used > hw.ub_bytes:
        raise InfeasibleConfig(f"UB overflow: {p['depth']} x {p['tile_bytes']} = {used} bytes, UB holds {hw.ub_bytes}")
    return p, {"ub": {"used": used, "capacity": hw.ub_bytes}}


def simulate(shape: dict, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
             options: dict | None = None, trace_capacity: int = 0, want_traces: bool = False):
    """Simulate the copy on the chip; a SimResult (and traces ``(count, slice_bytes, rows)``)."""
    shape = {"n": int(shape["n"])}
    unit = unit or UNITS[0]
    try:
        p, bufs = check(shape, params, dtype, hw)
    except InfeasibleConfig as exc:
        res = infeasible("copy", unit, dtype, shape, params, exc.reason)
        return (res, []) if want_traces else res
    nbytes = shape["n"] * get_dtype(dtype).bytes
    classes = slices(nbytes, p["block_dim"])
    active = sum(c for c, _ in classes)
    cost = cost_vector(hw, dtype, active_cores=active, write_share=0.5)
    runs, traces = [], []
    for count, sb in classes:
        st = E.new_state(trace_capacity)
        core(st, cost, sb, p["tile_bytes"], p["depth"], False, _EMPTY, _EMPTY, 0)
        runs.append(CoreRun.from_state(st, count))
        if want_traces:
            traces.append((count, sb, E.recorded(st)))
    res = assemble(op="copy", unit=unit, dtype=dtype, shape=shape, params=params, hw=hw, runs=runs,
                   useful_flops=0.0, peak_flops=1.0, must_move_bytes=2.0 * nbytes, l2_hit=0.0, buffers=bufs)
    return (res, traces) if want_traces else res


def execute(inputs: tuple, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
            options: dict | None = None) -> np.ndarray:
    """Run the tiled copy in execute mode, every core's slice; returns the copied array."""
    x = np.ascontiguousarray(inputs[0])
    host = np.dtype(np.float32) if dtype == "bf16" else get_dtype(dtype).numpy
    if x.dtype != host:  # the device bytes are the array's: another type has other sizes and values
        raise InputError(f"expected {host} values for {dtype}, got {x.dtype}", field="x")
    p, _ = check({"n": x.size}, params, dtype, hw)
    src = _device_bytes(x.reshape(-1), dtype)
    dst = np.zeros_like(src)
    cost = cost_vector(hw, dtype)
    off = 0
    for count, sb in slices(src.size, p["block_dim"]):
        for _ in range(count):
            core(E.new_state(0), cost, sb, p["tile_bytes"], p["depth"], True, src, dst, off)
            off += sb
    return _from_device_bytes(dst, dtype).reshape(x.shape)


def _device_bytes(x: np.ndarray, dtype: str) -> np.ndarray:
    """The bytes the device holds: bf16 (kept in float32 on the host) is the upper half of each word."""
    if dtype == "bf16":
        return (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
    return x.view(np.uint8)


def _from_device_bytes(b: np.ndarray, dtype: str) -> np.ndarray:
    """Host values of device bytes (inverse of ``_device_bytes``)."""
    if dtype == "bf16":
        return (b.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return b.view(get_dtype(dtype).numpy)


def reference(inputs: tuple, dtype: str, *, options: dict | None = None) -> np.ndarray:
    """NumPy reference: the input itself."""
    return np.array(inputs[0], copy=True)


def io_elements(shape: dict) -> int:
    """Elements of the input and the output: what an execute-mode run holds in memory."""
    return 2 * shape["n"]


def make_inputs(shape: dict, dtype: str, seed: int = 0, *, options: dict | None = None) -> tuple:
    """A random tensor of ``n`` elements of ``dtype``."""
    rng = np.random.default_rng(seed)
    dt = get_dtype(dtype)
    if dt.name == "int8":
        return (rng.integers(-128, 128, shape["n"], dtype=np.int8),)
    return (dtype_emul.round_to(rng.uniform(-1, 1, shape["n"]), dt.name),)


def tolerance(dtype: str, shape: dict, params: dict | None = None,
              unit: str | None = None, inputs: tuple | None = None) -> tuple[float, float]:
    """A copy is exact."""
    return 0.0, 0.0


def default_params(shape: dict, dtype: str, hw: HardwareProfile, unit: str | None = None,
                   options: dict | None = None) -> dict:
    """The baseline: double buffering (BUFFER_NUM = 2), 64 KiB tiles (two fit UB easily and a
    64 KiB GM read is well past the size where MTE2 nears its plateau), and as many cores as
    there are whole 64 KiB tiles, up to every vector core."""
    nbytes = shape["n"] * get_dtype(dtype).bytes
    tile = 64 * 1024
    while 2 * tile > hw.ub_bytes:
        tile //= 2
    block_dim = max(1, min(hw.vector_cores, nbytes // tile))
    per = _cdiv(_cdiv(nbytes, block_dim), ALIGN) * ALIGN
    return {"block_dim": block_dim, "tile_bytes": min(tile, per), "depth": 2}
