"""Sections about the outcome: heading, best configurations, unit choice, verification, reproduce.

Each builder takes the ``ReportData`` and returns a ``Section`` (or None when it does not apply).
"""

from __future__ import annotations

import math
import shlex
from collections import Counter
from pathlib import Path

from autotile.hardware import bundled_names
from autotile.kernels import registry
from autotile.report import fmt, plots
from autotile.report.data import ReportData, band, result_label, shape_label
from autotile.report.doc import Code, Para, Section, Table
from autotile.tune import runner
from autotile.tune.drawn import drawers, label, resumed_note
from autotile.tune.verify import MAX_EXECUTED
from autotile.words import count, lead


def title(data: ReportData) -> str:
    s = data.summary
    return f"autotile report: {s.get('op', '?')} on {data.hw_label}"


def facts(data: ReportData) -> list[tuple[str, str]]:
    """The heading table: what was tuned, where, with which version, budget and seed."""
    s = data.summary
    res = data.results
    # the run's plan: the studies it has results for and those an interruption left unrun
    planned = res + [r for r in (s.get("not_run") or []) if isinstance(r, dict) and "shape" in r]
    shapes = {tuple(r["shape"].items()) for r in planned}
    hw = data.hw_label
    if s.get("hw") and not data.hw_shipped:  # an edited copy keeps the bundled name: said, with its file
        what = f"a modified {s['hw']}" if s["hw"] in bundled_names() else "a custom profile"
        hw += f", {what}" + (f", file {s['hw_path']}" if s.get("hw_path") else "")
    if data.hw is not None:
        hw += (f" ({data.hw.cube_cores} cube / {data.hw.vector_cores} vector cores, {data.hw.clock_ghz:g} GHz, "
               f"cube fp16 peak {data.hw.peak_flops('cube', 'fp16') / 1e12:.1f} TFLOP/s, "
               f"HBM {data.hw.hbm_bytes_per_second / 1e12:.2f} TB/s)")
    out = [
        ("operator", f"{s.get('op', '?')}: {count(len(shapes), 'shape')} x {', '.join(sorted({r['dtype'] for r in planned}))} x "
                     f"{', '.join(sorted({r['unit'] for r in planned}))} = {count(len(planned), 'study')}"
                     + (f", {len(res)} run" if len(planned) > len(res) else "")),
        ("spec", f"{s.get('spec', '?')} (hash {s.get('spec_hash', '?')})"),
        ("hardware profile", f"{hw}, hash {s.get('hw_hash', '?')}"),
        ("autotile version", str(s.get("autotile_version", "?"))),
        ("search", f"{s.get('sampler', '?')} sampler, seed {s.get('seed', '?')}, {_budget(data)}, "
                   f"objective(s) {', '.join(s.get('objectives', []))}"
                   + (f" ({resumed})" if (resumed := resumed_note(s)) else "")),
        ("tuning time", f"{s.get('elapsed_s', 0):.1f} s"
                        + (" this run (its studies also hold trials of other runs, whose time is not included)"
                           if _other_runs(data) else "")
                        + (" (interrupted: partial results)" if s.get("interrupted") else "")),
        ("study storage", data.storage_text or ("not available" if data.keeps_storage else
                                                "none (the exhaustive sampler keeps no Optuna study)")),
    ]
    return out


def _other_runs(data: ReportData) -> bool:
    """Whether the studies hold trials this run did not spend its ``elapsed_s`` on (it resumed them,
    or trials were added since): a study with trials but no time in this run, or trials in the
    storage further apart than the run lasted. A resumed run's time alone read as the whole tuning
    (9.7 s where the two runs took 28.2 s)."""
    elapsed = data.summary.get("elapsed_s")
    if not isinstance(elapsed, (int, float)) or not data.keeps_storage:  # the exhaustive sampler never resumes
        return False
    if any(r.get("trials") and r.get("elapsed_s") == 0 for r in data.results):
        return True
    first, last = math.inf, -math.inf
    for r in data.results:
        study = data.study(r.get("study"))
        for t in study.get_trials(deepcopy=False) if study is not None else []:
            if t.datetime_start is not None:
                first = min(first, t.datetime_start.timestamp())
            if t.datetime_complete is not None:
                last = max(last, t.datetime_complete.timestamp())
    return last - first > elapsed + 2.0  # slack: the clocks of workers and rounding


def _budget(data: ReportData) -> str:
    """"budget N distinct feasible configurations per study"; for the exhaustive sampler, which
    ignores the budget, "all N feasible configurations" it measured."""
    s = data.summary
    if data.keeps_storage:
        return f"budget {fmt.budget(s.get('budget', '?'), s.get('timeout_s'), 'distinct feasible configurations')}"
    sizes = list(dict.fromkeys(r.get("trials") for r in data.results if r.get("trials") is not None))
    if len(sizes) == 1:
        every = "the one feasible configuration" if sizes[0] == 1 else f"all {sizes[0]:,} feasible configurations"
        return every + (" per study" if len(data.results) > 1 else "")
    return "all feasible configurations of each study" + (f" ({', '.join(f'{n:,}' for n in sizes)})" if sizes else "")


