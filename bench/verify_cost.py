"""What the verification gate costs: one execute-mode check per exported result of a tune run.

    PYTHONPATH=. python bench/verify_cost.py OUT_DIR [OUT_DIR ...]

For each result in OUT_DIR/summary.json that has a pick, times ``verify_one`` on it (after one
untimed run, so Numba's JIT is warm) and prints a JSON list of ``{study, seconds, passed,
candidates_run, worst_case_s}``: ``candidates_run`` is how many the gate executed in that run and
``worst_case_s`` the cost of the gate's cap (``MAX_EXECUTED`` runs) at that per-run time, what a
kernel wrong on every tiling would spend. Picks differ in run time from the candidates above
them, so the worst case is an estimate.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from autotile.kernels import registry
from autotile.space.loader import load_spec
from autotile.tune.verify import MAX_EXECUTED, verify_one


def main(argv: list[str]) -> None:
    rows = []
    for out in map(Path, argv):
        summary = json.loads((out / "summary.json").read_text())
        spec = load_spec(summary["spec"])
        kernel = registry.implementation(summary["op"])
        for r in summary["results"]:
            if not r.get("params"):
                continue
            args = (kernel, r["shape"], r["params"], r["dtype"], spec.hardware)
            kw = {"unit": r["unit"], "options": spec.inputs}
            verify_one(*args, **kw)  # JIT warm-up
            t = time.perf_counter()
            v = verify_one(*args, **kw)
            dt = time.perf_counter() - t
            rows.append({"study": r["study"], "seconds": round(dt, 4), "passed": v.passed,
                         "candidates_run": (r.get("gate") or {}).get("executed"),
                         "worst_case_s": round(dt * MAX_EXECUTED, 2)})
    print(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
