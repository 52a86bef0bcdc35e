"""The scheduling engine: in-order pipes, buffer queues and flags, as a recurrence in Numba.

A kernel issues its operations in program order. Each operation runs on one pipe and starts when
(1) its pipe is free (each pipe is in order), (2) its inputs are ready (the producing operation's
end plus that operation's latency: the SetFlag/WaitFlag dependency) and (3) a slot of its
destination buffer queue is free (a TQue slot is released when its consumer finishes). It then
occupies its pipe for a cost from the hardware profile. Overlap between pipes, bubbles, pipeline
fill and drain and tail tiles all follow from this recurrence; nothing is a closed formula.

State lives in a ``State`` named tuple of NumPy arrays so that Numba kernels can pass it around.
The helpers here are small ``@njit`` functions that kernels call from their loop nests.
"""

from __future__ import annotations

import math
from collections import namedtuple

import numpy as np
from numba import njit

# pipes of one AI Core
MTE2, MTE1, M, V, S, FIX, MTE3 = range(7)
NPIPES = 7
PIPE_NAMES = ("mte2", "mte1", "m", "v", "s", "fix", "mte3")

# copy paths, in the order of hardware.profile.COPY_PATHS, and the pipe that moves each
GM_UB, UB_GM, GM_L1, GM_L0A, GM_L0B, L1_L0A, L1_L0B, L0C_GM, L0C_L1, UB_UB = range(10)
NPATHS = 10
PATH_NAMES = ("gm_ub", "ub_gm", "gm_l1", "gm_l0a", "gm_l0b", "l1_l0a", "l1_l0b", "l0c_gm", "l0c_l1", "ub_ub")
PATH_PIPE = np.array([MTE2, MTE3, MTE2, MTE2, MTE2, MTE1, MTE1, FIX, FIX, V], dtype=np.int64)

# trace record kinds
K_COPY, K_MMAD, K_VEC, K_SCALAR = range(4)
TRACE_COLS = 7  # pipe, start, end, kind, sub (path / vector op code), bytes, macs
VT_CODE = 3  # column of a vector cost table holding the op's index in hardware.ops.VECTOR_OP_NAMES

MAX_QUEUES = 16
MAX_DEPTH = 8

# cost vector layout (see ``cost_vector``)
C_CUBE_ISSUE = 3 * NPATHS
C_CUBE_LAT = C_CUBE_ISSUE + 1
C_CUBE_MACS = C_CUBE_ISSUE + 2
C_SCALAR = C_CUBE_ISSUE + 3  # cycles of one scalar op
C_VEC_BYTES = C_CUBE_ISSUE + 4  # bytes per vector repeat
C_VEC_MAXREP = C_CUBE_ISSUE + 5
NCOST = C_CUBE_ISSUE + 6

State = namedtuple(
    "State",
    ["pipe_free", "busy", "path_bytes", "qfree", "qdepth", "qhead", "counts", "trace", "ntrace", "lost"],
)
# counts: [0] useful MACs, [1] padded MACs, [2] vector repeats, [3] scalar ops, [4] ops issued,
# [5] and [6] a kernel's own tallies (matmul's traffic pass: bytes re-read, and those expected to hit L2)
# lost: [0] operations a full trace did not record, [1] the earliest start among them (inf: none)


def new_state(trace_capacity: int = 0) -> State:
    """Fresh per-core state; ``trace_capacity`` > 0 records up to that many operations (the
    ones past it are counted in ``lost``, so a cut trace can say so).

    Without a trace the ``trace`` field is None, and Numba compiles the recording away: count
    mode pays nothing for the trace support.
    """
    return State(
        np.zeros(NPIPES),
        np.zeros(NPIPES),
        np.zeros(NPATHS),
        np.zeros((MAX_QUEUES, MAX_DEPTH)),
        np.ones(MAX_QUEUES, dtype=np.int64),
        np.zeros(MAX_QUEUES, dtype=np.int64),
        np.zeros(7),
        np.zeros((trace_capacity, TRACE_COLS)) if trace_capacity > 0 else None,
        np.zeros(1, dtype=np.int64),
        np.array([0.0, math.inf]),
    )


@njit(cache=True)
def reset(st):
    """Clear a state for reuse (avoids allocating per configuration)."""
    st.pipe_free[:] = 0.0
    st.busy[:] = 0.0
    st.path_bytes[:] = 0.0
    st.qfree[:, :] = 0.0
    st.qdepth[:] = 1
    st.qhead[:] = 0
    st.counts[:] = 0.0
    st.ntrace[0] = 0
    st.lost[0] = 0.0
    st.lost[1] = math.inf


@njit(cache=True)
def set_queue(st, q, depth):
    """Declare queue ``q`` with ``depth`` slots (1 = single buffer, 2 = double buffer)."""
    st.qdepth[q] = depth
    st.qhead[q] = 0
    for i in range(MAX_DEPTH):
        st.qfree[q, i] = 0.0


@njit(cache=True)
def alloc(st, q):
    """Take the next slot of queue ``q`` (round robin); returns (slot, time it becomes free)."""
    slot = st.qhead[q]
    nxt = slot + 1
    if nxt >= st.qdepth[q]:
        nxt = 0
    st.qhead[q] = nxt
    return slot, st.qfree[q, slot]


@njit(cache=True)
def release(st, q, slot, t):
    """The consumer of ``slot`` finished at ``t``: the slot is free from then on."""
    if t > st.qfree[q, slot]:
        st.qfree[q, slot] = t