def highlights(data: ReportData) -> list[str]:
    """A few sentences a reviewer reads first."""
    ex = data.exported
    out = []
    if data.summary.get("interrupted"):
        short = [result_label(r) for r in data.results if r.get("interrupted")]
        out.append("The run was interrupted: some studies did not reach their budget"
                   + (f" ({'; '.join(short)})." if short else "."))
    capped = [r for r in data.results if r.get("cap_reached")]
    if capped:
        out.append(f"{count(len(capped), 'study')} reached the trial cap ({runner.CAP_FACTOR} x budget trials) with fewer "
                   f"distinct configurations than the budget of {data.summary.get('budget', '?')}: "
                   + "; ".join(f"{result_label(r)} ({_cap_cause(r)})" for r in capped)
                   + ". Neither infeasible configurations nor repeats of measured ones count toward the budget.")
    spent = [r for r in data.results if r.get("space_exhausted") and r.get("feasible_configs") != 0]
    empty = [r for r in data.results if r.get("space_exhausted") and r.get("feasible_configs") == 0]
    if empty:
        out.append(f"{count(len(empty), 'study')} {'has' if len(empty) == 1 else 'have'} no feasible tiling: the spec's "
                   "constraints allow no configuration of the space (counted exactly), so the study stopped at once: "
                   + "; ".join(result_label(r) for r in empty)
                   + ". autotile space names the constraint of the spec that removes the most.")
    if spent:
        one = len(spent) == 1
        out.append(f"{count(len(spent), 'study')} tried every configuration {'its' if one else 'their'} spec allows "
                   f"before the budget of {data.summary.get('budget', '?')} distinct configurations: "
                   + "; ".join(f"{result_label(r)} ({_configurations(r.get('feasible_configs'))})" for r in spent)
                   + f". {'Its' if one else 'Their'} best measured configuration is the space's optimum.")
    never = data.summary.get("not_run") or []
    if never:
        out.append(f"{count(len(never), 'study')} did not run before the interruption (not in the results): "
                   + "; ".join(result_label(r) for r in never) + ".")
    if data.hw is not None and data.summary.get("hw_hash") not in (None, data.hw.content_hash()):
        out.append(f"The profile {data.hw.name} has changed since this run (hash {data.hw.content_hash()} now): "
                   "traces and rooflines use the current profile.")
    # utilization is simulated: recorded measurements (replay) have none, and "- of peak" says nothing
    util = [r for r in ex if r.get("pct_of_peak") is not None or r.get("pct_of_bandwidth") is not None]
    if util:
        # each row on its own roof, as the table's band column: % of bandwidth for an HBM-bound shape,
        # % of peak otherwise; the best of each kind of roof when the run has both
        tops = []
        for on in ("bandwidth", "peak"):
            rows = [r for r in util if _band(r, data)[1] == on]
            if rows:
                tops.append(max(rows, key=lambda r: _roof_pct(r, data) or 0))
        tops.sort(key=lambda r: -(_roof_pct(r, data) or 0))
        out.append("Best utilization: " + "; ".join(_utilization(r, data) for r in tops) + ".")
        bands = Counter(_band(r, data)[0] for r in util)
        out.append("Utilization bands: " + ", ".join(f"{n} {b}" for b, n in bands.items()) + ".")
    elif ex and data.replayed:
        out.append("Utilization: not applicable (recorded measurements).")
    if ex:
        sp = [r["speedup_vs_baseline"] for r in ex if r.get("speedup_vs_baseline")]
        if sp:
            best = max(ex, key=lambda r: r.get("speedup_vs_baseline") or 0)
            objs = data.summary.get("objectives")
            at = "".join(f", at {o} {fmt.sci(v)} against the default's {fmt.sci(b)}"
                         for o, v, b in fmt.traded(best, objs))
            out.append(f"Speedup over the default heuristic: up to {fmt.speedup(max(sp))} ({result_label(best)}){at}; "
                       f"{sum(1 for v in sp if v > 1.005)} of {len(sp)} beat it.")
            worse = [r for r in ex if r.get("speedup_vs_baseline") and any(v > b for _, v, b in fmt.traded(r, objs))]
            if worse:
                out.append("Faster than the default at a larger error (a speedup that trades accuracy; the best "
                           f"configurations table gives both errors): {'; '.join(result_label(r) for r in worse)}.")
        objs = data.summary.get("objectives")
        below = [r for r in ex if fmt.detour(r, objs)]
        if below:  # the table's entry is not the best measured: faster ones computed wrong results
            out.append("Picked below the top of the ranking: " + "; ".join(f"{result_label(r)} ({fmt.detour(r, objs)})" for r in below) + ".")
        skipped = [r for r in ex if not r.get("verified") and _skipped(r)]
        bad = [r for r in ex if not r.get("verified") and not _skipped(r)]
        if skipped:
            out.append(f"Verification skipped for {count(len(skipped), 'exported configuration')} "
                       f"({_skipped(skipped[0])}).")
        if bad and no_verify(data):
            out.append(f"Verification was not run (tuned with --no-verify): none of the {count(len(ex), 'exported configuration')} "
                       "was checked against the reference.")
        elif bad or not skipped:
            out.append(f"Every exported configuration passed verification{_own_error_text(data, ex)}." if not bad else
                       f"{count(len(bad), 'exported configuration')} NOT verified: "
                       + "; ".join(result_label(r) + (f" ({unverified(r)})" if unverified(r) else "") for r in bad) + ".")
    failed = [r for r in data.results if r.get("cycles") is None]
    wrong = [r for r in failed if r.get("rejected")]  # every candidate failed the gate
    searched = len(failed) - len(wrong) - len(empty)  # an empty space is said above
    if searched > 0:
        out.append(f"{count(searched, 'study')} found no feasible configuration.")
    if wrong:
        out.append(f"{count(len(wrong), 'study')} FAILED verification (no table entry): "
                   + "; ".join(result_label(r) for r in wrong) + ".")
    return out


