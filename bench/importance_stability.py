"""How many complete trials the report's parameter importance needs before its ranking holds.

    PYTHONPATH=. python bench/importance_stability.py OUT [--seeds 0,1,2,3] [--trials 100]

Tunes one study each of sigmoid (fp16, n=1,024 and 65,536), elementwise (fp16, n=2**20),
global_sum (fp16, n=65,536) on the Vector and matmul (fp16, 64x64x64) on the Cube, per seed, into
``OUT/r_<name>_<seed>`` (kept: a rerun only analyses), then ranks each study's parameters as the
report does (``autotile.report.search.importances``, PED-ANOVA over the first objective) from its
first k complete trials and from all of them. Prints, per k, the share of studies whose first-ranked
parameter at k is the one ranked first from all trials, whose share there is within 20% of that
one's, and the one ranked first from the first 2k; and the mean share that moved (half the L1
distance between the two rankings). ``MIN_ADVICE_TRIALS`` comes from this table.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import optuna
import yaml
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend
from optuna.trial import TrialState

from autotile.report.search import importances

ROOT = Path(__file__).resolve().parents[1]
KS = (5, 8, 10, 15, 20, 25, 30, 40, 50, 60)
SPECS = {  # name: (bundled study, its fields replaced)
    "sig": ("sigmoid", {"dtypes": ["fp16"], "units": ["vector"], "shapes": [{"n": 1024}]}),
    "sig64k": ("sigmoid", {"dtypes": ["fp16"], "units": ["vector"], "shapes": [{"n": 65536}]}),
    "ew": ("elementwise", {"dtypes": ["fp16"], "units": ["vector"], "shapes": [{"n": 1048576}]}),
    "gsum": ("global_sum", {"dtypes": ["fp16"], "units": ["vector"], "shapes": [{"n": 65536}]}),
    "mm": ("matmul_small", {"dtypes": ["fp16"], "units": ["cube"], "shapes": [{"m": 64, "k": 64, "n": 64}]}),
}


def tune(out: Path, seeds: list[int], trials: int) -> None:
    for name, (study, fields) in SPECS.items():
        spec = yaml.safe_load((ROOT / "studies" / f"{study}.yaml").read_text()) | fields
        (out / f"{name}.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
        for seed in seeds:
            run = out / f"r_{name}_{seed}"
            if not (run / "summary.json").exists():
                subprocess.run([sys.executable, "-m", "autotile", "tune", str(out / f"{name}.yaml"), "--trials",
                                str(trials), "--seed", str(seed), "--no-verify", "--quiet", "--out", str(run)],
                               check=True, stdout=subprocess.DEVNULL)


def ranking(directions, trials) -> dict | None:
    study = optuna.create_study(directions=directions)
    study.add_trials(trials)
    got = importances(study)
    return got.shares if got.shares else None


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--seeds", default="0,1,2,3")
    ap.add_argument("--trials", type=int, default=100)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    tune(args.out, [int(s) for s in args.seeds.split(",")], args.trials)
    hits = {k: {"full": [], "near": [], "2k": [], "moved": []} for k in KS}
    for summary in sorted(args.out.glob("r_*/summary.json")):
        storage = JournalStorage(JournalFileBackend(str(summary.parent / "studies.journal")))
        for r in json.loads(summary.read_text())["results"]:
            study = optuna.load_study(study_name=r["study"], storage=storage)
            done = sorted(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)), key=lambda t: t.number)
            full = ranking(study.directions, done)
            if full is None:
                continue
            first = max(full, key=full.get)
            for k in KS:
                if 2 * k > len(done):
                    continue
                at, at2 = ranking(study.directions, done[:k]), ranking(study.directions, done[:2 * k]) or {}
                top = max(at, key=at.get) if at else None
                hits[k]["full"].append(top == first)
                hits[k]["near"].append(top is not None and full.get(top, 0.0) >= 0.8 * full[first])
                hits[k]["2k"].append(top is not None and top == max(at2, key=at2.get, default=None))
                hits[k]["moved"].append(sum(abs((at or {}).get(p, 0.0) - full.get(p, 0.0))
                                            for p in set(at or {}) | set(full)) / 2)
    print("k trials (studies): first-ranked at k is the one from all trials | within 20% of its share | "
          "the one at 2k | mean share moved")
    for k, h in hits.items():
        n = len(h["full"])
        if n:
            print(f"{k:3d} ({n:2d}): {100 * sum(h['full']) / n:4.0f}% {100 * sum(h['near']) / n:5.0f}% "
                  f"{100 * sum(h['2k']) / n:5.0f}%   {sum(h['moved']) / n:.2f}")


if __name__ == "__main__":
    main()
