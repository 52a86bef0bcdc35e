"""``autotile bench-search SPEC``: compare search strategies against the known optimum."""

from __future__ import annotations

import sys

from autotile.atomic import check_output_file, refuse_input
from autotile.cli.common import MAX_SEED, given, int_in, nonempty, print_json, spec_inputs
from autotile.errors import InputError

HELP = "benchmark samplers on a spec: best found vs the optimum, per budget, median over seeds"


def add_arguments(p) -> None:
    from autotile.tune.benchsearch import DEFAULT_BUDGETS, DEFAULT_SAMPLERS, WITHIN

    p.add_argument("spec", type=given("a spec file"),
                   help="a replay spec (optimum from the measurements) or a small simulator spec "
                        "(a file, or a bundled study's name)")
    p.add_argument("--samplers", default=",".join(DEFAULT_SAMPLERS),
                   help=f"comma-separated (default {','.join(DEFAULT_SAMPLERS)})")
    p.add_argument("--budgets", default=",".join(map(str, DEFAULT_BUDGETS)),
                   help="distinct feasible configurations per study, comma-separated")
    p.add_argument("--seeds", type=int, default=10, help="seeds per sampler (default 10)")
    p.add_argument("--within", type=float, default=WITHIN, help="closeness to the optimum (default 0.05)")
    p.add_argument("-o", "--out", help="also write the JSON result to this file")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    from autotile.atomic import write_json
    from autotile.space import load_spec
    from autotile.tune.benchsearch import bench

    nonempty(args.out, "-o")
    samplers = _names(args.samplers)
    budgets = [_positive(b, "--budgets") for b in _names(args.budgets)]
    if args.seeds < 1:
        raise InputError(f"--seeds: expected a positive integer, got {args.seeds}")
    int_in(args.seeds, "--seeds", 1, MAX_SEED + 1)  # seeds 0 .. N-1, each a sampler seed
    if not 0 <= args.within < 1:
        raise InputError(f"--within: expected a fraction in [0, 1), got {args.within}")
    spec = load_spec(args.spec)
    refuse_input("-o", args.out, spec_inputs(spec))  # found before the benchmark, not after it
    if args.out is not None:
        check_output_file("-o", args.out)
    progress = None if args.quiet or args.json else _progress(args.seeds)
    out = bench(spec, samplers, budgets, args.seeds, args.within, progress=progress)
    if progress is not None:
        print(file=sys.stderr)
    if args.out is not None:
        write_json(args.out, out)
    if args.json:
        print_json(out)
    else:
        print(format_bench(out))
    return 0


def format_bench(out: dict) -> str:
    """A table per space: sampler x budget, median fraction of the optimum and trials to within."""
    pct = f"{out['within']:.0%}"
    lines = [f"{out['spec']} ({out['backend']}, {out['objective']}, median over {out['seeds']} seeds)"]
    for sp in out["spaces"]:
        shape = ",".join(f"{k}={v}" for k, v in sp["shape"].items())
        lines.append(f"{shape} {sp['dtype']} {sp['unit']}: optimum {sp['optimum']['value']:,.4g}, "
                     f"{sp['feasible_configs']} feasible configs, {sp['near_optimal_configs']} within {pct}")
        lines.append(f"  {'sampler':8} {'budget':>6} {'best/opt':>9} {'to ' + pct:>8} {'reached':>8}")
        for row in sp["samplers"]:
            if not row["available"]:
                lines.append(f"  {row['sampler']:8} unavailable: {row['reason']}")
                continue
            for r in row["results"]:
                to = "-" if r["median_trials_to_within"] is None else f"{r['median_trials_to_within']:g}"
                lines.append(f"  {row['sampler']:8} {r['budget']:>6} {r['median_fraction']:>9.3f} "
                             f"{to:>8} {r['reached']:>5}/{out['seeds']}"
                             + ("  (space exhausted)" if r.get("space_exhausted") else ""))
        if any(r.get("space_exhausted") for row in sp["samplers"] if row["available"] for r in row["results"]):
            lines.append(f"  (space exhausted: a budget of {sp['feasible_configs']} or more measures every "
                         "feasible config; those runs stop there)")
    return "\n".join(lines)


def _names(text: str) -> list[str]:
    names = [t.strip() for t in text.split(",") if t.strip()]
    if not names:
        raise InputError(f"expected a comma-separated list, got {text!r}")
    return list(dict.fromkeys(names))


def _positive(text: str, what: str) -> int:
    try:
        v = int(text)
    except ValueError:
        v = 0
    if v < 1:
        raise InputError(f"{what}: expected positive integers, got {text!r}")
    return v


def _progress(seeds: int):
    def show(sampler: str, i: int) -> None:
        print(f"\r{sampler}: seed {i + 1}/{seeds}   ", end="", file=sys.stderr, flush=True)

    return show