def no_verify(data: ReportData) -> bool:
    """Whether the run was tuned with ``--no-verify`` (its summary says ``verify: false``): no
    configuration ran in execute mode, so none passed or failed."""
    return data.summary.get("verify") is False


def own_error(data: ReportData, r: dict) -> float | None:
    """The max abs error a verified pick was held to when its study trades accuracy (an error
    objective or limit): the gate then takes the error the study recorded for the pick as its
    tolerance, not the dtype's (``verify_one``'s ``claimed_abs_error``), so passing means "as
    accurate as the table says", not "exact". None for other picks, and for one whose every
    element was within the dtype's tolerance (its verification's ``beyond_tolerance`` false: an
    exact variant, which the table does not label as held to its error either), or whose recorded
    error is 0 (it admits nothing)."""
    if (r.get("verification") or {}).get("beyond_tolerance") is False:
        return None
    err = trades_error(data, r)
    return err if err is None or err > 0 else None


def trades_error(data: ReportData, r: dict) -> float | None:
    """The max abs error a verified pick's study recorded when it trades accuracy (an error
    objective or limit), which the gate also allowed it (see :func:`own_error`), or None."""
    from autotile.tune.evaluate import ERROR_OBJECTIVES

    limits = [m for m, _ in data.spec.limits] if data.spec is not None else []
    if not r.get("verified") or not any(m in ERROR_OBJECTIVES for m in [*(data.summary.get("objectives") or []), *limits]):
        return None
    err = (r.get("values") or {}).get("max_abs_error")
    return float(err) if isinstance(err, (int, float)) and not isinstance(err, bool) else None


def _own_error_text(data: ReportData, ex: list[dict]) -> str:
    """The highlight's clause on picks verified against their own recorded error, or ""."""
    own = [(r, e) for r in ex if (e := own_error(data, r)) is not None]
    if not own:
        return ""
    worst, err = max(own, key=lambda x: x[1])
    who = "each" if len(own) == len(ex) else f"{len(own)} of them"
    return (f", {who} against its own recorded error or the dtype's tolerance, whichever allows more (a study "
            f"that trades accuracy checks that its pick is as accurate as it measured, not that it is exact; the largest: "
            f"{result_label(worst)} at max abs {fmt.sci(err)})")


def unverified(r: dict) -> str:
    """Why the gate could not check a result's pick (``too large to execute in verification: ...``,
    or out of memory there), or "": it neither passed nor disagreed, and is exported not verified."""
    return str((r.get("verification") or {}).get("unverified") or "")


def _skipped(r: dict) -> str:
    """Why verification did not run for a result (the replay backend has no kernel), or ""."""
    return str((r.get("verification") or {}).get("skipped") or "")


def verify_status(r: dict) -> str:
    """A result's verification as the tables show it: passed, skipped (why), not run or FAILED."""
    if r.get("verified"):
        return "passed"
    why = _skipped(r)
    if why:
        return "skipped (replay backend)" if why.startswith("replay") else f"skipped ({why})"
    if unverified(r):
        return "not verified (" + lead(unverified(r)) + ")"
    return "not run" if not r.get("verification") else "FAILED"


def baseline_text(data: ReportData) -> str:
    """Where the default heuristic stands in the studies: trial 0 of each, of some, or of none
    (replayed measurements have no kernel to propose one). A result without the field (a summary
    written before failed studies recorded it) says nothing either way."""
    known = [r for r in data.results if "baseline_params" in r]
    have = sum(1 for r in known if r["baseline_params"])
    if have and have == len(data.results):
        return "The default heuristic is the careful-engineer tiling each kernel proposes; it was trial 0 of every study."
    if have and len(known) == len(data.results):
        return (f"The default heuristic is the careful-engineer tiling each kernel proposes; it was trial 0 of the "
                f"{have} of {len(data.results)} studies whose spec allows it (the others have no default).")
    if have:
        return (f"The default heuristic is the careful-engineer tiling each kernel proposes; it was trial 0 of "
                f"{have} of {len(data.results)} studies (the summary does not say whether the others had one).")
    if data.replayed:
        return ("Replayed measurements have no default heuristic (there is no kernel to propose one), so there "
                "is no default to compare with and trial 0 is the sampler's first proposal.")
    if not known:
        return ""
    return "No study had a feasible default heuristic, so there is no default to compare with."


