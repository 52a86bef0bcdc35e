"""Does the portfolio sampler earn the default? Issue #11's done-when criteria, measured.

    PYTHONPATH=. python bench/portfolio.py --json [-o /tmp/portfolio.json] [--seeds 10]
        [--landscapes needle,bowl,...] [--singles EARLIER.json]

Landscapes: simulator-backed matmul (bench/specs/matmul_narrow.yaml), resize and global_sum,
two shapes each (optimum by exhaustive simulation), plus the replayed needle, bowl, failing,
GEMM-like and convolution landscapes of ``autotile.tune.landscapes`` (seed 0). Every available
single sampler (tpe,
random, cmaes, nsga2; gp when PyTorch is installed) and the portfolio run through
``benchsearch.bench`` at budgets 50, 100 and 200 distinct feasible configurations, ``--seeds``
seeds each.

Criteria (``verdict``):
- ``within_1pct``: per landscape and budget, portfolio median fraction of the optimum >=
  0.99 x the best single sampler's median;
- ``strictly_better``: landscapes where the portfolio's median beats every single sampler's at
  some budget (at least two needed);
- ``overhead``: per-trial time spent inside the sampler (every sampler call of a trial, summed),
  median over all trials of all runs, portfolio / tpe < 2.

A landscape that cannot be run (an ``InputError``: say its space outgrew the exhaustive optimum)
is reported in one line and under ``failed``; the others still run, and the exit code is 2.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from optuna.samplers import BaseSampler

from autotile.errors import InputError
from autotile.space import load_spec
from autotile.tune import benchsearch, landscapes, samplers

HERE = Path(__file__).parent
BUDGETS = (50, 100, 200)
SINGLES = ("tpe", "random", "cmaes", "nsga2", "gp")
SIM_SPACES = {  # name -> (spec, shape index, dtype, unit)
    "matmul_256x512x2048": (HERE / "specs/matmul_narrow.yaml", 0, "fp16", "cube"),
    "matmul_128x1024x1024": (HERE / "specs/matmul_narrow.yaml", 1, "fp16", "cube"),
    "resize_down_256to128": (HERE.parent / "studies/resize.yaml", 1, "fp16", "vector"),
    "resize_480x640to224": (HERE.parent / "studies/resize.yaml", 2, "fp16", "vector"),
    "global_sum_65536": (HERE.parent / "studies/global_sum.yaml", 1, "fp16", "vector"),
    "global_sum_4194304": (HERE.parent / "studies/global_sum.yaml", 3, "fp16", "vector"),
}
REPLAY = ("needle", "bowl", "failing", "gemm", "convolution")
LANDSCAPES = (*SIM_SPACES, *REPLAY)


class _Timed(BaseSampler):
    """Delegates every call to ``inner`` and adds the time spent to its trial's total."""

    def __init__(self, inner: BaseSampler, sink: dict):
        self.inner, self.sink = inner, sink

    def _time(self, trial, fn, *args):
        t0 = time.perf_counter()
        try:
            return fn(*args)
        finally:
            self.sink[id(self), trial._trial_id] += time.perf_counter() - t0

    def before_trial(self, study, trial):
        return self._time(trial, self.inner.before_trial, study, trial)

    def infer_relative_search_space(self, study, trial):
        return self._time(trial, self.inner.infer_relative_search_space, study, trial)

    def sample_relative(self, study, trial, search_space):
        return self._time(trial, self.inner.sample_relative, study, trial, search_space)

    def sample_independent(self, study, trial, name, dist):
        return self._time(trial, self.inner.sample_independent, study, trial, name, dist)

    def after_trial(self, study, trial, state, values):
        return self._time(trial, self.inner.after_trial, study, trial, state, values)


class _Timing:
    """Patches ``make_sampler`` so top-level samplers are timed (portfolio members are not)."""

    def __init__(self):
        self.per_trial: dict[str, list] = defaultdict(list)
        self._orig = samplers.make_sampler
        self._depth = 0

    def __enter__(self):
        def timed(name, seed, **kw):
            self._depth += 1
            try:
                s = self._orig(name, seed, **kw)
            finally:
                self._depth -= 1
            if self._depth:
                return s
            sink: dict = defaultdict(float)
            self._sinks.append((name, sink))
            return _Timed(s, sink)

        self._sinks: list = []
        samplers.make_sampler = timed
        return self

    def __exit__(self, *exc):
        samplers.make_sampler = self._orig
        for name, sink in self._sinks:
            self.per_trial[name].extend(sink.values())


def _spec_for(name: str, folder: Path):
    """The spec of landscape ``name`` reduced to its one space."""
    if name in REPLAY:
        land = landscapes.GENERATORS[name](0)
        data = folder / f"{name}.json.gz"
        landscapes.write(land, data)
        return load_spec(landscapes.write_spec(land, data, folder / f"{name}.yaml"))
    path, shape, dtype, unit = SIM_SPACES[name]
    spec = load_spec(path)
    from dataclasses import replace

    return replace(spec, shapes=(spec.shapes[shape],), dtypes=(dtype,), units=(unit,))


