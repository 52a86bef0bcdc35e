"""`autotile lookup --models`: wall time per shape, and what the model step picks.

    PYTHONPATH=. python bench/lookup_models.py TABLE MODELS [--shape m=16,n=16,k=16 ...] [--runs 3] --json

For each shape (default: a few matmul shapes from tiny to large): the median wall time of
``autotile lookup TABLE --shape S --models MODELS --json`` and of the same lookup without
``--models`` (each a fresh process, as a user runs it), the median time of the candidate
generation alone (``regressor.feasible_sample`` on the shape's space, in process), and the
lookup's answer: match, unit, params and their simulated cycles beside the default tiling's.
Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SHAPES = ("m=16,n=16,k=16", "m=64,n=48,k=32", "m=1000,n=77,k=33", "m=256,n=512,k=128", "m=4096,n=4096,k=1024")


def wall(args: list[str], runs: int) -> float:
    """Median seconds of ``autotile ARGS`` in a fresh process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "autotile", *args], env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        times.append(time.perf_counter() - t0)
    return round(statistics.median(times), 3)


def simulated(space, params) -> float | None:
    from autotile.tune.evaluate import make_evaluator

    if params is None:
        return None
    out = make_evaluator(space).score(params)
    return out.values.get("cycles") if out.feasible else None


def one(table_path: str, models: str, text: str, runs: int) -> dict:
    from autotile.cli.common import parse_shape
    from autotile.models.regressor import feasible_sample
    from autotile.tables.lookup import lookup
    from autotile.tables.model_hook import default_of, regressor_hook
    from autotile.tables.schema import load_table

    table = load_table(table_path)
    shape = parse_shape(text)
    dtype = table.dtypes[0]
    got = lookup(table, shape, dtype, model=regressor_hook(table, models, warn=lambda _: None))
    space = table.spec.space(shape, dtype, got.unit)
    gen = []
    for _ in range(runs):
        t0 = time.perf_counter()
        cands = feasible_sample(space)
        gen.append(time.perf_counter() - t0)
    base = default_of(space)
    return {"shape": text, "match": got.match, "unit": got.unit, "params": got.params,
            "cycles": simulated(space, got.params), "default_cycles": simulated(space, base),
            "candidates": len(cands), "candidates_s": round(statistics.median(gen), 3),
            "lookup_models_s": wall(["lookup", table_path, "--shape", text, "--models", models, "--json"], runs),
            "lookup_s": wall(["lookup", table_path, "--shape", text, "--json"], runs)}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("table")
    ap.add_argument("models")
    ap.add_argument("--shape", action="append", help="a shape (repeatable; default: a matmul set)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    rows = [one(args.table, args.models, s, args.runs) for s in args.shape or SHAPES]
    print(json.dumps(rows, indent=2 if args.json else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
