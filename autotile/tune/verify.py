"""The verification gate: a configuration enters a table only after the kernel, in execute mode
on real inputs, matches the NumPy reference within the dtype's tolerance.

Where the full shape would take too long to execute, the kernel's ``verify_shape`` gives a
reduced shape that keeps the tiling's tail blocks and its multi-core split; the record says so.
Kernels declare ``io_elements(shape)``, and a shape whose data would not fit in memory is not
executed: the gate stops there and the candidate is the pick, not verified, with that reason
(``Verification.unverified``; so is one that runs out of memory in execute mode), rather than a
study without a result as if it had disagreed with the reference.
A failing configuration is logged and the next best is tried, down the ranking until one passes
(a space's fastest configurations may all be inexact variants, the accurate ones further down) or
``MAX_EXECUTED`` have run. A candidate whose study recorded an error on these same inputs beyond
anything the tolerance allows is rejected without running it; nothing else is guessed.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, field

import numpy as np

from autotile.errors import InfeasibleConfig
from autotile.kernels._common import MAX_IO_ELEMENTS

log = logging.getLogger("autotile.verify")
# MAX_IO_ELEMENTS: larger runs are not executed (a kernel's ``io_elements``)

# candidates the gate executes per study before it gives up. studies/sigmoid.yaml tuned by cycles
# alone (80 configurations a study, most of them lut or poly) has its first accurate Scalar
# configuration at rank 43 to 59 now that lut_linear fails on the tails (32 left six of the nine
# with no result when it was 25 to 53). A kernel wrong on every
# tiling costs this many runs: ~3.5 s each for the 4096^3 matmul, 0.1 s for a 1 Mi sigmoid
MAX_EXECUTED = 64
# values (the output's or the largest input's elements) a candidate is checked on at least: a small
# shape runs again on the next seeds. At n = 1 a bf16 poly sigmoid (~2% off) passed on its one
# drawn element; at most MAX_RUNS runs (n = 1: 1024 values, 0.35 to 1.2 s a passing candidate
# on a busy 2-core machine; a failing one stops at its first failing run)
MIN_CHECKED = 4096
MAX_RUNS = 1024
# candidates the gate looks at per study, run or rejected unrun: bounds the rejected list a summary keeps
MAX_CONSIDERED = 4 * MAX_EXECUTED


@dataclass(frozen=True)
class Verification:
    """How one configuration fared against the reference."""

    passed: bool
    shape: dict  # the shape actually executed
    reduced: bool
    max_abs_error: float | None  # None when not executed for size or memory
    # over the elements whose reference exceeds atol in magnitude (0 when none does): where |ref| <= atol
    # the absolute term decides, and a reference of rounding residue (1e-30) gave relative errors of 1e+26;
    # None when not executed and unknown
    max_rel_error: float | None
    rtol: float
    atol: float
    reason: str | None = None
    executed: bool = True  # False: rejected on the error its study recorded, without running
    runs: int = 1  # input sets executed: small shapes run on several seeds (MIN_CHECKED)
    # the error its study recorded, which an element may reach where it exceeds the dtype's tolerance
    # (studies that trade accuracy; plus the kernel's TAIL_ERROR on its tail inputs), or None
    claimed: float | None = None
    # why the gate could not check it at all (too large to execute in verification, or out of
    # memory there), or None: such a candidate neither passed nor disagreed
    unverified: str | None = None
    # whether an element it ran on needed ``claimed``: off by more than atol + rtol x |ref| and, on
    # the tails, by more than TAIL_ERROR alone (the tail allowance, which a recorded 0 also gets); None
    # when it did not run (and in summaries made before it was recorded): an exact variant passes on
    # the tolerance, an approximate one on its claim
    beyond_tolerance: bool | None = None

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class GateResult:
    """The first configuration that passed, the ones rejected before it, and how far it went."""

    params: dict | None
    rank: int | None  # index in the candidate list
    verification: Verification | None
    rejected: list = field(default_factory=list)  # [(params, Verification)]
    executed: int = 0  # candidates run in execute mode, the pick included
    candidates: int = 0  # how many the study offered
    limit: int = MAX_EXECUTED
    considered: int = MAX_CONSIDERED
    capped: bool = False  # stopped at ``limit`` runs or ``considered`` candidates with some left untried

    def to_json(self) -> dict:
        """What the summary records: the pick's 1-based rank (None when none passed), the
        candidates run and those rejected unrun, and whether the cap stopped the search."""
        return {"rank": None if self.rank is None else self.rank + 1, "candidates": self.candidates,
                "executed": self.executed, "not_executed": sum(1 for _, v in self.rejected if not v.executed),
                "limit": self.limit, "considered": self.considered, "capped": self.capped}


def execute_shape(kernel, shape: dict, params: dict) -> tuple[dict, str | None]:
    """The shape execute mode runs for ``params`` (the kernel's ``verify_shape``: huge shapes run
    smaller with the same tiling structure), and why it must not run (its data would exceed
    MAX_IO_ELEMENTS by the kernel's ``io_elements``) or None."""
    reduce_fn = getattr(kernel, "verify_shape", None)
    run_shape = reduce_fn(shape, params) if reduce_fn is not None else dict(shape)
    size = getattr(kernel, "io_elements", None)
    if size is not None and size(run_shape) > MAX_IO_ELEMENTS:
        return run_shape, (f"inputs and output hold {size(run_shape):,} elements, more than the "
                           f"{MAX_IO_ELEMENTS:,} execute mode runs")
    return run_shape, None


def verify_one(kernel, shape: dict, params: dict, dtype: str, hw, *, unit=None, options=None,
               seed: int = 0, claimed_abs_error: float | None = None,
               recorded_abs_error: float | None = None, min_checked: int = MIN_CHECKED) -> Verification:
    """Execute ``params`` on inputs of ``shape`` (or the kernel's reduced shape) and compare.

    The first input set is ``make_inputs`` at ``seed``; a small shape runs again on the next
    seeds until ``min_checked`` values are checked (at most MAX_RUNS sets: one drawn element said
    nothing of a variant 2% off), and a kernel with ``tail_inputs`` (sigmoid) also runs once on
    inputs beyond make_inputs' range (a table clamped at its ends passed as exact).
    ``claimed_abs_error``: for studies that trade accuracy (an error objective), the error the
    study recorded for this configuration: an element passes within it or within the dtype's
    tolerance (an exact variant is not held to the 0 it recorded on one element), so the entry
    must be as accurate as the table says on every input set, rather than exact; on
    ``tail_inputs`` the kernel's ``TAIL_ERROR`` is added (the recorded error is over make_inputs'
    range only).
    ``recorded_abs_error``: the max abs error the study measured on these same inputs (shape,
    seed 0, options), or None. When it is not finite, or exceeds atol + rtol x max|ref| (the most
    the tolerance allows on any element), the run would fail: rejected without executing.
    """
    run_shape, too_large = execute_shape(kernel, shape, params)
    reduced = run_shape != dict(shape)
    tails = getattr(kernel, "tail_inputs", None)

    def tolerance(inputs=None):
        return kernel.tolerance(dtype, run_shape, params, unit, inputs=inputs)

    def claim(tail: bool) -> float:  # 0.0: none
        if claimed_abs_error is None:
            return 0.0
        return claimed_abs_error * (1 + 1e-6) + (kernel.TAIL_ERROR if tail else 0.0)

    if recorded_abs_error is not None and not math.isfinite(recorded_abs_error):
        return Verification(False, run_shape, reduced, float("inf"), float("inf"), *tolerance(),
                            "not executed: its study recorded a non-finite error on these inputs",
                            executed=False, claimed=claimed_abs_error)
    if too_large:
        why = f"too large to execute in verification: {too_large}; verify a smaller shape"
        return Verification(False, run_shape, reduced, None, None, *tolerance(), why, executed=False,
                            claimed=claimed_abs_error, unverified=why)
    try:
        return _execute_runs(kernel, run_shape, reduced, params, dtype, hw, unit, options, seed, tails,
                             tolerance, claim, claimed_abs_error, recorded_abs_error, min_checked)
    except MemoryError as exc:  # its arrays are freed with its frame; the other studies go on
        why = f"out of memory in verification: {exc or 'MemoryError'}"
        return Verification(False, run_shape, reduced, None, None, *tolerance(), why, executed=False,
                            claimed=claimed_abs_error, unverified=why)


def _execute_runs(kernel, run_shape, reduced, params, dtype, hw, unit, options, seed, tails, tolerance, claim,
                  claimed_abs_error, recorded_abs_error, min_checked) -> Verification:
    """``verify_one``'s runs on ``run_shape``: input sets until ``min_checked`` values, or the first failure."""
    worst = None  # (max_abs, max_rel, rtol, atol, reason) of the first failing run, else of the first run
    checked, runs, beyond = 0, 0, False
    while runs == 0 or (runs < MAX_RUNS and (checked < min_checked or (tails is not None and runs < 2))):
        tail = tails is not None and runs % 2 == 1  # every other extra run: the tails
        try:
            make = tails if tail else kernel.make_inputs
            inputs = make(run_shape, dtype, seed + runs, options=options)
            want = np.asarray(kernel.reference(inputs, dtype, options=options), dtype=np.float64)
            rtol, atol = tolerance(inputs)  # once a run: matmul's is a pass over A and B
            if runs == 0 and recorded_abs_error is not None:
                allowed = max(claim(False), atol + rtol * float(np.abs(want).max(initial=0.0)))
                if recorded_abs_error > allowed:
                    return Verification(False, run_shape, reduced, recorded_abs_error, None, rtol, atol,
                                        f"not executed: its study recorded max abs error {recorded_abs_error:.3g} "
                                        f"on these inputs, above the {allowed:.3g} the tolerance allows "
                                        f"anywhere (atol + rtol x max|ref|)", executed=False,
                                        claimed=claimed_abs_error)
            got = np.asarray(kernel.execute(inputs, params, dtype, hw, unit=unit, options=options),
                             dtype=np.float64)
        except InfeasibleConfig as exc:
            return Verification(False, run_shape, reduced, float("inf"), float("inf"), *tolerance(),
                                exc.reason, runs=runs + 1, claimed=claimed_abs_error)
        runs += 1
        checked += max([want.size, *(np.size(a) for a in inputs)])
        if got.shape != want.shape:
            return Verification(False, run_shape, reduced, float("inf"), float("inf"), rtol, atol,
                                f"output shape {got.shape} != reference {want.shape}", runs=runs,
                                claimed=claimed_abs_error)
        diff = np.abs(got - want)
        finite = np.isfinite(got).all()
        max_abs = float(diff.max(initial=0.0)) if finite else float("inf")
        max_rel = rel_error(diff, want, atol) if finite else float("inf")
        free = atol + rtol * np.abs(want)  # what passes without the recorded error
        if tail and claimed_abs_error is not None:  # the tail allowance alone, no recorded error
            free = np.maximum(free, kernel.TAIL_ERROR)
        within = diff <= free
        ok = bool(finite and np.all(within | (diff <= claim(tail))))
        beyond = beyond or not (finite and bool(within.all()))
        where = "" if runs == 1 else f" on input set {runs} ({'tails' if tail else f'seed {seed + runs - 1}'})"
        held = f" and the recorded error {claim(tail):.3g}" if claimed_abs_error is not None else ""
        reason = None if ok else (f"max abs error {max_abs:.3g}{where} exceeds the tolerance "
                                  f"(rtol {rtol:.3g}, atol {atol:.3g}){held}")
        if worst is None:
            worst = [max_abs, max_rel, rtol, atol, reason]
        else:
            worst[0], worst[1] = max(worst[0], max_abs), max(worst[1], max_rel)
        if not ok:
            worst[2:] = rtol, atol, reason
            break
    return Verification(worst[4] is None, run_shape, reduced, *worst, runs=runs, claimed=claimed_abs_error,
                        beyond_tolerance=beyond)


def rel_error(diff: np.ndarray, want: np.ndarray, atol: float) -> float:
    """The largest |out - ref| / |ref| over the elements with |ref| > atol (and ref nonzero); 0.0
    when there are none. Elsewhere the tolerance is atol's, and dividing by a reference near zero
    (interpolation residue of 1e-30) reports a meaningless 1e+26.

    >>> rel_error(np.array([1e-3, 1e-3]), np.array([1e-30, 0.5]), 5e-3)
    0.002
    """
    mag = np.abs(want)
    keep = (mag > atol) & (mag > 0)
    return float((diff[keep] / mag[keep]).max(initial=0.0))


def gate(kernel, shape: dict, candidates: list[dict], dtype: str, hw, *, unit=None, options=None,
         limit: int = MAX_EXECUTED, considered: int = MAX_CONSIDERED, claimed: list | None = None,
         recorded: list | None = None) -> GateResult:
    """Verify candidates best first; the first that passes wins. Up to ``limit`` are executed
    (those rejected without running do not count) and up to ``considered`` looked at. A candidate
    the gate cannot check (``Verification.unverified``: too large, out of memory) ends the search
    as the pick, not verified: the next ones are as large, and not known to disagree either.

    ``claimed``: per candidate, the max absolute error that is its tolerance (studies that trade
    accuracy), or None. ``recorded``: per candidate, the max absolute error its study measured,
    or None (see ``verify_one``).
    """
    result = GateResult(None, None, None, candidates=len(candidates), limit=limit, considered=considered)
    for rank, params in enumerate(candidates):
        if result.executed >= limit or rank >= considered:
            result.capped = True
            break
        v = verify_one(kernel, shape, params, dtype, hw, unit=unit, options=options,
                       claimed_abs_error=claimed[rank] if claimed else None,
                       recorded_abs_error=recorded[rank] if recorded else None)
        result.executed += v.executed
        if v.passed or v.unverified:
            result.params, result.rank, result.verification = params, rank, v
            break
        log.info("verification rejected %s: %s", params, v.reason)
        result.rejected.append((params, v))
    if result.rejected:
        log.warning("verification rejected %d candidate(s) (%d executed) %s; the first: %s",
                    len(result.rejected), result.executed - (result.params is not None),
                    f"before rank {result.rank + 1}" if result.params is not None else "and none passed",
                    result.rejected[0][1].reason)
    return result