def verdict(rows: dict) -> dict:
    """The criteria over ``{landscape: {sampler: {budget: median}}}``."""
    within, strict = [], []
    for land, by in rows.items():
        singles = {s: r for s, r in by.items() if s != "portfolio"}
        for b in BUDGETS:
            best = max(r[b] for r in singles.values())
            port = by["portfolio"][b]
            within.append({"landscape": land, "budget": b, "portfolio": port, "best_single": best,
                           "best_single_sampler": max(singles, key=lambda s: singles[s][b]),
                           "ok": port >= 0.99 * best})
            if port > best:
                strict.append({"landscape": land, "budget": b, "portfolio": port, "best_single": best})
    return {"within_1pct": within, "within_1pct_ok": all(w["ok"] for w in within),
            "strictly_better": strict, "strictly_better_landscapes": sorted({s["landscape"] for s in strict})}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--landscapes", default=",".join(LANDSCAPES))
    ap.add_argument("--samplers", default=",".join((*SINGLES, "portfolio")))
    ap.add_argument("--singles", help="take the other samplers' results from an earlier output "
                    "(same seeds) and run only the portfolio: for iterating on the portfolio")
    ap.add_argument("-o", "--out", help="also write the JSON here (rewritten after each landscape)")
    ap.add_argument("--json", action="store_true", help="print JSON (the default output)")
    args = ap.parse_args(argv)
    names = [n for n in args.landscapes.split(",") if n]
    sampler_names = [s for s in args.samplers.split(",") if s]
    unknown = [n for n in names if n not in LANDSCAPES]
    if unknown:
        print(f"bench/portfolio.py: --landscapes: unknown {', '.join(unknown)}, expected some of "
              f"{', '.join(LANDSCAPES)}", file=sys.stderr)
        return 2
    earlier = json.loads(Path(args.singles).read_text()) if args.singles else None
    if earlier is not None:
        sampler_names = ["portfolio"]
    out = {"schema": "autotile.bench_portfolio/1", "budgets": list(BUDGETS), "seeds": args.seeds,
           "landscapes": {}, "unavailable": {}, "failed": {}}
    medians: dict = {}
    timing = _Timing()
    with tempfile.TemporaryDirectory() as tmp, timing:
        for name in names:
            t0 = time.monotonic()
            try:
                res = benchsearch.bench(_spec_for(name, Path(tmp)), sampler_names, BUDGETS, seeds=args.seeds)
            except InputError as exc:  # e.g. a spec whose space outgrew the exhaustive optimum
                out["failed"][name] = str(exc)
                print(f"{name}: not run: {exc}", file=sys.stderr, flush=True)
                continue
            (sp,) = res["spaces"]
            by = {}
            for row in sp["samplers"]:
                if not row["available"]:
                    out["unavailable"][row["sampler"]] = row["reason"]
                    continue
                by[row["sampler"]] = {r["budget"]: r["median_fraction"] for r in row["results"]}
            if earlier is not None:
                old = earlier["landscapes"][name]
                by.update({s: {int(b): v for b, v in r.items()} for s, r in old["median_fraction"].items()
                           if s != "portfolio"})
                sp["samplers"] = [r for r in old["samplers"] if r["sampler"] != "portfolio"] + sp["samplers"]
                for s, v in earlier.get("overhead_ms_per_trial_median", {}).items():
                    timing.per_trial.setdefault(s, [v / 1e3])
            medians[name] = by
            out["landscapes"][name] = {"feasible_configs": sp["feasible_configs"],
                                       "near_optimal_configs": sp["near_optimal_configs"],
                                       "optimum": sp["optimum"]["value"], "elapsed_s": round(time.monotonic() - t0, 1),
                                       "median_fraction": {s: {str(b): v for b, v in r.items()} for s, r in by.items()},
                                       "samplers": sp["samplers"]}
            print(f"{name}: " + "  ".join(f"{s} " + "/".join(f"{r[b]:.3f}" for b in BUDGETS) for s, r in by.items()),
                  file=sys.stderr, flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(out, indent=1))
    overhead = {s: statistics.median(v) * 1e3 for s, v in timing.per_trial.items() if v}
    out["overhead_ms_per_trial_median"] = {s: round(v, 3) for s, v in overhead.items()}
    out["overhead_ms_per_trial_mean"] = {s: round(statistics.fmean(v) * 1e3, 3)
                                         for s, v in timing.per_trial.items() if v}
    if medians and all("portfolio" in by and len(by) > 1 for by in medians.values()):  # and a single
        out["verdict"] = verdict(medians)
        if "tpe" in overhead and "portfolio" in overhead:
            ratio = overhead["portfolio"] / overhead["tpe"]
            out["verdict"]["overhead_ratio_vs_tpe"] = round(ratio, 3)
            out["verdict"]["overhead_ok"] = ratio < 2
        v = out["verdict"]
        v["ok"] = bool(v["within_1pct_ok"] and len(v["strictly_better_landscapes"]) >= 2 and v.get("overhead_ok"))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))
    json.dump(out, sys.stdout, indent=1)
    sys.stdout.write("\n")
    if out["failed"]:
        return 2
    return 0 if out.get("verdict", {}).get("ok") else 1


if __name__ == "__main__":
    sys.exit(main())
