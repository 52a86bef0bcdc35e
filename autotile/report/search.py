"""Sections about the search itself: optimization history, parameter importance, Pareto fronts.

They read each study's search record from the storage when it holds the study
(``ReportData.searched``), so they agree with one another after trials were added since
summary.json was written; the report says where the two disagree.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

from autotile.report import fmt, plots
from autotile.report.data import ReportData, result_label
from autotile.report.doc import Para, Section, Table
from autotile.tune import drawn
from autotile.tune.runner import trials_to_within
from autotile.words import count

MIN_IMPORTANCE_TRIALS = 5  # fewer completed trials: no importance at all
# Fewer completed trials: the shares come with a caveat instead of advice. From
# `PYTHONPATH=. python bench/importance_stability.py OUT` (20 studies: 5 specs x seeds 0-3, budgets of
# 100 configurations, 116-181 completed trials): the parameter ranked first from a study's first k
# trials was the one ranked first from all of them in 25-40% of the studies for k = 5 to 25, 55% at
# 30, 65% at 40 and 70-74% at 50 and 60; the share that moved (half the L1 distance to the full
# ranking) fell from 0.43-0.45 (k <= 10) to 0.22 at 40 and stayed near 0.20 after. At 40 the top 10%
# PED-ANOVA compares holds 4 trials (Optuna's documentation asks for about 5).
MIN_ADVICE_TRIALS = 40
MAX_PANELS = 24


def _labeler(data: ReportData):
    """Short study labels: the unit and dtype only when they vary."""
    many_units = len({r["unit"] for r in data.results}) > 1
    many_dtypes = len({r["dtype"] for r in data.results}) > 1

    def label(r: dict) -> str:
        parts = [",".join(f"{k}={v}" for k, v in r["shape"].items())]
        if many_dtypes:
            parts.append(r["dtype"])
        if many_units:
            parts.append(r["unit"])
        return " ".join(parts)

    return label


def _capped(res: list[dict]) -> list[dict]:
    """The studies of ``res`` a plot draws: all of them, or the exported ones (at most MAX_PANELS)
    when there are more. Tables list every study; ``_cap_note`` says what a plot left out."""
    exported = [r for r in res if r.get("chosen", True) and r.get("cycles") is not None]
    return res if len(res) <= MAX_PANELS else exported[:MAX_PANELS]


def _shown(data: ReportData) -> list[dict]:
    """The studies the history plot draws (those with a history, capped as ``_capped`` does)."""
    return _capped([r for r in data.searched if r.get("history")])


def _cap_note(res: list[dict], shown: list[dict]) -> list[Para]:
    """The note under a plot that draws ``shown``, fewer than the ``res`` its table lists, or nothing."""
    if len(shown) >= len(res):
        return []
    exported = sum(1 for r in res if r.get("chosen", True) and r.get("cycles") is not None)
    which = f"the {len(shown)} exported ones" if len(shown) == exported else \
        f"{len(shown)} of the {exported} exported ones" if shown else "none of them (none was exported)"
    return [Para(f"{len(res)} studies: the plot shows {which}; the table lists every study.", note=True)]


def trial_numbers(r: dict) -> list | None:
    """The Optuna trial number of each ``history`` entry (None in summaries that predate them)."""
    nums = r.get("history_trials")
    return nums if isinstance(nums, list) and len(nums) == len(r.get("history") or []) else None


def _number(nums: list | None, count: int | None) -> str:
    """The trial number of the ``count``-th completed trial (1-based), or "-"."""
    return str(nums[count - 1]) if nums and count else "-"


def optimum(r: dict, objective: str) -> float | None:
    """The space's optimum in ``objective``'s unit (what ``history`` holds), or None: the
    exhaustive sampler's, or the best of a study that tried every configuration of its space.

    Summaries before ``optimum`` carried only ``optimum_cycles``: that is usable for a cycles
    objective only (against a time_us history it gave a gap of -99.9%). Summaries from before an
    exhausted study carried its optimum hold its whole history: its best is the optimum.
    """
    opt = r.get("optimum")
    if opt is None and objective == "cycles":
        opt = r.get("optimum_cycles")
    if opt is None and r.get("space_exhausted") and r.get("history"):
        opt = min(r["history"])
    return opt


def _value(v, objective: str) -> str:
    """An objective value as the table shows it: cycles whole, other objectives 4 significant digits."""
    if v is None:
        return "-"
    if objective == "cycles":
        return fmt.cycles(v)
    return f"{v:,.4g} us" if objective == "time_us" else f"{v:,.4g}"


def history(data: ReportData) -> Section:
    """Best-so-far against trial number, with the baseline and (when known) the space's optimum."""
    obj = (data.summary.get("objectives") or ["cycles"])[0]
    label = _labeler(data)
    shown = _shown(data)
    rows = []
    for r in data.searched:
        h, nums = r.get("history") or [], trial_numbers(r)
        best = min(h) if h else None
        opt = optimum(r, obj)
        rows.append([result_label(r), str(r.get("trials", "-")), str(r.get("complete", "-")),
                     str(r.get("unique_configs", "-")), f"{r.get('infeasible', 0)} ({r.get('infeasible_pct', 0):.0f}%)",
                     _number(nums, h.index(best) + 1 if h else None),
                     _number(nums, trials_to_within(h, best, 0.05) if h else None),
                     _value(opt, obj), fmt.pct(100 * (best / opt - 1), 2) if opt and best else "-"])
    base = any(r.get("baseline_params") for r in data.results)
    dashed = obj == "cycles" and any(r.get("baseline_cycles") is not None for r in shown)
    blocks = [
        Para(f"How the search converged: every completed trial's {obj} (grey) and the best so far (blue)"
             + (", and the default heuristic it started from (dashed)" if dashed else "") + ". Where the optimum "
             "of the space is known (the exhaustive sampler measured every configuration, or a study tried its "
             "whole space), it is drawn as a dotted line and the gap to it is listed. Infeasible configurations are pruned before "
             + ("evaluation" if data.replayed else "simulation") + " and duplicates are answered from a cache; "
             "neither counts toward the budget. "
             + ("Trial numbers are Optuna's" + (" (trial 0 is the default heuristic)" if base else "")
                + ", as in summary.json, table.json and optuna-dashboard." if data.keeps_storage else
                "The exhaustive sampler measured every feasible configuration in enumeration order; "
                "trial numbers are positions in that order, as in summary.json and table.json.")),
    ]
    if shown:
        blocks.append(plots.history_grid(
            [(label(r), r["history"], trial_numbers(r), r.get("baseline_cycles") if obj == "cycles" else None,
              optimum(r, obj)) for r in shown], obj))
    blocks.extend(_cap_note([r for r in data.searched if r.get("history")], shown))
    blocks.append(Table(["study", "trials", "complete", "distinct configs", "infeasible", "best at trial no.",
                         "within 5% at trial no.", "optimum", "gap to optimum"], rows, "lrrrrrrrr"))
    blocks.extend(portfolio_members(data))
    return Section("Optimization history", blocks, "history")


