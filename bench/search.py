"""Search strategies on synthetic landscapes: does a model-based sampler beat random search?

    PYTHONPATH=. python bench/search.py --json [--landscape needle] [--seeds 10] [--seed 0]

Writes the landscape as a Kernel Tuner cache and its replay spec into a temporary folder (or
``--keep DIR``), runs ``autotile.tune.benchsearch.bench`` with tpe, random, cmaes and gp (gp
is reported unavailable without PyTorch) at budgets 25, 50, 100 and 200, and prints its JSON
plus ``verdict``: for budgets 100 and 200, which available samplers beat random search in the
median fraction of the optimum over the seeds. The test suite runs a reduced version
(tests/test_bench_search.py::test_tpe_beats_random_on_the_needle).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from autotile.space import load_spec
from autotile.tune import benchsearch, landscapes

SAMPLERS = ("tpe", "random", "cmaes", "gp")
BUDGETS = (25, 50, 100, 200)
CHECKED = (100, 200)


def verdict(out: dict) -> dict:
    """Per checked budget: the samplers whose median fraction of the optimum beats random's."""
    rows = {s["sampler"]: {r["budget"]: r for r in s["results"]}
            for s in out["spaces"][0]["samplers"] if s["available"]}
    res = {}
    for b in CHECKED:
        base = rows["random"][b]["median_fraction"]
        res[str(b)] = sorted(n for n, r in rows.items() if n != "random" and r[b]["median_fraction"] > base)
    return {"beats_random": res, "ok": all(res.values())}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--landscape", default="needle", choices=sorted(landscapes.GENERATORS))
    ap.add_argument("--seed", type=int, default=0, help="landscape seed")
    ap.add_argument("--seeds", type=int, default=10, help="sampler seeds")
    ap.add_argument("--keep", help="write the cache and spec here instead of a temporary folder")
    ap.add_argument("--json", action="store_true", help="print JSON (the default output)")
    args = ap.parse_args(argv)
    land = landscapes.GENERATORS[args.landscape](args.seed)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(args.keep or tmp)
        data = folder / f"{args.landscape}.json.gz"
        landscapes.write(land, data)
        landscapes.write_spec(land, data, folder / f"{args.landscape}.yaml")
        out = benchsearch.bench(load_spec(folder / f"{args.landscape}.yaml"), SAMPLERS, BUDGETS,
                                seeds=args.seeds)
    out["landscape"] = {"name": land.name, "seed": args.seed, "configs": len(land.times),
                        "failed": land.failed(), "within_5pct": land.near(0.05)}
    out["verdict"] = verdict(out)
    json.dump(out, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0 if out["verdict"]["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
