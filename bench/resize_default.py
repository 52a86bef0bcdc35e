"""resize's default tiling against the best of a small grid, on representative shapes.

    PYTHONPATH=. python bench/resize_default.py --json [--quick]

For each case (shape, dtype, mode, layout): the kernel's ``default_params`` and its cycles; the
default as a study of the bundled spec gets it (``Space.default_tiling``: moved onto the spec's
domains, cores onto the divisors of the unit's cores) and its cycles; and the fastest tiling of a
grid (``tile_h``, ``tile_w``, ``tile_c`` powers of two or the whole dimension, output tiles of
512 B to 64 KiB, double buffered, on ``busy_cores`` of the tiles), so ``ratio`` and
``spec_ratio`` are what the defaults cost. Rows print as ``{shape, dtype, mode, layout, default,
cycles, spec_default, spec_cycles, best, best_cycles, ratio, spec_ratio}``. ``--quick`` keeps the
first case of each kind.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

from autotile.kernels import _common as C
from autotile.kernels import resize as R
from autotile.space import load_spec

ROOT = Path(__file__).resolve().parents[1]


def _shape(n, c, hi, wi, ho, wo):
    return {"n": n, "c": c, "h_in": hi, "w_in": wi, "h_out": ho, "w_out": wo}


# (shape, dtypes, modes, layouts): the bundled study's shapes, then the cases a default handles
# differently: small planes with many channels, one long row, one channel, a few channels
CASES = [
    (_shape(1, 64, 128, 128, 256, 256), ("fp16", "fp32"), ("bilinear", "nearest"), ("NCHW", "NHWC")),
    (_shape(1, 64, 256, 256, 128, 128), ("fp16",), ("bilinear",), ("NCHW", "NHWC")),
    (_shape(2, 3, 480, 640, 224, 224), ("fp16", "fp32"), ("bilinear",), ("NCHW", "NHWC")),
    (_shape(16, 512, 7, 7, 14, 14), ("fp16",), ("nearest", "bilinear"), ("NCHW", "NHWC")),
    (_shape(1, 256, 16, 16, 32, 32), ("fp16", "fp32"), ("bilinear",), ("NCHW",)),
    (_shape(8, 32, 28, 28, 56, 56), ("fp32",), ("bilinear", "nearest"), ("NCHW",)),
    (_shape(1, 1, 1, 4096, 1, 8192), ("fp32",), ("bilinear", "nearest"), ("NCHW",)),
    (_shape(1, 1, 512, 512, 1024, 1024), ("fp16",), ("bilinear",), ("NCHW",)),
    (_shape(1, 4, 64, 2000, 32, 3000), ("fp32",), ("bilinear",), ("NCHW", "NHWC")),
    (_shape(4, 3, 64, 64, 300, 300), ("fp16",), ("nearest",), ("NCHW",)),
]
MIN_TILE, MAX_TILE = 512, 65536  # output tile bytes the grid tries


def _sizes(top: int, least: int = 1) -> list[int]:
    out = [v for v in (2 ** e for e in range(12)) if least <= v < top]
    return out + [top]


def _grid(shape, dtype, hw, options):
    nb = C.BYTES[dtype]
    for th in _sizes(min(64, shape["h_out"])):
        for tw in _sizes(min(1024, shape["w_out"]), 16):
            for tc in _sizes(min(256, shape["c"])):
                if not MIN_TILE <= th * tw * tc * nb <= MAX_TILE:
                    continue
                p = {"tile_h": th, "tile_w": tw, "tile_c": tc, "buffer_num": 2, "cores": 1}
                p["cores"] = C.busy_cores(R._ntiles(shape, p), hw.vector_cores)
                yield p


def row(spec, shape: dict, dtype: str, mode: str, layout: str) -> dict:
    options = {"mode": mode, "layout": layout, "align_corners": False}
    hw = spec.hardware

    def cycles(p):
        r = R.simulate(shape, p, dtype, hw, options=options)
        return r.cycles if r.feasible else None

    base = R.default_params(shape, dtype, hw, options=options)
    own = cycles(base)
    snapped = dataclasses.replace(spec, inputs=options).space(shape, dtype, "vector").default_tiling()
    spec_own = cycles(snapped)
    best, best_t = None, None
    for p in (base, snapped, *_grid(shape, dtype, hw, options)):
        t = cycles(p)
        if t is not None and (best_t is None or t < best_t):
            best, best_t = p, t
    return {"shape": shape, "dtype": dtype, "mode": mode, "layout": layout, "default": base,
            "cycles": round(own) if own else None, "spec_default": snapped,
            "spec_cycles": round(spec_own) if spec_own else None, "best": best,
            "best_cycles": round(best_t) if best_t else None,
            "ratio": round(own / best_t, 3) if own and best_t else None,
            "spec_ratio": round(spec_own / best_t, 3) if spec_own and best_t else None}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="one dtype, mode and layout per shape")
    ap.add_argument("--json", action="store_true", help="print JSON (the only output format)")
    args = ap.parse_args(argv)
    spec = load_spec(ROOT / "studies" / "resize.yaml")
    rows = []
    for shape, dtypes, modes, layouts in CASES:
        for dtype in dtypes[:1] if args.quick else dtypes:
            for mode in modes[:1] if args.quick else modes:
                for layout in layouts[:1] if args.quick else layouts:
                    rows.append(row(spec, shape, dtype, mode, layout))
    json.dump(rows, sys.stdout, indent=1)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
