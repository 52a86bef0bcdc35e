"""``autotile micro OP [k=v,...] [--dtype D] [--hw H] [--json]``: one micro-operation on one core."""

from __future__ import annotations

from autotile.cli.common import parse_kv, print_json
from autotile.hardware import load_profile

HELP = "simulate one Mmad, copy or vector instruction on one core through the engine"


def add_arguments(p) -> None:
    p.add_argument("op", help="mmad, copy or vector")
    p.add_argument("params", nargs="?", default="",
                   help="k=v,... e.g. m=32,k=16,n=16,repeat=8 | path=gm_ub,bytes=16384 | op=vadd,elems=2048")
    p.add_argument("--dtype", default=None,
                   help="fp16 (default), bf16, fp32, int8, or a vector signature such as fp16_fp16_fp32")
    p.add_argument("--hw", default=None, help="hardware profile name or path (default ascend910b2)")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    from autotile.sim.micro import micro

    hw = load_profile(args.hw)
    res = micro(args.op, parse_kv(args.params, what="micro parameters"), args.dtype, hw)
    out = {**res.to_json(), "hw": hw.label}  # an edited copy is not the shipped chip it is named for
    if args.json:
        print_json(out)
        return 0
    for k, v in out.items():
        print(f"{k:>24}: {v}")
    return 0
