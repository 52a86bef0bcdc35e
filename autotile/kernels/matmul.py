"""Matmul C = A @ B on the cube, tiled like Ascend C's TCubeTiling.

A is M x K and B is K x N, row-major in GM. Each of ``usedCoreNum = ceil(M/single_core_m) *
ceil(N/single_core_n) * ceil(K/single_core_k)`` cube cores computes one single_core_m x
single_core_n block of C over one single_core_k range of K (all of K unless K is split).
Inside a core the loop nest is the one an Ascend C matmul runs:

* GM -> L1 (MTE2): panels of step_m base blocks of A by step_ka base_k slices (and step_n x
  step_kb for B); L1 holds depth_a1 / (step_m * step_ka) such panels (1 = single, 2 = double
  buffered), reused while the iteration stays inside them;
* L1 -> L0A / L0B (MTE1): one base_m x base_k and one base_k x base_n block per K step, in
  queues of db_l0a / db_l0b slots;
* Mmad (M): accumulates into an L0C block (db_l0c slots), paying for whole fractals;
* L0C -> GM (FIX): the finished base_m x base_n block, converted to the output dtype.

Split K (singleCoreK < K) is combined the way an Ascend C split-K kernel does it with atomics
(SetAtomicAdd before FixPipe's write, in mix mode, each cube core with its vector cores):

1. the vector cores zero the fp32 target (C itself for fp32, int32 C for int8, else an M x N fp32
   workspace), each an equal share of it, while the cube cores load and multiply; a SyncAll
   (costed as two GM round trips) follows, so no add lands on memory not yet zeroed;
2. each cube core's FixPipe adds its fp32 partial blocks into the target with atomic adds, done
   in L2 as read-add-write, at half the L2 write rate (an estimate; no atomic rate is published);
3. fp16 / bf16 only: after the slowest core and another SyncAll, the vector cores each read their
   share of the workspace, VCONV it to the output dtype and write C (the result is rounded once,
   not per partial, which is why the adds are not done in fp16 in C).

The atomic adds land in whatever order the cores finish, so real hardware sums the partials of
fp32 in a run-to-run varying order; execute mode sums them in K-range order, one of those.

The same loop nest runs in count mode (operations go to the simulator only) and in execute mode
(it also does the arithmetic: fp16/bf16 inputs, fp32 accumulation in L0C, C rounded to the input
dtype; int8 to int32), so the simulated trace belongs to a kernel that computes ``A @ B``.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
from numba import njit

from autotile.dtypes import get as get_dtype
from autotile.errors import InfeasibleConfig
from autotile.hardware import HardwareProfile
from autotile.kernels import _common as C
from autotile.kernels import dtype_emul, matmul_vector, registry
from autotile.sim import engine as E
from autotile.sim.costs import cost_vector, hbm_load, hbm_streams, working_set_hit, write_fraction
from autotile.sim.result import CoreRun, assemble, infeasible

UNITS = ("cube", "vector")  # vector: matmul_vector, for tiny shapes
DIMS = ("m", "n", "k")
PARAMS = registry.get("matmul").needs("cube")
ORDERS = registry.get("matmul").admits("cube", "iterate_order")

# queues of the engine state
Q_L0A, Q_L0B, Q_L0C = 0, 1, 2
MODE_COUNT, MODE_TRAFFIC, MODE_EXECUTE = 0, 1, 2
MAX_L1_SLOTS = 4
ZERO_TILE = 32768  # bytes of zeros one UB -> GM copy writes (a UB tile filled once)
CAST_TILE = 8192  # fp32 elements per tile of the cast pass (in and out double buffered: 96 KiB of UB)
Q_CAST = 3


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _align(a: int, b: int) -> int:
    return _cdiv(a, b) * b


@njit(cache=True)
def _gemm_acc(acc, a, b, r0, c0, k0, tm, tn, tk, ar0, bc0):
    """acc[r0:r0+tm, c0:c0+tn] += A[ar0+.., k0..] @ B[k0.., bc0+..] in the accumulator dtype."""
    for i in range(tm):
        for kk in range(tk):
            aik = acc.dtype.type(a[ar0 + i, k0 + kk])
            for j in range(tn):
                acc[r0 + i, c0 + j] += aik * acc.dtype.type(b[k0 + kk, bc0 + j])


@njit(cache=True)
def reuse_window(dt, n_first, mt, nt, nbm, nbn, a_strip, b_strip, c_tile):
    """Distinct bytes the whole chip touches while one core runs ``dt`` base blocks of C.

    K is the innermost loop, so a base block reads a whole strip of A (base_m x K) and of B
    (K x base_n). In ``dt`` blocks a core walks ``dt`` strips of the operand its inner loop
    indexes and ``dt // inner + 1`` of the other (at most the strips it has). The cores of a
    block row read the same A strips at about the same time and those of a block column the
    same B strips, so the chip holds ``nbm`` copies' worth of distinct A strips and ``nbn`` of
    B, plus the C blocks FixPipe wrote into L2 meanwhile (``c_tile``: one per core).
    """
    if n_first:
        na = min(mt, dt // nt + 1)
        nb = min(nt, dt)
    else:
        na = min(mt, dt)
        nb = min(nt, dt // mt + 1)
    return nbm * na * a_strip + nbn * nb * b_strip + dt * c_tile


@njit(cache=True)
def since_last_use(o, i, step, inner, by_inner):
    """Base blocks since the previous block that needed the panel group block (o, i) needs, or -1
    if none did (its first load). The operand is indexed by the inner loop (``by_inner``) or the
    outer one, in groups of ``step`` blocks (step_m / step_n): a block needs the same group as the
    block before it, except at the start of an inner group, which the previous outer iteration
    last needed at the group's last block. Worked out from the loop nest, not a table of panels
    (which grew with the shape: 2**31-sized matrices ran out of memory)."""
    if by_inner:
        if i % step:
            return 1
        if o == 0:
            return -1
        return inner - (min(inner - 1, i + step - 1) - i)
    if i > 0 or o % step:
        return 1
    return -1


@njit(cache=True)
def core(st, cost, ip, mode, a, b, acc, zeroed):
    """Run one core's block (sm x sn over its K range); the state holds the timing.

    ``ip`` packs the integer arguments (see ``pack``): one array instead of twenty arguments
    keeps the Python-to-Numba call cheap, which matters at thousands of configurations/s.

    ``mode``: MODE_COUNT issues every operation to the engine; MODE_TRAFFIC only follows the
    L1 panel reuse and counts the GM bytes it loads (the first, cheap pass that gives the L2
    hit share); MODE_EXECUTE also computes the block into ``acc`` (L0C precision). The traffic
    pass also tallies the panels loaded again (``counts[5]``) and the bytes of them expected to
    hit L2 (``counts[6]``): a panel read again ``dt`` base blocks after a block last needed it
    (``since_last_use``) hits as the chip-wide working set of those blocks (``reuse_window``)
    fits the ``ip[23]`` bytes of L2. With K split (``ip[25]`` ranges; this one starts at ``ip[24]``)
    FixPipe's first add waits until ``zeroed``: the vector cores have zeroed the target and met
    the cube cores at a SyncAll (``zero_pass``; 0.0 without a split).
    """
    sm, sn, K, bm, bn, bk = ip[0], ip[1], ip[2], ip[3], ip[4], ip[5]
    step_m, step_n, step_ka, step_kb, slots_a, slots_b = ip[6], ip[7], ip[8], ip[9], ip[10], ip[11]
    db_a, db_b, db_c, n_first, c0, in_bytes, out_bytes = ip[12], ip[13], ip[14], ip[15], ip[16], ip[17], ip[18]
    m0, n0 = ip[19], ip[20]
    nbm, nbn, l2 = ip[21], ip[22], float(ip[23])
    k0, nbk = ip[24], ip[25]
    traffic = mode == MODE_TRAFFIC
    execute = mode == MODE_EXECUTE
    E.reset(st)
    E.set_queue(st, Q_L0A, db_a)
    E.set_queue(st, Q_L0B, db_b)
    E.set_queue(st, Q_L0C, db_c)
    mt = (sm + bm - 1) // bm
    nt = (sn + bn - 1) // bn
    kt = (K + bk - 1) // bk
    ka_groups = (kt + step_ka - 1) // step_ka
    kb_groups = (kt + step_kb - 1) // step_kb
    # L1 panel caches: tag (panel id), data-ready time, release time (last MTE1 read)
    tag_a = np.full(MAX_L1_SLOTS, -1, dtype=np.int64)
    rdy_a = np.zeros(MAX_L1_SLOTS)
    rel_a = np.zeros(MAX_L1_SLOTS)
    tag_b = np.full(MAX_L1_SLOTS, -1, dtype=np.int64)
    rdy_b = np.zeros(MAX_L1_SLOTS)
    rel_b = np.zeros(MAX_L1_SLOTS)
    next_a = 0
    next_b = 0
    outer = mt if n_first else nt
    inner = nt if n_first else mt
    a_strip = float(bm * K * in_bytes)
    b_strip = float(K * bn * in_bytes)
    c_tile = float(nbm * nbn * nbk * bm * bn * out_bytes)
    for o in range(outer):
        for i in range(inner):
            if n_first:
                mi = o
                ni = i
            else:
                mi = i
                ni = o
            tm = min(bm, sm - mi * bm)
            tn = min(bn, sn - ni * bn)
            cslot, cfree = E.alloc(st, Q_L0C)
            last = 0.0
            for ki in range(kt):
                tk = min(bk, K - ki * bk)
                # --- A panel in L1 (GM -> L1 on MTE2 unless resident). A and B are written out
                # rather than shared through a helper: passing the cache arrays and the state to
                # an @njit helper made count mode 2.5x slower (bench/sim_speed.py: 4,760 -> 1,820/s)
                # --- A panel in L1
                pa = (mi // step_m) * ka_groups + ki // step_ka
                sa = -1
                for s in range(slots_a):
                    if tag_a[s] == pa:
                        sa = s
                if sa < 0:
                    sa = next_a
                    next_a = (next_a + 1) % slots_a
                    rows = min(step_m * bm, sm - (mi // step_m) * step_m * bm)
                    kbeg = (ki // step_ka) * step_ka * bk
                    cols = min(step_ka * bk, K - kbeg)
                    burst = ((cols * in_bytes + 31) // 32) * 32
                    if traffic:
                        st.path_bytes[E.GM_L1] += rows * burst
                        dt = since_last_use(o, i, step_m, inner, n_first == 0)
                        if dt > 0:
                            w = reuse_window(dt, n_first, mt, nt, nbm * nbk, nbn * nbk, a_strip, b_strip, c_tile)
                            st.counts[5] += rows * burst
                            st.counts[6] += rows * burst * working_set_hit(l2, w)
                    else:
                        rdy_a[sa] = E.copy(st, cost, E.GM_L1, float(rows * burst), rel_a[sa])
                    tag_a[sa] = pa
                # --- B panel in L1
                pb = (ni // step_n) * kb_groups + ki // step_kb
                sb = -1
                for s in range(slots_b):
                    if tag_b[s] == pb:
                        sb = s
                if sb < 0:
                    sb = next_b
                    next_b = (next_b + 1) % slots_b
                    cols = min(step_n * bn, sn - (ni // step_n) * step_n * bn)
                    kbeg = (ki // step_kb) * step_kb * bk
                    rows = min(step_kb * bk, K - kbeg)
                    burst = ((cols * in_bytes + 31) // 32) * 32
                    if traffic:
                        st.path_bytes[E.GM_L1] += rows * burst
                        dt = since_last_use(o, i, step_n, inner, n_first != 0)
                        if dt > 0:
                            w = reuse_window(dt, n_first, mt, nt, nbm * nbk, nbn * nbk, a_strip, b_strip, c_tile)
                            st.counts[5] += rows * burst
                            st.counts[6] += rows * burst * working_set_hit(l2, w)
                    else:
                        rdy_b[sb] = E.copy(st, cost, E.GM_L1, float(rows * burst), rel_b[sb])
                    tag_b[sb] = pb
                # --- L1 -> L0A / L0B (MTE1), padded to fractals
                tmp = ((tm + 15) // 16) * 16
                tkp = ((tk + c0 - 1) // c0) * c0
                tnp = ((tn + 15) // 16) * 16
                if traffic:
                    st.counts[1] += float(tmp) * tkp * tnp
                    continue
                qa, fa = E.alloc(st, Q_L0A)
                ra = E.copy(st, cost, E.L1_L0A, float(tmp * tkp * in_bytes), max(fa, rdy_a[sa]))
                rel_a[sa] = max(rel_a[sa], st.pipe_free[E.MTE1])
                qb, fb = E.alloc(st, Q_L0B)
                rb = E.copy(st, cost, E.L1_L0B, float(tkp * tnp * in_bytes), max(fb, rdy_b[sb]))
                rel_b[sb] = max(rel_b[sb], st.pipe_free[E.MTE1])
                ready = max(ra, rb)
                if ki == 0 and cfree > ready:
                    ready = cfree
                last = E.mmad(st, cost, tm, tk, tn, c0, ready)
                E.release(st, Q_L0A, qa, st.pipe_free[E.M])
                E.release(st, Q_L0B, qb, st.pipe_free[E.M])
                if execute:
                    _gemm_acc(acc, a, b, mi * bm, ni * bn, k0 + ki * bk, tm, tn, tk, m0 + mi * bm, n0 + ni * bn)
            out_tile = float(tm * ((tn * out_bytes + 31) // 32) * 32)
            if traffic:
                st.path_bytes[E.L0C_GM] += out_tile
                continue
            # --- L0C -> GM through FixPipe
            E.copy(st, cost, E.L0C_GM, out_tile, max(last, zeroed))
            E.release(st, Q_L0C, cslot, st.pipe_free[E.FIX])


@njit(cache=True)
def zero_pass(st, cost, nbytes):
    """One vector core's share of the split-K zero-init: ``nbytes`` of zeros from one UB tile to
    GM (MTE3), from the kernel's start, while the cube cores load and multiply. Returns when the
    last lands."""
    done = 0.0
    left = nbytes
    while left > 0:
        piece = min(left, ZERO_TILE)
        done = E.copy(st, cost, E.UB_GM, float(piece), 0.0)
        left -= piece
    return done


@njit(cache=True)
def cast_pass(st, cost, vcost, elems, out_bytes, start):
    """One vector core's share of the cast after the last SyncAll: ``elems`` fp32 values of the
    workspace read into UB, VCONVed (``vcost`` row 0; a repeat reads the profile's bytes per
    repeat of fp32, ``cost[C_VEC_BYTES]`` / 4) and written to C in ``out_bytes``, tile by tile,
    double buffered. Returns when the last lands."""
    E.set_queue(st, Q_CAST, 2)
    lanes = int(cost[E.C_VEC_BYTES]) // 4
    t = start
    done = 0
    while done < elems:
        n = min(CAST_TILE, elems - done)
        slot, free = E.alloc(st, Q_CAST)
        ready = C.gm_in(st, cost, n * 4, max(free, start))
        conv = C.vrun(st, cost, vcost, 0, n, lanes, ready)
        t = C.gm_out(st, cost, n * out_bytes, conv)
        E.release(st, Q_CAST, slot, t)
        done += n
    return t


# ---------------------------------------------------------------------------------------
# Python side: validation, buffers, core classes, chip-level assembly


def _ints(params: dict, k: int) -> dict:
    """The params as ints (iterate_order checked); an absent ``single_core_k`` is K (no split), as
    in tilings written before it existed."""
    p = {}
    for key in PARAMS:
        v = params.get(key, k) if key == "single_core_k" else params[key]
        if key == "iterate_order":
            if v not in ORDERS:
                raise InfeasibleConfig(f"iterate_order={v!r}, expected one of {ORDERS}")
        elif type(v) is not int:
            if isinstance(v, bool) or not isinstance(v, (int, float)) or int(v) != v:
                raise InfeasibleConfig(f"{key}={v!r}, expected a positive integer")
            v = int(v)
        if key != "iterate_order" and v < 1:
            raise InfeasibleConfig(f"{key}={v!r}, expected a positive integer")
        p[key] = v
    return p


def buffers(params: dict, dtype: str, hw: HardwareProfile) -> dict:
    """Bytes each on-chip buffer holds for this tiling, padded as the hardware pads them."""
    dt = get_dtype(dtype)
    p = params
    am = _align(p["base_m"], 16)
    ak = _align(p["base_k"], dt.c0)
    an = _align(p["base_n"], 16)
    a_blk = am * ak * dt.bytes
    b_blk = ak * an * dt.bytes
    l1 = _align(p["depth_a1"] * a_blk, hw.align["l1"]) + _align(p["depth_b1"] * b_blk, hw.align["l1"])
    l0a = p["db_l0a"] * _align(a_blk, hw.align["l0a"])
    l0b = p["db_l0b"] * _align(b_blk, hw.align["l0b"])
    l0c = p["db_l0c"] * _align(am * an * 4, hw.align["l0c"])
    caps = {"l1": hw.l1_bytes, "l0a": hw.l0a_bytes, "l0b": hw.l0b_bytes, "l0c": hw.l0c_bytes}
    used = {"l1": l1, "l0a": l0a, "l0b": l0b, "l0c": l0c}
    return {k: {"used": used[k], "capacity": caps[k]} for k in used}


def splits(shape: dict, p: dict) -> tuple[int, int, int]:
    """Core blocks along M, N and K: usedCoreNum is their product."""
    return tuple(_cdiv(shape[d], min(p[f"single_core_{d}"], shape[d])) for d in DIMS)


def check(shape: dict, params: dict, dtype: str, hw: HardwareProfile) -> tuple[dict, dict]:
    """Validate a tiling for a shape; returns (int params, buffers) or raises InfeasibleConfig."""
    C.check_dtype(hw, "cube", dtype)
    C.check_shape(shape, DIMS)
    p = _ints(params, shape["k"])
    dt = get_dtype(dtype)
    if p["base_k"] % dt.c0 and p["base_k"] < shape["k"]:
        raise InfeasibleConfig(f"base_k={p['base_k']} is not a multiple of C0={dt.c0} for {dtype}")
    if p["single_core_k"] < shape["k"] and p["single_core_k"] % p["base_k"]:
        raise InfeasibleConfig(f"single_core_k={p['single_core_k']} is not a multiple of base_k={p['base_k']} "
                               "(each core's K range starts on a base_k step)")
    bufs = buffers(p, dtype, hw)
    C.check_capacity(bufs)
    for step, ks in ((p["step_m"] * p["step_ka"], "depth_a1"), (p["step_n"] * p["step_kb"], "depth_b1")):
        depth = p[ks]
        if depth % step or not 1 <= depth // step <= MAX_L1_SLOTS:
            raise InfeasibleConfig(
                f"{ks}={depth} must be 1 to {MAX_L1_SLOTS} times the L1 panel of {step} base blocks")
    used = math.prod(splits(shape, p))
    if used > hw.cube_cores:
        raise InfeasibleConfig(f"usedCoreNum={used} exceeds the {hw.cube_cores} cube cores of {hw.name}")
    return p, bufs


def _pieces(total: int, block: int) -> dict:
    """{size: count} of the blocks of ``block`` that cover ``total``: full ones and the tail."""
    n = _cdiv(total, block)
    return {block: n - 1, total - (n - 1) * block: 1} if total % block else {block: n}


def core_classes(shape: dict, p: dict) -> list[tuple[int, int, int, int]]:
    """(count, block rows, block cols, K range) of the distinct core blocks: full blocks and tails."""
    rows, cols, ks = (_pieces(shape[d], min(p[f"single_core_{d}"], shape[d])) for d in DIMS)
    return [(cr * cc * ck, r, c, k) for r, cr in rows.items() for c, cc in cols.items() for k, ck in ks.items()
            if cr * cc * ck]


_STATES: list = []
_EMPTY2 = np.zeros((1, 1), dtype=np.float32)


def _state(trace_capacity=0, slot=0):
    """A state to run a core class in: a fresh one with a trace, else reused slot ``slot`` (each
    class of a run keeps its own until its CoreRun is taken; ``core`` resets it, others must)."""
    if trace_capacity:
        return E.new_state(trace_capacity)
    while len(_STATES) <= slot:
        _STATES.append(E.new_state(0))
    return _STATES[slot]


def out_bytes_of(dt, split_k: bool) -> int:
    """Bytes of one element FixPipe writes: fp32 partials when K is split (int32 for int8)."""
    return 4 if split_k or dt.name == "int8" else dt.bytes


def pack(shape, p, dt, sm, sn, m0=0, n0=0, l2=0, sk=None, k0=0) -> np.ndarray:
    """The integer arguments of ``core`` for one core block, in its order (``l2``: the L2 bytes the
    traffic pass weighs re-reads against; ``sk``/``k0``: its K range, all of K by default)."""
    nbm, nbn, nbk = splits(shape, p)
    sk = min(p["single_core_k"], shape["k"]) if sk is None else sk
    slots_a = p["depth_a1"] // (p["step_m"] * p["step_ka"])
    slots_b = p["depth_b1"] // (p["step_n"] * p["step_kb"])
    return np.array([sm, sn, sk, p["base_m"], p["base_n"], p["base_k"], p["step_m"], p["step_n"],
                     p["step_ka"], p["step_kb"], slots_a, slots_b, p["db_l0a"], p["db_l0b"], p["db_l0c"],
                     int(p["iterate_order"] == "n_first"), dt.c0, dt.bytes, out_bytes_of(dt, nbk > 1), m0, n0,
                     nbm, nbn, l2, k0, nbk], dtype=np.int64)


def _run_core(st, cost, shape, p, dt, sm, sn, mode=MODE_COUNT, a=_EMPTY2, b=_EMPTY2, acc=_EMPTY2, m0=0, n0=0, l2=0,
              sk=None, k0=0, zeroed=0.0):
    core(st, cost, pack(shape, p, dt, sm, sn, m0, n0, l2, sk, k0), mode, a, b, acc, float(zeroed))


def first_touch_bytes(shape: dict, p: dict, dt, sm: int, sn: int, sk: int | None = None) -> float:
    """A core's share of the first touches of the data it reads (the HBM misses L2 cannot avoid).

    The sm x sk block of A it reads (its rows over its K range, all of K without a K split) is
    read by every core of its block row in that K range (ceil(N / single_core_n) cores) and the
    sk x sn block of B by every core of its block column (ceil(M / single_core_m)); they run side
    by side, so each takes an equal share of those first touches. Over all cores the shares add
    up to the unique bytes of A and B, so the chip-wide hit share is unchanged.
    """
    nbm, nbn, _ = splits(shape, p)
    sk = min(p["single_core_k"], shape["k"]) if sk is None else sk
    return (sm * sk / nbn + sk * sn / nbm) * dt.bytes


def wave_bytes(shape: dict, p: dict, dt) -> float:
    """The panels live in L1 across the chip at once (each core's A and B panels of the current
    K range): the window in which the cores of a block row (column) read the same A (B) panel.

    Those cores read a panel at about the same time, so one of them misses and the others hit
    L2 as long as this working set fits; it is each block row's A panels plus each block
    column's B panels, per K range (at most L1 times the cores, a few MiB).
    """
    nbm, nbn, nbk = splits(shape, p)
    return float(nbk * (nbm * p["depth_a1"] * p["base_m"] + nbn * p["depth_b1"] * p["base_n"]) * p["base_k"]
                 * dt.bytes)


def sync_cycles(hw: HardwareProfile) -> int:
    """Cycles of a SyncAll: each core posts its arrival to GM and waits to read everyone's, about
    two GM round trips (the profile's GM write and read latencies; an estimate, not measured)."""
    return int(round(hw.copy["ub_gm"].latency_cycles + hw.copy["gm_ub"].latency_cycles))


def vector_per_cube(hw: HardwareProfile) -> int:
    """Vector cores that run beside each cube core (2 on the split 910B, 1 on coupled chips)."""
    return max(1, hw.vector_cores // hw.cube_cores)


_VCAST: dict = {}


def _cast_table(hw: HardwareProfile, dtype: str) -> np.ndarray:
    key = (id(hw), dtype)
    hit = _VCAST.get(key)
    if hit is None or hit[0] is not hw:
        hit = _VCAST[key] = (hw, C.vtable(hw, [("vconv", f"fp32_{dtype}")]))
    return hit[1]


def atomic_cost(cost: np.ndarray, hw: HardwareProfile) -> np.ndarray:
    """``cost`` with FixPipe's GM writes at the atomic-add rate: L2 reads each line, adds and writes
    it back, so a core adds at most half its L2 write rate (an estimate: no atomic rate is published)."""
    c = cost.copy()
    c[3 * E.L0C_GM] = min(c[3 * E.L0C_GM], hw.l2_write_bytes_per_cycle / 2)
    return c


def overflow_writes(hw: HardwareProfile, read_bytes: float, distinct: float, written: float) -> float:
    """Bytes of a kernel's GM writes that reach HBM while it runs: L2 is write-back, so it keeps
    the ``distinct`` bytes written (C; with K split, the fp32 target once, however many K ranges
    add into it, and the cast's C) as far as they fit beside the ``read_bytes`` of A and B, and
    evicts only the rest; the others are written back after the kernel. At most the ``written``
    bytes. Charging all the writes once the footprint passed L2 was a cliff: m = n = 9,984, k = 64
    fp16 (202 MB) ran 2.47x the cycles of 9,472 (182 MB, 11% less work)."""
    return min(written, distinct, max(0.0, read_bytes + distinct - hw.l2_bytes))


def simulate(shape: dict, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
             options: dict | None = None, trace_capacity: int = 0, want_traces: bool = False):
    """Simulate one tiling on the chip; returns a SimResult (and traces if ``want_traces``).

    Each distinct core block (full blocks and tails) is simulated once and counted for every
    core that has it. GM reads are first simulated to learn the traffic, which gives each core
    block the L2 hit share of its own reads, from what is live in L2 when it reads: its first
    read of a panel beyond its share of the first touches (``first_touch_bytes``) hits while the
    chip's L1 panels fit (``wave_bytes``: the other cores read it at about the same time), and a
    panel it loads again hits as the working set since its last load fits (``reuse_window``).
    Hits thus follow the tiling and loop order, not the kernel's whole footprint (which made
    8192^3 fp16 re-read 8.1 GiB from HBM whatever the tiling). The final pass uses GM rates
    with that share and the HBM split over active cores, and between the reads and the writes
    L2 cannot keep (``overflow_writes``), which stream while the next blocks load: while the
    whole footprint fits in L2, C stays there (written back after the kernel) and the reads have
    HBM to themselves; past it, the share of FixPipe's writes that overflows goes at HBM's rate,
    the rest at L2's (``costs.write_rate``).

    With K split (see the module docstring) FixPipe adds at the atomic rate (``atomic_cost``)
    and the vector cores (``vector_per_cube`` beside each cube core) are a core class of their own
    (``CoreRun.beside``): each zeroes its share of the fp32 target and, for fp16/bf16, casts its share
    of the workspace once the slowest cube core has finished and a SyncAll. They ran on the cube
    cores' states before, so msprof's AIC ratios held their MTE2/MTE3 time (aic_mte3 0.177 for
    1024x2048x512 fp16 in two K ranges) and the trace showed one of each cube core's two.
    """
    shape = {d: int(shape[d]) for d in DIMS}
    unit = unit or UNITS[0]
    if unit == "vector":
        return matmul_vector.simulate(shape, params, dtype, hw, trace_capacity=trace_capacity,
                                      want_traces=want_traces)
    if unit not in UNITS:
        res = infeasible("matmul", unit, dtype, shape, params, f"unit={unit!r}, expected one of {UNITS}")
        return (res, []) if want_traces else res
    try:
        p, bufs = check(shape, params, dtype, hw)
    except InfeasibleConfig as exc:
        return (infeasible("matmul", unit, dtype, shape, params, exc.reason), []) if want_traces else \
            infeasible("matmul", unit, dtype, shape, params, exc.reason)
    dt = get_dtype(dtype)
    classes = core_classes(shape, p)
    active = sum(c for c, _, _, _ in classes)
    split_k = splits(shape, p)[2] > 1
    cast = split_k and dt.name in ("fp16", "bf16")  # the fp32 workspace is cast to C afterwards
    unique = (shape["m"] * shape["k"] + shape["k"] * shape["n"]) * dt.bytes
    out_bytes = out_bytes_of(dt, False)  # of C itself (the cast writes it when K is split)
    mn = shape["m"] * shape["n"]
    workspace = mn * 4 if cast else 0
    vpc = vector_per_cube(hw)
    # each vector core zeroes (and later casts) an equal share of the fp32 target
    share = _cdiv(mn, active * vpc) if split_k else 0
    # pass 1: traffic only (bytes and MACs do not depend on timing)
    cost = cost_vector(hw, dtype, active_cores=active, l2_hit=0.0)
    total_read = total_write = fix_write = 0.0
    lower = 1.0
    own_hit = []  # per class: the L2 hit share of its own reads
    total_hit = 0.0
    shared = working_set_hit(float(hw.l2_bytes), wave_bytes(shape, p, dt))
    for count, sm, sn, sk in classes:
        st = _state()
        _run_core(st, cost, shape, p, dt, sm, sn, MODE_TRAFFIC, l2=hw.l2_bytes, sk=sk)
        read = st.path_bytes[E.GM_L1]
        first = read - st.counts[5]  # its first loads of each panel
        hits = st.counts[6] + max(0.0, first - first_touch_bytes(shape, p, dt, sm, sn, sk)) * shared
        own_hit.append(min(1.0, hits / read) if read > 0 else 0.0)
        total_hit += count * hits
        total_read += count * read
        fix_write += count * st.path_bytes[E.L0C_GM]
        lower = max(lower, st.path_bytes[E.GM_L1] / hw.copy["gm_l1"].bytes_per_cycle,
                    st.path_bytes[E.L0C_GM] / hw.copy["l0c_gm"].bytes_per_cycle)
    total_write = fix_write
    if split_k:  # the zero-init's writes, and the cast's reads (of a workspace L2 holds) and writes
        total_write += mn * 4 + mn * out_bytes * cast
        total_read += workspace
        total_hit += workspace * working_set_hit(float(hw.l2_bytes), float(workspace))
    hit = min(1.0, total_hit / total_read) if total_read > 0 else 0.0  # chip-wide: the classes' hits summed
    hbm_read = total_read * (1.0 - hit)
    distinct = fix_write / splits(shape, p)[2] + mn * out_bytes * cast
    hbm_write = overflow_writes(hw, unique, distinct, total_write)
    kept = 1.0 - hbm_write / total_write if total_write > 0 else 1.0  # the writes L2 absorbs
    streams = hbm_streams(hw, active, hbm_read + hbm_write, lower)
    if hbm_write > 0:  # reads and the writes L2 cannot keep share HBM as much as their load says
        split = {"write_share": write_fraction(hbm_read, hbm_write),
                 "hbm_load": hbm_load(hw, active, streams, hbm_read + hbm_write, lower), "writes_in_l2": kept}
    else:  # C stays in L2: FixPipe writes at its rate, the reads have HBM's share to themselves
        split = {"writes_in_l2": 1.0}
    vst = zeroed = None
    if split_k:  # the vector cores zero the target from the start; FixPipe adds after a SyncAll
        vcost = cost_vector(hw, dtype, active_cores=streams, l2_hit=working_set_hit(float(hw.l2_bytes),
                                                                                    float(workspace)), **split)
        vst = _state(trace_capacity, slot=len(classes))
        E.reset(vst)
        zeroed = zero_pass(vst, vcost, float(share * 4)) + sync_cycles(hw)
    states = []
    for i, ((_, sm, sn, sk), own) in enumerate(zip(classes, own_hit)):
        cost = cost_vector(hw, dtype, active_cores=streams, l2_hit=own, l2_readers=active, **split)
        st = _state(trace_capacity, slot=i)
        _run_core(st, atomic_cost(cost, hw) if split_k else cost, shape, p, dt, sm, sn, sk=sk, zeroed=zeroed or 0.0)
        states.append(st)
    if cast:  # after the slowest core's last atomic add and a SyncAll
        start = max(float(st.pipe_free.max()) for st in states + [vst]) + sync_cycles(hw)
        cast_pass(vst, vcost, _cast_table(hw, dtype), share, dt.bytes, start)
    runs = [CoreRun.from_state(st, count) for st, (count, *_) in zip(states, classes)]
    traces = [(count, sm, sn, sk, E.recorded(st)) for st, (count, sm, sn, sk) in zip(states, classes)] \
        if want_traces else []
    if split_k:
        runs.append(replace(CoreRun.from_state(vst, active * vpc), beside=True))
        if want_traces:
            traces.append((active * vpc, "vector cores: zero-init" + (" and cast" if cast else ""), E.recorded(vst)))
    flops = 2.0 * shape["m"] * shape["n"] * shape["k"]
    res = assemble(op="matmul", unit=unit, dtype=dtype, shape=shape, params=params, hw=hw, runs=runs,
                   useful_flops=flops, peak_flops=hw.peak_flops("cube", dtype),
                   must_move_bytes=float(unique + (mn * out_bytes * hbm_write / distinct if hbm_write > 0 else 0.0)),
                   l2_hit=hit,
                   buffers=bufs, hbm_write=hbm_write)
    return (res, traces) if want_traces else res


def execute(inputs: tuple, params: dict, dtype: str, hw: HardwareProfile, *, unit: str | None = None,
            options: dict | None = None) -> np.ndarray:
    """Run the tiled kernel in execute mode on every core's block; returns C.

    ``a``/``b`` hold values representable in ``dtype`` (see ``make_inputs``); accumulation is
    fp32 (int32 for int8) in L0C and C is rounded to the output dtype like FixPipe does. With K
    split, each core's partial block (fp32 / int32) is added onto the zeroed target in the order
    of the K ranges, as the atomic adds could land, and rounded to the output dtype once.
    """
    if unit == "vector":
        return matmul_vector.execute(inputs, params, dtype, hw)
    shape = shape_of(inputs)
    a, b = np.asarray(inputs[0]), np.asarray(inputs[1])
    M, N, K = shape["m"], shape["n"], shape["k"]
    p, _ = check(shape, params, dtype, hw)
    dt = get_dtype(dtype)
    acc_t = np.int32 if dt.name == "int8" else np.float32
    a_ = np.ascontiguousarray(a, dtype=acc_t)
    b_ = np.ascontiguousarray(b, dtype=acc_t)
    c = np.zeros((M, N), dtype=acc_t)
    cost = cost_vector(hw, dtype)
    scm, scn, sck = (min(p[f"single_core_{d}"], shape[d]) for d in DIMS)
    for bi in range(_cdiv(M, scm)):
        for bj in range(_cdiv(N, scn)):
            m0, n0 = bi * scm, bj * scn
            sm, sn = min(scm, M - m0), min(scn, N - n0)
            for bk in range(_cdiv(K, sck)):
                k0 = bk * sck
                acc = np.zeros((sm, sn), dtype=acc_t)
                _run_core(_state(), cost, shape, p, dt, sm, sn, MODE_EXECUTE, a_, b_, acc, m0, n0,
                          sk=min(sck, K - k0), k0=k0)
                _atomic_add(c, acc, m0, n0)
    return dtype_emul.to_output(c, dtype)


def _atomic_add(c: np.ndarray, acc: np.ndarray, m0: int, n0: int) -> None:
    """FixPipe's write of one core's partial block into the zeroed target: an add in fp32 (int32),
    so the K ranges' partials sum (a plain write would keep only the last range's)."""
    c[m0:m0 + acc.shape[0], n0:n0 + acc.shape[1]] += acc


SPLIT_MARGIN = 0.7  # the default splits K only when that is estimated at least 30% faster
VERIFY_MACS = 3e7  # above this, verification runs a reduced shape (see verify_shape)
# a split K's reduced shape may hold up to this many MACs: its two K ranges are a whole single_core_k
# and the tail (2752 + 2496 of K = 32768 on one 128 x 128 core block: 86M, ~1 s in execute mode)
SPLIT_VERIFY_MACS = 4 * VERIFY_MACS
# a reduced shape that keeps K whole gives up core blocks of M and N past this many MACs (~7 s in
# execute mode at the 6e8 MACs/s measured; the 4096^3 default's 2688 x 1024 x 576, 1.6e9, keeps two)
NARROW_MACS = 4e9


def _keep(total: int, block: int) -> int:
    """``total`` cut to two blocks of ``block``, a full one and the tail (all of it when <= 2)."""
    n = _cdiv(total, block)
    return total if n <= 2 else block + (total - (n - 1) * block)


def _narrowing(total: int, block: int, base: int) -> list[int]:
    """Sizes of M (or N) a split K's reduced shape may keep, most structure first: two core
    blocks, the last core block alone (the tail where there is one), whole base blocks of it."""
    last = total - (_cdiv(total, block) - 1) * block
    sizes = [_keep(total, block), last, _keep(last, base)]
    return [s for i, s in enumerate(sizes) if i == 0 or s < sizes[i - 1]]


def _split_k_shape(shape: dict, params: dict) -> dict:
    """The reduced shape of a tiling that splits K: always two K ranges, so the zeroed fp32
    target, the atomic adds of the partials and the cast are executed. M and N give up core
    blocks before K gives up its tail range; past ``SPLIT_VERIFY_MACS`` the tail range is cut
    to its last base_k step (the K remainder kept), and if that is still over, it runs anyway
    (past ``MAX_IO_ELEMENTS`` the gate then does not execute it: ``io_elements``)."""
    K = shape["k"]
    sck, bk = params["single_core_k"], params["base_k"]
    ks = [_keep(K, sck)]
    if sck + (K % bk or bk) < ks[0]:
        ks.append(sck + (K % bk or bk))
    return _narrowed(shape, params, ks, SPLIT_VERIFY_MACS)


def _narrowed(shape: dict, params: dict, ks: list[int], macs: float) -> dict:
    """The first shape, most structure first, within ``macs`` MACs and C.MAX_IO_ELEMENTS elements
    of A, B and C: the larger of M and N gives up core blocks (``_narrowing``), then K takes its
    next size in ``ks``; the smallest if none is within."""
    ms = _narrowing(shape["m"], params["single_core_m"], params["base_m"])
    ns = _narrowing(shape["n"], params["single_core_n"], params["base_n"])
    def over(i, j, r):
        return ms[i] * ns[j] * ks[r] > macs or io_elements({"m": ms[i], "n": ns[j], "k": ks[r]}) > C.MAX_IO_ELEMENTS

    i = j = r = 0
    while over(i, j, r):
        if i + 1 < len(ms) and (ms[i] >= ns[j] or j + 1 == len(ns)):
            i += 1
        elif j + 1 < len(ns):
            j += 1
        elif r + 1 < len(ks):
            r += 1
        else:
            break
    if r == 0 and not over(i, j, r):  # the other dimension takes back what it gave up before this one's last cut
        j = next(jj for jj in range(j + 1) if not over(i, jj, r))
        i = next(ii for ii in range(i + 1) if not over(ii, j, r))
    return {"m": ms[i], "n": ns[j], "k": ks[r]}


def verify_shape(shape: dict, params: dict) -> dict:
    """A shape small enough to execute quickly that keeps this tiling's structure.

    It keeps up to two core blocks in M and in N (a full one and the tail one, so the tail
    blocks and the multi-core split are exercised) and, in K, two L1 panels plus the K tail.
    Past ``NARROW_MACS`` MACs or ``C.MAX_IO_ELEMENTS`` elements (huge core blocks: 65536 x 128 x
    65536's default kept 43648 x 16384 of C, 2.7 GiB of fp32 and minutes of execute mode), M and
    N give up core blocks as a split K's do (``_narrowing``: the last block alone, then whole base
    blocks of it). A tiling that splits K keeps two K ranges instead (see ``_split_k_shape``):
    with one, the partial sums and their combine would go unverified.
    """
    M, N, K = shape["m"], shape["n"], shape["k"]
    if M * N * K <= VERIFY_MACS or "single_core_m" not in params:  # vector tilings are for tiny shapes
        return dict(shape)
    if params.get("single_core_k", K) < K:
        return _split_k_shape(shape, params)
    panel = params["base_k"] * max(params["step_ka"], params["step_kb"])
    k = K if K <= 2 * panel + params["base_k"] else 2 * panel + (K % params["base_k"] or params["base_k"])
    return _narrowed(shape, params, [k], NARROW_MACS)


def io_elements(shape: dict) -> int:
    """Elements of A, B and C: what an execute-mode run holds (each also as float64 in the check)."""
    return shape["m"] * shape["k"] + shape["k"] * shape["n"] + shape["m"] * shape["n"]


def reference(inputs: tuple, dtype: str, *, options: dict | None = None) -> np.ndarray:
    """NumPy reference: exact products of the dtype's values, accumulated in float64/int64."""
    a, b = inputs
    if dtype == "int8":
        return (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    c = a.astype(np.float64) @ b.astype(np.float64)
    return dtype_emul.to_output(c, dtype)


def make_inputs(shape: dict, dtype: str, seed: int = 0, *, options: dict | None = None) -> tuple:
    """Random A (M x K) and B (K x N) holding values exactly representable in ``dtype``."""
    rng = np.random.default_rng(seed)
    M, N, K = shape["m"], shape["n"], shape["k"]
    if dtype == "int8":
        return (rng.integers(-128, 128, (M, K), dtype=np.int8), rng.integers(-128, 128, (K, N), dtype=np.int8))
    a = rng.uniform(-1, 1, (M, K))
    b = rng.uniform(-1, 1, (K, N))
    return dtype_emul.round_to(a, dtype), dtype_emul.round_to(b, dtype)


def tolerance(dtype: str, shape: dict, params: dict | None = None,
              unit: str | None = None, inputs: tuple | None = None) -> tuple[float, float]:
    """(rtol, atol) for comparing C with the reference: output rounding plus fp32 summation, for
    ``inputs`` (A, B) FP32_SIGMAS of ``C.dot_error_sigma`` over the tiling's K ranges (``k_range``;
    any order when ``params`` do not give them), and fp16's subnormal spacing."""
    k = shape["k"]
    if dtype == "int8":
        return 0.0, 0.0
    eps_out = get_dtype(dtype).unit_roundoff
    if inputs is not None:
        sigma = C.dot_error_sigma(inputs[0], inputs[1], products_rounded=dtype == "fp32",
                                  k_range=k_range(shape, params, unit))
        return 2.0 * eps_out, C.FP32_SIGMAS * sigma + (2.0 ** -24 if dtype == "fp16" else 0.0)
    # without the data, |C| <= K for inputs in [-1, 1]; fp32 accumulation error grows ~ sqrt(K) eps32 |C|
    atol = math.sqrt(k) * 2.0 ** -24 * k + eps_out
    return 2.0 * eps_out, atol


def k_range(shape: dict, params: dict | None, unit: str | None) -> int | None:
    """How many consecutive k the kernel sums one by one into each accumulator (the Vector's
    VAXPY row: all K; the cube's L0C: a core's K range, ``single_core_k``), or None when
    ``params`` do not say (the tolerance then holds for any order)."""
    if unit == "vector":
        return int(shape["k"])
    if params is None:
        return None
    try:  # an absent single_core_k is K (``_ints``)
        return max(1, min(int(params.get("single_core_k", shape["k"])), int(shape["k"])))
    except (TypeError, ValueError):
        return None


def step_pipes(hw: HardwareProfile, dt, bm: int, bn: int, bk: int) -> tuple[float, float]:
    """Cycles of one K step of a bm x bn base block by the profile's rates (the estimate a careful
    engineer makes from the data sheet): (on chip: the slower of the Mmad and MTE1 moving the A
    and B blocks into L0A/L0B; MTE2 bringing them from GM at the L2 read rate)."""
    k = _align(bk, dt.c0)
    a, b = _align(bm, 16) * k * dt.bytes, k * _align(bn, 16) * dt.bytes
    cube = _align(bm, 16) * _align(bn, 16) * k / hw.cube.macs_per_cycle.get(dt.name, hw.cube.macs_per_cycle["fp16"])
    l0a, l0b = hw.copy["l1_l0a"], hw.copy["l1_l0b"]
    mte1 = a / l0a.bytes_per_cycle + l0a.issue_cycles + b / l0b.bytes_per_cycle + l0b.issue_cycles
    return max(cube + hw.cube.issue_cycles, mte1), (a + b) / _load_rate(hw)


def _load_rate(hw: HardwareProfile) -> float:
    """A core's GM -> L1 bytes per cycle: the copy's plateau or its share of L2, the lower."""
    return min(hw.copy["gm_l1"].bytes_per_cycle, hw.l2_read_bytes_per_cycle)


def step_cycles(hw: HardwareProfile, dt, bm: int, bn: int, bk: int) -> float:
    """Cycles of one K step of a bm x bn base block: its slowest pipe (``step_pipes``)."""
    return max(step_pipes(hw, dt, bm, bn, bk))


def chip_read_cycles(hw: HardwareProfile, read_bytes: float, unique_bytes: float) -> float:
    """Fewest cycles in which the whole chip can read ``read_bytes`` from GM, ``unique_bytes`` of
    them distinct: the first touch of each byte at HBM's bandwidth, every re-read at L2's (the
    profile's per-core L2 rate times the cube cores), both shared by all the cores reading. A
    grid of many small blocks re-reads more and is held back by that, not by its cube: 64 x 64
    blocks on 24 cores for 192x2048x2048 fp16 were estimated faster than 128 x 128 on 16 and ran
    1.38x slower (27,682 against 20,003 cycles)."""
    first = min(unique_bytes, read_bytes)
    again = read_bytes - first
    hit = working_set_hit(float(hw.l2_bytes), float(unique_bytes))  # a re-read L2 no longer holds goes to HBM
    return (first + again * (1.0 - hit)) / hw.hbm_bytes_per_cycle \
        + again * hit / (hw.l2_read_bytes_per_cycle * hw.cube_cores)


def default_params(shape: dict, dtype: str, hw: HardwareProfile, unit: str | None = None,
                   options: dict | None = None) -> dict:
    """The baseline: what a careful engineer writes without a tuner.

    Reasoning, step by step:
    1. Base block: 128 x 128 output (a 64 KiB fp32 L0C block, so db_l0c=2 fills L0C exactly),
       base_k = 64 for 2-byte inputs (128x64 A/B blocks of 16 KiB: double-buffered L0A/L0B
       uses half of L0), 32 for fp32, 128 for int8; shrunk to the 16-aligned shape when small.
    2. Core split: the fastest estimated grid of whole-base-block core blocks (``step_cycles``
       per K step of one base block, times the steps of the largest core block; at least its
       blocks' FixPipe writes, and at least the whole chip's reads through the HBM and L2 it
       shares, ``chip_read_cycles``; plus what no loop hides: the first L1 load, the GM round
       trips and the last FixPipe), then the most cores, the larger base block, the smallest
       largest block (least imbalance) and squarer blocks. Over 120 seeded shapes
       (``bench/matmul_default.py``) the default is 1.02x the best grid simulated (geomean; p90
       1.09x), and it gets cheaper as M grows by at most 11% (was 1.38x at m=185). Where the M x N
       grid leaves cores idle, K is split over them too (whole base_k steps) when that estimate,
       plus what the combine adds (``split_cycles``), is faster by ``SPLIT_MARGIN``: 64x64x65536
       fp16 ran on one core (142k cycles) and runs on 24 (23k). A split core's atomic adds overlap
       its next blocks' loops, and a K range of at most 4 steps stays in L1, so its A and B strips
       load once per core (not once per base block): 100x100x4096 now splits over 22 cores (3,981
       cycles, was 5,447 on 24 with 64 x 64 core blocks). A 64 x 64 base block is tried too; it wins only where it spreads the work over
       enough more cores to pay for its lower cube use (ranking by cores first picked 64 x 64 on
       910B4's 20 cores for 1024x2048x512: 21.0 us against 12.5 us with 128 x 128 on 16).
    3. L1: 4 K slices per load (step_ka = step_kb = 4, fewer if K is short), one base block
       wide (step_m = step_n = 1), double buffered (depth = 2 x panel) so MTE2 overlaps compute.
    4. Double buffering everywhere on L0 (db_l0a = db_l0b = db_l0c = 2); iterate M first.

    ``unit="vector"`` gives the Vector kernel's baseline (``matmul_vector.default_params``).
    """
    if unit == "vector":
        return matmul_vector.default_params(shape, dtype, hw)
    dt = get_dtype(dtype)
    M, N, K = shape["m"], shape["n"], shape["k"]
    bk = {1: 128, 2: 64, 4: 32}[dt.bytes]
    bk = min(bk, _align(K, dt.c0 if dt.c0 > 16 else 16))
    kt = _cdiv(K, bk)
    unique = (M * K + K * N) * dt.bytes
    best = split = None
    for base in (128, 64):
        bm, bn = min(base, _align(M, 16)), min(base, _align(N, 16))
        on_chip, load = step_pipes(hw, dt, bm, bn, bk)
        step = max(on_chip, load)
        panel = (bm + bn) * _align(bk, dt.c0) * dt.bytes  # a K step's A and B blocks
        # what no loop hides: the first L1 load before the first Mmad, and (without a K split,
        # whose estimate has its own) the GM round trips and the last block's FixPipe
        fill = min(4, kt) * panel / _load_rate(hw)
        drain = bm * bn * out_bytes_of(dt, False) / min(hw.copy["l0c_gm"].bytes_per_cycle,
                                                         hw.l2_write_bytes_per_cycle)  # a block's FixPipe
        edges = hw.copy["gm_l1"].latency_cycles + hw.copy["l0c_gm"].latency_cycles + drain
        mblocks, nblocks = _cdiv(M, bm), _cdiv(N, bn)
        for cm in range(1, min(hw.cube_cores, mblocks) + 1):
            for cn in range(1, min(hw.cube_cores // cm, nblocks) + 1):
                scm = _cdiv(mblocks, cm) * bm
                scn = _cdiv(nblocks, cn) * bn
                used = _cdiv(M, scm) * _cdiv(N, scn)
                blocks = _cdiv(min(scm, M), bm) * _cdiv(min(scn, N), bn)
                reads = chip_read_cycles(hw, used * blocks * kt * panel, unique)
                key = (max(blocks * kt * step, blocks * drain, reads) + fill + edges, -used, -bm * bn, min(scm, M) * min(scn, N), abs(scm - scn))
                if best is None or key < best[0]:
                    best = (key, bm, bn, scm, scn, kt * bk, key[0])  # all of K
                for ck in range(2, min(hw.cube_cores // used, kt) + 1):
                    sck = _cdiv(kt, ck) * bk
                    nbk = _cdiv(K, sck)
                    ks = _cdiv(sck, bk)
                    loop, core_reads = blocks * ks * step, blocks * ks * panel
                    if ks <= 4 and blocks > 1:  # the core's K range stays in L1 (depth 2 x step_k slices):
                        # M first, so a B strip loads once, an A strip once per B strip (once if alone)
                        nt, mt = _cdiv(min(scn, N), bn), _cdiv(min(scm, M), bm)
                        core_reads = ((nt if mt > 1 else 1) * min(scm, M) + min(scn, N)) * ks * _align(bk, dt.c0) * dt.bytes
                        loop = max(blocks * ks * on_chip, core_reads / _load_rate(hw))
                    loop = max(loop, blocks * bm * bn * 4 / (hw.l2_write_bytes_per_cycle / 2))  # its atomic adds
                    est = max(loop + split_cycles(hw, dt, M, N, used * nbk, blocks * bm * bn, bm * bn),
                              chip_read_cycles(hw, used * core_reads * kt / ks, unique)) + fill  # K's own steps
                    if split is None or (est, -used * nbk) < split[0]:
                        split = ((est, -used * nbk), bm, bn, scm, scn, sck)
    # HBM bounds every split: where it binds, more cores do not help
    floor = (M * K + K * N) * dt.bytes / hw.hbm_bytes_per_cycle
    if split is not None and max(split[0][0], floor) < SPLIT_MARGIN * best[-1]:
        best = split
    _, bm, bn, scm, scn, sck = best[:6]
    step_k = min(4, _cdiv(min(sck, K), bk))
    return {
        "base_m": bm, "base_n": bn, "base_k": bk,
        "step_m": 1, "step_n": 1, "step_ka": step_k, "step_kb": step_k,
        "depth_a1": 2 * step_k, "depth_b1": 2 * step_k,
        "db_l0a": 2, "db_l0b": 2, "db_l0c": 2,
        "iterate_order": "m_first",
        "single_core_m": scm, "single_core_n": scn, "single_core_k": sck,
    }


def split_cycles(hw: HardwareProfile, dt, M: int, N: int, cores: int, block: int, last: int | None = None) -> float:
    """Estimated cycles a K split over ``cores`` adds to the K loop of a core block of ``block``
    elements, erring high: its atomic adds at their rate as if none overlapped the loop (with
    ``last``, the elements of the base block written last: the others' adds overlap the next
    blocks' loops, the last one's cannot), the GM latency of its first load and of its last add,
    the SyncAll after the zero-init (whose writes overlap the loop) and, for fp16/bf16, a second
    SyncAll and the cast of each vector core's share of the workspace, its reads and writes at
    their per-core rates. The no-split estimate leaves its own writes out, so a split must win by
    more than they take."""
    t = (block if last is None else last) * 4 / (hw.l2_write_bytes_per_cycle / 2) \
        + hw.copy["gm_l1"].latency_cycles + hw.copy["l0c_gm"].latency_cycles + sync_cycles(hw)
    if dt.name in ("fp16", "bf16"):
        share = _cdiv(M * N, cores * vector_per_cube(hw))
        t += sync_cycles(hw) + share * 4 / hw.copy["gm_ub"].bytes_per_cycle \
            + share * dt.bytes / hw.copy["ub_gm"].bytes_per_cycle
    return t


def served(params: dict, tuned: dict, shape: dict) -> dict:
    """The params a table entry tuned for shape ``tuned`` runs with at ``shape``: a tiling that did
    not split K (single_core_k at least the tuned K, or absent) keeps K whole at any K, as its
    tuner chose; one that split K keeps its single_core_k (a longer K gets more ranges)."""
    sck = params.get("single_core_k")
    if sck is None or sck < tuned["k"] or "base_k" not in params:
        return params
    return params | {"single_core_k": _align(shape["k"], params["base_k"])}


# ``served`` as the exported C headers' ``served`` function runs it: param -> a C expression over
# the queried shape x[dim], the entry's tuned shape e->shape[dim] and its params p->name (NA,
# INT32_MIN, where the entry's unit has none: a vector entry keeps its NA). Keep the two in step:
# tests/test_tables_export.py compares the C header's served params with Lookup.from_table's.
SERVED_C = {"single_core_k": "p->single_core_k >= e->shape[k] && p->base_k > 0"
                             " ? ((x[k] - 1) / p->base_k + 1) * p->base_k : p->single_core_k"}


def shape_of(inputs: tuple, options: dict | None = None) -> dict:
    """``{m, n, k}`` of A (M x K) and B (K x N); ``options`` change none of it (every kernel's
    ``shape_of`` takes them: resize's layout orders its dims)."""
    return matmul_vector.shape_of(inputs)


def run(a, b, table, dtype: str | None = None) -> np.ndarray:
    """C = A @ B with the tiling a table gives for this shape (a path, folder or loaded table).

    Runs in execute mode, the path the verification gate uses; ``dtype`` defaults to the arrays'
    (``autotile.tables.run.input_dtype``: float32 is fp32, bf16 is named).

    >>> c = run(a, b, table="results/matmul/table.json", dtype="fp16")  # doctest: +SKIP
    """
    from autotile.tables.run import run_with_table

    out, _ = run_with_table("matmul", (a, b), table, dtype)
    return out


def small_grid(shape: dict, dtype: str, hw: HardwareProfile, unit: str = "cube") -> list[dict]:
    """A small deterministic grid of tilings for quick searches (benchmarks, decision tests).

    Cube: base blocks of 16..128 (m, n) and 16..64 (k) up to the aligned shape, each core one
    base block (most cores) or one core for all, one K slice per L1 load, L1 and L0 single or
    double buffered together. Vector: ``tile_m`` and ``cores`` in powers of two, 1 or 2 buffers.
    """
    M, N, K = shape["m"], shape["n"], shape["k"]
    out = []
    if unit == "vector":
        for tm in (1 << i for i in range(8)):
            if tm > M and tm > 1:
                break
            for c in (1 << i for i in range(7)):
                if c <= min(hw.vector_cores, _cdiv(M, tm)):
                    out += [{"tile_m": tm, "buffer_num": b, "cores": c} for b in (1, 2)]
        return out
    dt = get_dtype(dtype)
    kal = max(16, dt.c0)
    for bm in (16, 32, 64, 128):
        for bn in (16, 32, 64, 128):
            for bk in (16, 32, 64):
                if bm > _align(M, 16) or bn > _align(N, 16) or bk > _align(K, kal) or bk % dt.c0:
                    continue
                for spread in (True, False):
                    scm, scn = (bm, bn) if spread else (_align(M, bm), _align(N, bn))
                    if _cdiv(M, scm) * _cdiv(N, scn) > hw.cube_cores:
                        continue
                    for db in (1, 2):
                        out.append({"base_m": bm, "base_n": bn, "base_k": bk, "step_m": 1, "step_n": 1,
                                    "step_ka": 1, "step_kb": 1, "depth_a1": db, "depth_b1": db, "db_l0a": db,
                                    "db_l0b": db, "db_l0c": db, "iterate_order": "m_first",
                                    "single_core_m": scm, "single_core_n": scn})
    return out


def grid_best(shape: dict, dtype: str, hw: HardwareProfile, unit: str = "cube") -> tuple[float, dict]:
    """(cycles, params) of the fastest feasible tiling of ``small_grid`` (and the default)."""
    top = (float("inf"), {})
    for p in small_grid(shape, dtype, hw, unit) + [default_params(shape, dtype, hw, unit)]:
        r = simulate(shape, p, dtype, hw, unit=unit)
        if r.feasible and r.cycles < top[0]:
            top = (r.cycles, p)
    return top