def _configurations(n) -> str:
    """A space's size as the exhausted-space note gives it: ``12 configurations``, ``?`` unknown."""
    return count(n, "configuration") if isinstance(n, int) else "? configurations"


def _cap_cause(r: dict) -> str:
    """What used up a capped study's trials: infeasible proposals, repeats of measured
    configurations, or both (the note blamed the sampler's repeats even when every trial was infeasible)."""
    trials, unique = r.get("trials") or 0, r.get("unique_configs") or 0
    infeasible = r.get("infeasible") or 0
    repeats = max(0, (r.get("complete") or 0) - unique)
    parts = [f"{unique} distinct"]
    if infeasible:
        parts.append(f"{infeasible} of {count(trials, 'trial')} infeasible")
    if repeats:
        parts.append(f"{repeats} of {count(trials, 'trial')} repeated a measured configuration")
    return ", ".join(parts)


def _memory_roof(r: dict, data: ReportData) -> bool:
    """Whether the shape sits left of the ridge point (its roofline is HBM bandwidth)."""
    if data.hw is None or not r.get("pct_of_bandwidth") or not r.get("pct_of_peak"):
        return bool(r.get("pct_of_bandwidth")) and not r.get("pct_of_peak")
    peak = data.hw.peak_flops(r["unit"], r["dtype"])
    flops = r["pct_of_peak"] / 100 * peak
    intensity = flops / (r["pct_of_bandwidth"] / 100 * data.hw.hbm_bytes_per_second)
    return intensity < peak / data.hw.hbm_bytes_per_second


def _utilization(r: dict, data: ReportData) -> str:
    """``80.4% of HBM bandwidth for n=1048576 fp32 vector (good, its roofline is HBM bandwidth)``."""
    b, on = _band(r, data)
    pipe = _pipe_bound(r, on)
    return (f"{fmt.pct(_roof_pct(r, data))} of {'HBM bandwidth' if on == 'bandwidth' else 'peak'} for "
            f"{result_label(r)} ({b}" + (", its roofline is HBM bandwidth" if on == "bandwidth" else "")
            + (f", but the {pipe} pipe bounds it)" if pipe else ")"))


def _pipe_bound(r: dict, on: str) -> str | None:
    """The compute pipe (``vector``) that bounds a row banded on bandwidth, else None: resize's
    upsampling read "room left (of bandwidth)" though its simulated bound is compute:vector, so
    the room is in the pipe's instructions, not in HBM."""
    bound = r.get("bound") or ""
    return bound.split(":", 1)[1] if on == "bandwidth" and bound.startswith("compute:") else None


def _roof_pct(r: dict, data: ReportData) -> float | None:
    """The utilization a row's band is taken on: % of bandwidth on a memory roofline, else % of peak."""
    return r.get("pct_of_bandwidth") if _memory_roof(r, data) else r.get("pct_of_peak")


def _band(r: dict, data: ReportData) -> tuple[str, str]:
    """(band, what it is measured on): % of peak, or % of bandwidth on a memory roofline."""
    if _memory_roof(r, data):
        return band(r.get("pct_of_bandwidth")), "bandwidth"
    return band(r.get("pct_of_peak")), "peak"


