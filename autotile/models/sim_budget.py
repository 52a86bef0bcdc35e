"""What simulating one candidate tiling would cost, so the model fallback of a lookup stays
bounded: the simulator's time grows with the loop nest (a matmul of 100000^3 takes tens of
seconds a configuration), while ranking by the model takes the same ~2 s at any size.

The rates were measured on the 2-core machine this project targets: a matmul Cube
configuration costs ~0.22 us per L0 step of one core (``matmul_physics``'s ``mm.steps``; 1.2e6
steps: 0.27 s), a 1-D op ~24 ps per element (weighted_sum, n = 1e12: 23 s). resize follows its
loop nest (``resize.count_work``), not its outputs: a least-squares fit over 50 runs (1e5 to
4e8 outputs, both modes and layouts, default tilings) gave ~0.15 us a tile, ~0.19 us a DataCopy,
~0.02 us a row or pixel vector op, 0.15 (bilinear) / 0.11 (nearest) us an output row or column
indexed on the host and ~1 ns a source row cleared per core; the rates below are about twice
those, since the fit missed by up to 3x on this shared machine. Charged 0.21 ns an output, a
resize of h_out = 10^7 rows and one column was estimated at 2 ms and took 4 s (and at
h_out = 2^31-1 ran out of memory: ``resize_sizing`` refuses such shapes, estimated here as
never finishing). Other ops and units are charged per element of their largest tensor dimension
product, which errs high.
"""

from __future__ import annotations

import math

BUDGET_S = 2.0  # simulated verification a lookup may spend on the model's candidates
SECONDS_PER_STEP = 2.5e-7
SECONDS_PER_ELEMENT = 2.5e-11
# resize, per unit of ``resize.count_work``
RESIZE_SECONDS = {"tiles": 3e-7, "copies": 4e-7, "row_ops": 4e-8, "marks": 2e-9}
RESIZE_TABLE_SECONDS = {True: 3e-7, False: 2.2e-7}  # per output row or column; bilinear, nearest


def too_long(est: float, budget: float, what: str = "it") -> str:
    """Why a simulation estimated at ``est`` seconds is not run within ``budget``."""
    if math.isinf(est):
        return "the shape is too large to simulate (its count mode would not fit in memory)"
    return f"simulating {what} would take ~{est:.3g} s, over the {budget:g} s budget"


def estimate_seconds(op: str, shape: dict, dtype: str, unit: str, params: dict, backend: str = "sim",
                     options: dict | None = None) -> float:
    """Rough seconds to score ``params`` on ``backend`` (recorded measurements: free); infinite
    where the op's ``shape_check`` says the simulator cannot hold ``shape`` at all. ``options``:
    the spec's ``inputs:`` (resize's mode and layout; without them the dearest is assumed)."""
    if backend == "replay":
        return 0.0
    from autotile.kernels import registry

    if op in registry.OPS and registry.get(op).shape_problem(shape) is not None:
        return math.inf
    if op == "matmul" and unit == "cube":
        from autotile.models.features import matmul_physics

        try:
            steps = 2.0 ** matmul_physics(shape, dtype, params)["mm.steps.log2"]
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            steps = math.prod(shape.values()) / 16 ** 3
        return steps * SECONDS_PER_STEP
    if op == "resize":
        return _resize_seconds(shape, dtype, params, options)
    return math.prod(int(v) for v in shape.values()) * SECONDS_PER_ELEMENT


def _resize_seconds(shape: dict, dtype: str, params: dict, options: dict | None) -> float:
    """resize's count mode at ``params`` (its default tiling where they are not a valid tiling),
    by the work its loop nest does; without ``options``, the dearest mode and layout."""
    from autotile.errors import InfeasibleConfig
    from autotile.hardware import load_profile
    from autotile.kernels import resize

    if options is None:
        return max(_resize_seconds(shape, dtype, params, {"mode": m, "layout": lay})
                   for m in ("nearest", "bilinear") for lay in ("NCHW", "NHWC"))
    try:
        work = resize.count_work(shape, params, dtype, options)
    except (InfeasibleConfig, KeyError):
        work = resize.count_work(shape, resize.default_params(shape, dtype, load_profile(), options=options),
                                 dtype, options)
    return (sum(rate * work[k] for k, rate in RESIZE_SECONDS.items())
            + RESIZE_TABLE_SECONDS[work["bilinear"]] * work["tables"])
