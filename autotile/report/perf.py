"""Sections about where the time goes: roofline, per-pipe utilization with traces, unit crossover."""

from __future__ import annotations

import math
import shlex
import sys

from autotile.report import fmt, plots, sections
from autotile.report.data import ReportData, result_label, shape_label, slug
from autotile.report.doc import Code, Para, Section, Table
from autotile.yamlsrc import scalar_text

CROSSOVER_POINTS = 10  # sizes per unit on the simulated grid (kept small: each is a grid search)
CROSSOVER_MIN_SPAN = 6  # doublings the simulated grid spans at least, around the tuned sizes
CROSSOVER_MAX_N = 1 << 24  # the simulated grid stops here: a grid search's time grows with n (~5 s per unit at 2**24)
# a grid reaching past this says on stderr that the section takes a while: weighted_sum's three
# units to 2**24 took 100 s of a 113 s report (the bisection near the top simulates the most)
CROSSOVER_NOTE_N = 1 << 21


def ops(dtype: str) -> str:
    """What a dtype's work is counted in: "OP" for integers (int8 multiply-accumulates are
    operations, quoted in TOPS), "FLOP" for floats."""
    from autotile import dtypes

    try:
        return "FLOP" if dtypes.get(dtype).is_float else "OP"
    except KeyError:  # a dtype this autotile does not know: it computes in floating point
        return "FLOP"


def _kinds(kinds: set) -> str:
    """The one kind of work, or "(FL)OP" for a table that mixes integer and float rows."""
    return kinds.pop() if len(kinds) == 1 else "(FL)OP"


def roofline_points(data: ReportData) -> tuple[list, list]:
    """([(result, intensity (FL)OP/B, achieved (FL)OP/s)], [results left out with why])."""
    pts, skipped = [], []
    for r in data.exported:
        pp, pb = r.get("pct_of_peak"), r.get("pct_of_bandwidth")
        if not pp or not pb:
            skipped.append((r, f"no useful {ops(r['dtype'])}s" if not pp else "no must-move byte count"))
            continue
        flops = pp / 100 * data.hw.peak_flops(r["unit"], r["dtype"])
        pts.append((r, flops / (pb / 100 * data.hw.hbm_bytes_per_second), flops))
    return pts, skipped