@njit(cache=True)
def _record(trace, ntrace, lost, pipe, start, end, kind, sub, nbytes, macs):
    """Append one operation to the trace, or count it in ``lost`` once the trace is full;
    compiled to nothing when ``trace`` is None."""
    if trace is not None:
        i = ntrace[0]
        if i < trace.shape[0]:
            row = trace[i]
            row[0] = pipe
            row[1] = start
            row[2] = end
            row[3] = kind
            row[4] = sub
            row[5] = nbytes
            row[6] = macs
            ntrace[0] = i + 1
        else:
            lost[0] += 1.0
            if start < lost[1]:
                lost[1] = start


@njit(cache=True)
def run_op(st, pipe, ready, occupancy, kind, sub, nbytes, macs):
    """Run one operation: start at max(pipe free, inputs ready); returns its end time."""
    start = st.pipe_free[pipe]
    if ready > start:
        start = ready
    end = start + occupancy
    st.pipe_free[pipe] = end
    st.busy[pipe] += occupancy
    st.counts[4] += 1.0
    _record(st.trace, st.ntrace, st.lost, pipe, start, end, kind, sub, nbytes, macs)
    return end


@njit(cache=True)
def copy(st, cost, path, nbytes, ready):
    """Copy ``nbytes`` along ``path`` once ``ready``; returns the time the data is usable.

    The pipe is busy ``issue + bytes / rate``; the data lands ``latency`` later.
    """
    rate = cost[3 * path]
    occ = cost[3 * path + 1] + nbytes / rate
    end = run_op(st, PATH_PIPE[path], ready, occ, K_COPY, path, nbytes, 0.0)
    st.path_bytes[path] += nbytes
    return end + cost[3 * path + 2]


@njit(cache=True)
def mmad(st, cost, m, k, n, c0, ready):
    """One Mmad of an m x k by k x n block: pays for whole 16 x c0 x 16 fractals.

    Returns the time its result is usable in L0C (end + cube latency). The pipe is busy
    ``issue + padded MACs / MACs per cycle``, so back-to-back Mmads hide the latency.
    """
    mp = ((m + 15) // 16) * 16
    kp = ((k + c0 - 1) // c0) * c0
    np_ = ((n + 15) // 16) * 16
    padded = float(mp) * kp * np_
    occ = cost[C_CUBE_ISSUE] + padded / cost[C_CUBE_MACS]
    end = run_op(st, M, ready, occ, K_MMAD, 0, 0.0, padded)
    st.counts[0] += float(m) * k * n
    st.counts[1] += padded
    return end + cost[C_CUBE_LAT]


@njit(cache=True)
def vector(st, cost, vcost, op, repeats, ready):
    """A vector instruction of ``op`` (row of ``vcost``) over ``repeats`` repeats.

    Split into instructions of at most ``max_repeat`` repeats; each costs
    ``max(min_cycles, startup + per_repeat * repeats)``. Returns its end time. The trace records
    the row's op code (``VT_CODE``; -1 for a table without one), so an event names its
    instruction whichever of a kernel's tables it came from.
    """
    end = ready
    left = repeats
    maxrep = int(cost[C_VEC_MAXREP])
    code = int(vcost[op, VT_CODE]) if vcost.shape[1] > VT_CODE else -1
    while left > 0:
        r = left if left < maxrep else maxrep
        c = vcost[op, 0] + vcost[op, 1] * r
        if c < vcost[op, 2]:
            c = vcost[op, 2]
        end = run_op(st, V, ready, c, K_VEC, code, 0.0, 0.0)
        left -= r
    st.counts[2] += repeats
    return end


@njit(cache=True)
def scalar(st, cost, nops, cycles_per_op, ready):
    """``nops`` scalar operations of ``cycles_per_op`` each on the S pipe; returns the end time."""
    end = run_op(st, S, ready, nops * cycles_per_op, K_SCALAR, 0, 0.0, 0.0)
    st.counts[3] += nops
    return end


@njit(cache=True)
def finish_time(st):
    """When the last pipe of this core goes idle."""
    t = 0.0
    for p in range(NPIPES):
        if st.pipe_free[p] > t:
            t = st.pipe_free[p]
    return t


class TraceRows(np.ndarray):
    """Recorded operations (rows of TRACE_COLS, program order) and what a full trace left out:
    ``dropped`` operations, the earliest of which starts at cycle ``dropped_from`` (inf when
    none), so every operation that starts before ``dropped_from`` is in the rows. Arrays made
    from these rows (slices, ``np.asarray``) are plain rows and claim nothing dropped."""

    dropped: int = 0
    dropped_from: float = math.inf

    def __reduce__(self):
        # ndarray pickles the data only: the counters ride along, or a trace handed back from
        # a child process (a slow ``simulate --trace``) claimed nothing dropped
        rebuild, args, state = super().__reduce__()
        return rebuild, args, (state, self.dropped, self.dropped_from)

    def __setstate__(self, state) -> None:
        array_state, dropped, dropped_from = state
        super().__setstate__(array_state)
        self.dropped, self.dropped_from = int(dropped), float(dropped_from)


def recorded(st) -> TraceRows:
    """The operations recorded so far, and how many the trace's capacity left out; empty in
    count mode."""
    if st.trace is None:
        return np.zeros((0, TRACE_COLS)).view(TraceRows)
    rows = st.trace[: st.ntrace[0]].copy().view(TraceRows)
    rows.dropped = int(st.lost[0])
    rows.dropped_from = float(st.lost[1])
    return rows
