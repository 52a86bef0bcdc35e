"""``autotile crossover OP``: where the best unit changes with size, found by simulation."""

from __future__ import annotations

from autotile.cli.common import Merged, check_chip_dtype, int_in, print_json
from autotile.cli.selector_args import check_units_run, kv, parse_inputs, untrained
from autotile.errors import InputError
from autotile.hardware import load_profile
from autotile.kernels import registry
from autotile.models.crossover import (
    CLOSE,
    FRACTAL,
    NEAR,
    NEAR_PROBES,
    grid_restriction,
    range_edge,
)
from autotile.report.fmt import lead as fmt_lead

HELP = "size from which one unit (--large-unit) stays faster than another (--small-unit)"
LOW, HIGH = 16, 16384  # the documented default range (issue #4: "a log grid from 16 to 16384")
MAX_HIGH = 1 << 20  # a probe near 2**20 simulates ~1 s per unit, and bisecting an edge asks ~20 of them
LEARNED_MAX_SIZES = 1 << 16  # the model is asked at every n: 2**20 sizes took ~1 min and 3.6 GB


def add_arguments(p) -> None:
    p.add_argument("op")
    p.add_argument("--dtype", default="fp16")
    p.add_argument("--hw", default=None, help="hardware profile name or path")
    p.add_argument("--small-unit", default=None,
                   help="default: vector for ops with a cube, else scalar")
    p.add_argument("--large-unit", default=None, help="default: cube for ops with one, else vector")
    p.add_argument("--inputs", default="", action=Merged,
                   help="the op's options as a spec's inputs: has them, e.g. kind=relu (data: both framings are run)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--grid", action="store_true", help="also print the per-size best cycles of each unit")
    p.add_argument("--models", default=None, help="cache folder given to `autotile train -o` (for learned_n)")
    p.add_argument("--low", type=int, default=LOW, help=f"smallest n searched (default {LOW}; at least 1)")
    p.add_argument("--high", type=int, default=HIGH,
                   help=f"largest n searched (default {HIGH:,}; at most {MAX_HIGH:,}: time grows with n)")


