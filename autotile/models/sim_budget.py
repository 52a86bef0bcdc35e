"""What simulating one candidate tiling would cost, so the model fallback of a lookup stays
bounded: the simulator's time grows with the loop nest (a matmul of 100000^3 takes tens of
seconds a configuration), while ranking by the model takes the same ~2 s at any size.

The rates were measured on the 2-core machine this project targets: a matmul Cube
configuration costs ~0.22 us per L0 step of one core (``matmul_physics``'s ``mm.steps``; 1.2e6
steps: 0.27 s), a 1-D op ~24 ps per element (weighted_sum, n = 1e12: 23 s), resize up to
~0.21 ns per output element (1.1e-10 to 2.1e-10 s of CPU over five shapes of 25e6 to 9e8 outputs,
NHWC the dearest; 1 x 1 to 1e6 x 1e6 pixels: 110 s, charged 25 s, and 1000 x 1000 to 30000 x 30000,
charged 6 hours for 0.12 s, when it paid per element of all its dims). Other ops and units are
charged per element of their largest tensor dimension product, which errs high.
"""

from __future__ import annotations

import math

BUDGET_S = 2.0  # simulated verification a lookup may spend on the model's candidates
SECONDS_PER_STEP = 2.5e-7
SECONDS_PER_ELEMENT = 2.5e-11
RESIZE_SECONDS_PER_OUTPUT = 2.1e-10


def estimate_seconds(op: str, shape: dict, dtype: str, unit: str, params: dict, backend: str = "sim") -> float:
    """Rough seconds to score ``params`` on ``backend`` (recorded measurements: free)."""
    if backend == "replay":
        return 0.0
    if op == "matmul" and unit == "cube":
        from autotile.models.features import matmul_physics

        try:
            steps = 2.0 ** matmul_physics(shape, dtype, params)["mm.steps.log2"]
        except (KeyError, TypeError, ValueError, ZeroDivisionError):
            steps = math.prod(shape.values()) / 16 ** 3
        return steps * SECONDS_PER_STEP
    if op == "resize":  # the output's elements: the input's size barely matters
        return math.prod(int(shape[d]) for d in ("n", "c", "h_out", "w_out")) * RESIZE_SECONDS_PER_OUTPUT
    return math.prod(int(v) for v in shape.values()) * SECONDS_PER_ELEMENT
