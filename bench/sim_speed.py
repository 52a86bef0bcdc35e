"""Simulator throughput: matmul configurations simulated per second in count mode.

    PYTHONPATH=. python bench/sim_speed.py --json [--configs 2000] [--seed 0]

Draws configurations of studies/matmul.yaml's space for M=1024 K=512 N=2048 fp16 the way a
random sampler does (each parameter uniform in its domain given the ones above it), keeps the
feasible ones, and times ``matmul.simulate`` on each after JIT warm-up, in one process. Also
times the JIT warm-up in fresh processes: with Numba's on-disk cache cold and warm.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHAPE = {"m": 1024, "n": 2048, "k": 512}
_WARMUP = ("import time; t = time.perf_counter(); from autotile.hardware import load_profile; "
           "from autotile.kernels import matmul as mm; hw = load_profile(); "
           "s = {'m': 1024, 'n': 2048, 'k': 512}; mm.simulate(s, mm.default_params(s, 'fp16', hw), 'fp16', hw); "
           "print(time.perf_counter() - t)")


def sample(space, rng: random.Random, n: int) -> list[dict]:
    """``n`` feasible configurations drawn parameter by parameter, uniformly in each domain."""
    out, tries = [], 0
    while len(out) < n and tries < 50 * n:
        tries += 1
        env = {}
        for p in space.params:
            dom = space.domain(p.name, env)
            if len(dom) == 0:
                break
            env[p.name] = dom[rng.randrange(len(dom))]
        else:
            if space.check(env) is None:
                out.append(env)
    return out


def warmup(cache_dir: str | None) -> float:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if cache_dir:
        env["NUMBA_CACHE_DIR"] = cache_dir
    out = subprocess.run([sys.executable, "-c", _WARMUP], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--configs", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    a = ap.parse_args(argv)
    from autotile.kernels import matmul as mm
    from autotile.space import load_spec

    with tempfile.TemporaryDirectory() as cold:
        cold_s = warmup(cold)
        cached_s = warmup(cold)  # the same cache dir, now filled
    spec = load_spec(ROOT / "studies" / "matmul.yaml")
    hw = spec.hardware
    configs = sample(spec.space(SHAPE, "fp16", "cube"), random.Random(a.seed), a.configs)
    mm.simulate(SHAPE, configs[0], "fp16", hw)
    times = []
    for p in configs:
        t = time.perf_counter()
        mm.simulate(SHAPE, p, "fp16", hw)
        times.append(time.perf_counter() - t)
    med = statistics.median(times)
    out = {
        "shape": SHAPE, "dtype": "fp16", "configs": len(configs),
        "median_us": round(med * 1e6, 1),
        "p90_us": round(sorted(times)[int(0.9 * len(times))] * 1e6, 1),
        "configs_per_s_median": round(1.0 / med),
        "configs_per_s_mean": round(len(times) / sum(times)),
        "jit_warmup_s_cold_cache": round(cold_s, 2),
        "jit_warmup_s_warm_cache": round(cached_s, 2),
    }
    print(json.dumps(out, indent=2) if a.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
