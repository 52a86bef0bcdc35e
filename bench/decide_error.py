"""How far the learned cycle predictions are from the simulator, at powers of two and between.

    PYTHONPATH=. python bench/decide_error.py --models DIR --json

``autotile decide`` reports, per unit, the cycles predicted "at its best tiling"; this compares
them with the simulator's best-tiling cycles (``dataset.best_of_unit``, the definition the
selector is trained on) at powers of two (training sizes), at sizes that are not, at a power of
two's neighbours (2^k - 3, 2^k + 1) and at random held-out sizes (never in the training sweep),
for every 1-D op with a unit selector (fp16, each placement). For matmul (a cost regressor, no
selector) it compares the regressor's prediction of the simulator's best tiling among the
configurations sampled (random feasible ones plus their refined neighbours) with that tiling's
simulated cycles, on square shapes. Prints per op and size class the median and worst
|pred / sim - 1| and the mean signed error (negative: predicted low).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

POW2 = (1024, 2048, 4096, 8192, 16384, 65536)
OTHER = (1000, 1536, 3000, 5000, 12345, 50000)
BESIDE = tuple(2 ** k + d for k in (5, 7, 9, 11, 13, 15) for d in (-3, 1))  # a power of two's neighbours
MM_POW2 = (256, 512, 1024, 2048)
MM_OTHER = (300, 1000, 1536, 3000)


def _summary(errs: list[float]) -> dict:
    a = [abs(e) for e in errs]
    return {"median_abs_pct": round(100 * statistics.median(a), 2), "worst_abs_pct": round(100 * max(a), 2),
            "mean_signed_pct": round(100 * statistics.fmean(errs), 2), "points": len(errs)}


def unit_errors(op: str, hw, models, sizes, dtype: str = "fp16") -> list:
    from autotile.kernels import registry
    from autotile.models import dataset as D
    from autotile.models import store

    sel = store.load_selector(op, hw, models)
    rows = []
    for data in registry.get(op).placements:
        lo, hi = D.PLACEMENTS[data]
        for n in (n for n in (sizes(data) if callable(sizes) else sizes) if lo <= n <= hi):
            pred = sel.predict_cycles({"n": n}, dtype, data)
            for u, p in pred.items():
                sim, _ = D.best_of_unit(op, u, {"n": n}, dtype, hw, data)
                rows.append({"data": data, "n": n, "unit": u, "pred": round(p, 1), "sim": round(sim, 1),
                             "err": p / sim - 1})
    return rows


def matmul_errors(hw, models, sizes, configs: int) -> list:
    from autotile.models import dataset as D
    from autotile.models import store
    from autotile.space import load_spec

    spec = load_spec(str(ROOT / "autotile" / "studies" / "matmul.yaml"))
    reg = store.load_regressor("matmul", models, hw)
    rows = []
    for n in sizes:
        s = {"m": n, "n": n, "k": n}
        space = spec.space(s, "fp16", "cube")
        sample = D.config_rows(space, configs, seed=7)
        sample += D.refine_rows(space, sample, 5, seed=7, rounds=3)
        best = min(sample, key=lambda r: r.cycles)
        p = float(reg.predict(s, "fp16", "cube", [best.params])[0])
        rows.append({"n": n, "unit": "cube", "pred": round(p, 1), "sim": round(best.cycles, 1),
                     "err": p / best.cycles - 1})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True, help="the folder given to `autotile train -o`")
    ap.add_argument("--ops", default="weighted_sum,elementwise,sigmoid,global_sum,matmul")
    ap.add_argument("--configs", type=int, default=200, help="random matmul configurations per shape")
    ap.add_argument("--heldout", type=int, default=24, help="random held-out sizes per placement (not in the "
                                                            "training sweep; a third raw, of 16, of 256)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--rows", action="store_true", help="also print every point")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from autotile.hardware import load_profile
    from autotile.models import dataset as D

    hw = load_profile(None)

    def heldout(data):
        lo, hi = D.PLACEMENTS[data]
        return D.holdout_sizes(lo, hi, args.heldout, args.seed, exclude=D.sweep_sizes(lo, hi))

    out = {}
    for op in args.ops.split(","):
        per = {}
        classes = ((("pow2", MM_POW2), ("non_pow2", MM_OTHER)) if op == "matmul" else
                   (("pow2", POW2), ("non_pow2", OTHER), ("beside_pow2", BESIDE), ("heldout", heldout)))
        for cls, sizes in classes:
            rows = (matmul_errors(hw, args.models, sizes, args.configs) if op == "matmul"
                    else unit_errors(op, hw, args.models, sizes))
            per[cls] = _summary([r["err"] for r in rows])
            if args.rows:
                per[cls]["rows"] = [{**r, "err": round(100 * r["err"], 2)} for r in rows]
        out[op] = per
    print(json.dumps(out, indent=1 if args.json else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