def run(args) -> int:
    from autotile.models.crossover import crossover
    from autotile.models.what_decides import edges

    try:
        info = registry.get(args.op)
    except KeyError as exc:
        raise InputError(str(exc.args[0])) from None
    if info.dims != ("n",):
        raise InputError(f"crossover searches one size n; op {args.op} has dims {', '.join(info.dims) or 'from its spec'} "
                         f"(compare units on given shapes with `autotile simulate`)")
    if len(info.units) < 2:
        raise InputError(f"op {args.op} runs on one unit ({info.units[0]}): there is no crossover to find")
    if args.dtype not in info.dtypes:
        raise InputError(f"op {args.op} has no dtype {args.dtype!r} (has {', '.join(info.dtypes)})")
    options = parse_inputs(args.op, args.inputs, "crossover runs both framings (data on chip and inputs in GM); "
                                                 "leave it out")
    _check_range(args.low, args.high)
    for u in (args.small_unit, args.large_unit):
        if u is not None and u not in info.units:
            raise InputError(f"op {args.op} has no unit {u!r} (has {', '.join(info.units)})")
    if args.small_unit is not None and args.small_unit == args.large_unit:
        raise InputError(f"--small-unit and --large-unit are both {args.small_unit!r}: expected two "
                         "different units to compare")
    from autotile.models.store import given_dir

    given_dir(args.models)
    hw = load_profile(args.hw)
    check_chip_dtype(hw, args.dtype)
    args.small_unit, args.large_unit = _units(args)
    check_units_run(hw, args.dtype, (args.small_unit, args.large_unit))
    args.options = options
    lo, hi = args.low, args.high
    kw = {"small_unit": args.small_unit, "large_unit": args.large_unit, "options": options}
    framed = "on_chip" in info.placements  # ops whose kernels model inputs already on chip
    none = {"n": None, "windows": None, "grid": None, "edge": None, "closest": None, "closest_windows": None,  # no framing: not searched
            "top": hi, "limits": {}}
    on = crossover(args.op, args.dtype, hw, on_chip=True, lo=lo, hi=hi, **kw) if framed else none
    e2e = crossover(args.op, args.dtype, hw, on_chip=False, lo=lo, hi=hi, **kw)
    on_u = crossover(args.op, args.dtype, hw, on_chip=True, aligned=False, lo=lo, hi=hi, **kw) if framed else on
    e2e_u = crossover(args.op, args.dtype, hw, on_chip=False, aligned=False, lo=lo, hi=hi, **kw)
    # on chip, the search ends where a unit's buffers stop holding the data (None: nothing searched)
    tops = {"simulated_n": on["top"], "simulated_n_unaligned": on_u["top"], "learned_n": on["top"]}
    learned = _learned(args, hw, framed, on["top"])
    why = {"on_chip": edges(args.op, args.dtype, hw, True, on["windows"], lo=lo, hi=on["top"] or hi, **kw)
           if framed else None,
           "end_to_end": edges(args.op, args.dtype, hw, False, e2e["windows"], lo=lo, hi=hi, **kw)}
    at_edge = {"simulated_n": on["edge"], "end_to_end_n": e2e["edge"], "simulated_n_unaligned": on_u["edge"],
               "end_to_end_n_unaligned": e2e_u["edge"],
               **{k: range_edge(learned[k], lo, tops.get(k) or hi) for k in ("learned_n", "learned_end_to_end_n")}}
    fits = _fit_note(args, lo, hi, on) if framed else None
    out = {"op": args.op, "dtype": args.dtype, "hw": hw.label, "hw_hash": hw.content_hash(), "units": [args.small_unit, args.large_unit],
           "inputs": options,
           "simulated_n": on["n"], "end_to_end_n": e2e["n"],
           "simulated_windows": on["windows"], "end_to_end_windows": e2e["windows"], "what_decides": why,
           "simulated_n_unaligned": on_u["n"], "end_to_end_n_unaligned": e2e_u["n"],
           "simulated_windows_unaligned": on_u["windows"], "end_to_end_windows_unaligned": e2e_u["windows"],
           "alignment": _alignment(args, hw, on["n"] if framed else None, e2e["n"], min(on["limits"].values(), default=None)), **learned,
           "range": [lo, hi], "range_edges": at_edge,
           "on_chip_range": None if not framed or on["top"] is None else [lo, on["top"]],
           "on_chip_limits": on["limits"] if framed else None, "on_chip_note": fits,
           "closest_leads": {"simulated_n": on.get("closest"), "end_to_end_n": e2e["closest"],
                             "simulated_n_unaligned": on_u.get("closest"), "end_to_end_n_unaligned": e2e_u["closest"]},
           "closest_window_leads": {"simulated_windows": on["closest_windows"],
                                    "end_to_end_windows": e2e["closest_windows"],
                                    "simulated_windows_unaligned": on_u["closest_windows"],
                                    "end_to_end_windows_unaligned": e2e_u["closest_windows"]},
           "search": f"log2 grid {lo}..{hi}, a probe between two that favour the same unit where either leads "
                     f"by under {NEAR:.0%} (down to 16 apart, at most {NEAR_PROBES} per search), then integer bisection; each unit at its best tiling from an "
                     "exhaustive grid (tile_len powers of two, buffer_num 1-2, cores powers of two and the whole unit, "
                     f"all categorical params{'; ' + grid_restriction(args.op) if grid_restriction(args.op) else ''}); "
                     "only the probed sizes (grid and bisection points, --grid lists them) are simulated: a range "
                     "narrower than a grid step, or a lead that changes sign between two probes, can be missed. "
                     "learned_*: the model asked at every integer n (its windows agree with decide)",
           "meaning": f"*_n: smallest n from which {args.large_unit} is faster at every probed size up to {hi} "
                      f"(null: it is not); closest_leads: per *_n, the probed size from it on where "
                      f"{args.large_unit} leads least, and by what fraction of {args.small_unit}'s cycles (under "
                      f"{CLOSE:.0%}, sizes between probes can go the other way); closest_window_leads: the same "
                      f"per range of each *_windows (window, n, lead; null: not searched); "
                      f"range_edges: per *_n, 'floor' when it is {lo}, the smallest n searched (already faster "
                      f"there; the change, if any, is at or below it), 'ceiling' when the change falls in the "
                      f"grid's top step (whether it stays faster beyond {hi} is not checked), else null; "
                      f"*_windows: the ranges [first, last] in which it is faster; "
                      f"learned_extrapolated: per learned_n and learned_end_to_end_n, the ranges [first, last] of the sizes it rests on "
                      f"that lie outside the model's training sizes, where the model extrapolates ([]: none; null: "
                      f"not asked, or a model without its training ranges); "
                      f"on chip (simulated_*, learned_n) the search stops at on_chip_range's top, the largest n "
                      f"both units' buffers hold (on_chip_limits: each unit's; null range: none searched); "
                      f"*_unaligned: the same search with every probed multiple of {FRACTAL} (a whole number "
                      f"of 16 x 16 cube fractals, as every power of two on the grid is) moved to n + 16 (the top one, "
                      f"which that would take past the range, to n - 16); for an op "
                      f"without the on-chip framing (simulated_note) every on-chip field (simulated_*, learned_n, "
                      f"learned_windows, what_decides.on_chip, grid_on_chip) is null: not searched"}
    if learned["learned_note"] is None:
        out.pop("learned_note")
    if not framed:
        out["simulated_note"] = f"{args.op}'s kernel always reads its inputs from GM: no on-chip framing"
    if args.grid:
        out["grid_on_chip"] = on["grid"]
        out["grid_end_to_end"] = e2e["grid"]
    if args.json:
        print_json(out)
    else:
        def said(key: str) -> str:
            if key in tops and tops[key] is None:
                return "nowhere (no size searched fits on chip)"
            far = out["learned_extrapolated"].get(key)
            return _from(out[key], at_edge[key], tops.get(key) or hi) + (
                f" (extrapolated on n={', '.join(f'{a:,}..{b:,}' for a, b in far)})" if far else "")

        def both(on_chip: str, gm: str, on_words: str = "data on chip", gm_words: str = "inputs in GM") -> str:
            """Both framings' figures, or the GM one alone for an op without the on-chip framing."""
            return f"{on_chip} ({on_words}), {gm} ({gm_words})" if framed else f"{gm} ({gm_words})"

        learned_text = "no usable model" if out.get("learned_note") else both(
            said("learned_n"), said("learned_end_to_end_n"), "on chip", "GM")
        print(f"{args.op} {args.dtype}{kv(options)}: {args.large_unit} stays faster than {args.small_unit} from "
              f"{both(said('simulated_n'), said('end_to_end_n'))}; learned: {learned_text}")
        print(f"  {args.large_unit} faster on n in "
              f"{both(_spans(on['windows'] or []), _spans(e2e['windows']), 'on chip')}; searched n={lo:,}..{hi:,}")
        print(f"  sizes that are not multiples of {FRACTAL}: {args.large_unit} stays faster from "
              f"{both(said('simulated_n_unaligned'), said('end_to_end_n_unaligned'), 'on chip')}")
        if fits:
            print(f"  {fits}")
        notes = _edge_notes({e for k, e in at_edge.items() if k not in tops}, lo, hi)
        if framed and on["top"] is not None:
            notes += _edge_notes({e for k, e in at_edge.items() if k in tops}, lo, on["top"], on["top"] < hi)
        for line in dict.fromkeys(notes):
            print(f"  {line}")
        for line in _close_notes(out["closest_leads"], args.large_unit) + _window_notes(out, args.large_unit):
            print(f"  {line}")
        if out.get("learned_end_to_end_windows") is not None:
            print(f"  learned: {args.large_unit} faster on n in "
                  f"{both(_spans(out['learned_windows'] or []), _spans(out['learned_end_to_end_windows']), 'on chip', 'GM')}")
        for line in out["alignment"]:
            print(f"  {line}")
        if not framed:
            print(f"  {out['simulated_note']}")
        if out.get("learned_note"):
            print(f"  learned: {out['learned_note']}")
        if out.get("learned_warning"):
            print(f"  learned: warning: {out['learned_warning']}")
        for framing, items in why.items():
            for e in items or []:
                print(f"  {framing}, n={e['n']:,} {e['from']} -> {e['to']}: {e['why']}")
        if args.grid:
            for line in _grid_lines(on["grid"], e2e["grid"], (args.small_unit, args.large_unit)):
                print(f"  {line}")
    return 0