def roofline(data: ReportData, traces: dict) -> Section | None:
    """Arithmetic intensity against achieved FLOP/s (TOPS for integer dtypes) under the chip's
    compute and HBM roofs; None for replayed measurements (nothing was simulated: no operation
    or byte counts)."""
    if data.replayed:
        return None
    intro = Para("Arithmetic intensity is the useful FLOPs over the bytes the kernel cannot avoid moving between "
                 "HBM and the chip while it runs: its inputs read once (resize and roi_align: only the source data "
                 "they sample) and its output written once, unless the output is a single value or stays in L2 "
                 "until the kernel ends. A matmul whose operands and output fit L2 together keeps its output "
                 "there for the kernel's duration and writes it back to HBM after it, so only A and B, read once, "
                 "are counted; one whose output overflows L2 counts the part L2 cannot keep beside A and B. The "
                 "table marks those rows. % of HBM bandwidth uses the same bytes. Achieved "
                 "FLOP/s is the useful work over the simulated time. A point under the sloped HBM roof is limited by bandwidth at best, one under "
                 "the flat roof by compute; the ratio to the roof at its intensity is the headroom left.")
    if not data.exported:  # an intro alone reads as a rendering fault
        return Section("Roofline", [intro, Para(sections.nothing_exported(data) + " There is no configuration to "
                                                "place on the roofline.", note=True)], "roofline")
    if data.hw is None:
        return Section("Roofline", [intro, Para(f"Profile {data.summary.get('hw')} could not be loaded.", note=True)],
                       "roofline")
    pts, skipped = roofline_points(data)
    bw = data.hw.hbm_bytes_per_second
    blocks = [intro]
    if pts:
        roofs = sorted({(f"{r['unit']} {r['dtype']}", data.hw.peak_flops(r["unit"], r["dtype"]), ops(r["dtype"]))
                        for r, _, _ in pts}, key=lambda x: (-x[1], x[0]))
        kind = _kinds({ops(r["dtype"]) for r, _, _ in pts})
        if kind != "FLOP":
            blocks.append(Para(_integer_note(kind)))
        blocks.append(plots.roofline([(result_label(r), ai, fl) for r, ai, fl in pts], roofs, bw))
        in_l2 = {id(r): traces.get(slug(r), {}).get("writes_in_l2") for r, _, _ in pts}
        rows = []
        for r, ai, fl in pts:
            peak = data.hw.peak_flops(r["unit"], r["dtype"])
            roof = min(peak, ai * bw)
            rows.append([result_label(r), f"{ai:,.1f}", f"{fl / 1e12:,.2f}", f"{roof / 1e12:,.2f}",
                         "HBM" if ai * bw < peak else "compute", fmt.pct(100 * fl / roof), r.get("bound") or "-"]
                        + ([_output_bytes(in_l2[id(r)])] if any(in_l2.values()) else []))
        blocks.append(Table(["study", f"{kind}/byte", f"achieved {fmt.rate(kind)}", f"roof {fmt.rate(kind)}", "roof", "% of roof",
                             "simulated bound"] + (["output write"] if any(in_l2.values()) else []), rows, "lrrrlrll"))
        blocks.append(Para(f"Ridge points: {', '.join(f'{lab} at {fmt.sig(p / bw)} {k}/byte' for lab, p, k in roofs)}. "
                           "The simulated bound names the busiest pipe of the slowest core (or of the vector cores "
                           "beside it, as a split-K matmul's); a matmul whose operand "
                           "panels hit L2 can be compute-bound while its HBM intensity alone would allow more.",
                           note=True))
    for r, why in skipped:
        blocks.append(Para(f"{result_label(r)}: not on the roofline ({why}).", note=True))
    return Section("Roofline", blocks, "roofline")


def _integer_note(kind: str) -> str:
    """What the roofline counts for integer dtypes, and how a table mixing them reads."""
    text = ("int8 work is integer multiply-accumulates: it is counted in operations (2 per MAC, as "
            "FLOPs are for floats), so its intensity is in OP/byte and its rates in TOPS, the unit "
            "integer peaks are quoted in.")
    if kind == "(FL)OP":
        text += (" The table holds both kinds: (FL)OP/byte and T(FL)OP/s read as OP/byte and TOPS on "
                 "the integer rows, FLOP/byte and TFLOP/s on the others.")
    return text


def _output_bytes(in_l2: bool | str | None) -> str:
    """The roofline table's word on whether a row's output write is among its bytes."""
    if in_l2 is None:
        return "unknown (not re-simulated)"
    if in_l2 == "partly":
        return "partly counted: what overflows L2"
    return "not counted: stays in L2 during the kernel" if in_l2 else "counted"


