"""Time of ``autotile space studies/matmul.yaml --json`` against issue #2's 5 s bar.

    PYTHONPATH=. python bench/space_time.py --json [--runs 5]

Each run is a fresh process (imports and the space's enumeration, as a user pays them), after
one untimed warm-up run that fills Numba's on-disk cache. Prints the median and all runs.
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
BAR_S = 5.0


def one() -> float:
    """Wall seconds of one ``autotile space`` process."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    start = time.perf_counter()
    subprocess.run([sys.executable, "-m", "autotile", "space", str(ROOT / "studies" / "matmul.yaml"), "--json"],
                   env=env, check=True, capture_output=True)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    one()  # warm-up: Numba's cache
    runs = [one() for _ in range(a.runs)]
    med = statistics.median(runs)
    out = {"bench": "space_time", "spec": "studies/matmul.yaml", "median_s": round(med, 3),
           "runs_s": [round(r, 3) for r in runs], "bar_s": BAR_S, "ratio_to_bar": round(med / BAR_S, 3),
           "meets_bar": med < BAR_S}
    print(json.dumps(out, indent=None if a.json else 2))
    return 0 if med < BAR_S else 1


if __name__ == "__main__":
    sys.exit(main())
