"""How efficiently `autotile tune` searches: TPE vs random against the exhaustive optimum,
the full matmul space against a 10x longer search, and what a warm start saves.

    PYTHONPATH=. python bench/tune_efficiency.py --json [--seeds 10]

1. Sub-space (bench/specs/matmul_subspace.yaml, small enough for the exhaustive oracle): for
   1024x512x2048, 1000^3 and 128x4096x4096 fp16, the median over seeds of the trials TPE and
   random search need to come within 2% of the exhaustive optimum, and the best found at 50,
   100 and 200 trials (fraction of the optimum). Trials count distinct feasible configurations,
   exactly as the tuner's budget does (the tuner's own study loop runs every seed).
2. Full space (studies/matmul.yaml, first shape): TPE's best at 50/100/200 trials (median over
   seeds) against the best of a 10x longer search: 2,000 configurations by random search (a
   2,000-trial TPE study costs more in sampler time than the whole benchmark).
3. Warm start: on the sub-space, 1024x512x1920 (close to the tuned 1024x512x2048) with and
   without the tuned shape's three best configurations enqueued: median trials to within 2%.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

import optuna

from autotile.space import load_spec
from autotile.tune import benchsearch as bs
from autotile.tune import runner
from autotile.tune.evaluate import make_evaluator

ROOT = Path(__file__).resolve().parents[1]
WITHIN = 0.02
NEAR = {"m": 1024, "n": 1920, "k": 512}


def _median_or_none(values):
    vals = [math.inf if v is None else v for v in values]
    med = statistics.median(vals)
    return None if math.isinf(med) else med


def subspace(seeds: int) -> list[dict]:
    spec = load_spec(ROOT / "bench" / "specs" / "matmul_subspace.yaml")
    out = []
    for shape in spec.shapes:
        space = spec.space(shape, "fp16", "cube")
        ev = make_evaluator(space, ("cycles",))
        opt = bs.optimum(space, "cycles", WITHIN)
        row = {"shape": space.shape, "feasible_configs": opt.feasible, "near_optimal_configs": opt.near,
               "optimum_cycles": opt.value}
        for sampler, budget in (("tpe", 200), ("random", 1000)):
            t0 = time.monotonic()
            traces = [bs.trace(space, sampler, i, budget, "cycles", ev) for i in range(seeds)]
            res = bs.summarize(traces, (50, 100, 200, budget), opt.value, WITHIN)
            row[sampler] = {
                "median_trials_to_within_2pct": res[-1]["median_trials_to_within"],
                "trials_to_within_2pct": res[-1]["trials_to_within"],
                "best_fraction_at": {r["budget"]: r["median_fraction"] for r in res[:3]},
                "searched_up_to": budget, "elapsed_s": round(time.monotonic() - t0, 1)}
        tpe, rnd = row["tpe"]["median_trials_to_within_2pct"], row["random"]["median_trials_to_within_2pct"]
        row["random_over_tpe"] = (rnd / tpe) if tpe and rnd else (f">{1000 / tpe:.1f}" if tpe else None)
        out.append(row)
    return out


def full_space(seeds: int) -> dict:
    spec = load_spec(ROOT / "studies" / "matmul.yaml")
    space = spec.space(spec.shapes[0], "fp16", "cube")
    ev = make_evaluator(space, ("cycles",))
    traces = [bs.trace(space, "tpe", i, 200, "cycles", ev) for i in range(seeds)]
    long = bs.trace(space, "random", 1000, 2000, "cycles", ev)
    ref = long[-1][1]
    return {"shape": space.shape, "long_search": "random", "long_search_configs": long[-1][0],
            "long_search_best_cycles": ref,
            "best_fraction_of_long_search_at": {
                b: round(statistics.median(ref / bs.at_budget(t, b)[0] for t in traces), 4) for b in (50, 100, 200)}}


def warm_start(seeds: int) -> dict:
    spec = load_spec(ROOT / "bench" / "specs" / "matmul_subspace.yaml")
    tuned = spec.space(spec.shapes[0], "fp16", "cube")
    near = spec.space(NEAR, "fp16", "cube")
    opt = bs.optimum(near, "cycles", WITHIN)
    # the tuned shape: one 150-configuration TPE study, its three best configurations
    storage = optuna.storages.InMemoryStorage()
    plan = runner.StudyPlan("tuned", tuned, ("cycles",), "tpe", 0, 150, None, None)
    best = [p for p, _, _ in runner.run(plan, storage).best]
    warm = tuple(p for p in best if near.check(p) is None)[:3]
    ev = make_evaluator(near, ("cycles",))
    reach = {}
    for label, cfgs in (("cold", ()), ("warm", warm)):
        hits = []
        for i in range(seeds):
            st = optuna.storages.InMemoryStorage()
            p = runner.StudyPlan(f"{label}/{i}", near, ("cycles",), "tpe", i, 200, None, None, cfgs)
            runner.run(p, st, evaluator=ev)
            study = optuna.load_study(study_name=p.name, storage=st)
            seen, best_v, hit = set(), math.inf, None
            for t in study.get_trials(deepcopy=False):
                if t.state == optuna.trial.TrialState.COMPLETE:
                    seen.add(t.user_attrs[runner.CONFIG_ATTR])
                    best_v = min(best_v, t.values[0])
                    if hit is None and best_v <= opt.value * (1 + WITHIN):
                        hit = len(seen)
            hits.append(hit)
        reach[label] = {"median_trials_to_within_2pct": _median_or_none(hits), "trials": hits}
    return {"tuned_shape": tuned.shape, "near_shape": near.shape, "warm_configs": len(warm), **reach}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--seeds", type=int, default=10)
    a = ap.parse_args(argv)
    out = {"within": WITHIN, "seeds": a.seeds}
    for key, part in (("subspace", lambda: subspace(a.seeds)), ("full_space", lambda: full_space(min(a.seeds, 5))),
                      ("warm_start", lambda: warm_start(a.seeds))):
        out[key] = part()
        print(f"{key} done", file=sys.stderr)  # long runs: progress on stderr, the result at the end
    print(json.dumps(out, indent=2) if a.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
