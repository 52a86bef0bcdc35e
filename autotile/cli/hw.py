"""``autotile hw list`` and ``autotile hw show NAME``: the bundled hardware profiles."""

from __future__ import annotations

from autotile.cli.common import given, print_json
from autotile.hardware import bundled_names, load_profile
from autotile.hardware.profile import RATES_NOTE

HELP = "list or show hardware profiles"


def add_arguments(p) -> None:
    sub = p.add_subparsers(dest="hw_command", metavar="{list,show}", parser_class=type(p))
    sub.required = True
    ls = sub.add_parser("list", help="list bundled profiles")
    ls.add_argument("--json", action="store_true", help="print JSON")
    show = sub.add_parser("show", help="show one profile (a bundled name or a path)")
    show.add_argument("name", type=given("a profile name or file"))
    show.add_argument("--json", action="store_true", help="print JSON")
    show.add_argument("--notes", action="store_true", help="also print each constant's source note")


def run(args) -> int:
    if args.hw_command == "list":
        rows = [load_profile(n).summary() for n in bundled_names()]
        if args.json:
            print_json(rows)
        else:
            for r in rows:
                print(f"{r['name']:<14} {r['cube_cores']:>3} cube / {r['vector_cores']:>3} vector cores  "
                      f"{r['clock_ghz']:.2f} GHz  {r['peak_tflops_fp16_cube']:>6.1f} TFLOP/s fp16  "
                      f"HBM {r['hbm_gb_per_s']:.0f} GB/s")
        return 0
    prof = load_profile(args.name)
    info = prof.summary()
    if args.notes or args.json:
        info["notes"] = prof.notes
    if args.json:
        print_json(info)
    else:
        for k, v in info.items():
            if k != "notes":
                print(f"{k:>22}: {v}")
        print(f"note: {RATES_NOTE}")
        if args.notes:
            for k, v in prof.notes.items():
                print(f"  {k}: {v}")
    return 0
