"""matmul's default tiling against the best core grid it could have picked, and its monotonicity.

    PYTHONPATH=. python bench/matmul_default.py --json [--shapes 120] [--hw ascend910b2] [--dtype fp16]

``default_params`` estimates every whole-base-block core grid (128 x 128 and 64 x 64 base blocks,
with and without a K split) and keeps the fastest estimate. Here each of those grids is simulated
instead, for ``--shapes`` seeded random shapes (each dim from sizes users meet, tails included),
so ``ratio`` is default cycles / best simulated grid: what the estimate costs against an oracle
with the same recipe. ``monotone`` walks M from 1 to 1024 for a few N x K and reports the worst
``cycles(m) / min(cycles(m') for m' > m)``: a default that grows cheaper as M grows is wrong
somewhere. Prints one JSON object: ``{summary, monotone, worst}``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys

from autotile.hardware import load_profile
from autotile.kernels import matmul as mm

SIZES = (16, 48, 64, 100, 128, 192, 256, 384, 512, 640, 1000, 1024, 1536, 2048, 3000, 4096, 8192)


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def grids(shape: dict, dtype: str, hw) -> list[dict]:
    """Every grid ``default_params`` weighs, as full params (its other choices kept)."""
    base = mm.default_params(shape, dtype, hw)
    M, N, K, bk = shape["m"], shape["n"], shape["k"], base["base_k"]
    kt = cdiv(K, bk)
    out = []
    for size in (128, 64):
        bm, bn = min(size, cdiv(M, 16) * 16), min(size, cdiv(N, 16) * 16)
        mb, nb = cdiv(M, bm), cdiv(N, bn)
        for cm in range(1, min(hw.cube_cores, mb) + 1):
            for cn in range(1, min(hw.cube_cores // cm, nb) + 1):
                scm, scn = cdiv(mb, cm) * bm, cdiv(nb, cn) * bn
                used = cdiv(M, scm) * cdiv(N, scn)
                for ck in range(1, min(hw.cube_cores // used, kt) + 1):
                    sck = cdiv(kt, ck) * bk
                    step = min(4, cdiv(min(sck, K), bk))
                    out.append(base | {"base_m": bm, "base_n": bn, "single_core_m": scm, "single_core_n": scn,
                                       "single_core_k": sck, "step_ka": step, "step_kb": step,
                                       "depth_a1": 2 * step, "depth_b1": 2 * step})
    return out


def cycles(shape: dict, params: dict, dtype: str, hw) -> float | None:
    r = mm.simulate(shape, params, dtype, hw)
    return r.cycles if r.feasible else None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shapes", type=int, default=120)
    ap.add_argument("--hw", default="ascend910b2")
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    args = ap.parse_args(argv)
    hw = load_profile(args.hw)
    rng = random.Random(0)
    rows = []
    for _ in range(args.shapes):
        shape = {"m": rng.choice(SIZES), "n": rng.choice(SIZES), "k": rng.choice(SIZES)}
        own = cycles(shape, mm.default_params(shape, args.dtype, hw), args.dtype, hw)
        best = min(c for c in (cycles(shape, p, args.dtype, hw) for p in grids(shape, args.dtype, hw))
                   if c is not None)
        rows.append({**shape, "default": round(own), "best_grid": round(best), "ratio": round(own / best, 3)})
    ratios = sorted(r["ratio"] for r in rows)
    monotone = []
    for n, k in ((1024, 1024), (2048, 2048), (4096, 1024), (1024, 4096)):
        walk = [(m, cycles({"m": m, "n": n, "k": k}, mm.default_params({"m": m, "n": n, "k": k}, args.dtype, hw),
                           args.dtype, hw)) for m in range(1, 1025, 8)]
        worst, at, later = 1.0, None, math.inf
        for m, c in reversed(walk):
            if c / later > worst:
                worst, at = c / later, m
            later = min(later, c)
        monotone.append({"n": n, "k": k, "worst_ratio": round(worst, 3), "at_m": at})
    summary = {"hw": args.hw, "dtype": args.dtype, "shapes": len(rows),
               "geomean_ratio": round(math.exp(statistics.fmean(math.log(r) for r in ratios)), 4),
               "median_ratio": statistics.median(ratios), "p90_ratio": ratios[int(0.9 * (len(ratios) - 1))],
               "max_ratio": ratios[-1], "within_1.1x": sum(r <= 1.1 for r in ratios)}
    worst = sorted(rows, key=lambda r: -r["ratio"])[:5]
    json.dump({"summary": summary, "monotone": monotone, "worst": worst}, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
