"""How often ``autotile decide`` picks the simulator's fastest unit, at every size of a range.

    PYTHONPATH=. python bench/decide_agreement.py --models DIR --json [--op weighted_sum] [--dtype fp16]

Each unit's best cycles (``dataset.best_of_unit``, what the selector is trained on) are known at
every integer n of the range, and the model is asked at each. The Vector and the Cube pad to
16-element granules, so their best cycles are the same for every n of a 16-element block (16k+1
.. 16k+16, which also share one tiling grid); the Scalar's are not (weighted_sum on chip: 34, 48
and 64 cycles at n = 17, 24 and 32). So each unit is simulated at both ends of each block, and a
unit whose two ends differ is simulated at every n of that block (``simulated``; JSON
``simulated_sizes`` counts them per unit); equal ends are taken to hold between them, the cost
not falling as n grows within a block. Per placement it prints the sizes asked, how many the model mis-picks, the worst
and total extra cycles of its picks, the sizes where vector and cube swap (simulated and learned)
and how many of the model's picks it flags as close calls. A held-out figure on random sizes is
``bench/models.py``; this one finds the narrow ranges near a step that random sizes miss.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

HIGH = {"on_chip": 8192, "gm": 4096}  # top of the range asked per placement (every block simulated)


def _windows(ns, flags) -> list[list[int]]:
    from autotile.models.crossover import runs

    return runs(ns, flags)


BLOCK = 16  # elements of the granule the Vector and the Cube pad to


def simulated(op: str, dtype: str, data: str, hw, units, lo: int, hi: int) -> tuple[dict, dict]:
    """({n: {unit: best cycles}} for every n of lo..hi, {unit: sizes simulated}): each unit at both
    ends of every 16-element block, and at every n of a block whose ends differ."""
    from autotile.models import dataset as D

    sim: dict = {n: {} for n in range(lo, hi + 1)}
    count = dict.fromkeys(units, 0)

    def cost(u: str, n: int) -> float:
        count[u] += 1
        return D.best_of_unit(op, u, {"n": n}, dtype, hw, data)[0]

    for first in range((lo - 1) // BLOCK * BLOCK + 1, hi + 1, BLOCK):
        last = first + BLOCK - 1
        for u in units:
            ends = {first: cost(u, first), last: cost(u, last)}
            for n in range(max(first, lo), min(last, hi) + 1):
                if ends[first] == ends[last]:
                    sim[n][u] = ends[first]
                else:
                    sim[n][u] = ends[n] if n in ends else cost(u, n)
    return sim, count


def agreement(op: str, dtype: str, data: str, hw, sel, lo: int, hi: int) -> dict:
    """Learned picks against the simulated best at every n of lo..hi (``data`` placement)."""
    from autotile.kernels import registry

    units = [u for u in sel.units if not hw.dtype_problem(u, dtype)]
    t0 = time.monotonic()
    sim, count = simulated(op, dtype, data, hw, units, lo, hi)
    sim_s = time.monotonic() - t0
    ns = list(range(lo, hi + 1))
    preds = sel.predict_many([({"n": n}, dtype, data) for n in ns])
    wrong, extra, best_sum, close, close_wrong = [], 0.0, 0.0, 0, 0
    for n, pred in zip(ns, preds):
        true = sim[n]
        pick = min((u for u in units), key=lambda u: pred[u])
        best = min(true, key=true.get)
        extra += true[pick] - true[best]
        best_sum += true[best]
        flagged = sel.confidence({u: pred[u] for u in units}, data, {"n": n})["close_call"] \
            if hasattr(sel, "confidence") else False
        close += flagged
        if pick != best:
            close_wrong += flagged
            wrong.append((true[pick] / true[best] - 1, n, pick, best))
    out = {"sizes": len(ns), "mis_picked": len(wrong), "agree_pct": round(100 * (1 - len(wrong) / len(ns)), 2),
           "regret_pct": round(100 * extra / best_sum, 4), "sim_seconds": round(sim_s, 1), "simulated_sizes": count}
    if wrong:
        w = max(wrong)
        out["worst"] = {"n": w[1], "picked": w[2], "best": w[3], "extra_pct": round(100 * w[0], 2)}
        bad = {n for _, n, _, _ in wrong}
        out["mis_picked_ranges"] = _windows(ns, [n in bad for n in ns])[:20]
    if hasattr(sel, "confidence"):
        out["close_calls"] = close
        out["mis_picked_flagged_close"] = close_wrong
    if {"vector", "cube"} <= set(units) and "cube" in registry.implementation(op).UNITS:
        out["cube_windows_simulated"] = _windows(ns, [sim[n]["cube"] < sim[n]["vector"] for n in ns])
        out["cube_windows_learned"] = _windows(ns, [p["cube"] < p["vector"] for p in preds])
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", required=True, help="the folder given to `autotile train -o`")
    ap.add_argument("--op", default="weighted_sum")
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--low", type=int, default=16)
    ap.add_argument("--on-chip-high", type=int, default=HIGH["on_chip"])
    ap.add_argument("--gm-high", type=int, default=HIGH["gm"])
    ap.add_argument("--far", default="65536,131072", help="GM: also list the learned cube windows up to these "
                                                          "sizes (model only, nothing simulated)")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)

    from autotile.hardware import load_profile
    from autotile.kernels import registry
    from autotile.models import store

    hw = load_profile(None)
    sel = store.load_selector(args.op, hw, args.models)
    out = {"op": args.op, "dtype": args.dtype}
    for data in registry.get(args.op).placements:
        hi = args.on_chip_high if data == "on_chip" else args.gm_high
        out[data] = agreement(args.op, args.dtype, data, hw, sel, args.low, hi)
    if "gm" in registry.get(args.op).placements and "cube" in sel.units and "vector" in sel.units:
        for far in (int(x) for x in args.far.split(",") if x):
            wins = sel.crossover_windows(args.dtype, data="gm", lo=args.low, hi=far)
            out["gm"][f"cube_windows_learned_to_{far}"] = {"count": len(wins), "first": wins[:6]}
    print(json.dumps(out, indent=1 if args.json else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