def portfolio_members(data: ReportData) -> list:
    """The portfolio sampler's record: which member proposed how many trials and new bests."""
    res = [r for r in data.searched if r.get("members")]
    if not res:
        return []
    label = _labeler(data)
    obj = (data.summary.get("objectives") or ["cycles"])[0]
    shown = _capped(res)
    names = list(dict.fromkeys(m["member"] for r in shown for m in r["members"]))
    by = [{m["member"]: m for m in r["members"]} for r in shown]
    rows = []
    for r in res:
        for m in r["members"]:  # the best in the objective's own format (it mixed 2.37405e+06 and 38,956.7)
            rows.append([result_label(r), m["member"], str(m["trials"]), str(m["trials"] - m["feasible"]),
                         str(m["improvements"]), _value(m["best"], obj)])
    # a resume under another sampler adds trials no member proposed: said, not left to be read as the portfolio's
    others: dict = {}
    for r in res:
        for d in r.get("drawn_by") or []:
            if d.get("sampler") != "portfolio":
                others[drawn.label(d)] = others.get(drawn.label(d), 0) + d.get("trials", 0)
    mixed = (" The studies also hold trials other samplers drew, which no member proposed and this table "
             f"leaves out ({'; '.join(k + ': ' + count(n, 'trial') for k, n in others.items())}).") if others else ""
    return [
        Para(f"The portfolio sampler gave each {'of its trials' if others else 'trial'} to one member search (a "
             "bandit credits the members that recently set new bests, and keeps trying the others); every member "
             "learns from all trials. Per study: the trials each member proposed, how many were infeasible, how "
             "many set a new best, and the best value among its own trials." + mixed),
        *([plots.portfolio_members([label(r) for r in shown], names,
                                   [[b.get(n, {}).get("trials", 0) for n in names] for b in by],
                                   [[b.get(n, {}).get("improvements", 0) for n in names] for b in by])]
          if shown else []),
        *_cap_note(res, shown),
        Table(["study", "member", "trials", "infeasible", "new bests", "best found"], rows, "llrrrr"),
    ]


