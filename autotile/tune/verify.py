"""The verification gate: a configuration enters a table only after the kernel, in execute mode
on real inputs, matches the NumPy reference within the dtype's tolerance.

Where the full shape would take too long to execute, the kernel's ``verify_shape`` gives a
reduced shape that keeps the tiling's tail blocks and its multi-core split; the record says so.
Kernels without one declare ``io_elements(shape)``, and a shape whose data would not fit in
memory fails the gate with that reason instead of being executed.
A failing configuration is logged and the next best is tried.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np

from autotile.errors import InfeasibleConfig

log = logging.getLogger("autotile.verify")

MAX_IO_ELEMENTS = 1 << 27  # ~1 GiB of float64: larger runs are not executed (a kernel's ``io_elements``)


@dataclass(frozen=True)
class Verification:
    """How one configuration fared against the reference."""

    passed: bool
    shape: dict  # the shape actually executed
    reduced: bool
    max_abs_error: float
    # over the elements whose reference exceeds atol in magnitude (0 when none does): where |ref| <= atol
    # the absolute term decides, and a reference of rounding residue (1e-30) gave relative errors of 1e+26
    max_rel_error: float
    rtol: float
    atol: float
    reason: str | None = None

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass
class GateResult:
    """The first configuration that passed, and the ones rejected before it."""

    params: dict | None
    rank: int | None  # index in the candidate list
    verification: Verification | None
    rejected: list = field(default_factory=list)  # [(params, Verification)]


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
               seed: int = 0, claimed_abs_error: float | None = None) -> Verification:
    """Execute ``params`` on inputs of ``shape`` (or the kernel's reduced shape) and compare.

    ``claimed_abs_error``: for studies that trade accuracy (an error objective), the error the
    study recorded for this configuration becomes the tolerance: the entry must be as accurate
    as the table says, rather than exact.
    """
    run_shape, too_large = execute_shape(kernel, shape, params)
    reduced = run_shape != dict(shape)

    def tolerance(inputs=None):
        rtol, atol = kernel.tolerance(dtype, run_shape, params, unit, inputs=inputs)
        return (0.0, max(atol, claimed_abs_error * (1 + 1e-6))) if claimed_abs_error is not None else (rtol, atol)

    if too_large:
        return Verification(False, run_shape, reduced, float("inf"), float("inf"), *tolerance(),
                            f"not executed: {too_large}; verify a smaller shape")
    try:
        inputs = kernel.make_inputs(run_shape, dtype, seed, options=options)
        got = np.asarray(kernel.execute(inputs, params, dtype, hw, unit=unit, options=options), dtype=np.float64)
        want = np.asarray(kernel.reference(inputs, dtype, options=options), dtype=np.float64)
    except InfeasibleConfig as exc:
        return Verification(False, run_shape, reduced, float("inf"), float("inf"), *tolerance(), exc.reason)
    rtol, atol = tolerance(inputs)
    if got.shape != want.shape:
        return Verification(False, run_shape, reduced, float("inf"), float("inf"), rtol, atol,
                            f"output shape {got.shape} != reference {want.shape}")
    diff = np.abs(got - want)
    finite = np.isfinite(got).all()
    max_abs = float(diff.max(initial=0.0)) if finite else float("inf")
    max_rel = rel_error(diff, want, atol) if finite else float("inf")
    ok = bool(finite and np.all(diff <= atol + rtol * np.abs(want)))
    reason = None if ok else (f"max abs error {max_abs:.3g} exceeds the tolerance "
                              f"(rtol {rtol:.3g}, atol {atol:.3g})")
    return Verification(ok, run_shape, reduced, max_abs, max_rel, rtol, atol, reason)


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
         limit: int = 5, claimed: list | None = None) -> GateResult:
    """Verify candidates best first; the first that passes wins (at most ``limit`` tried).

    ``claimed``: per candidate, the max absolute error its study recorded (or None).
    """
    result = GateResult(None, None, None)
    for rank, params in enumerate(candidates[:limit]):
        v = verify_one(kernel, shape, params, dtype, hw, unit=unit, options=options,
                       claimed_abs_error=claimed[rank] if claimed else None)
        if v.passed:
            result.params, result.rank, result.verification = params, rank, v
            return result
        log.warning("verification rejected %s: %s", params, v.reason)
        result.rejected.append((params, v))
    return result
