"""``autotile space SPEC``: the size of a spec's search space per shape, dtype and unit."""

from __future__ import annotations

import os

from autotile import words
from autotile.cli.common import Once, check_dtype, given, parse_shape, print_json
from autotile.errors import InputError
from autotile.space import load_spec

HELP = "show the raw and feasible size of a spec's search space"


def add_arguments(p) -> None:
    p.add_argument("spec", type=given("a spec file"), help="the study spec (YAML), or a bundled study's name (e.g. matmul)")
    p.add_argument("--shape", action=Once, help="one shape instead of the spec's, e.g. m=1024,n=2048,k=512")
    p.add_argument("--dtype", help="one dtype instead of the spec's")
    p.add_argument("--unit", help="one unit instead of the spec's")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    spec = load_spec(args.spec)
    check_dtype(spec, args.dtype)
    shapes = [_shape(spec, args.shape)] if args.shape else list(spec.shapes)
    dtypes = [args.dtype] if args.dtype else list(spec.dtypes)
    units = [args.unit] if args.unit else list(spec.units)
    pairs = [(d, u) for d in dtypes for u in units]
    if not args.unit:  # e.g. int8 on the vector matmul, fp32 on the 310P cube: no space (unless nothing else is left)
        pairs = [(d, u) for d, u in pairs if spec.computes(u, d)] or pairs
    rows = []
    for shape in shapes:
        for dtype, unit in pairs:
            space = spec.space(shape, dtype, unit)
            space.require_evaluable()
            count = space.count()
            row = {"shape": shape, "dtype": dtype, "unit": unit, **count.to_dict()}
            if not count.raw_size:  # say which param has no value, as simulate does
                row["why_empty"] = space.empty_reason()
            rows.append(row)
    first = rows[0]
    if args.json:
        print_json({
            "op": spec.op.name,
            "hardware": spec.hardware.label,  # as the text's header names it
            "hardware_hash": spec.hardware.content_hash(),
            "hardware_path": spec.hardware.path and os.path.abspath(spec.hardware.path),  # as summary.json's
            "content_hash": spec.content_hash(),  # the spec's
            "raw_size": first["raw_size"],
            "feasible_size": first["feasible_size"],
            "params": list(spec.param_names(first["unit"])),
            "method": first["method"],
            "top_constraint": first["top_constraint"],
            "spaces": rows,
        })
        return 0
    live = [p.name for p in spec.params if p.units is None or set(p.units) & set(spec.units)]
    print(f"{spec.op.name} on {spec.hardware.label}: {words.count(len(live), 'param')} ({', '.join(live)})")
    for r in rows:
        shape = ",".join(f"{k}={v}" for k, v in r["shape"].items())
        approx = "~" if r["method"] == "sampled" else ""
        share = r["feasible_size"] / r["raw_size"] if r["raw_size"] else 0.0
        raw_approx = "~" if not r.get("raw_exact", True) else ""
        line = f"{shape} {r['dtype']} {r['unit']}: raw {raw_approx}{r['raw_size']:,}, "
        if r["method"] == "sampled" and r["raw_size"] and not r["feasible_samples"]:
            # "~0 (0.0%)" read as a count; the samples bound the feasible size, they do not pin it
            line += f"none of {r['samples']:,} samples feasible (95% CI 0..{r['ci95'][1]:,})"
        else:
            line += f"feasible {approx}{r['feasible_size']:,} ({share:.1%}, {r['method']}"
            if r["method"] == "sampled":
                lo, hi = r["ci95"]
                line += f", {r['samples']} samples, 95% CI {lo:,}..{hi:,}"
            line += ")"
        if r.get("why_empty"):
            line += f"; {r['why_empty']}"
        if r["top_constraint"]:
            line += f"; top constraint: {r['top_constraint']} (fails on {approx}{r['top_constraint_removes']:,})"
        print(line)
    return 0


def _shape(spec, text: str) -> dict:
    shape = parse_shape(text)
    dims = spec.op.dims
    unknown = [k for k in shape if k not in dims]
    if unknown:
        raise InputError(f"--shape: unknown dimension {unknown[0]!r} of {spec.op.name}, "
                         f"expected {', '.join(dims)}")
    missing = [d for d in dims if d not in shape]
    if missing:
        raise InputError(f"--shape: missing dimension {missing[0]!r}, expected {', '.join(dims)}")
    return {d: shape[d] for d in dims}