def _check_range(lo: int, hi: int) -> None:
    """``--low``/``--high``: 1 <= low < high <= MAX_HIGH, else one line."""
    int_in(lo, "--low", 1, MAX_HIGH - 1)
    int_in(hi, "--high", 2, MAX_HIGH)
    if hi <= lo:
        raise InputError(f"--high: expected an integer above --low ({lo:,}), got {hi:,}")


def _grid_lines(on_chip: list, gm: list, units: tuple) -> list[str]:
    """The per-size best cycles of each unit as a text table, one row per probed n (a column
    set per framing; an op without the on-chip framing has only the GM columns)."""
    rows: dict = {}
    cols = []
    for where, grid in (("on chip", on_chip), ("GM", gm)):
        if not grid:
            continue
        cols += [(where, u) for u in units]
        for r in grid:
            rows.setdefault(r["n"], {}).update({(where, u): r[u] for u in units})
    head = ["n"] + [f"{u} ({where})" for where, u in cols]
    body = [[f"{n:,}"] + [f"{rows[n][c]:,.1f}" if c in rows[n] else "-" for c in cols] for n in sorted(rows)]
    widths = [max(len(r[i]) for r in [head] + body) for i in range(len(head))]
    return ["best cycles per size:"] + ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in [head] + body]


def _alignment(args, hw, n_on: int | None, n_gm: int | None, on_limit: int | None = None) -> list[str]:
    """At each aligned crossover, each unit's cycles there and one 16-element row past it: what a
    size that is not a whole number of cube fractals costs (on chip, only where the buffers still
    hold that size: ``on_limit``)."""
    from autotile.models.crossover import best, unaligned

    out = []
    for n, on_chip, where in ((n_on, True, "data on chip"), (n_gm, False, "inputs in GM")):
        if n is None or n % FRACTAL:
            continue
        m = unaligned(n)
        if on_chip and on_limit is not None and m > on_limit:
            continue
        cyc = {u: tuple(best(args.op, u, x, args.dtype, hw, on_chip, args.options)[0] for x in (n, m))
               for u in (args.small_unit, args.large_unit)}
        parts = "; ".join(f"{u} {a:.1f} -> {b:.1f}" for u, (a, b) in cyc.items())
        out.append(f"{where}: cycles at n={n:,} -> n={m:,}: {parts}")
    return out


