"""Operator benchmark: the best tiling a quick deterministic search finds, per operator/shape/unit.

    PYTHONPATH=. python bench/operators.py --json

Each row: ``{op, shape, unit, dtype, options, cycles, time_us, pct_of_peak, pct_of_bandwidth,
bound, params, searched}``. The search is exhaustive over small grids: ``models.crossover``'s grid
for the 1-D ops, ``matmul.small_grid`` (plus the default) for matmul, and the products below for
resize and roi_align. pct_of_peak is against the unit's chip peak; pct_of_bandwidth against HBM.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys

from autotile.hardware import load_profile
from autotile.kernels import matmul as mm
from autotile.kernels import registry
from autotile.models.crossover import candidate_params

RESIZE = {"n": 1, "c": 64, "h_in": 128, "w_in": 128, "h_out": 256, "w_out": 256}
ROI = {"n": 2, "c": 256, "h": 64, "w": 64, "rois": 256, "pooled_h": 7, "pooled_w": 7}
CASES = [  # op, shape, unit, dtype, options
    ("matmul", {"m": 1024, "n": 2048, "k": 512}, "cube", "fp16", None),
    ("matmul", {"m": 64, "n": 64, "k": 64}, "cube", "fp16", None),
    ("matmul", {"m": 64, "n": 64, "k": 64}, "vector", "fp16", None),
    ("matmul", {"m": 4, "n": 4, "k": 16}, "cube", "fp16", None),
    ("matmul", {"m": 4, "n": 4, "k": 16}, "vector", "fp16", None),
    *[("global_sum", {"n": 1 << 22}, u, "fp16", None) for u in ("vector", "cube", "scalar")],
    *[("weighted_sum", {"n": 4096}, u, "fp16", {"data": "on_chip"}) for u in ("vector", "cube", "scalar")],
    ("weighted_sum", {"n": 1 << 20}, "vector", "fp16", None),
    ("elementwise", {"n": 1 << 20}, "vector", "fp16", None),
    ("sigmoid", {"n": 1 << 20}, "vector", "fp16", None),
    *[("resize", RESIZE, "vector", "fp16", {"mode": m, "layout": lay})
      for m in ("nearest", "bilinear") for lay in ("NCHW", "NHWC")],
    ("roi_align", ROI, "vector", "fp16", {"sampling_ratio": 2, "aligned": True}),
    ("roi_align", ROI, "vector", "fp16", {"sampling_ratio": 0, "aligned": True}),
]


def _product(**axes):
    return [dict(zip(axes, v)) for v in itertools.product(*axes.values())]


def grid(op, shape, unit, hw, options) -> list[dict]:
    """The small deterministic grid searched for one case."""
    if op == "matmul":
        return mm.small_grid(shape, "fp16", hw, unit) + [mm.default_params(shape, "fp16", hw, unit)]
    if op == "resize":
        return _product(tile_h=(1, 4, 8, 16), tile_w=(16, 64, 256), tile_c=(1, 8, 64), buffer_num=(1, 2),
                        cores=(hw.vector_cores,))
    if op == "roi_align":
        return _product(tile_rois=(1, 2, 4), tile_bins=(1, 7, 49), tile_c=(64, 256), buffer_num=(1, 2),
                        cores=(hw.vector_cores,))
    return candidate_params(op, unit, shape["n"], hw, bool(options and options.get("data") == "on_chip"))


def run(hw_name: str = "ascend910b2") -> list[dict]:
    hw = load_profile(hw_name)
    rows = []
    for op, shape, unit, dtype, options in CASES:
        mod = registry.implementation(op)
        best, tried = None, 0
        for p in grid(op, shape, unit, hw, options):
            r = mod.simulate(shape, p, dtype, hw, unit=unit, options=options)
            tried += 1
            if r.feasible and (best is None or r.cycles < best.cycles):
                best = r
        rows.append({"op": op, "shape": shape, "unit": unit, "dtype": dtype, "options": options or {},
                     "cycles": round(best.cycles, 1), "time_us": round(best.time_us, 3),
                     "pct_of_peak": round(best.pct_of_peak, 2),
                     "pct_of_bandwidth": None if best.pct_of_bandwidth is None else round(best.pct_of_bandwidth, 2),
                     "bound": best.bound, "params": best.params, "searched": tried})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--hw", default="ascend910b2")
    a = ap.parse_args(argv)
    rows = run(a.hw)
    if a.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
    else:
        for r in rows:
            bw = "" if r["pct_of_bandwidth"] is None else f" {r['pct_of_bandwidth']:6.2f}% HBM"
            print(f"{r['op']:13s} {r['unit']:7s} {json.dumps(r['shape']):60s} {r['cycles']:>12.1f} cyc "
                  f"{r['pct_of_peak']:6.2f}% peak{bw}  {r['bound']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