def best(data: ReportData) -> Section:
    """Per shape and dtype: the chosen configuration and how good it is."""
    rows, cfg = [], []
    objs = data.summary.get("objectives") or []
    # a second objective (an error) beside the speedup: a faster pick can be a less precise one
    errors = [o for o in objs if any(o == t[0] for r in data.exported for t in fmt.traded(r, objs))]
    for r in data.exported:
        b, on = _band(r, data)
        # a study the interruption cut short: its best may not be the budget's
        shape = shape_label(r["shape"]) + (" (interrupted)" if r.get("interrupted") else "")
        rows.append([shape, r["dtype"], r["unit"], fmt.cycles(r["cycles"]), fmt.us(r.get("time_us")),
                     fmt.pct(r.get("pct_of_peak")), fmt.pct(r.get("pct_of_bandwidth")),
                     b + (f" (of bandwidth; {_pipe_bound(r, on)} pipe bound)" if _pipe_bound(r, on) else
                          " (of bandwidth)" if on == "bandwidth" else ""), r.get("bound") or "-",
                     fmt.cycles(r.get("baseline_cycles")), fmt.speedup(r.get("speedup_vs_baseline"))]
                    + [_error_cell(r, o) for o in errors]
                    + ["yes" + (" (to its own error)" if own_error(data, r) is not None else "") if r.get("verified")
                       else ("skipped" if _skipped(r) else "not run" if no_verify(data) else
                             "no (" + lead(unverified(r)) + ")" if unverified(r) else "NO")])
        cfg.append([result_label(r), fmt.params(r.get("params")), fmt.changes(r.get("params"), r.get("baseline_params"))])
    if data.replayed:
        intro = ("One row per shape and dtype: the configuration the table exports (the best recorded "
                 "measurement). Recorded measurements carry no FLOP or byte counts and nothing was simulated, "
                 "so % of peak, % of HBM bandwidth, the band and the bound do not apply. ")
    else:
        intro = ("One row per shape and dtype: the configuration the table exports (the chosen unit's best "
                 + ("configuration: the run was tuned with --no-verify, so none was checked against the reference). "
                    if no_verify(data) else "verified configuration). ")
                 + "% of peak is useful work over the whole chip's peak for that unit "
                 "and dtype; % of HBM bw is the bytes the Roofline section counts over what HBM moves in "
                 "the simulated time. The band is the one the CANN seed talks use: above 90% excellent, 80-90% "
                 "good, 70-80% acceptable, below 70% room left. For a shape whose roofline is HBM bandwidth the "
                 "band is taken on % of bandwidth instead. ")
        if any(_pipe_bound(r, _band(r, data)[1]) for r in data.exported):
            intro += ("A row banded of bandwidth but bound by a compute pipe (\"vector pipe bound\") moves its bytes "
                      "below what HBM allows because that pipe is busy most of the time (its instructions, more "
                      "than the useful work % of peak counts): the room left is in the pipe's work, not in "
                      "bandwidth. ")
    if any(r.get("interrupted") for r in data.exported):
        intro += ("A shape marked (interrupted) comes from a study the interruption stopped short of its budget: "
                  "resuming the run may find a better configuration. ")
    if errors:
        intro += (f"The speedup counts cycles only; the {' and '.join(errors)} "
                  f"column{'s give' if len(errors) > 1 else ' gives'} the configuration's error with the "
                  "default's in brackets, so a speedup bought with precision shows. ")
    none = [r for r in data.results if r.get("cycles") is None]
    if not rows:  # two empty tables read as a rendering fault; say why nothing is exported
        why = nothing_exported(data) + (" The table below gives each study's reason." if none else "")
        text = " ".join(t for t in (why, baseline_text(data)) if t)
        return Section("Best configurations", [Para(text), *_without_result(none)], "best")
    blocks = [
        Para(intro + baseline_text(data)),
        Table(["shape", "dtype", "unit", "cycles", "time", "% of peak", "% of HBM bw", "band", "bound",
               "default cycles", "speedup"] + [f"{o} (default's)" for o in errors] + ["verified"], rows,
              "lllrrrrllrr" + "r" * len(errors) + "l"),
        Table(["study", "tuned parameters", "changed from the default heuristic"], cfg,
              caption="Configurations"),
    ]
    return Section("Best configurations", blocks + _without_result(none), "best")


def _without_result(none: list[dict]) -> list:
    """The table of studies without a result and why (none: nothing)."""
    if not none:
        return []
    return [Table(["study", "reason"], [[result_label(r), r.get("reason", "-")] for r in none],
                  caption="Studies without a result (no feasible configuration, or none passed verification)")]


def nothing_exported(data: ReportData) -> str:
    """Why no study has a verified result: how many failed verification, how many found nothing
    feasible. The sections that show exported configurations say it rather than stand empty."""
    none = [r for r in data.results if r.get("cycles") is None]
    if not none:
        return "No study ran before the interruption, so there is no configuration to export."
    wrong = sum(1 for r in none if r.get("rejected"))
    why = []
    if wrong:
        why.append(f"{wrong} FAILED verification (every candidate the gate checked disagreed with the reference)")
    empty = sum(1 for r in none if r.get("space_exhausted") and r.get("feasible_configs") == 0)
    if empty:
        why.append(f"{empty} {'has' if empty == 1 else 'have'} no feasible tiling (the spec allows none)")
    if len(none) > wrong + empty:
        why.append(f"{len(none) - wrong - empty} found no feasible configuration")
    return (f"No study has a verified result, so the table exports no configuration: of {count(len(none), 'study')}, "
            f"{' and '.join(why)}.")


def failed_verification(r: dict) -> bool:
    """Whether a study measured configurations but every candidate the gate checked failed."""
    return r.get("cycles") is None and bool(r.get("rejected"))


def _error_cell(r: dict, objective: str) -> str:
    """The pick's value of an error objective with the default's in brackets: ``0.00781 (0.000244)``."""
    got = next(((v, b) for o, v, b in fmt.traded(r, [objective])), None)
    return "-" if got is None else f"{fmt.sci(got[0])} ({fmt.sci(got[1])})"


def _why_not(unit: str, r: dict | None, dtype: str, info, hw) -> str:
    """Why ``unit`` has no cycles for a dtype: it does not compute it (its kernel has no such dtype,
    or the chip's unit no rate for it), found nothing feasible, or did not run (a unit without a
    study is not "without a feasible configuration")."""
    if r is not None:
        return f"{unit} FAILED verification" if r.get("rejected") else f"{unit} found no feasible configuration"
    if not info.supports(unit, dtype):
        return f"{unit} does not compute {dtype}"
    if hw is not None and hw.dtype_problem(unit, dtype) is not None:
        return f"{unit} does not compute {dtype} on {hw.name}"
    return f"{unit} did not run"