@dataclass(frozen=True)
class Importance:
    """A study's parameter importance: the shares (empty when there are none, ``why`` says why) and
    the completed trials they come from."""
    shares: dict[str, float]
    trials: int
    why: str = ""


def importances(study) -> Importance:
    """PED-ANOVA importances of a study's first objective (Optuna's default evaluator, given
    explicitly so a change of default does not change the report), or why there are none."""
    import optuna
    from optuna.trial import TrialState

    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    n = len(done)
    if n < MIN_IMPORTANCE_TRIALS:
        return Importance({}, n, f"only {count(n, 'completed trial')}; importance needs at least {MIN_IMPORTANCE_TRIALS}")
    if len({t.values[0] for t in done}) < 2:
        return Importance({}, n, "every trial has the same objective value")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            imp = optuna.importance.get_param_importances(
                study, evaluator=optuna.importance.PedAnovaImportanceEvaluator(), target=lambda t: t.values[0])
    except (ValueError, RuntimeError, ZeroDivisionError) as exc:
        return Importance({}, n, f"not computable ({exc})")
    out: dict[str, float] = {}
    for k, v in imp.items():  # pow2 params are suggested as <name>.log2
        name = k[:-5] if k.endswith(".log2") else k
        out[name] = out.get(name, 0.0) + float(v)
    return Importance(out, n, "" if out else "no parameter varies")


def _intro(objs: list[str]) -> str:
    """What the shares measure, naming the objective they rank (the first of two)."""
    obj = objs[0] if objs else "cycles"
    two = (f" The studies have two objectives: the shares rank the parameters by the first, {obj}, only "
           f"({', '.join(objs[1:])} is not ranked).") if len(objs) > 1 else ""
    return (f"How much of the variation of {obj} among the good trials each parameter explains, per study, from "
            "Optuna's default importance evaluator (PED-ANOVA: it compares the distribution of each parameter in the "
            "top 10% of trials with its distribution in all trials). Shares add up to 1 per study." + two)


ADVICE = ("A parameter with a large share is the one to get right; one with none can be left at its default for "
          "that shape.")


def _caveat(few: list[tuple[dict, Importance]], every: bool) -> str:
    """The note for studies with fewer than MIN_ADVICE_TRIALS completed trials: their shares are a first
    look, not advice (8 trials ranked tile_len first for a sigmoid study whose 60 ranked cores first)."""
    n = sorted({imp.trials for _, imp in few})
    trials = count(n[0], "completed trial") if len(n) == 1 else f"{n[0]} to {n[-1]} completed trials"
    who = ("This study has " if len(few) == 1 else "These studies have ") if every else \
        f"{', '.join(result_label(r) for r, _ in few)}: "
    return (f"{who}only {trials}, under the {MIN_ADVICE_TRIALS} from which the ranking settles: "
            "it is not yet reliable, and the parameter ranked first may not be the one that matters. Take these "
            "shares as a first look, not as advice; more trials (--trials) give a ranking to act on.")


