"""Helpers shared by the 1-D operators (weighted_sum, global_sum, sigmoid, elementwise, ...).

Numba side: dtype rounding of one value (``rnd``) and vector / scalar issue helpers that turn
element counts into repeats. Python side: profile look-ups that fail with a clear message, the
split of a 1-D problem over cores into core classes, integer parameter validation and the
cross-core combine phase of reductions.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from autotile.dtypes import get as get_dtype
from autotile.errors import InfeasibleConfig, InputError
from autotile.hardware import HardwareProfile
from autotile.hardware.ops import KERNEL_SCALAR_OPS, KERNEL_VECTOR_OPS, SCALAR_MEMORY_OPS
from autotile.hardware.profile import profile_error
from autotile.kernels import registry
from autotile.sim import engine as E
from autotile.sim.costs import vector_table
from autotile.sim.result import CoreRun

# dtype codes used inside Numba code
FP32, FP16, BF16 = 0, 1, 2
CODES = {"fp32": FP32, "fp16": FP16, "bf16": BF16}
BYTES = {"fp32": 4, "fp16": 2, "bf16": 2}


@njit(cache=True)
def rnd(x, code):
    """Round a float to the nearest fp32 / fp16 / bf16 value (ties to even), as float64."""
    if code == FP32:
        return float(np.float32(x))
    if x != x or x == 0.0:
        return x
    ax = abs(x)
    if code == FP16:
        if ax >= 65520.0:
            return math.copysign(math.inf, x)
        mant_bits = 10
        min_exp = -14
    else:
        if ax >= 3.3961775292304e38:
            return math.copysign(math.inf, x)
        mant_bits = 7
        min_exp = -126
    m, e = math.frexp(ax)  # ax = m * 2**e, m in [0.5, 1)
    e = e - 1
    if e < min_exp:
        e = min_exp
    q = math.ldexp(1.0, e - mant_bits)
    return math.copysign(np.round(ax / q) * q, x)


@njit(cache=True)
def vrun(st, cost, vcost, row, elems, lanes, ready):
    """One vector instruction of ``vcost`` row ``row`` over ``elems`` elements of ``lanes`` per repeat."""
    reps = (elems + lanes - 1) // lanes
    if reps < 1:
        reps = 1
    return E.vector(st, cost, vcost, row, reps, ready)


@njit(cache=True)
def gm_in(st, cost, nbytes, ready):
    """GM -> UB copy of ``nbytes`` (padded to the 32-byte burst); returns when the data is usable."""
    return E.copy(st, cost, E.GM_UB, float(((nbytes + 31) // 32) * 32), ready)


@njit(cache=True)
def gm_out(st, cost, nbytes, ready):
    """UB -> GM copy of ``nbytes`` (padded to 32 bytes)."""
    return E.copy(st, cost, E.UB_GM, float(((nbytes + 31) // 32) * 32), ready)


@njit(cache=True)
def vcadd_exec(acc, cnt, code):
    """In-repeat reduce of acc[:cnt] as VCADD does it: a pairwise tree, rounded per level."""
    m = cnt
    while m > 1:
        h = m // 2
        for j in range(h):
            acc[j] = rnd(acc[j] + acc[m - h + j], code)
        m -= h
    return acc[0]


@njit(cache=True)
def vadd_tree(st, cost, vcost, add_row, cadd_row, width, lanes, ready, execute, acc, code):
    """Reduce a ``width``-element UB accumulator: a VADD tree over its repeats, then one VCADD.

    Each level adds the upper half of the repeats onto the lower half (one instruction); the
    last repeat is reduced within itself by VCADD. Returns (sum, end time); the sum is computed
    (rounded to ``code`` per add) only in execute mode.
    """
    reps = (width + lanes - 1) // lanes
    cnt = width
    t = ready
    while reps > 1:
        h = reps // 2
        t = E.vector(st, cost, vcost, add_row, h, t)
        if execute:
            lo = (reps - h) * lanes
            for j in range(min(h * lanes, cnt - lo)):
                acc[j] = rnd(acc[j] + acc[lo + j], code)
        reps -= h
        cnt = min(cnt, reps * lanes)
    t = E.vector(st, cost, vcost, cadd_row, 1, t)
    res = 0.0
    if execute:
        res = vcadd_exec(acc, cnt, code)
    return res, t


@njit(cache=True)
def combine(st, cost, vcost_cadd, nparts, part_bytes, ready, use_vector, sc_add, sc_load):
    """Cross-core combine on one core: read the partials from GM, reduce, write the result.

    ``ready``: when the last partial has landed in GM. Vector: VCADD per repeat of partials
    (the profile's bytes per repeat, ``cost[C_VEC_BYTES]``) and one more over the repeat sums;
    Scalar: a load and an add per partial (the load issuing beside the previous add).
    """
    t = gm_in(st, cost, nparts * part_bytes, ready)
    if use_vector:
        lanes = int(cost[E.C_VEC_BYTES]) // part_bytes
        reps = (nparts + lanes - 1) // lanes
        t = E.vector(st, cost, vcost_cadd, 0, reps, t)
        if reps > 1:
            t = E.vector(st, cost, vcost_cadd, 0, 1, t)
    else:
        t = E.scalar(st, cost, nparts, max(sc_load, sc_add), t)  # loads issue beside the adds
    return gm_out(st, cost, part_bytes, t)


# ---------------------------------------------------------------------------------------
# Python side


class MissingCost(InputError):
    """A vector cost (``op``, ``sig``) a kernel asked ``vtable`` for and the profile lacks: an
    InputError located in the profile, which says which cost so that a probe of what the kernels
    need (``tune.preflight.missing_vector_costs``) can list them all."""

    def __init__(self, error: InputError, op: str, sig: str) -> None:
        super().__init__(error.message, file=error.file, line=error.line, col=error.col, field=error.field)
        self.op, self.sig = op, sig


def vtable(hw: HardwareProfile, ops: list[tuple[str, str] | None]) -> np.ndarray:
    """``vector_table`` for a kernel's instructions (``None``: a row this configuration never
    issues, left at zero). Profiles read from files have every op in ``KERNEL_VECTOR_OPS``; one
    built in code may not, and no profile need cost every signature: either is an InputError
    naming what is missing."""
    used = [(i, o) for i, o in enumerate(ops) if o is not None]
    for op, sig in (o for _, o in used):
        _known(op, KERNEL_VECTOR_OPS, "vector op")
        if op not in hw.vector:
            raise MissingCost(profile_error(hw, ("vector", "ops", op), f"hardware profile {hw.reference} has no cost "
                                            f"for vector op {op!r}, which this kernel needs: add it under vector.ops"),
                              op, sig)
    out = np.zeros((max(1, len(ops)), 4))
    out[:, 3] = -1  # op code (trace names): none for a row never issued
    if used:
        try:
            out[[i for i, _ in used]] = vector_table(hw, [o for _, o in used])
        except KeyError as exc:
            op, sig = exc.args[1:3]
            raise MissingCost(profile_error(hw, ("vector", "ops", op), f"hardware profile {hw.reference} has no cost "
                                            f"for vector op {op} in {sig} (has {', '.join(hw.vector[op])}), which "
                                            f"this kernel needs: add it under vector.ops.{op}"), op, sig) from None
    return out


def check_dtype(hw: HardwareProfile, unit: str, dtype: str) -> None:
    """InfeasibleConfig when ``unit`` of ``hw`` cannot compute in ``dtype`` (bf16 on the 910A)."""
    problem = hw.dtype_problem(unit, dtype)
    if problem:
        raise InfeasibleConfig(problem)


def converted(body: list, dtype: str, cd: str, hw: HardwareProfile, inputs: int = 1) -> tuple[list, list]:
    """(rows, lanes per row) of a tile's vector instructions ``body``, which compute in ``cd``:
    ``body`` alone, or, when ``dtype`` is not ``cd`` (bf16 on the 910B), a VCONV of each of
    ``inputs`` to ``cd`` before it and one back after (a VCONV repeat reads the profile's bytes
    per repeat of its source: 128 bf16 in, 64 fp32 out at 256 bytes)."""
    width = [lanes(cd, hw)] * len(body)
    if cd == dtype:
        return list(body), width
    return ([("vconv", f"{dtype}_{cd}")] * inputs + list(body) + [("vconv", f"{cd}_{dtype}")],
            [lanes(dtype, hw)] * inputs + width + [lanes(cd, hw)])


def compute_dtype(hw: HardwareProfile, dtype: str) -> str:
    """The dtype the Vector does ``dtype``'s arithmetic in (``vector_compute_dtype``): fp32 for
    bf16 on the 910B, whose vector converts bf16 (VCONV) but has no bf16 arithmetic."""
    return hw.vector_compute_dtype(dtype)


def scalar_cost(hw: HardwareProfile, name: str) -> float:
    """Cycles of one scalar ``name`` op from the profile (InputError naming it when missing)."""
    _known(name, KERNEL_SCALAR_OPS, "scalar cost")
    if name not in hw.scalar:
        raise profile_error(hw, ("scalar",), f"hardware profile {hw.reference} has no scalar cost {name!r}, which this "
                            f"kernel needs (has {', '.join(sorted(hw.scalar))})")
    return float(hw.scalar[name])


def _known(name: str, needed: tuple, what: str) -> None:
    """A kernel may ask only for what profiles must have (``hardware.ops``): keep the list in step."""
    if name not in needed:
        raise AssertionError(f"kernel asks for {what} {name!r}: add it to autotile/hardware/ops.py")


def scalar_per_elem(hw: HardwareProfile, ops) -> float:
    """Cycles per element of a scalar loop body ``ops`` ((name, count) pairs).

    UB loads and stores issue beside ALU work (the profile's load/store note), so the body costs
    the busier of the two slots: max(sum of load/store cycles, sum of ALU cycles).
    """
    mem = sum(scalar_cost(hw, op) * k for op, k in ops if op in SCALAR_MEMORY_OPS)
    alu = sum(scalar_cost(hw, op) * k for op, k in ops if op not in SCALAR_MEMORY_OPS)
    return max(mem, alu)


def lanes(dtype: str, hw: HardwareProfile) -> int:
    """Elements of ``dtype`` per vector repeat."""
    return hw.vector_bytes_per_repeat // BYTES[dtype]


def ints(params: dict, names: tuple[str, ...]) -> dict:
    """Validate positive-integer params; raises InfeasibleConfig naming the bad one."""
    out = dict(params)
    for k in names:
        if k not in params:
            raise InfeasibleConfig(f"missing parameter {k!r}")
        v = params[k]
        if isinstance(v, bool) or not isinstance(v, (int, np.integer, float)) or int(v) != v or v < 1:
            raise InfeasibleConfig(f"{k}={v!r}, expected a positive integer")
        out[k] = int(v)
    return out


def check_shape(shape: dict, dims: tuple[str, ...]) -> None:
    """InfeasibleConfig naming the first of ``dims`` that is not a positive integer: a size of 0
    has no tiles (the tile counts divide by the tile, clamped to it) and nothing to index."""
    for d in dims:
        v = shape[d]
        try:
            ok = not isinstance(v, bool) and float(v).is_integer() and v >= 1
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise InfeasibleConfig(f"shape.{d}={v!r}, expected a positive integer")


def input_array(x, name: str, ndim: int) -> np.ndarray:
    """``x`` as an array of ``ndim`` dimensions of real numbers, else an InputError naming the
    input: execute mode indexes its inputs in Numba, which checks no bounds, so an array of
    another shape reads past its end."""
    a = np.asarray(x)
    if a.ndim != ndim:
        raise InputError(f"expected a {ndim}-D array, got shape {a.shape}", field=name)
    if a.dtype.kind not in "biuf":
        raise InputError(f"expected real numbers, got dtype {a.dtype}", field=name)
    return a


def same_length(arrays: dict) -> None:
    """InputError unless the 1-D ``arrays`` (name: array, the first one setting n) have one length."""
    (first, a), *rest = arrays.items()
    for name, b in rest:
        if b.shape[0] != a.shape[0]:
            raise InputError(f"expected {a.shape[0]} elements, as {first} has, got {b.shape[0]}", field=name)


def choice(params: dict, name: str, allowed: tuple) -> object:
    """A categorical param, validated."""
    v = params.get(name)
    if v not in allowed:
        raise InfeasibleConfig(f"{name}={v!r}, expected one of {allowed}")
    return v


def split(n: int, cores: int, align: int) -> list[tuple[int, int, int]]:
    """Split ``n`` elements over ``cores`` in ``align``-element granules.

    Returns core classes ``(count, length, first_start)``: cores of equal length are simulated
    once. Cores that would get nothing are not used (so the class counts may sum to fewer).
    """
    per = -(-n // cores)
    per = -(-per // align) * align
    full = n // per
    rest = n - full * per
    out = [(full, per, 0)] if full else []
    if rest:
        out.append((1, rest, full * per))
    return out


VERIFY_N = 1 << 22  # above this many elements, a 1-D tiling is verified on a smaller n
# elements (inputs and output) past which the gate does not execute a shape (``io_elements``):
# ~1 GiB of float64 each, and the comparison holds several such copies
MAX_IO_ELEMENTS = 1 << 27


def verify_shape_1d(shape: dict, params: dict) -> dict:
    """A smaller ``n`` with this tiling's structure, for verification of huge 1-D shapes.

    ``split`` gives every core but the last ``per`` elements and the last one ``per - d`` (d <
    16 x cores). Taking ``per - j x tile_len`` from every core keeps the same cores, the same
    tail tile on each (lengths stay equal modulo ``tile_len``), at least two whole tiles on every
    core and the last core short by the same ``d``: ``split`` of the new n gives exactly that.
    Shapes up to VERIFY_N elements, or with tiles too long to leave two per core, run as given.
    """
    n = int(shape["n"])
    if n <= VERIFY_N:
        return dict(shape)
    cores, tile = int(params.get("cores", 1)), int(params["tile_len"])
    per = align(-(-n // cores), 16)
    d = cores * per - n
    keep = per % tile + 2 * tile
    while keep - d < 2 * tile:  # the last core too keeps two whole tiles
        keep += tile
    if keep >= per:
        return dict(shape)
    return {**shape, "n": n - cores * (per - keep)}


def eps(dtype: str) -> float:
    """Unit roundoff of ``dtype`` (2**-11 for fp16)."""
    return get_dtype(dtype).unit_roundoff


SIGMAS = 6.0  # standard deviations a probabilistic rounding-error bound allows
# An fp32 accumulation's bound allows more: a running sum's rounding errors all scale with its
# own size, itself random, so the error is a mixture of Gaussians with heavier tails. Over 10**6
# draws of one fp32 running sum (32 to 4096 terms) 3e-5 of them fell beyond 6 model sigmas
# (the model's sigma is ~1.35x the real std), 7e-6 beyond 7, about 5x fewer per further sigma:
# ~1e-9 at 12. fp16 accumulators keep SIGMAS.
FP32_SIGMAS = 12.0


def sum_tolerance(n: int, dtype: str, acc: str, rms: float, rounded_products: bool,
                  adds: tuple[float, float] | None = None) -> tuple[float, float]:
    """(rtol, atol) for a sum of ``n`` zero-mean terms of root-mean-square ``rms`` (as the
    reductions' ``make_inputs`` draw them), accumulated in ``acc`` and rounded to ``dtype``.

    rtol covers the output's rounding. atol is a probabilistic bound (rounding errors taken as
    independent, a number of standard deviations) from the kernel's real order of additions, ``adds``
    (see ``AddOrder``: sum of k over the additions rounded to ``acc`` whose result holds k terms,
    and the same over additions rounded to fp32): rounding a partial s leaves an error of std at
    most u |s| / sqrt(3) (uniform within half an ulp), and a partial of k terms has
    E[s^2] = k rms^2, so the variance is u^2 rms^2 (sum of k) / 3 (errors are unbiased: the terms
    have mean 0, and a term lost to a large running sum is a zero-mean error of at most half an
    ulp too). The products rounded to ``dtype`` first (``rounded_products``) are n more roundings
    of one term each (u_dtype). Allowed: SIGMAS of the products' (independent, so Gaussian) and of
    an fp16 accumulation's error, FP32_SIGMAS of an fp32 accumulation's.

    Without ``adds`` (no tiling known), the loose bound of one sequential sum, which no correct
    tiling exceeds: n * u16 in fp16, SIGMAS * n * rms * u32 in fp32, plus SIGMAS * sqrt(n) * rms
    * u_dtype for rounded products.
    """
    u_out, u_acc = eps(dtype), eps(acc)
    if adds is None:
        products = SIGMAS * math.sqrt(n) * rms * u_out if rounded_products else 0.0
        accumulation = n * u_acc if acc == "fp16" else SIGMAS * n * rms * u_acc
        return 2 * u_out, products + accumulation + u_out
    sigmas = SIGMAS if acc == "fp16" else FP32_SIGMAS
    var = sigmas ** 2 * (u_acc ** 2 * adds[0] + eps("fp32") ** 2 * adds[1])
    if rounded_products:
        var += SIGMAS ** 2 * u_out ** 2 * n
    return 2 * u_out, rms * math.sqrt(var / 3.0) + u_out


def dot_error_sigma(a: np.ndarray, b: np.ndarray, products_rounded: bool, block: int = 64,
                    k_range: int | None = None) -> float:
    """The largest standard deviation, over the elements of ``a @ b`` (M x K by K x N), of the error
    of summing each element's K products in fp32. Every rounded partial s errs with a std of at
    most u |s| / sqrt(3) (uniform in half an ulp); ``products_rounded`` (fp32 inputs) adds each
    product's rounding, u |a b| / sqrt(3).

    With ``k_range`` (the kernels' order: a running sum over k, one by one into L0C or a VAXPY
    accumulator, in each range of ``k_range`` consecutive k, and the ranges' sums added up), the
    partials are the real ones (``_dot_rounding_var``): at 1 x 1 x 2**20 that allows 0.1 where
    the order-free bound below allowed 0.36 and passed a C missing its last product (0.15 off).
    The ranges' combine (split K's atomic adds, which land in any order) is bounded by the sum
    of the ranges' |sums| for each add.

    Without it, any order whose partial sums are sums of runs of consecutive k (a tree, slices):
    each of the K - 1 rounded partials is P_j - P_i for the element's exact prefix sums P, at most
    2 max_k |P_k|, bounded from the prefix sums at every ``block``-th k plus the next block's sum
    of |a b| (two small matmuls a block, not an M x N x K array). Both are from the data, not from
    |C| <= K: that bound grew as K^1.5 and at K = 65536 passed a C missing a product."""
    A, B = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    K = A.shape[1]
    if k_range is not None:
        var = _dot_rounding_var(np.ascontiguousarray(A), np.ascontiguousarray(B.T), max(1, int(k_range)),
                                products_rounded)
        return eps("fp32") * math.sqrt(var / 3.0)
    prefix = np.zeros((A.shape[0], B.shape[1]))
    peak = np.zeros_like(prefix)
    for k0 in range(0, K, block):
        a_, b_ = A[:, k0:k0 + block], B[k0:k0 + block]
        peak = np.maximum(peak, np.abs(prefix) + np.abs(a_) @ np.abs(b_))
        prefix += a_ @ b_
    var = max(K - 1, 0) * (2.0 * peak) ** 2
    if products_rounded:
        var += (A * A) @ (B * B)
    return eps("fp32") * math.sqrt(float(var.max(initial=0.0)) / 3.0)


@njit(cache=True)
def _dot_rounding_var(a, bt, k_range, products_rounded):
    """The largest, over the elements of a @ bt.T, sum of the squares of the partials a kernel
    summing each range of ``k_range`` k one by one rounds (each but its first term's), plus
    (``products_rounded``) of the products, plus per add of the ranges' combine the square of
    the sum of their |sums| so far (any order of the adds)."""
    M, K = a.shape
    N = bt.shape[0]
    worst = 0.0
    for i in range(M):
        for j in range(N):
            var = 0.0
            mags = 0.0
            for k0 in range(0, K, k_range):
                s = 0.0
                for k in range(k0, min(K, k0 + k_range)):
                    p = a[i, k] * bt[j, k]
                    s += p
                    if k > k0:
                        var += s * s
                    if products_rounded:
                        var += p * p
                mags += abs(s)
                if k0 > 0:
                    var += mags * mags
            worst = max(worst, var)
    return worst


# The error bound's VADD-tree lane width, in bytes: every bundled profile's repeat (tolerance() takes
# no profile; the kernels' cycles take the profile's). On a copy of the 910B2 with 32-byte repeats,
# global_sum and weighted_sum fp16 on the Vector (n 4096 to 300,000, tiles 256 to 8192, fp16 and
# fp32 accumulators, one core) all still verify under it.
REPEAT_BYTES = 256


class AddOrder:
    """The order in which a reduction adds its terms, as sums of k (terms in the result) over the
    rounded additions: ``acc`` for those rounded to the accumulator, ``fp32`` for the rest.
    The methods mirror the kernels' loops (``vadd_tree``, ``vcadd_exec``, the combines)."""

    def __init__(self):
        self.acc = 0.0
        self.fp32 = 0.0

    @property
    def adds(self) -> tuple[float, float]:
        return self.acc, self.fp32

    def lanes(self, L: int, tile: int, first_rounded: bool = False) -> np.ndarray:
        """Tiles of ``tile`` added into a min(tile, L)-wide accumulator, lane by lane: lane i
        holds ceil or floor(L / tile) terms added one by one (the first one onto nothing: exact
        unless ``first_rounded``, a term not already in the accumulator's type).
        Returns the lanes' term counts."""
        width = min(tile, L)
        counts = np.full(width, L // width, dtype=np.float64)
        counts[:L % width] += 1
        self.acc += float(np.sum(counts * (counts + 1) / 2 - (0 if first_rounded else 1)))
        return counts

    def tree(self, counts: np.ndarray, lanes: int) -> float:
        """``vadd_tree``: a VADD tree over the repeats of ``lanes``, then VCADD's pairwise tree
        within the last repeat; returns the terms in the result."""
        c = counts.copy()
        reps = (len(c) + lanes - 1) // lanes
        cnt = len(c)
        while reps > 1:
            h = reps // 2
            lo = (reps - h) * lanes
            m = min(h * lanes, cnt - lo)
            c[:m] += c[lo:lo + m]
            self.acc += float(c[:m].sum())
            reps -= h
            cnt = min(cnt, reps * lanes)
        return self.pairwise(c[:cnt])

    def pairwise(self, counts, fp32: bool = False) -> float:
        """``vcadd_exec``'s pairwise tree over ``counts``; returns the terms in the result."""
        c = np.array(counts, dtype=np.float64)
        m = len(c)
        while m > 1:
            h = m // 2
            c[:h] += c[m - h:m]
            self._add(float(c[:h].sum()), fp32)
            m -= h
        return float(c[0]) if len(c) else 0.0

    def sequential(self, counts, fp32: bool = False, first_rounded: bool = False) -> float:
        """A running sum over ``counts`` in order, starting from the first one (rounded too if
        ``first_rounded``: a partial not already in the sum's type); returns the terms in the
        result."""
        run = np.cumsum(np.asarray(counts, dtype=np.float64))
        self._add(float(run[0 if first_rounded else 1:].sum()), fp32)
        return float(run[-1]) if len(run) else 0.0

    def _add(self, k: float, fp32: bool) -> None:
        if fp32:
            self.fp32 += k
        else:
            self.acc += k


def core_adds(n: int, params: dict, core_sum) -> tuple[AddOrder, list[float]] | None:
    """Every core's additions of a 1-D reduction's tiling: ``core_sum(order, L, tile)`` records
    one core's (L elements) and returns the terms in its partial (a list where a core leaves
    several partials, the cube's 16 column sums). Returns (the cores' AddOrder, the partials'
    term counts in core order), or None if ``params`` do not give the tiling."""
    try:
        tile, cores = int(params["tile_len"]), int(params["cores"])
    except (KeyError, TypeError, ValueError):
        return None
    if tile < 1 or cores < 1:
        return None
    order, parts = AddOrder(), []
    for count, L, _ in split(n, cores, 16):
        core = AddOrder()
        k = core_sum(core, L, tile)
        order.acc += count * core.acc
        order.fp32 += count * core.fp32
        parts += [float(v) for v in np.atleast_1d(k)] * count
    return order, parts


def op_options(op: str, options: dict | None) -> dict:
    """Op ``op``'s options (the spec's ``inputs:``) with defaults, checked against the registry;
    the spec loader checks them the same way, with the file position."""
    try:
        return registry.get(op).check_options(options)
    except registry.OptionError as exc:
        raise InfeasibleConfig(f"options.{exc.key}: {exc}") from None


def on_chip(op: str, options: dict | None) -> bool:
    """The "data on chip" framing (published tables): inputs already in the unit's buffers
    (the whole of ``options`` is checked)."""
    return op_options(op, options)["data"] == "on_chip"


def core_slice(n: int, cores: int) -> int:
    """Elements of the largest slice a core gets of ``n`` (``split``'s 16-element granules)."""
    return split(n, cores, 16)[0][1]


def resident(buf: str, held: int, capacity: int, *, work: int = 0, what: str, n: int, per: int, dtype: str) -> int:
    """Bytes ``buf`` needs in the on-chip framing: ``held`` bytes of whole tensors (``what``: which,
    a core's ``per`` elements of ``n``) that the framing assumes already there, plus ``work`` bytes
    of the tiling's other buffers. A problem whose data the unit's buffers cannot hold is not on
    chip: InfeasibleConfig naming the buffer, the bytes and its capacity (the kernels took 8 MiB
    of fp32 operands as resident in a 64 KiB L0A, 0 GM bytes)."""
    need = held + work
    if need > capacity:
        where = f"n={n:,} {dtype}" if per >= n else f"a core's {per:,} elements of n={n:,} {dtype}"
        held_text = (f"{what} ({where}, {held:,} bytes) and the tiling's other buffers ({work:,} bytes)" if work
                     else f"{what} ({where})")
        raise InfeasibleConfig(f"data on_chip: {buf.upper()} must hold {held_text}, {need:,} bytes; "
                               f"{buf.upper()} holds {capacity:,} (inputs: {{data: gm}} streams them from GM)")
    return need


def new_state(trace_capacity: int = 0):
    """A fresh engine state (trace rows if asked)."""
    return E.new_state(trace_capacity)


def runs_and_traces(states: list, combine=None) -> tuple[list, list]:
    """The CoreRuns and traces of ``states`` ((state, count) per core class). ``combine(st)``, if
    given, runs on the first class's first core alone: the class's other cores are split off
    before it, so the combine's bytes and time count once, not once per core of that class
    (8 cores of one class wrote 8 x 32 B more than the one combining core does)."""
    states = list(states)
    apart = []
    if combine is not None:
        st0, count0 = states[0]
        if count0 > 1:
            apart = [(CoreRun.from_state(st0, count0 - 1), (count0 - 1, E.recorded(st0)))]
        combine(st0)
        states[0] = (st0, 1)
    pairs = [(CoreRun.from_state(st, count), (count, E.recorded(st))) for st, count in states]
    pairs[1:1] = apart
    return [r for r, _ in pairs], [t for _, t in pairs]


def fit_default(p: dict, check) -> dict:
    """A 1-D heuristic tiling ``p`` made to fit its buffers: ``tile_len`` down to the power of two
    below it, to 16, while ``check(p)`` raises InfeasibleConfig, then single-buffered from the
    first ``tile_len``. Fixed 8 KiB tiles x 2 buffers made every 1-D default infeasible with an
    8 KiB UB. Powers of two stay on a spec's pow2 domain. ``p`` unchanged if nothing fits."""
    for depth in (p["buffer_num"], 1):
        q = {**p, "buffer_num": depth}
        while True:
            try:
                check(q)
                return q
            except InfeasibleConfig:
                if q["tile_len"] <= 16:
                    break
                q["tile_len"] = max(16, 1 << (q["tile_len"] - 1).bit_length() - 1)
    return p


def first_fitting(attempts) -> dict:
    """The params of the first of ``attempts`` ((params, fits) pairs, tried lazily in turn) that
    fits, else those of the first: a default that fits nothing stays the plain heuristic."""
    first = None
    for params, fits in attempts:
        if fits:
            return params
        first = params if first is None else first
    return first


def check_capacity(bufs: dict) -> None:
    """Raise InfeasibleConfig naming the first buffer whose use exceeds its capacity."""
    for name, b in bufs.items():
        if b["used"] > b["capacity"]:
            raise InfeasibleConfig(f"{name.upper()} overflow: the tiling needs {b['used']} bytes, "
                                   f"{name.upper()} holds {b['capacity']}")


def check_spread(p: dict, hw: HardwareProfile, *, max_cores: int, unit: str, work: int, what: str) -> None:
    """``buffer_num`` within the engine's queue depth, ``cores`` within the unit's cores and
    within the ``work`` items (``what``) there are to share."""
    if p["buffer_num"] > E.MAX_DEPTH:
        raise InfeasibleConfig(f"buffer_num={p['buffer_num']} exceeds {E.MAX_DEPTH}")
    if p["cores"] > max_cores:
        raise InfeasibleConfig(f"cores={p['cores']} exceeds the {max_cores} {unit} cores of {hw.name}")
    if p["cores"] > work:
        raise InfeasibleConfig(f"cores={p['cores']} exceeds the {work} {what}")


# Elements a core must get before a 1-D default tiling spreads to one more core. The Scalar unit
# is compute-bound (7-13 cycles an element for sigmoid) and gains from every core down to tiny
# slices; the Vector streams at HBM rate but still gains down to ~128 elements a core, also
# where a reduction's partials are combined across cores, once it spreads at all (the combine
# costs 400-800 cycles: a Vector reduction waits for VECTOR_SPREAD_BYTES read, a Scalar one for
# SCALAR_SPREAD_CYCLES of work); the
# Cube's reductions pay the same combine and more per Mmad, so ~4096 (weighted_sum's Cube has its
# own rule, ``weighted_sum.CUBE_SPREAD_BYTES``). bench/default_cores.py
# (fp32): at n = 1 Mi every op and unit within 1.01x of its best core count (the per-op 16-64 Ki
# rules, snapped to powers of two, left up to 2.9x: weighted_sum's Scalar on 16 of 48 cores);
# at 64 Ki within 1.17x (was up to 31x).
MIN_SLICE = {"scalar": 32, "vector": 128, "cube": 4096}
MIN_SLICE_COMBINED = {"scalar": 32, "vector": 128, "cube": 4096}
# A Vector reduction's default leaves one core only once it reads this many bytes: spreading costs
# a roughly fixed ~850 cycles (the combine of the partials, on any number of cores), which one
# core's loop reaches at ~16 KiB read (weighted_sum fp16 ~3,500 elements, fp32 ~2,050; global_sum
# fp16 ~6,000, fp32 ~4,200), and past it the cores should be many. One core per 1024 elements put
# weighted_sum fp16 n=2048 on 2 cores (983 cycles against 642 on one) and n=4096 on 4 (983
# against 868 on 32). bench/default_cores.py --tiles.
VECTOR_SPREAD_BYTES = 16384
# A Scalar reduction's default leaves one core only once its S-pipe loop takes this many cycles
# (n times the loop's cycles an element): its slices may be 32 elements, but combining any number
# of partials costs ~400 cycles. bench/default_cores.py --tiles (fp32, n = 64 to 4096): below it
# one core beats every spread; weighted_sum (2 cycles an element) spreads from 256, where 8 cores
# run 895 cycles against 890 on one, global_sum (1) from 512, 826 on 16 against 847. One core per
# 32 elements alone put n = 64 on 2 cores: weighted_sum 889 cycles against 470 on one (1.9x),
# global_sum 811 against 357 (2.3x).
SCALAR_SPREAD_CYCLES = 512


def default_cores(n: int, unit: str, hw: HardwareProfile, combined: bool = False,
                  scalar_elem: float = 0.0, read_bytes: int = 0) -> int:
    """Cores of a 1-D default tiling over ``n`` elements on ``unit``: one per ``MIN_SLICE``
    elements (``MIN_SLICE_COMBINED`` when the cores' partials are combined), up to every core
    of the unit, not the power of two below it (32 of 48 left sigmoid's Scalar 1.49x slower).
    A combined Scalar reduction whose loop costs ``scalar_elem`` cycles an element stays on one
    core until the loop reaches ``SCALAR_SPREAD_CYCLES``; a combined Vector reduction reading
    ``read_bytes`` stays there until they reach ``VECTOR_SPREAD_BYTES``."""
    most = hw.cube_cores if unit == "cube" else hw.vector_cores
    if combined and unit == "scalar" and n * scalar_elem < SCALAR_SPREAD_CYCLES:
        return 1
    if combined and unit == "vector" and read_bytes < VECTOR_SPREAD_BYTES:
        return 1
    per = (MIN_SLICE_COMBINED if combined else MIN_SLICE).get(unit, MIN_SLICE["vector"])
    return max(1, min(most, n // per))


# A core that streams its slice in and back out overlaps a tile's load, compute and store only
# when it has several tiles; one 8 KiB tile a core (sigmoid fp16 at 256 Ki elements on 48 cores)
# ran load -> compute -> store back to back, 1.34x the best tiling. Tiles below 2 KiB spend more
# on each copy's fixed cost than the overlap wins. bench/default_cores.py --tiles.
STREAM_TILES = 6
STREAM_MIN_TILE_BYTES = 2048
STREAM_MAX_TILE_BYTES = 8192


def stream_tile(per: int, nbytes: int) -> int:
    """Default ``tile_len`` for a core streaming ``per`` elements of ``nbytes`` each in and out:
    ``STREAM_TILES`` tiles a core where that leaves tiles of at least ``STREAM_MIN_TILE_BYTES``,
    never over ``STREAM_MAX_TILE_BYTES`` nor the slice, 16-element aligned. A slice of 1.5 to 2.5
    KiB takes tiles of half that size: one tile, or one of 2 KiB and a short rest, left little
    overlap (sigmoid fp16 at 48 Ki elements on 48 cores: 813 cycles in one tile against 711 in
    two of 1 KiB); below 1.5 KiB a second tile costs more than it overlaps, and from 2.5 KiB 2 KiB
    and a rest of half that or more overlap as well. Both sizes are powers of two in every dtype,
    so a spec's power-of-two ``tile_len`` keeps them. bench/default_cores.py --tiles."""
    whole = align(per, 16)
    half = STREAM_MIN_TILE_BYTES // 2
    least = half if 3 * half // 2 <= per * nbytes < 5 * half // 2 else STREAM_MIN_TILE_BYTES
    return min(whole, max(least // nbytes, align(-(-per // STREAM_TILES), 16)), STREAM_MAX_TILE_BYTES // nbytes)


def busy_cores(tiles: int, max_cores: int) -> int:
    """The fewest cores that still take ceil(tiles / cores) tiles each: a kernel giving each core a
    contiguous run of that many tiles leaves the cores past ``tiles / run`` idle, so asking for
    more only launches blocks with no work."""
    run = -(-tiles // min(max_cores, tiles))
    return -(-tiles // run)


def align(a: int, b: int) -> int:
    """``a`` rounded up to a multiple of ``b``."""
    return -(-a // b) * b


def unit_of(unit: str | None, units: tuple) -> str:
    """The requested unit (default: the first of ``units``), or InfeasibleConfig if it has no kernel."""
    unit = unit or units[0]
    if unit not in units:
        raise InfeasibleConfig(f"unit={unit!r}, expected one of {units}")
    return unit