def units(data: ReportData) -> Section:
    """Each unit's best cycles side by side, per shape and dtype, and the one chosen."""
    groups: dict = {}
    for r in data.results:
        groups.setdefault((tuple(r["shape"].items()), r["dtype"]), []).append(r)
    names = sorted({r["unit"] for r in data.results}, key=lambda u: [r["unit"] for r in data.results].index(u))
    if len(names) == 1:
        return Section("Unit choice", [Para(
            f"This spec tunes one unit only ({names[0]}), so {names[0]} is chosen for every shape. "
            "List several units under units: in the spec to compare them.")], "units")
    objs = data.summary.get("objectives") or ["cycles"]
    by_time = objs[0] in ("cycles", "time_us")
    info = registry.get(data.summary["op"])
    rows, labels, cyc, picks = [], [], [], []
    for (shape, dtype), rs in groups.items():
        by = {r["unit"]: r for r in rs}
        chosen = next((r for r in rs if r.get("chosen")), None)
        vals = [by[u].get("cycles") if u in by else None for u in names]
        ok = sorted(v for v in vals if v is not None)
        why = "-"
        if chosen is not None and len(ok) > 1 and not by_time:
            why = f"lowest {objs[0]}" + ("" if chosen.get("verified") else " (not verified)")
        elif chosen is not None and len(ok) > 1:
            runner_up = min(v for u, v in zip(names, vals) if v is not None and u != chosen["unit"])
            why = fmt.faster(runner_up / chosen["cycles"]) + " than the next unit"
            if not chosen.get("verified"):
                why += " (not verified)"
        elif chosen is not None:
            why = "; ".join(_why_not(u, by.get(u), dtype, info, data.hw) for u in names if u != chosen["unit"])
        unverified = [u for u in names if u in by and by[u].get("cycles") is not None and not by[u].get("verified")]
        if unverified and chosen is not None and chosen["unit"] not in unverified:
            why += f"; not verified: {', '.join(unverified)}"
        if chosen is None:  # no table entry: each unit's reason, not "-"
            why = "no table entry: " + "; ".join(_why_not(u, by.get(u), dtype, info, data.hw) for u in names)
        label = f"{shape_label(dict(shape))} {dtype}"
        cells = ["FAILED verification" if u in by and failed_verification(by[u]) else fmt.cycles(v)
                 for u, v in zip(names, vals)]
        rows.append([label] + cells + [chosen["unit"] if chosen else "none", why])
        labels.append(label)
        cyc.append(vals)
        picks.append(chosen["unit"] if chosen else None)
    among = (" (the run was tuned with --no-verify: no configuration was verified)" if no_verify(data) else
             " among those whose configuration passed verification (among all when none did)")
    parts = [
        Para("Each unit's best cycles for the same shape and dtype. The chosen unit is the fastest one"
             + (among if no_verify(data) else " whose configuration passed verification (the fastest overall "
                "when none did)") + "." if by_time else
             f"Each unit's best cycles for the same shape and dtype. The chosen unit is the one with the lowest "
             f"{objs[0]}{f' (ties: the lowest {objs[1]})' if len(objs) > 1 else ''}, then the fewest cycles,"
             + among + "."),
        Table(["shape, dtype"] + [f"{u} cycles" for u in names] + ["chosen", "why"], rows, "l" + "r" * len(names) + "ll"),
    ]
    if any(v for row in cyc for v in row):  # a log-scale plot needs one measured bar
        parts.append(plots.unit_bars(labels, names, cyc, picks, objs[0]))
    elif not data.exported:
        parts.append(Para(nothing_exported(data) + " There are no cycles to compare.", note=True))
    return Section("Unit choice", parts, "units")