def importance(data: ReportData) -> Section:
    """Which parameters decide the objective, per study (Optuna's PED-ANOVA evaluator); advice only
    for studies with at least MIN_ADVICE_TRIALS completed trials, a caveat for the others."""
    intro = Para(_intro(data.summary.get("objectives") or ["cycles"]))
    if data.storage is None:
        why = data.storage_note or "No study storage."
        if not data.keeps_storage:
            why = ("The exhaustive sampler simulates every configuration in one batch and keeps no Optuna study, "
                   "so there is none to rank parameters in; the optimization history shows every configuration.")
        return Section("Parameter importance", [intro, Para(why, note=True)], "importance")
    label = _labeler(data)
    found, skipped = [], []
    for r in [r for r in data.searched if r.get("history")]:
        study = data.study(r.get("study"))
        why = "the storage holds another spec's study under its name" if r.get("study") in data.foreign \
            else "study not in the storage"
        got = importances(study) if study is not None else Importance({}, 0, why)
        (found if got.shares else skipped).append((r, got))
    few = [(r, imp) for r, imp in found if imp.trials < MIN_ADVICE_TRIALS]
    blocks = [intro]
    if len(few) < len(found) or not found:
        blocks.append(Para(ADVICE if not few else
                           f"For the studies with at least {MIN_ADVICE_TRIALS} completed trials: " + ADVICE[0].lower()
                           + ADVICE[1:]))
    if few:
        blocks.append(Para(_caveat(few, len(few) == len(found)), note=True))
    if found:
        params = sorted({p for _, imp in found for p in imp.shares},
                        key=lambda p: -sum(imp.shares.get(p, 0.0) for _, imp in found))
        drawn = {id(r) for r in _capped([r for r, _ in found])}
        plotted = [(r, imp) for r, imp in found if id(r) in drawn]
        if plotted:
            blocks.append(plots.importance([label(r) for r, _ in plotted], params,
                                           [[imp.shares.get(p, math.nan) for p in params] for _, imp in plotted],
                                           (data.summary.get("objectives") or ["cycles"])[0]))
        blocks.extend(_cap_note([r for r, _ in found], [r for r, _ in plotted]))
        rows = [[result_label(r), ", ".join(f"{k} {v:.2f}" for k, v in
                                            sorted(imp.shares.items(), key=lambda kv: -kv[1])[:3]),
                 str(imp.trials) + (" (too few: not yet reliable)" if imp.trials < MIN_ADVICE_TRIALS else "")]
                for r, imp in found]
        blocks.append(Table(["study", "most important parameters (share)", "completed trials"], rows, "llr"))
    if skipped:
        blocks.append(Table(["study", "no importance because"], [[result_label(r), imp.why] for r, imp in skipped]))
    return Section("Parameter importance", blocks, "importance")


def _tied(front: list, objs: list) -> list:
    """(point, how many other points share its values) for each distinct point of ``front``, by
    the first objective: configurations that simulate alike (a tile clamped to the whole input)
    would otherwise fill the table with one point several times. The earliest trial stands for them."""
    groups: dict = {}
    for p in sorted(front, key=lambda p: (p["values"][objs[0]], p["values"][objs[1]], p.get("trial", 0))):
        groups.setdefault((p["values"][objs[0]], p["values"][objs[1]]), []).append(p)
    return [(g[0], len(g) - 1) for g in groups.values()]


def pareto(data: ReportData) -> Section | None:
    """For two-objective studies: every trial in objective space and the Pareto front."""
    objs = data.summary.get("objectives") or []
    res = [r for r in data.searched if r.get("pareto")]
    if len(objs) != 2 or not res:
        return None
    from optuna.trial import TrialState

    label = _labeler(data)
    shown = _capped(res)
    panels, rows = [], []
    for r in shown:
        study = data.study(r.get("study"))
        pts = [tuple(t.values) for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))] \
            if study is not None else []
        front = [(p["values"][objs[0]], p["values"][objs[1]]) for p in r["pareto"]]
        panels.append((label(r), pts, front))
    for r in res:  # every study's front, drawn or not
        for p, ties in _tied(r["pareto"], objs):
            also = f" (and {count(ties, 'other configuration')} with these values)" if ties else ""
            rows.append([result_label(r), str(p.get("trial", "-")), _value(p["values"][objs[0]], objs[0]),
                         _value(p["values"][objs[1]], objs[1]), fmt.params(p.get("params")) + also])
    return Section("Pareto front", [
        Para(f"These studies minimize two objectives, {objs[0]} and {objs[1]}. The Pareto front holds the "
             "configurations no other trial beats in both; which one to ship is a trade-off to choose."),
        *([plots.pareto(panels, objs)] if panels else []),
        *_cap_note(res, shown),
        Table(["study", "trial no.", objs[0], objs[1], "configuration"], rows, "lrrrl"),
    ], "pareto")