def _units(args) -> tuple[str, str]:
    """The unit pair: as given, else the op's default pair (one given: the other of that pair,
    or of the op's units)."""
    from autotile.models.crossover import default_units

    small, large = args.small_unit, args.large_unit
    if small and large:
        return small, large
    pair = default_units(args.op)
    if small is None and large is None:
        return pair
    given = small or large
    other = next(u for u in (*pair, *registry.get(args.op).units) if u != given)
    return (given, other) if small else (other, given)


def _learned(args, hw, framed: bool, on_top: int | None = None) -> dict:
    """learned_n (data on chip, if the op has that framing) and learned_end_to_end_n from the
    trained unit selector, if any (it is trained with the op's default options only). A missing
    or unusable model (corrupt, another profile's or simulator's), or a ``--low``/``--high`` range
    too wide to ask the model at every n of, leaves them null with a ``learned_note`` saying why,
    and an unusable one is also warned about on stderr, as lookup does: the simulated results
    never depend on the model. ``learned_warning``: the part of the range outside the sizes the
    model was trained on, as ``decide`` warns (None inside them). On chip the model is asked up to
    ``on_top``, the sizes the simulated search covers (None: none). ``learned_extrapolated``: per
    learned n, the parts of the range it rests on outside those sizes (``outside_spans``): a
    learned n there is the model's extrapolation (weighted_sum on chip, n = 16,384..49,136: the
    model, trained to 16,384, has the Cube ahead throughout, the simulator only to 32,768)."""
    from autotile.models import store
    from autotile.tables.model_hook import warn_stderr

    none = {"learned_n": None, "learned_end_to_end_n": None, "learned_windows": None,
            "learned_end_to_end_windows": None, "learned_warning": None,
            "learned_extrapolated": {"learned_n": None, "learned_end_to_end_n": None}}
    why = untrained(args.op, args.options)
    if why:
        return {**none, "learned_note": why}
    path = store.locate("units", args.op, args.models, hw)
    if not path.exists():
        return {**none, "learned_note": f"no trained model at {path}; run "
                                        f"`{store.retrain_command(args.op, hw, args.models)}`"}
    if args.high - args.low + 1 > LEARNED_MAX_SIZES:
        return {**none, "learned_note": f"the model is asked at every n, and n={args.low:,}..{args.high:,} holds more "
                                        f"than {LEARNED_MAX_SIZES:,} sizes; narrow --low/--high for learned_n"}
    kw = {"small_unit": args.small_unit, "large_unit": args.large_unit, "lo": args.low, "hi": args.high, "hw": hw}
    try:
        sel = store.load_selector(args.op, hw, args.models)
        on = framed and on_top is not None
        kw_on = {**kw, "hi": on_top}
        return {"learned_n": sel.crossover(args.dtype, data="on_chip", **kw_on) if on else None,
                "learned_end_to_end_n": sel.crossover(args.dtype, data="gm", **kw),
                "learned_windows": sel.crossover_windows(args.dtype, data="on_chip", **kw_on) if on else None,
                "learned_end_to_end_windows": sel.crossover_windows(args.dtype, data="gm", **kw),
                "learned_note": None, "learned_warning": _extrapolates(sel, args.low, args.high, framed, on_top),
                "learned_extrapolated": {"learned_n": sel.outside_spans(args.low, on_top, "on_chip") if on else None,
                                         "learned_end_to_end_n": sel.outside_spans(args.low, args.high, "gm")}}
    except InputError as exc:
        warn_stderr(f"{exc}; the learned crossover is skipped")
        return {**none, "learned_note": f"model skipped: {exc}"}


