"""How close correct matmul tilings come to the verification tolerance, and whether it catches a
missing product: random feasible tilings (split K, both iterate orders, every float dtype, both
units) on random shapes with long K.

    PYTHONPATH=. python bench/matmul_tolerance.py [--cases N] [--seed S]

For each case: the fp32 accumulator's error before the output's rounding (``to_output`` made the
identity) against the tolerance's accumulation term (FP32_SIGMAS x ``dot_error_sigma`` over the
tiling's K ranges), and the gate's verdict on the real kernel. Prints JSON: the worst ratio (must
stay well under 1), how many cases the gate failed (must be 0), and per dtype how often a C
missing one product (the last k) still passed.
"""

from __future__ import annotations

import argparse
import json
import types

import numpy as np

from autotile.errors import InfeasibleConfig
from autotile.hardware import load_profile
from autotile.kernels import _common as C
from autotile.kernels import matmul as mm
from autotile.tune.verify import verify_one


def random_case(rng, hw):
    """A shape (K up to 2**17) and a feasible tiling of it, or None."""
    dtype = str(rng.choice(["fp16", "bf16", "fp32"]))
    shape = {"m": int(rng.integers(1, 70)), "n": int(rng.integers(1, 70)),
             "k": int(np.exp(rng.uniform(np.log(16), np.log(1 << 17))))}
    if shape["m"] * shape["n"] * shape["k"] > 4e7:
        return None
    if rng.random() < 0.2 and shape["m"] <= 64:
        params = {"tile_m": int(2 ** rng.integers(0, 5)), "buffer_num": int(rng.integers(1, 3)),
                  "cores": int(2 ** rng.integers(0, 4))}
        unit = "vector"
    else:
        bm, bn = (int(rng.choice([16, 32, 48, 64])) for _ in range(2))
        bk = int(rng.choice([16, 32, 64]))
        ska = int(rng.integers(1, 3))
        params = {"base_m": bm, "base_n": bn, "base_k": bk, "step_m": 1, "step_n": 1, "step_ka": ska,
                  "step_kb": int(rng.integers(1, 3)), "depth_a1": ska * int(rng.integers(1, 3)),
                  "depth_b1": 2, "db_l0a": int(rng.integers(1, 3)), "db_l0b": 2, "db_l0c": int(rng.integers(1, 3)),
                  "iterate_order": str(rng.choice(mm.ORDERS)),
                  "single_core_m": bm * int(rng.integers(1, 3)), "single_core_n": bn * int(rng.integers(1, 3)),
                  "single_core_k": bk * int(np.exp(rng.uniform(0, np.log(max(1, shape["k"] // bk) + 1))))}
        unit = "cube"
    try:
        if unit == "cube":
            mm.check(shape, params, dtype, hw)
        else:
            mm.matmul_vector.check(shape, params, dtype, hw)
    except InfeasibleConfig:
        return None
    return shape, dtype, unit, params


def _dropping_last():
    def execute(inputs, params, dtype, hw, **kw):
        a = inputs[0].copy()
        a[:, -1] = 0
        return mm.execute((a, inputs[1]), params, dtype, hw, **kw)

    kernel = types.SimpleNamespace(**{k: getattr(mm, k) for k in dir(mm) if not k.startswith("__")})
    kernel.execute = execute
    return kernel


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    hw = load_profile()
    rng = np.random.default_rng(args.seed)
    worst, failed, done, missed = 0.0, [], 0, {}
    ident = lambda c, dtype: np.asarray(c, dtype=np.float64)  # noqa: E731
    unrounded = types.SimpleNamespace(to_output=ident, round_to=ident)
    while done < args.cases:
        case = random_case(rng, hw)
        if case is None:
            continue
        shape, dtype, unit, params = case
        inputs = mm.make_inputs(shape, dtype, done)
        exact = inputs[0].astype(np.float64) @ inputs[1].astype(np.float64)
        real = mm.dtype_emul
        mm.dtype_emul = mm.matmul_vector.dtype_emul = unrounded
        try:
            acc = mm.execute(inputs, params, dtype, hw, unit=unit)
        finally:
            mm.dtype_emul = mm.matmul_vector.dtype_emul = real
        sigma = C.dot_error_sigma(*inputs, products_rounded=dtype == "fp32", k_range=mm.k_range(shape, params, unit))
        ratio = float(np.abs(acc - exact).max()) / (C.FP32_SIGMAS * sigma) if sigma else 0.0
        worst = max(worst, ratio)
        v = verify_one(mm, shape, params, dtype, hw, unit=unit)
        if not v.passed:
            failed.append({"shape": shape, "dtype": dtype, "unit": unit, "params": params, "reason": v.reason})
        drop = verify_one(_dropping_last(), shape, params, dtype, hw, unit=unit)
        m = missed.setdefault(dtype, [0, 0])
        m[0] += drop.passed
        m[1] += 1
        done += 1
    print(json.dumps({"cases": done, "worst_accumulation_ratio": round(worst, 4), "gate_failed": failed,
                      "missing_last_product_passed": {d: f"{a} of {b}" for d, (a, b) in sorted(missed.items())}},
                     indent=1))


if __name__ == "__main__":
    main()
