"""Learned models against the simulator: crossover, unit decisions, matmul cost ranking.

    PYTHONPATH=. python bench/models.py --json [-o DIR] [--rebuild] [--tpe-trials 300]

1. Trains the models ``autotile train`` trains by default (every unit selector, matmul's cost
   regressor; ``--rebuild`` times the datasets from scratch) into DIR (default: a fresh
   temporary folder).
2. weighted_sum fp16: ``learned_n`` (model) against ``simulated_n`` (crossover search), with the
   data on chip and end to end (inputs in GM).
3. Held-out sizes (random, never in the training sweep; a third raw, a third multiples of 16, a
   third of 256) for every multi-unit op, dtype and placement: unit decision accuracy and total
   regret = sum(cycles of the chosen unit - best) / sum(best), each unit at its best tiling.
4. matmul cost regressor on held-out random shapes (never among the training shapes):
   Spearman rank correlation between predicted and simulated cycles over 500 random feasible
   configurations per shape (median over shapes), and whether ``predict_params``' pick
   simulates within 10% of the tuned optimum = best of a TPE study (``--tpe-trials``) and of the
   500-config random sample. The pick: 2000 random candidates + model-guided local search, then
   the model's ``VERIFY`` best simulated and the fastest kept (what ``autotile lookup --models``
   does); ``model_top1_*`` is the model's own top-1, nothing simulated.
5. ``decide weighted_sum`` at n=128 and n=4096 (fp16, both placements).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def unit_accuracy(hw, out, ops, holdout: int, seed: int) -> dict:
    from autotile.kernels import registry
    from autotile.models import dataset as D
    from autotile.models import store

    per, tot = {}, {"n": 0, "ok": 0, "regret": 0.0, "best": 0.0}
    for op in ops:
        sel = store.load_selector(op, hw, out)
        units = registry.implementation(op).UNITS
        for data in registry.get(op).placements:  # global_sum has no on-chip framing
            lo, hi = D.PLACEMENTS[data]
            train = D.sweep_sizes(lo, hi)
            sizes = D.holdout_sizes(lo, hi, holdout, seed, exclude=train)
            for dtype in registry.get(op).dtypes:
                probs = [({"n": n}, dtype, data) for n in sizes]
                preds = sel.predict_many(probs)
                k = f"{op}/{dtype}/{data}"
                acc = per.setdefault(k, {"n": 0, "ok": 0, "regret": 0.0, "best": 0.0, "wrong": []})
                for (shape, _, _), pred in zip(probs, preds):
                    true = {u: D.best_of_unit(op, u, shape, dtype, hw, data)[0] for u in units}
                    b = min(true, key=true.get)
                    u = min(pred, key=pred.get)
                    for a in (acc, tot):
                        a["n"] += 1
                        a["ok"] += u == b
                        a["regret"] += true[u] - true[b]
                        a["best"] += true[b]
                    if u != b:
                        acc["wrong"].append({"n": shape["n"], "chose": u, "best": b,
                                             "extra_pct": round(100 * (true[u] / true[b] - 1), 3)})
    def fmt(a):
        return {"sizes": a["n"], "accuracy": round(a["ok"] / a["n"], 4),
                "regret_pct": round(100 * a["regret"] / a["best"], 4), **({"wrong": a["wrong"]} if "wrong" in a else {})}
    return {"overall": fmt(tot), "per_op_dtype_placement": {k: fmt(v) for k, v in per.items()}}


def matmul_cost(hw, out, shapes: int, configs: int, tpe_trials: int, seed: int) -> dict:
    import optuna
    from scipy.stats import spearmanr

    from autotile.kernels import matmul
    from autotile.models import dataset as D
    from autotile.models import store, training
    from autotile.models.regressor import VERIFY, predict_params
    from autotile.space import load_spec
    from autotile.tune import runner

    spec = load_spec(str(ROOT / "studies" / "matmul.yaml"))
    reg = store.load_regressor("matmul", out, hw)
    train = {json.dumps(s, sort_keys=True) for s in training.random_shapes(("m", "n", "k"), training.COST_SHAPES, 0)}
    rows, rhos, hits, model_hits = [], [], 0, 0
    for i, s in enumerate(training.random_shapes(("m", "n", "k"), shapes + 5, seed)):
        if json.dumps(s, sort_keys=True) in train or len(rows) >= shapes:
            continue
        space = spec.space(s, "fp16", "cube")
        sample = D.config_rows(space, configs, seed=1000 + i)
        cyc = [r.cycles for r in sample]
        pred = reg.predict(s, "fp16", "cube", [r.params for r in sample])
        rho = float(spearmanr(pred, cyc).statistic)
        t0 = time.monotonic()
        plan = runner.StudyPlan(name=f"bench-{i}", space=space, objectives=("cycles",), sampler="tpe", seed=i,
                                budget=tpe_trials, timeout_s=None, baseline=matmul.default_params(s, "fp16", hw))
        study = runner.run(plan, optuna.storages.InMemoryStorage())
        tpe_best = study.best[0][1]["cycles"] if study.best else float("inf")
        tuned = min(tpe_best, min(cyc))
        t1 = time.monotonic()
        top = predict_params("matmul", s, "fp16", space, model=reg, seed=7)
        top_cycles = matmul.simulate(s, top, "fp16", hw).cycles
        t2 = time.monotonic()
        model_top = predict_params("matmul", s, "fp16", space, model=reg, seed=7, verify=1)
        model_cycles = matmul.simulate(s, model_top, "fp16", hw).cycles
        ratio = top_cycles / tuned
        hits += ratio <= 1.10
        model_hits += model_cycles / tuned <= 1.10
        rhos.append(rho)
        rows.append({"shape": s, "spearman": round(rho, 4), "top1_cycles": round(top_cycles, 1),
                     "tuned_cycles": round(tuned, 1), "tuned_by": "tpe" if tpe_best <= min(cyc) else "random",
                     "top1_over_tuned": round(ratio, 4), "model_top1_over_tuned": round(model_cycles / tuned, 4),
                     "tpe_s": round(t1 - t0, 1), "predict_params_s": round(t2 - t1, 2)})
    return {"shapes": rows, "median_spearman": round(statistics.median(rhos), 4),
            "top1_within_10pct": hits, "of": len(rows), "top1_within_10pct_frac": round(hits / len(rows), 3),
            "model_top1_within_10pct_frac": round(model_hits / len(rows), 3),
            "verify": VERIFY,
            "configs_per_shape": configs, "tpe_trials": tpe_trials,
            "tuned_optimum": f"min(best of a {tpe_trials}-trial TPE study, best of the {configs}-config random sample)"}


def _edges_pct(sim: list, learned: list) -> list | None:
    """Relative error (%) of each learned window edge against the simulated one (None: the windows differ in number)."""
    if len(sim) != len(learned):
        return None
    return [round(100 * (b / a - 1), 2) for sw, lw in zip(sim, learned) for a, b in zip(sw, lw)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("-o", "--out", default=None, help="model/dataset folder (default: a fresh temporary one)")
    ap.add_argument("--rebuild", action="store_true")
    ap.add_argument("--holdout", type=int, default=30, help="held-out sizes per op and placement")
    ap.add_argument("--shapes", type=int, default=15, help="held-out matmul shapes")
    ap.add_argument("--configs", type=int, default=500)
    ap.add_argument("--tpe-trials", type=int, default=300)
    ap.add_argument("--seed", type=int, default=99)
    args = ap.parse_args(argv)

    from autotile.hardware import load_profile
    from autotile.models import store, training
    from autotile.models.crossover import crossover, stays_from

    hw = load_profile(None)
    out = args.out or tempfile.mkdtemp(prefix="autotile-bench-")
    ops, cost_ops = training.selection()  # what `autotile train` trains by default
    t0 = time.monotonic()
    summary = training.train(ops, hw, out, cost=cost_ops, rebuild=args.rebuild)
    train_s = time.monotonic() - t0
    sel = store.load_selector("weighted_sum", hw, out)
    cross = {}
    for data, on in (("on_chip", True), ("gm", False)):
        sim = crossover("weighted_sum", "fp16", hw, on_chip=on)
        learned = sel.crossover_windows("fp16", data=data)
        cross[data] = {"simulated": sim["n"], "learned": stays_from(learned),
                       "simulated_windows": sim["windows"], "learned_windows": learned}
    c = cross["on_chip"]
    result = {
        "hw": hw.name, "models_dir": out,
        "train": {"seconds": round(train_s, 1), "ops": {op: {k: {x: v[x] for x in ("rows", "rebuilt", "data_s", "fit_s")}
                                                               for k, v in e.items() if isinstance(v, dict)}
                                                         for op, e in summary.items()}},
        "crossover_weighted_sum_fp16": {
            "simulated_n": c["simulated"], "learned_n": c["learned"],
            "learned_vs_simulated_pct": None if not (c["simulated"] and c["learned"]) else
            round(100 * (c["learned"] / c["simulated"] - 1), 2),
            "end_to_end_n": cross["gm"]["simulated"], "learned_end_to_end_n": cross["gm"]["learned"],
            # where the Cube wins: when it does not *stay* faster (end to end), compare the edges
            "simulated_windows": c["simulated_windows"], "learned_windows": c["learned_windows"],
            "end_to_end_windows": cross["gm"]["simulated_windows"],
            "learned_end_to_end_windows": cross["gm"]["learned_windows"],
            "end_to_end_edges_pct": _edges_pct(cross["gm"]["simulated_windows"], cross["gm"]["learned_windows"])},
        "decide_weighted_sum_fp16": {f"{data}/n={n}": sel.decide({"n": n}, "fp16", data)[0]
                                     for data in ("gm", "on_chip") for n in (128, 4096)},
        "units_heldout": unit_accuracy(hw, out, [op for op in ops if training.trainable(op)["units"]],
                                       args.holdout, args.seed),
        "matmul_cost": matmul_cost(hw, out, args.shapes, args.configs, args.tpe_trials, args.seed),
    }
    if args.json:
        json.dump(result, sys.stdout, indent=2)
        print()
    else:
        print(json.dumps({k: v for k, v in result.items() if k != "matmul_cost"}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
