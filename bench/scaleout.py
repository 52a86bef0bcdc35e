"""Trials per second with 1, 2 and 4 worker processes, on the embedded journal storage and on
PostgreSQL, for the simulator-backed matmul study.

    PYTHONPATH=. python bench/scaleout.py --json [--trials 120] [--pg URL]

Each point runs `autotile tune` on studies/matmul.yaml's first shape (TPE, no verification)
with a fresh storage and a budget of ``--trials`` distinct configurations, and divides the
completed trials by the wall time of the whole command (process start, JIT warm-up and storage
included, as a user sees it). PostgreSQL: ``--pg URL``, else a throwaway server is started if
the postgresql package is installed, else those points are reported as skipped. This machine
has 2 cores, so 4 workers oversubscribe it: expect the 2-worker point to be the best here.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))


def one_shape_spec(folder: Path) -> Path:
    text = (ROOT / "studies" / "matmul.yaml").read_text()
    head, _, rest = text.partition("shapes:\n")
    path = folder / "matmul_1024.yaml"
    path.write_text(head + "shapes:\n  - {m: 1024, k: 512, n: 2048}\n" + rest.split("\n\n", 1)[1])
    return path


def run(spec: Path, out: Path, jobs: int, trials: int, storage: str | None) -> dict:
    cmd = [sys.executable, "-m", "autotile", "tune", str(spec), "--trials", str(trials), "--jobs", str(jobs),
           "--quiet", "--no-verify", "--sampler", "tpe", "--out", str(out)]
    if storage:
        cmd += ["--storage", storage]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True)
    wall = time.perf_counter() - t0
    url = storage or optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(out / "studies.journal")))
    study = optuna.load_study(study_name=optuna.get_all_study_names(url)[0], storage=url)
    done = len(study.get_trials(states=(optuna.trial.TrialState.COMPLETE,)))
    return {"jobs": jobs, "complete_trials": done, "wall_s": round(wall, 2), "trials_per_s": round(done / wall, 2)}


def fresh_db(url: str, name: str) -> str:
    import sqlalchemy

    engine = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as c:
        c.execute(sqlalchemy.text(f"DROP DATABASE IF EXISTS {name}"))
        c.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return url.rsplit("/", 1)[0] + "/" + name


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--trials", type=int, default=120)
    ap.add_argument("--pg", help="a PostgreSQL URL (default: start a throwaway server)")
    a = ap.parse_args(argv)
    out = {"study": "studies/matmul.yaml m=1024,n=2048,k=512 fp16, TPE", "trials": a.trials,
           "cores": os.cpu_count(), "journal": [], "postgresql": []}
    server = None
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        spec = one_shape_spec(tmp)
        for jobs in (1, 2, 4):
            out["journal"].append(run(spec, tmp / f"j{jobs}", jobs, a.trials, None))
        url = a.pg
        if url is None:
            from pgserver import PgServer, pg_bin

            if pg_bin() is not None:
                server = PgServer().init().start()
                url = server.url
        try:
            if url is None:
                out["postgresql"] = "skipped: PostgreSQL is not installed and no --pg URL was given"
            else:
                for jobs in (1, 2, 4):
                    out["postgresql"].append(run(spec, tmp / f"p{jobs}", jobs, a.trials,
                                                 fresh_db(url, f"autotile_bench_{jobs}")))
        finally:
            if server is not None:
                server.remove()
    print(json.dumps(out, indent=2) if a.json else out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