def verification(data: ReportData) -> Section:
    """Max absolute and relative error against the tolerance, per exported entry."""
    rows = []
    for r in data.exported:
        v = r.get("verification") or {}
        status = verify_status(r) + (" (--no-verify)" if no_verify(data) and not r.get("verification") else "")
        if own_error(data, r) is not None:
            status += " (against its recorded error)"
        checked = shape_label(v["shape"]) + (" (reduced)" if v.get("reduced") else "") if v.get("shape") else "-"
        rows.append([result_label(r), status, checked, fmt.sci(v.get("max_abs_error")), fmt.sci(v.get("max_rel_error")),
                     fmt.sci(v.get("rtol")), fmt.sci(v.get("atol")), _claimed(v), str(len(r.get("rejected") or []))])
    failed = [r for r in data.results if failed_verification(r)]
    for r in failed:  # no table entry: its best-ranked candidate's errors stand for the study
        v = r["rejected"][0]
        checked = shape_label(v["shape"]) + (" (reduced)" if v.get("reduced") else "") if v.get("shape") else "-"
        rows.append([result_label(r), f"FAILED: all {len(r['rejected'])} candidates (no table entry)", checked,
                     fmt.sci(v.get("max_abs_error")), fmt.sci(v.get("max_rel_error")), fmt.sci(v.get("rtol")),
                     fmt.sci(v.get("atol")), _claimed(v), str(len(r["rejected"]))])
    skipped = [r for r in data.exported if not r.get("verified") and _skipped(r)]
    if no_verify(data):
        intro = ("No configuration was verified: the run was tuned with --no-verify, so none ran in execute mode or "
                 "was compared with the NumPy reference, and the table exports each entry as not verified. Run the "
                 "Reproduce section's autotile tune command without --no-verify to check them.")
    elif skipped and len(skipped) == len(data.exported):
        intro = ("No configuration was verified: " + ("the replay backend replays recorded measurements, so there "
                 "is no kernel to execute and nothing to compare with a reference. Check the recorded "
                 "configurations on the hardware they were measured on." if data.replayed
                 else f"verification was skipped ({_skipped(skipped[0])})."))
    else:
        intro = ("Each exported configuration ran through the same kernel in execute mode on real data and was "
                 "compared with the NumPy reference. It passes when every element satisfies "
                 "|out - ref| <= atol + rtol x |ref| (as numpy.allclose). Max rel error is taken over the elements "
                 "whose |ref| exceeds atol (where it is smaller the absolute term decides), and can still exceed "
                 "rtol where atol covers the difference. Large shapes are checked on a reduced shape that keeps "
                 "every kind of core block (full and tail). Rejected: better-ranked candidates that failed first; "
                 f"the gate goes down the ranking until one passes, executing at most {MAX_EXECUTED}, and rejects "
                 "unrun a candidate whose study recorded an error on the same inputs above what the tolerance allows.")
    unchecked = [r for r in data.exported if unverified(r)]
    if unchecked:
        intro += (f" {count(len(unchecked), 'exported configuration')} could not be checked and "
                  f"{'is' if len(unchecked) == 1 else 'are'} exported not verified (verified: false): "
                  + "; ".join(f"{result_label(r)} ({unverified(r)})" for r in unchecked) + ".")
    if any(trades_error(data, r) is not None for r in data.exported):
        intro += (" A study that trades accuracy (an error objective or limit) also allows each candidate the max "
                  "abs error it recorded for it (the recorded error column): an element passes when |out - ref| <= "
                  "max(atol + rtol x |ref|, that error), so such a pick passes when it is as accurate as the table "
                  "says or within the dtype's tolerance" + _tail_text(data) + "; its row says "
                  "\"against its recorded error\" when an element needed that error (it was off by more than "
                  "atol + rtol x |ref|" + (", and on the tail inputs by more than the tail allowance alone"
                                           if _tail_text(data) else "")
                  + "), as an approximate variant's do and an exact one's do not.")
    if failed:
        intro += (f" {count(len(failed), 'study')} FAILED verification: every candidate the gate checked disagreed "
                  "with the reference, so the study has no table entry; its row gives the errors of its best-ranked "
                  "candidate" + (" (no configuration passed, so none is exported)." if not data.exported else "."))
    header = ["study", "result", "checked on", "max abs error", "max rel error", "rtol", "atol", "recorded error",
              "rejected"]
    if all(row[7] == "-" for row in rows):  # no study traded accuracy: no column of dashes
        header, rows = header[:7] + header[8:], [row[:7] + row[8:] for row in rows]
    blocks = [Para(intro), Table(header, rows, "lll" + "r" * (len(header) - 3))]
    rej = [[result_label(r), fmt.params(x.get("params")), x.get("reason") or "-"]
           for r in data.exported for x in (r.get("rejected") or [])]
    if rej:
        blocks.append(Table(["study", "rejected configuration", "reason"], rej, caption="Rejected candidates"))
    return Section("Verification", blocks, "verification")


def _claimed(v: dict) -> str:
    """The recorded error a candidate was also allowed (``verify_one``'s ``claimed``), or "-"."""
    return fmt.sci(v.get("claimed"))


def _tail_text(data: ReportData) -> str:
    """The clause on the tail allowance of an operator verified beyond its error's range (sigmoid), or ""."""
    op = data.summary.get("op")
    kernel = registry.implementation(op) if op in registry.OPS and registry.get(op).module else None
    if getattr(kernel, "tail_inputs", None) is None:
        return ""
    return (f" (on the tail inputs beyond the range the error was recorded over, that error plus "
            f"{fmt.sci(kernel.TAIL_ERROR)}, what saturating at the range's ends costs)")