def pipes(data: ReportData, traces: dict) -> Section | None:
    """msprof-style busy ratios per pipe of each best configuration, and its trace file; None when
    there are neither (replayed measurements are not simulated)."""
    ex = data.exported
    keys = [k for k in (ex[0].get("msprof") or {}) if any((r.get("msprof") or {}).get(k) for r in ex)] if ex else []
    names = [k.removesuffix("_ratio") for k in keys]
    blocks = [Para("The share of the kernel's time each pipe is busy on the slowest core, named like msprof's "
                   "per-block ratios (aic_* on the cube core, aiv_* on the vector cores). In a well-overlapped "
                   "kernel the bound pipe is close to 100% and the copy pipes run underneath it; several pipes "
                   "far below 100% point at a latency-bound schedule (too little double buffering, too-small "
                   "tiles).")]
    if keys:
        blocks.append(plots.pipe_bars([result_label(r) for r in ex], names,
                                      [[(r.get("msprof") or {}).get(k, 0.0) for k in keys] for r in ex]))
        rows = [[result_label(r)] + [fmt.pct(100 * (r.get("msprof") or {}).get(k, 0.0), 0) for k in keys]
                + [r.get("bound") or "-"] for r in ex]
        blocks.append(Table(["study"] + names + ["bound"], rows, "l" + "r" * len(keys) + "l"))
    rows, errors = [], []
    for r in ex:
        t = traces.get(slug(r), {})
        if "path" in t:
            cut = ""
            if t.get("truncated"):
                until = t.get("complete_until_cycle")
                cut = (" (first operations only" + (f": complete up to cycle {int(until):,} of {t['cycles']:,.0f})"
                                                    if until is not None else ")"))
            if t.get("classes"):
                shown, total = t["classes"]
                cut += f" ({shown} of {total} core classes: the first and the slowest)"
            rows.append([result_label(r), t["path"] + cut])
        elif "error" in t:
            errors.append(f"{result_label(r)}: no trace ({t['error']})")
    if rows:
        blocks += [Para("Simulated schedule of each configuration as a Chrome trace (one track per pipe, one process "
                        "per kind of core block): open chrome://tracing and Load the file, or drag it into "
                        "ui.perfetto.dev. Paths are relative to this report's folder."),
                   Table(["study", "trace file"], rows)]
    blocks += [Para(e, note=True) for e in errors]
    if len(blocks) == 1:  # the introduction alone: nothing to show
        if data.replayed or not ex:
            return None
        blocks.append(Para("No exported configuration has per-pipe ratios or a trace.", note=True))
    return Section("Pipe utilization and traces", blocks, "pipes")


