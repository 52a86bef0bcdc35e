"""Table lookups answered by a region: how often they are slower than the default heuristic.

    PYTHONPATH=. python bench/lookup_regions.py [--tables DIR] [--budget N] [--seed 5] --json

Tunes the bundled specs that have a region function into ``DIR/<name>`` unless a table is
already there: ``studies/matmul.yaml`` (cube), ``studies/matmul_small.yaml`` (cube and vector; the
cube won all its shapes at seed 5) and, so the vector region is measured too, that spec on the vector unit
alone (``matmul_vector``: the same rules, ``units: [vector]``). Then it looks up, without a model,
the shapes around each tuned shape: every dim scaled by each of ``2**(i/2)`` for i from -4 to 4
(0.25x to 4x, rounded, at least 1): 729 shapes per tuned shape, a few hundred to a few thousand
per table. Every lookup a table entry answers (``exact`` / ``nearest``) is simulated beside the
default heuristic's tiling (the lookup's last step) for the same shape. Per table and unit: the
lookups, those a region answered, how many of those are slower than the default (at all, and by
over 5%), the worst and geometric-mean ratio of cycles, and the five worst shapes.
The other ops' entries serve their own tuned shape only (no region function), where the tuned
tiling is never slower than the default (every study's trial 0 is the default), so they are not
swept. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# table name -> (bundled spec, edit of its text)
TABLES = {"matmul": ("matmul", None), "matmul_small": ("matmul_small", None),
          "matmul_vector": ("matmul_small", ("units: [cube, vector]", "units: [vector]"))}
FACTORS = tuple(2 ** (i / 2) for i in range(-4, 5))


def table_for(name: str, out: Path, budget: int | None, seed: int) -> Path:
    """The table ``name`` (see TABLES), tuned into ``out/name`` unless one is there."""
    path = out / name / "table.json"
    if not path.exists():
        base, edit = TABLES[name]
        spec = ROOT / "studies" / f"{base}.yaml"
        if edit is not None:
            text = spec.read_text()
            assert edit[0] in text, f"{spec} no longer has {edit[0]!r}"
            spec = out / f"{name}.yaml"
            spec.write_text(text.replace(edit[0], edit[1]))
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        trials = ["--trials", str(budget)] if budget else []
        subprocess.run([sys.executable, "-m", "autotile", "tune", str(spec), "--out", str(out / name),
                        *trials, "--seed", str(seed), "--quiet"],
                       env=env, check=True, stdout=subprocess.DEVNULL)
    return path


def around(look) -> list[dict]:
    """The shapes around every tuned shape: each dim scaled by each of FACTORS (deduplicated)."""
    seen = {}
    for e in look.table.entries:
        axes = [sorted({max(1, round(v * f)) for f in FACTORS}) for v in e.shape.values()]
        for values in _product(axes):
            seen.setdefault(values, None)
    return [dict(zip(look.table.dims, v)) for v in seen]


def sweep(table_path: Path) -> list[dict]:
    from autotile.tables.lookup import Lookup, NoFeasibleTiling
    from autotile.tables.model_hook import default_of
    from autotile.tune.evaluate import make_evaluator

    look = Lookup(table_path)
    rows = []
    for shape in around(look):
        try:
            got = look.find(shape)
        except NoFeasibleTiling:
            rows.append({"shape": shape, "match": "none"})
            continue
        row = {"shape": shape, "match": got.match, "unit": got.unit}
        if got.match in ("exact", "nearest"):
            space = look.table.spec.space(shape, got.dtype, got.unit)
            ev, base = make_evaluator(space), default_of(space)
            row["cycles"] = ev.score(got.params).values.get("cycles")
            row["default_cycles"] = ev.score(base).values.get("cycles") if base is not None else None
            row["matched_shape"] = got.matched_shape
        rows.append(row)
    return rows


def _product(axes):
    if not axes:
        yield ()
        return
    for v in axes[0]:
        for rest in _product(axes[1:]):
            yield (v, *rest)


def summary(rows: list[dict], unit: str) -> dict:
    """The figures of one unit's region answers (see the module docstring)."""
    hits = [r for r in rows if r.get("unit") == unit and "cycles" in r]
    cmp = [r for r in hits if r["cycles"] is not None and r["default_cycles"] is not None]
    ratios = [r["cycles"] / r["default_cycles"] for r in cmp]
    slower = [r for r, q in zip(cmp, ratios) if q > 1.0]
    worst = sorted(zip(ratios, range(len(cmp))), reverse=True)[:5]
    return {"unit": unit, "region_answers": len(hits),
            "slower_than_default": len(slower),
            "slower_fraction": round(len(slower) / len(cmp), 4) if cmp else 0.0,
            "slower_over_5pct": sum(q > 1.05 for q in ratios),
            "worst_ratio": round(max(ratios), 3) if ratios else None,
            "geomean_ratio": round(math.exp(sum(map(math.log, ratios)) / len(ratios)), 4) if ratios else None,
            "worst": [{"shape": cmp[i]["shape"], "matched_shape": cmp[i]["matched_shape"],
                       "cycles": round(cmp[i]["cycles"]), "default_cycles": round(cmp[i]["default_cycles"]),
                       "ratio": round(q, 3)} for q, i in worst if q > 1.0]}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", help="folder of tables (DIR/<spec name>/table.json), tuned there when missing")
    ap.add_argument("--budget", type=int, help="trials per study (default: the spec's)")
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.tables) if args.tables else Path(tmp)
        result = []
        for name in TABLES:
            path = table_for(name, out, args.budget, args.seed)
            rows = sweep(path)
            units = sorted({r["unit"] for r in rows if "unit" in r})
            result.append({"table": name, "shapes": len(rows),
                           "answers": {m: sum(r["match"] == m for r in rows)
                                       for m in ("exact", "nearest", "default", "none")},
                           "units": [summary(rows, u) for u in units]})
    print(json.dumps(result, indent=2 if args.json else None))
    return 0


if __name__ == "__main__":
    sys.exit(main())