def reproduce(data: ReportData) -> Section:
    """The commands that redo the run, re-render the report and watch the studies live."""
    s = data.summary
    out = shlex.quote(str(data.out_dir))
    # the sampler and seed that drew the stored trials (a resume may have run under others)
    by = drawers(s) if any(r.get("drawn_by") for r in data.results) else []
    one = by[0] if len(by) == 1 and by[0]["sampler"] is not None else \
        {"sampler": s.get("sampler"), "seed": s.get("seed")}
    tune = f"autotile tune {shlex.quote(str(s.get('spec', 'SPEC')))} --trials {s.get('budget')} --seed {one['seed']} " \
           f"--sampler {one['sampler']}{_switches(s)} --out {out}"
    tune += _storage_option(data)  # resumes where the run kept its trials
    notes = [Para(n, note=True) for n in (data.spec_note, _foreign_advice(data), _moved_advice(data)) if n]
    if _moved_advice(data) and not data.foreign:
        tune += " --restart"
    mixed = [Para(f"No single command reproduces these trials: they were drawn by "
                  f"{'; '.join(label(d) + ' (' + count(d['trials'], 'trial') + ')' for d in by)}. The command below "
                  "resumes them with this run's settings.")] if len(by) > 1 else []
    if not data.keeps_storage:  # no study to resume or to open in optuna-dashboard
        return Section("Reproduce", [
            Para("Re-run the search (the exhaustive sampler simulates every configuration again; it keeps no "
                 "Optuna study) or render this report again:"),
            Code(f"{tune}\nautotile report {out}"),
            *notes,
        ], "reproduce")
    dash = shlex.quote(_dashboard_storage(data))
    return Section("Reproduce", [
        *mixed,
        Para("Re-run the search (a study resumes from what its storage holds), render this report again, or "
             "open the study storage, which is plain Optuna storage, in optuna-dashboard "
             "(pip install optuna-dashboard; it also follows a run live):"),
        Code(f"{tune}\nautotile report {out}\noptuna-dashboard {dash}"),
        *notes,
    ], "reproduce")


def _switches(summary: dict) -> str:
    """The run's ``--no-verify``, ``--no-warm-start`` and ``--jobs``: without them the command
    verified what the run had not, warm-started studies the run had not (other trials), and
    proposed its trials in one process's order. A summary from before they were recorded names
    none of them."""
    jobs = summary.get("jobs")
    return "".join(f" {flag}" for key, flag in (("verify", "--no-verify"), ("warm_start", "--no-warm-start"))
                   if summary.get(key) is False) + (f" --jobs {jobs}" if isinstance(jobs, int) and jobs > 1 else "")


def _foreign_advice(data: ReportData) -> str:
    """What to do when the storage holds another spec's study under a name of this run's, or "":
    the tune command below is refused there, and --restart would delete that study."""
    if not data.foreign:
        return ""
    return ("The storage now holds another spec's study under the name of "
            + ("this run's study" if len(data.foreign) == 1 else f"{len(data.foreign)} of this run's studies")
            + ", so the autotile tune command is refused there (it holds trials of a different spec). To tune "
            "this spec again, give it a new --out (and --storage, if the run used one), or add --restart, "
            "which deletes that study and tunes this one afresh.")


def _moved_advice(data: ReportData) -> str:
    """When the storage this report read is not the one summary.json records, why the tune command
    adds --restart (else tune refuses a storage other than the recorded one), or ""."""
    from autotile.tune.storage import moved_storage

    option = _storage_option(data)
    this = moved_storage(data.summary.get("storage"), shlex.split(option)[1] if option else None, data.out_dir)
    if this is None or not data.keeps_storage:
        return ""
    recorded = data.summary["storage"]
    if data.foreign:
        return (f"summary.json records the study storage {recorded}, not {this}: autotile tune needs --restart "
                "to tune there.")
    risk = (" (with the spec file as it is now, that may be this run's studies: see above)" if data.spec_note
            else ": none of this run's studies there is one")
    return (f"summary.json records the study storage {recorded}, not {this}, which this report read: autotile "
            f"tune refuses another storage than the recorded one unless given --restart, so the command adds it. "
            f"It resumes the trials {this} holds; --restart deletes only stored studies of a changed spec{risk}.")


def _dashboard_storage(data: ReportData) -> str:
    """What optuna-dashboard opens: the storage this report read, else the one the run recorded
    (a SQLite run's URL, not a journal the run never wrote), else the folder's journal."""
    from autotile.report.data import URL_PREFIXES
    from autotile.tune.storage import JOURNAL_NAME

    if data.storage_text:
        return data.storage_text
    recorded = str(data.summary.get("storage") or "")
    if recorded.startswith("journal:"):
        return recorded[len("journal:"):]
    return recorded if recorded.startswith(URL_PREFIXES) else str(Path(data.out_dir) / JOURNAL_NAME)


def _storage_option(data: ReportData) -> str:
    """`` --storage URL`` naming the storage this report read (else a URL the run recorded), redacted;
    nothing for the folder's own journal, which tune --out uses by default."""
    from autotile.report.data import URL_PREFIXES
    from autotile.tune.storage import JOURNAL_NAME

    recorded = str(data.summary.get("storage") or "")
    url = data.storage_url or (recorded if recorded.startswith(URL_PREFIXES) else "")
    if not url or url.startswith("journal:") and \
            Path(url[len("journal:"):]).resolve() == (Path(data.out_dir) / JOURNAL_NAME).resolve():
        return ""
    return f" --storage {shlex.quote(url)}"
