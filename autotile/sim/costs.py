"""Turn a hardware profile into the flat cost arrays the Numba engine reads.

Chip-level sharing is folded in here, before the per-core recurrence runs: the GM traffic of
all active cores shares the chip's HBM bandwidth (each core gets a fair share when all stream,
and a core's reads and writes share that fairly when they stream together), the cores reading
GM share the L2's read bandwidth the same way, a read that misses L2 is the slower of its HBM and
L2 shares (``l2.read_rate``), writes pass L2 at most at its write rate, and every core stays
capped by its own per-path rate.
Kernels never see these rules; they only issue copies.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

from autotile.hardware import HardwareProfile
from autotile.hardware.ops import VECTOR_OP_NAMES
from autotile.sim import engine as E
from autotile.sim.l2 import l2_share, read_rate


def gm_rates(hw: HardwareProfile, active_cores: float, l2_hit: float, write_share: float | None = None,
             hbm_load: float = 1.0, l2_readers: float | None = None,
             writes_in_l2: float = 0.0) -> tuple[float, float]:
    """(read, write) bytes per cycle one core can get from GM when ``active_cores`` stream.

    A read hits L2 with probability ``l2_hit`` and otherwise goes to HBM, whose bandwidth the
    active cores share evenly; all ``l2_readers`` (default ``active_cores``) share L2's, whose
    ``l2_read_bytes_per_cycle`` is a core's share when every cube core reads. A miss passes
    both, so a hit is never slower than a miss (``l2.read_rate``). Writes go to HBM through L2,
    at most at the L2 write rate; ``writes_in_l2`` is the share of them L2 keeps until after the
    kernel (True or 1: the whole output stays there), which go at the L2 write rate whatever
    HBM's share: a write costs that share's time at the L2 rate plus the rest's at HBM's, so the
    rate moves smoothly from one to the other as an output overflows L2.
    ``write_share`` (the fraction of the kernel's HBM traffic that is writes) splits each core's
    HBM share between reads and writes that stream together (``hbm_split``, with ``hbm_load``);
    ``None`` gives each direction the whole share (kernels whose reads and writes do not stream
    at the same time).
    """
    core = hw.hbm_bytes_per_cycle / max(1, active_cores)
    split = hbm_split(write_share, hbm_load)
    readers = active_cores if l2_readers is None else l2_readers
    read = read_rate(core * split.read, l2_share(hw.l2_read_bytes_per_cycle, hw.cube_cores, readers), l2_hit)
    return read, write_rate(hw.l2_write_bytes_per_cycle, min(core * split.write, hw.l2_write_bytes_per_cycle),
                            float(writes_in_l2))


def write_rate(l2: float, hbm: float, kept: float) -> float:
    """Bytes per cycle of writes a share ``kept`` of which stays in L2 (written at ``l2``) and the
    rest goes on to HBM (at ``hbm``): the harmonic blend, exactly ``l2`` at 1 and ``hbm`` at 0."""
    if kept >= 1.0:
        return l2
    if kept <= 0.0:
        return hbm
    return 1.0 / (kept / l2 + (1.0 - kept) / hbm)


@dataclass(frozen=True)
class Split:
    """Fractions of a core's HBM share its reads and its writes get."""

    read: float
    write: float


def hbm_split(write_share: float | None, load: float = 1.0) -> Split:
    """How reads and writes that stream together share HBM: fairly, as the memory arbitrates.

    While both directions stream each gets half; the lighter one finishes first and the heavier
    one then has HBM alone. Over their lifetimes the heavier direction moves at its share of the
    traffic (all bytes through HBM in the time their total needs) and the lighter one at half
    the bandwidth: a direction with little traffic is never starved. That is a saturated share
    (``load`` 1); when the pair needs only ``load`` of the share over the kernel, each direction
    loses only what the other needs on average. ``None``: each direction gets the whole share.
    """
    if write_share is None:
        return Split(1.0, 1.0)
    w = min(max(write_share, 0.0), 1.0)
    u = min(max(load, 0.0), 1.0)
    return Split(max(1.0 - u * w, 0.5), max(1.0 - u * (1.0 - w), 0.5))


def write_fraction(read_bytes: float, write_bytes: float) -> float | None:
    """The write share of ``read_bytes + write_bytes`` for ``cost_vector``; ``None`` without traffic.

    Quantized to 1/1000 (the cost memo's key) towards an even split, so the heavier direction
    never gets more than its share; a direction with traffic keeps a nonzero share.
    """
    total = read_bytes + write_bytes
    if total <= 0:
        return None
    w = round(1000 * write_bytes / total, 6)  # float noise must not move a step
    q = (math.floor(w) if w > 500 else math.ceil(w)) / 1000
    return min(max(q, 0.001 if write_bytes > 0 else 0.0), 0.999 if read_bytes > 0 else 1.0)


_CACHE: dict = {}


def cost_vector(hw: HardwareProfile, dtype: str, *, active_cores: float = 1, l2_hit: float = 0.0,
                write_share: float | None = None, hbm_load: float = 1.0,
                l2_readers: float | None = None, writes_in_l2: float = 0.0) -> np.ndarray:
    """The engine's cost array for one core of ``hw`` running a ``dtype`` kernel (read-only).

    ``active_cores`` share HBM, ``l2_readers`` (default the same) L2; ``writes_in_l2``: the share
    of the writes that stays in L2 (see ``gm_rates``).

    Memoized: the tuner asks for the same few vectors thousands of times per second.
    """
    key = (id(hw), dtype, active_cores, round(l2_hit, 9), write_share, hbm_load, l2_readers,
           round(float(writes_in_l2), 9))
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is hw:
        return hit[1]
    if len(_CACHE) > 4096:
        _CACHE.clear()
    c = _build(hw, dtype, active_cores, l2_hit, write_share, hbm_load, l2_readers, writes_in_l2)
    c.flags.writeable = False
    _CACHE[key] = (hw, c)
    return c


def _build(hw: HardwareProfile, dtype: str, active_cores: float, l2_hit: float,
           write_share: float | None, hbm_load: float, l2_readers: float | None,
           writes_in_l2: float) -> np.ndarray:
    c = np.zeros(E.NCOST)
    read, write = gm_rates(hw, active_cores, l2_hit, write_share, hbm_load, l2_readers, writes_in_l2)
    for i, path in enumerate(E.PATH_NAMES):
        cp = hw.copy[path]
        rate = cp.bytes_per_cycle
        if path.startswith("gm_"):
            rate = min(rate, read)
        if path.endswith("_gm"):
            rate = min(rate, write)
        c[3 * i] = rate
        c[3 * i + 1] = cp.issue_cycles
        c[3 * i + 2] = cp.latency_cycles
    c[E.C_CUBE_ISSUE] = hw.cube.issue_cycles
    c[E.C_CUBE_LAT] = hw.cube.latency_cycles
    # a dtype the cube has no rate for never reaches an Mmad (kernels refuse it: dtype_problem)
    c[E.C_CUBE_MACS] = hw.cube.macs_per_cycle.get(dtype, 0.0)
    c[E.C_SCALAR] = hw.scalar["add"]
    c[E.C_VEC_BYTES] = hw.vector_bytes_per_repeat
    c[E.C_VEC_MAXREP] = hw.vector_max_repeat
    return c


def vector_table(hw: HardwareProfile, ops: list[tuple[str, str]]) -> np.ndarray:
    """Rows (startup, per_repeat, min_cycles, op code) for the (op, dtype signature) pairs a
    kernel uses; the code (index in ``VECTOR_OP_NAMES``, -1 for an op outside it) lets a trace
    name the instruction.

    Exact signatures only: a missing one is a KeyError(message, op, sig), never another
    signature's cost (bf16 VADDs were costed as fp16 ones that way, though the 910B's vector has
    no bf16 arithmetic and the kernels now convert bf16 to fp32).
    """
    out = np.zeros((max(1, len(ops)), 4))
    for i, (op, sig) in enumerate(ops):
        vc = hw.vector.get(op, {}).get(sig)
        if vc is None:
            what = f"vector op {op!r}" if op not in hw.vector else f"vector op {op} in {sig}"
            raise KeyError(f"hardware profile {hw.name} has no cost for {what}", op, sig)
        code = VECTOR_OP_NAMES.index(op) if op in VECTOR_OP_NAMES else -1
        out[i] = (vc.startup, vc.per_repeat, vc.min_cycles, code)
    return out


def l2_hit_fraction(hw: HardwareProfile, total_read_bytes: float, unique_read_bytes: float,
                    footprint_bytes: float) -> float:
    """Share of GM reads that hit L2 when the whole footprint is the working set.

    First touches always go to HBM; re-reads hit as ``working_set_hit`` says for the kernel's
    footprint. For kernels that revisit any of their data at any time (roi_align's feature map);
    matmul's loop nest says what is live between two reads of a panel, so it asks
    ``working_set_hit`` per re-read instead.
    """
    if total_read_bytes <= 0:
        return 0.0
    rereads = max(0.0, 1.0 - unique_read_bytes / total_read_bytes)
    return rereads * working_set_hit(float(hw.l2_bytes), float(footprint_bytes))


@njit(cache=True)
def working_set_hit(l2_bytes, window_bytes):
    """Chance that a re-read hits L2 when ``window_bytes`` of distinct data were touched (chip-wide)
    since the last read of the same bytes: 1 while that working set fits in L2, else the part of
    it L2 holds (a cache that keeps a random share of an oversized working set, not an LRU cliff
    to 0)."""
    if window_bytes <= l2_bytes:
        return 1.0
    return l2_bytes / window_bytes


def hbm_streams(hw: HardwareProfile, active_cores: int, hbm_bytes: float, lower_bound_cycles: float) -> float:
    """How many cores contend for HBM at once, on average: ``active_cores`` x HBM utilization.

    A kernel whose HBM traffic, spread over a lower bound of its duration, needs only part of
    the chip's bandwidth does not have every core streaming all the time: copies then get a
    larger share than an even split. The utilization is overestimated (the bound is <= the real
    duration), so the share errs on the side of contention. Memory-bound kernels get the even
    split among all active cores. Callers bound the duration by memory time alone (each core's
    copies at its path rates), not compute: a bound that shrank with a faster cube had more
    cores contend and made a fixed tiling slower on faster hardware.
    """
    if lower_bound_cycles <= 0 or hbm_bytes <= 0:
        return float(max(1, active_cores))
    util = min(1.0, hbm_bytes / (hw.hbm_bytes_per_cycle * lower_bound_cycles))
    return max(1.0, active_cores * util)


def hbm_load(hw: HardwareProfile, active_cores: int, streams: float, hbm_bytes: float,
             lower_bound_cycles: float) -> float:
    """How much of its HBM share (``hbm_streams``) a core's traffic needs over a lower bound of
    its duration, at most 1; rounded up to 1/1000 (the cost memo's key), erring on contention."""
    if lower_bound_cycles <= 0:
        return 1.0
    share = hw.hbm_bytes_per_cycle / max(1.0, streams)
    need = hbm_bytes / max(1, active_cores) / (share * lower_bound_cycles)
    return min(1.0, math.ceil(round(1000 * need, 6)) / 1000)
