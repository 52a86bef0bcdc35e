"""``autotile calibrate --hw PROFILE --measurements FILE.csv [-o NEW.yaml] [--json]``.

Without ``-o``: measured vs predicted cycles per row and the error summary. With ``-o``: fit the
profile's cube and vector constants the rows determine (the others are kept and listed as not
determined), move the constants the profile declares derived from a fitted one (``derived:``)
with it, and write the fitted profile atomically.
"""

from __future__ import annotations

import datetime as _dt
import sys
from pathlib import Path

from autotile.atomic import check_output_file, refuse_input, write_text
from autotile.cli.common import nonempty, print_json
from autotile.errors import InputError
from autotile.hardware import load_profile

HELP = "compare a hardware profile with measured micro-operations, or fit it to them (-o)"


def add_arguments(p) -> None:
    p.add_argument("--hw", default=None, help="hardware profile name or path (default ascend910b2)")
    p.add_argument("--measurements", required=True, help="CSV: chip,op,dtype,m,k,n,elems,repeat,cycles,series")
    p.add_argument("-o", "--output", default=None,
                   help="write the fitted profile here (not the measurements or the --hw file)")
    p.add_argument("--other-chip", action="store_true",
                   help="fit (-o) to rows measured on a chip whose AI Core is not the profile's (only 910B1..910B4 "
                        "share one), or not known to be: refused without it, since the fitted constants would read "
                        "as measured on the profile's chip; with it, their notes name the chip measured")
    p.add_argument("--json", action="store_true", help="print JSON")


def run(args) -> int:
    from autotile.hardware import emit
    from autotile.sim import calibrate as C
    from autotile.sim import fitting
    from autotile.tune.preflight import missing_vector_costs

    nonempty(args.output, "-o")
    nonempty(args.measurements, "--measurements", "a CSV file")  # "" read the current folder
    hw = load_profile(args.hw)
    if args.output is not None:
        refuse_input("-o", args.output, {f"the {flag} file this fit reads": path for flag, path in
                                         (("--measurements", args.measurements), ("--hw", hw.path))},
                     "write the fitted profile to another file")
        check_output_file("-o", args.output)  # before the fit, not after printing it
    every = C.read_measurements(args.measurements, known_ops=sorted(hw.vector), profile=hw.name)
    rows, skipped = C.held_rows(hw, every, args.measurements)  # bf16 rows on a chip without bf16
    skipped += C.check_chips(hw, rows, args.measurements, args.output is not None, args.other_chip)
    left_out = {"skipped_rows": len(every) - len(rows)}
    C.check_repeats(rows, hw, args.measurements)
    C.check_fits(rows, hw, args.measurements)
    if args.output is None:
        C.check_ops(rows, hw, args.measurements)
        try:
            rep = C.evaluate(hw, rows, skipped + C.series_notes(hw, rows))
        except InputError as exc:
            raise exc.located(file=args.measurements) from None
        if args.json:
            print_json({"hw": hw.label, "measurements": str(args.measurements), **left_out, **rep.to_json()})
        else:
            for r in rep.rows:
                flag = "  FAR OFF" if r.far_off else ""
                print(f"line {r.line:>4} {r.op:<6} {r.dtype:<15} {_params(r.params):<24} "
                      f"measured {r.measured:>9.3f}  predicted {r.predicted:>9.3f}  {100 * r.rel_error:+7.2f}%{flag}")
            _summary("errors", rep, left_out["skipped_rows"])
            for n in rep.notes:
                print(f"note: {n}")
        return 0
    src = Path(args.measurements).name
    date = _dt.date.today().isoformat()
    try:
        fit = fitting.fit(hw, rows, src, date, notes=skipped, missing_costs=missing_vector_costs)
    except InputError as exc:
        raise exc.located(file=args.measurements) from None
    doc = emit.load_document(hw.path)
    for path, (value, note) in fit.updates.items():
        caveat = C.other_chip_caveat(hw, rows, path)
        emit.set_constant(doc, path, value, note + (f"; {caveat}" if caveat else ""))
    for path, (value, note) in fit.amended.items():
        emit.set_constant(doc, path, value, note)
    for path, (value, note) in fit.derived.items():
        frm, scale = hw.derived[path]
        rel = {"from": ".".join(frm), **({"scale": scale} if scale != 1 else {})}
        caveat = C.other_chip_caveat(hw, rows, frm)
        emit.set_constant(doc, path, value, note + (f"; {caveat}" if caveat else ""), key="source",
                          extra={"derived": rel})
    header = _header(hw.path, keep_calibrated=not fit.updates)  # nothing fitted: the old line still holds
    if fit.updates:
        # the input's header may name the measurements it was fitted to: say which file this is
        header = (f"Fitted by `autotile calibrate` to {src}, {date}, from the profile {hw.label} ({Path(hw.path).name}):\n"
                  "each constant marked calibrated names the measurements it was fitted to, and one marked\n"
                  "derived follows the constant it names; the others and the lines below are the input's.\n"
                  + "".join(f"{n}.\n" for n in C.check_chips(hw, rows, None, True, True)) + header)
    write_text(args.output, emit.render(doc, header))
    load_profile(args.output)  # the written file must load strictly
    for w in fit.warnings:
        print(f"autotile: warning: {w}", file=sys.stderr)
    if args.json:
        print_json({"hw": hw.label, "output": str(args.output), "measurements": str(args.measurements), **left_out,
                    "before": fit.before.to_json(with_rows=False), "after": fit.after.to_json(),
                    "constants": {".".join(p): _val(v) for p, (v, _) in fit.updates.items()},
                    "warnings": list(fit.warnings),
                    "not_determined": {".".join(p): {"value": v, "why": why} for p, (v, why) in fit.undetermined.items()},
                    "derived": {".".join(p): {"value": _val(v), "from": ".".join(hw.derived[p][0]),
                                              "scale": hw.derived[p][1]} for p, (v, _) in fit.derived.items()}})
    else:
        _summary("before", fit.before, left_out["skipped_rows"])
        _summary("after ", fit.after, left_out["skipped_rows"])
        for r in fit.after.rows:
            if r.far_off:
                print(f"far off after the fit: line {r.line} {r.op} {r.dtype} {_params(r.params)} "
                      f"measured {r.measured} predicted {r.predicted:.3f}")
        for p, (v, why) in fit.undetermined.items():
            print(f"not determined: {'.'.join(p)} = {v}: {why}")
        for p, (v, note) in fit.derived.items():
            print(f"derived: {'.'.join(p)} = {_val(v)}: {note.rsplit('; ', 1)[-1]}")
        for n in fit.notes:
            print(f"note: {n}")
        print(f"wrote {args.output}")
    return 0


def _params(p: dict) -> str:
    return ",".join(f"{k}={v}" for k, v in p.items() if v is not None)


def _val(v):
    return v.__dict__ if hasattr(v, "__dict__") else v


def _summary(what, rep, skipped: int = 0) -> None:
    far = sum(r.far_off for r in rep.rows)
    out = f" ({skipped} not costed: dtypes the chip lacks)" if skipped else ""
    print(f"{what}: {len(rep.rows)} rows{out}, median |rel error| {100 * rep.median_abs_rel_error:.2f}%, "
          f"p90 {100 * rep.p90_abs_rel_error:.2f}%, {far} far off")


def _header(path, keep_calibrated: bool = False) -> str:
    lines = []
    for line in Path(path).read_text().splitlines():
        if not line.startswith("#"):
            break
        if keep_calibrated or "Constants marked calibrated" not in line:
            lines.append(line[1:].strip())
    return "\n".join(lines)