def _extrapolates(sel, lo: int, hi: int, framed: bool, on_top: int | None = None) -> str | None:
    """What of ``lo..hi`` (on chip ``lo..on_top``) lies outside the selector's training sizes (as
    ``decide`` warns at one n), or None."""
    ends = {"gm": hi, "on_chip": on_top} if framed else {"gm": hi}
    why = [w for data, top in ends.items() if top is not None
           for w in (sel.outside({"n": lo}, data), sel.outside({"n": top}, data)) if w]
    return f"{'; '.join(why)}; the learned crossover extrapolates there" if why else None


def _from(n, edge: str | None = None, hi: int = HIGH) -> str:
    """``n=1,280``, what no crossover up to ``hi`` means, or n at an end of the search (``range_edge``)
    with what the search did not see."""
    if n is None:
        return f"nowhere up to n={hi:,}"
    if edge == "floor":
        return f"n={n:,} (the search's floor)"
    if edge == "ceiling":
        return f"n={n:,} up to {hi:,} (the search's ceiling)"
    return f"n={n:,}"


def _edge_notes(edges: set, lo: int, hi: int, on_chip_end: bool = False) -> list[str]:
    """What a crossover at the floor or the ceiling of ``lo..hi`` leaves open, and the flag to look
    further (``on_chip_end``: ``hi`` is where the data stops fitting on chip, no flag moves it)."""
    from autotile.models.crossover import grid

    out = []
    if "floor" in edges:
        out.append(f"at the search's floor: already faster at n={lo:,}, the smallest n searched; the change, "
                   f"if any, is at or below it (--low sets the floor, down to 1)")
    if "ceiling" in edges and on_chip_end:
        out.append(f"on chip, at the search's ceiling: the change falls in the grid's top step (n={grid(lo, hi)[-2]:,}.."
                   f"{hi:,}), and past n={hi:,} the data no longer fits on chip")
    elif "ceiling" in edges:
        out.append(f"at the search's ceiling: the change falls in the grid's top step (n={grid(lo, hi)[-2]:,}.."
                   f"{hi:,}), so 'stays faster' rests on sizes up to n={hi:,} only (--high raises it, up to "
                   f"{MAX_HIGH:,})")
    return out