def _grid(lo: int, hi: int) -> list[int]:
    """At most CROSSOVER_POINTS powers of two spanning [lo, hi], widened to CROSSOVER_MIN_SPAN
    doublings around it (within 16 and CROSSOVER_MAX_N): one tuned size of 4,096 drew each unit's
    "line" as one invisible point.

    >>> _grid(4096, 4096)
    [512, 1024, 2048, 4096, 8192, 16384, 32768]
    """
    a, b = max(4, math.floor(math.log2(max(16, lo)))), math.ceil(math.log2(max(16, hi)))
    top = int(math.log2(CROSSOVER_MAX_N))
    short = max(0, CROSSOVER_MIN_SPAN - (b - a))
    a, b = max(4, a - (short + 1) // 2), min(top, b + short // 2)
    a, b = max(4, min(a, b - CROSSOVER_MIN_SPAN)), min(top, max(b, a + CROSSOVER_MIN_SPAN))
    step = max(1, math.ceil((b - a + 1) / CROSSOVER_POINTS))
    exps = list(range(a, b + 1, step))
    return [2 ** e for e in (exps if exps[-1] == b else exps + [b])]


def _changes(ns: list[int], curves: dict) -> list[tuple[int, int, str, str]]:
    """(n before, n after, unit before, unit after) where the fastest unit changes on the grid."""
    best = []
    for i in range(len(ns)):
        vals = {u: c[i] for u, c in curves.items() if c[i] == c[i]}
        best.append(min(vals, key=vals.get) if vals else None)
    return [(ns[i - 1], ns[i], best[i - 1], best[i]) for i in range(1, len(ns))
            if best[i] != best[i - 1] and best[i] and best[i - 1]]


def _refine(op, dtype, hw, on_chip, a, b, ua, ub, options, known: dict) -> int:
    """The first size in (a, b] where ``ub`` beats ``ua`` (``ua`` faster at grid size a, ``ub`` at b),
    found by ``crossover.windows``, the probing `autotile crossover` does: the sizes doubled from a,
    then integer bisection, with the wider unit's strict lead as the test. The grid's powers of two
    are the command's (from its default floor of 16), so the same sizes are probed and the same n
    comes out. ``known``: {(unit, n): cycles} already simulated (the grid's points)."""
    from autotile.models import crossover as cx

    small, large = sorted((ua, ub), key=cx.WIDTH.index)

    def cycles(u: str, n: int) -> float:
        if (u, n) not in known:
            known[u, n] = cx.best(op, u, n, dtype, hw, on_chip, options)[0]
        return known[u, n]

    spans = cx.windows(lambda n: cycles(large, n) < cycles(small, n), a, b)
    flips = [s for s, _ in spans if s > a] if ub == large else [e + 1 for _, e in spans if e < b]
    return flips[0] if flips else b


def _close_call(known: dict, n: int, ua: str, ub: str, end: float = math.inf) -> str:
    """The warning `autotile crossover` prints for a close call, for the change from which ``ub``
    is faster: its smallest lead over ``ua`` at the sizes probed from ``n`` up to ``end`` (the next
    change; none: it stays faster) (``known``: {(unit, size): cycles}) when it is under
    ``crossover.CLOSE``, else "". Between probes the lead can then change sign (weighted_sum fp16 in
    GM: the cube 0.02% ahead at n = 98,304; fp32 in GM, the Cube's window to n = 7,806: 0.0027%)."""
    from autotile.models import crossover as cx

    table = [{"n": m, ua: known[ua, m], ub: known[ub, m]} for m in sorted({m for _, m in known})
             if n <= m < end and (ua, m) in known and (ub, m) in known
             and 0 < known[ua, m] < math.inf and known[ub, m] < math.inf]
    close = cx.closest_lead(table, n, ua, ub)
    if close is None or close["lead"] >= cx.CLOSE:
        return ""
    lead, at = close["lead"], close["n"]
    if lead <= 0:  # a probe past n where the lead has already turned back
        how = "as fast" if lead == 0 else f"{fmt.lead(-lead)} faster"
        return f"; close call: {ua} is {how} again at n={at:,}: the lead changes sign between the grid's sizes"
    upto = "on" if end == math.inf else f"to the next change (n={end:,})"
    return (f"; close call: {ub} leads by only {fmt.lead(lead)} at n={at:,}; it is faster at every "
            f"probed size from n={n:,} {upto}, but sizes between probes can go the other way")


def crossover(data: ReportData) -> Section | None:
    """Cycles against size per unit with the crossovers marked, for specs with several units."""
    units = sorted({r["unit"] for r in data.results})
    if len(units) < 2:
        return None
    from autotile.kernels import registry
    from autotile.models import crossover as cx
    from autotile.models import what_decides

    op = data.summary["op"]
    dims = registry.get(op).dims
    one_d = dims == ("n",)
    spec = data.spec  # the run's recorded spec: its framing, never the file on disk
    on_chip = spec is not None and (spec.inputs or {}).get("data") == "on_chip"
    options = _options(spec)
    simulate = one_d and op in cx.CATEGORICAL and data.hw is not None and spec is not None
    panels, rows = [], []
    for dtype in sorted({r["dtype"] for r in data.results}):
        rs = [r for r in data.results if r["dtype"] == dtype and r.get("cycles") is not None]
        if not rs:
            continue
        size = {id(r): math.prod(r["shape"].values()) for r in rs}
        tuned = {u: tuple(zip(*sorted((size[id(r)], r["cycles"]) for r in rs if r["unit"] == u))) for u in units}
        tuned = {u: v for u, v in tuned.items() if v}
        sim, marks = {}, []
        if simulate:
            ns = _grid(min(min(size.values()), CROSSOVER_MAX_N), min(max(size.values()), CROSSOVER_MAX_N))
            if ns[-1] > CROSSOVER_NOTE_N:  # minutes after the tune's own time, with nothing printed
                print(f"autotile: note: report: simulating {len(units)} units' best tilings at {len(ns)} sizes up "
                      f"to n = {ns[-1]:,} ({dtype}) for the crossover section; at sizes this large that can take "
                      "a few minutes", file=sys.stderr, flush=True)
            sim = {u: [cx.best(op, u, n, dtype, data.hw, on_chip, options)[0] for n in ns] for u in units}
            known = {(u, n): c for u, v in sim.items() for n, c in zip(ns, v)}
            sim = {u: [c if c != math.inf else math.nan for c in v] for u, v in sim.items()}
            found = [(_refine(op, dtype, data.hw, on_chip, a, b, ua, ub, options, known), ua, ub)
                     for a, b, ua, ub in _changes(ns, sim)]
            for i, (n, ua, ub) in enumerate(found):
                marks.append((n, f"{ua}→{ub} at n={n:,}"))
                why = what_decides.explain(op, dtype, data.hw, on_chip, n, ua, ub, options)["why"]
                end = found[i + 1][0] if i + 1 < len(found) else math.inf  # ub faster up to the next change
                rows.append([dtype, "simulated grid", f"{ua} → {ub}", f"n = {n:,}",
                             why + _close_call(known, n, ua, ub, end)])
            sim = {u: (ns, v) for u, v in sim.items()}
        seq = sorted((size[id(r)], shape_label(r["shape"]), r["unit"]) for r in rs if r.get("chosen"))
        for (n0, s0, u0), (n1, s1, u1) in zip(seq, seq[1:]):
            if u0 != u1:
                at = f"between {n0:,} and {n1:,}" if one_d else f"between {s0} and {s1}"
                rows.append([dtype, "tuned shapes", f"{u0} → {u1}", at, ""])
        panels.append((dtype, sim, tuned, marks))
    if not panels:  # every study failed verification, found nothing feasible, or did not run
        return Section("Cycles against size per unit", [
            Para(sections.nothing_exported(data) + " There are no cycles to compare.", note=True)], "crossover")
    drawn = any(p[1] for p in panels)
    cores = max((c for r in data.results if r.get("cycles") is not None
                 and isinstance(c := (r.get("params") or {}).get("cores", 1), int)), default=1)
    blocks = [Para(_crossover_intro(data, op, dims, on_chip, any(p[3] for p in panels), simulate, cores)),
              plots.crossover(panels, "size n (elements)" if one_d else f"size {' x '.join(dims)}",
                              one_core=on_chip and drawn, tuned_cores=cores)]
    sizes = {math.prod(r["shape"].values()) for r in data.results if r.get("cycles") is not None}
    span = sorted({n for p in panels for ns, _ in p[1].values() for n in ns})
    on_grid = f"on the simulated grid (n = {span[0]:,} to {span[-1]:,})" if drawn else ""
    if len(sizes) == 1:  # the circles stand at one size: no crossover can be read from them
        said = (f"One size was tuned ({next(iter(sizes)):,} elements), so the tuned shapes show no crossover"
                + (f"; the fastest unit does not change {on_grid}." if drawn else
                   " and none can be read here: tune several sizes to compare the units across them."))
    else:
        said = "The fastest unit does not change over the sizes tuned" + (f" or {on_grid}." if drawn else ".")
    blocks.append(Table(["dtype", "from", "fastest unit changes", "at", "what decides"], rows) if rows
                  else Para(said, note=True))
    commands = _crossover_commands(data, op, units, rows, options) if one_d else []
    if commands:
        blocks += [Para("The same per-size search on its own range (n = 16 to 16,384, in each data framing "
                        f"{op} has), with the cycles per size, for every tuned dtype:"), Code("\n".join(commands))]
        if data.hw_argument[1]:
            blocks.append(Para(data.hw_argument[1], note=True))
    return Section("Cycles against size per unit", blocks, "crossover")


def _crossover_intro(data: ReportData, op: str, dims: tuple, on_chip: bool, marked: bool, simulate: bool,
                     cores: int = 1) -> str:
    """What the crossover plot draws, and why it draws no simulated lines when it does not; on chip,
    that the lines are one core's (``crossover.core_counts``) while the tuned studies used up to ``cores``."""
    from autotile.models.crossover import grid_restriction

    if len(dims) > 1:
        return (f"Cycles of each unit's tuned best (circles) against the problem size {' x '.join(dims)}; "
                "shapes of one size but other proportions can rank the units differently. "
                f"autotile crossover searches one size n, so it has no counterpart for {op}.")
    if not simulate:
        text = "Cycles of each unit's tuned best (circles) against size n."
        if data.hw is None:
            text += f" No simulated lines: profile {data.summary.get('hw')} could not be loaded."
        elif data.spec is None:
            text += f" No simulated lines: {data.recorded[1]}, so the data framing of the run is unknown."
        return text
    framing = "inputs already on chip" if on_chip else "inputs streamed from GM"
    framing = "".join(f"{k}={scalar_text(v)}, " for k, v in _options(data.spec).items()) + framing
    text = (f"Where each unit wins as the problem grows ({framing}, as in the run's spec). Lines: each unit at its "
            "best tiling from a small exhaustive grid of tilings, at sizes spaced by powers of two over the tuned "
            f"sizes, widened to at least a factor of {2 ** CROSSOVER_MIN_SPAN} (the per-size search autotile crossover runs"
            + (f"; {grid_restriction(op)}" if grid_restriction(op) else "") + "); circles: the tuned studies of this run"
            + ("; dashed lines: where the fastest unit changes on that grid, refined to the integer by the "
               "bisection autotile crossover does." if marked else "."))
    if on_chip:
        text += (" On chip the per-size search runs each unit on one core (the framing holds the data in one core's "
                 "buffers), so the lines and the crossovers marked on them are single-core"
                 + (f"; the tuned studies used up to {cores} cores, so a circle below its line shows what the "
                    "other cores add, not a better tiling on one core." if cores > 1 else "."))
    if any(math.prod(r["shape"].values()) > CROSSOVER_MAX_N for r in data.results):
        text += f" The lines stop at n = {CROSSOVER_MAX_N:,}: a grid search's time grows with n."
    return text


def _options(spec) -> dict:
    """The recorded spec's op options but ``data`` (the framing is chosen apart): elementwise's
    ``kind`` changes what is simulated."""
    return {k: v for k, v in ((spec.inputs if spec is not None else None) or {}).items() if k != "data"}


def _crossover_commands(data: ReportData, op: str, units: list[str], rows: list, options: dict) -> list[str]:
    """``autotile crossover`` lines for every tuned dtype: one per pair of units that trade places
    (else the first two tuned units), with the run's profile (``ReportData.hw_argument``) and op
    options; none when the profile cannot be loaded."""
    from autotile.kernels import registry
    from autotile.models import crossover as cx

    if data.hw is None:
        return []
    order = [u for u in registry.get(op).units if u in units]
    pairs = []
    for row in rows:
        a, b = row[2].split(" → ")
        if {a, b} not in [set(p) for p in pairs]:
            pairs.append((a, b))
    default = cx.default_units(op)
    if not pairs:
        pairs = [default] if set(default) <= set(order) else [tuple(sorted(order, key=cx.WIDTH.index)[:2])]
    hw = data.hw_argument[0]  # the run's file unless it is a bundled profile as shipped
    flags = "" if hw is None else f" --hw {hw if hw.startswith('<') else shlex.quote(hw)}"
    if options:
        flags += f" --inputs {shlex.quote(','.join(f'{k}={scalar_text(v)}' for k, v in options.items()))}"
    out = []
    for dtype in sorted({r["dtype"] for r in data.results}):
        for small, large in pairs:
            who = "" if (small, large) == default else f" --small-unit {small} --large-unit {large}"
            out.append(f"autotile crossover {op} --dtype {dtype}{flags}{who} --grid")
    return out
