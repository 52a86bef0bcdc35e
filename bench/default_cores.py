"""The 1-D studies' default tilings against the best core count, per op, unit and size.

    PYTHONPATH=. python bench/default_cores.py --json [--n 65536,1048576] [--dtype fp32]

For each bundled 1-D study (sigmoid, elementwise, weighted_sum, global_sum), unit and n: the
default tiling as a study's trial 0 and lookup's fallback get it (``Space.default_tiling``, the
kernel's heuristic moved onto the spec's domains), its cycles, and the fastest tiling that differs
from it only in ``cores`` (every value the kernel accepts, with ``tile_len`` cut to a core's
slice where it is longer), so ``ratio`` is what the default's core count costs. Rows print as
``{op, unit, dtype, n, cores, cycles, best_cores, best_cycles, ratio, unit_cores}``.

``--tiles`` searches ``tile_len`` too (powers of two from 128 to 16384, with the core counts), so
``ratio`` is what the default's cores and tile length cost together; rows gain ``tile_len`` and
``best_tile_len``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from autotile.kernels import registry
from autotile.space import load_spec

ROOT = Path(__file__).resolve().parents[1]
OPS = ("sigmoid", "elementwise", "weighted_sum", "global_sum")


TILES = tuple(2 ** e for e in range(7, 15))


def row(spec, n: int, dtype: str, unit: str, tiles: bool = False) -> dict:
    space = spec.space({"n": n}, dtype, unit)
    kernel = registry.implementation(spec.op.name)
    hw = spec.hardware
    base = space.default_tiling()

    def cycles(p: dict) -> float | None:
        r = kernel.simulate({"n": n}, p, dtype, hw, unit=unit, options=spec.inputs)
        return r.cycles if r.feasible else None

    most = hw.cube_cores if unit == "cube" else hw.vector_cores
    own = cycles(base)
    best = (own, base["cores"], base["tile_len"])
    for c in range(1, min(most, max(1, n // 16)) + 1):
        slice_ = -(-n // c)
        for tile in (TILES if tiles else (base["tile_len"],)):
            p = {**base, "cores": c, "tile_len": min(tile, max(16, -(-slice_ // 16) * 16))}
            if p == base:
                continue
            t = cycles(p)
            if t is not None and (best[0] is None or t < best[0]):
                best = (t, c, p["tile_len"])
    out = {"op": spec.op.name, "unit": unit, "dtype": dtype, "n": n, "cores": base["cores"],
           "cycles": round(own) if own else None, "best_cores": best[1],
           "best_cycles": round(best[0]) if best[0] else None,
           "ratio": round(own / best[0], 3) if own and best[0] else None, "unit_cores": most}
    if tiles:
        out |= {"tile_len": base["tile_len"], "best_tile_len": best[2]}
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", default="65536,1048576", help="sizes, comma-separated")
    ap.add_argument("--dtype", default="fp32")
    ap.add_argument("--tiles", action="store_true", help="search tile_len as well as cores")
    ap.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    args = ap.parse_args(argv)
    rows = []
    for op in OPS:
        spec = load_spec(ROOT / "studies" / f"{op}.yaml")
        for unit in spec.units:
            for n in (int(x) for x in args.n.split(",")):
                rows.append(row(spec, n, args.dtype, unit, args.tiles))
    json.dump(rows, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