def _fit_note(args, lo: int, hi: int, on: dict) -> str | None:
    """Where the on-chip framing holds within ``lo..hi``, when the units' buffers cut it short (None
    when every size fits): each unit's ``on_chip_limit`` and the sizes searched on chip."""
    if on["top"] == hi:
        return None
    held = ", ".join(f"{u} up to n={top:,}" for u, top in on["limits"].items())
    if on["top"] is None:
        return (f"on chip: no size in n={lo:,}..{hi:,} fits ({args.dtype} data on one core: {held}), so nothing "
                f"is searched on chip; the GM framing has no such limit")
    return (f"on chip: searched n={lo:,}..{on['top']:,} only, the sizes whose {args.dtype} data fits on one core "
            f"({held})")


def _close_notes(leads: dict, large_unit: str) -> list[str]:
    """A line per crossover whose smallest lead at the probed sizes is under ``CLOSE``: 'stays
    faster' then holds at those sizes only (the lead can change sign between them)."""
    where = {"simulated_n": "on chip", "end_to_end_n": "inputs in GM", "simulated_n_unaligned": "on chip, unaligned",
             "end_to_end_n_unaligned": "inputs in GM, unaligned"}
    return [f"close call ({where[k]}): {large_unit} leads by only {fmt_lead(c['lead'])} at n={c['n']:,}; it is faster at "
            f"every probed size from its crossover, but sizes between probes can go the other way"
            for k, c in leads.items() if c is not None and c["lead"] < CLOSE]


def _window_notes(out: dict, large_unit: str) -> list[str]:
    """A line per window whose smallest lead at the probed sizes in it is under ``CLOSE``, but for
    the window a ``*_n`` starts (``_close_notes`` says that one): inside a window too, sizes between
    probes can go the other way (weighted_sum fp32 in GM, [193, 7,806]: the Cube 0.0027% ahead at 7,806)."""
    where = {"simulated_windows": ("on chip", "simulated_n"), "end_to_end_windows": ("inputs in GM", "end_to_end_n"),
             "simulated_windows_unaligned": ("on chip, unaligned", "simulated_n_unaligned"),
             "end_to_end_windows_unaligned": ("inputs in GM, unaligned", "end_to_end_n_unaligned")}
    lines = []
    for k, (words, n_key) in where.items():
        for c in out["closest_window_leads"][k] or []:
            a, b = c["window"]
            if c["lead"] < CLOSE and not (a == out[n_key] and out["closest_leads"][n_key] is not None):
                lines.append(f"close call ({words}): {large_unit} leads by only {fmt_lead(c['lead'])} at n={c['n']:,} in "
                             f"[{a:,}, {b:,}]; it is faster at every probed size there, but sizes between probes "
                             f"can go the other way")
    return lines


def _spans(spans, most: int = 6) -> str:
    """The ranges as text; past ``most`` the first and last few and how many (--json has all)."""
    text = [f"[{a}, {b}]" for a, b in spans]
    if len(text) > most:
        text = text[:most // 2] + [f"... ({len(text)} ranges in all, --json lists them) ..."] + text[-(most // 2):]
    return ", ".join(text) or "none"
