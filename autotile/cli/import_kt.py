"""``autotile import-kt CACHE -o SPEC``: a replay spec from a Kernel Tuner cache file."""

from __future__ import annotations

from autotile.atomic import check_output_file
from autotile.cli.common import given, nonempty, print_json
from autotile.words import count

HELP = "write a replay spec (YAML) from a Kernel Tuner cache (.json or .json.gz)"


def add_arguments(p) -> None:
    p.add_argument("cache", type=given("a file name"), help="a Kernel Tuner cache file, e.g. gemm_A100.json.gz")
    p.add_argument("-o", "--out", required=True, help="the spec to write, e.g. gemm.yaml")
    p.add_argument("--json", action="store_true", help="print the written spec as JSON")


def run(args) -> int:
    from autotile.space import load_spec
    from autotile.tune.importkt import import_cache

    nonempty(args.out, "-o")
    check_output_file("-o", args.out)  # a folder is bad input (exit 2), not a failed write
    spec = import_cache(args.cache, args.out)
    loaded = load_spec(args.out)  # the spec must load as written
    if args.json:
        print_json(spec)
        return 0
    print(f"{args.out}: op replay, {count(len(loaded.params), 'param')} "
          f"({', '.join(p.name for p in loaded.params)}); {spec['description'].split(': ', 1)[-1]}")
    print(f"tune it with: autotile tune {args.out}")
    return 0
