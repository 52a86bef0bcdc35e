"""Which sampler and seed drew a study's trials, when a resume ran under other settings.

A changed ``--sampler`` or ``--seed`` (or the spec's ``sampler:``/``seed:``) resumes the stored
studies, so their trials may have been drawn under settings other than the run's: each trial
records its run's sampler and seed (``ATTR``), and a study's summary record lists them
(``drawn_by``) when they differ from the run's, so the printout, the report's heading, its
sampler paragraph and its Reproduce command say what really drew the trials.
"""

from __future__ import annotations

from autotile.words import count

ATTR = "drawn_by"  # a trial's user attribute: [sampler, seed] of the run that ran it


def record(trials) -> list[dict]:
    """Per (sampler, seed), in the order they first ran, the trials that ran (queued ones not yet
    taken are not counted): ``[{sampler, seed, trials}]``. Trials of an autotile that did not
    record it have sampler and seed None; a study none of whose trials records it gives []."""
    from optuna.trial import TrialState

    runs: dict = {}
    for t in sorted(trials, key=lambda t: t.number):
        if t.state == TrialState.WAITING:
            continue
        got = t.user_attrs.get(ATTR)
        key = tuple(got) if isinstance(got, list) and len(got) == 2 else (None, None)
        runs[key] = runs.get(key, 0) + 1
    if set(runs) <= {(None, None)}:
        return []
    return [{"sampler": s, "seed": seed, "trials": n} for (s, seed), n in runs.items()]


def differs(drawn: list[dict], sampler: str, seed: int) -> bool:
    """Whether any trial of ``drawn`` (``record``'s list) ran under another sampler or seed."""
    return any((d["sampler"], d["seed"]) != (sampler, seed) for d in drawn)


def drawers(summary: dict) -> list[dict]:
    """Over every study of ``summary``: the (sampler, seed) pairs that drew trials, with their
    trial counts, in first-seen order; a study without ``drawn_by`` was drawn by the run's."""
    runs: dict = {}
    for r in summary.get("results") or []:
        drawn = r.get("drawn_by") or [{"sampler": summary.get("sampler"), "seed": summary.get("seed"),
                                       "trials": r.get("trials") or 0}]
        for d in drawn:
            key = (d.get("sampler"), d.get("seed"))
            runs[key] = runs.get(key, 0) + (d.get("trials") or 0)
    return [{"sampler": s, "seed": seed, "trials": n} for (s, seed), n in runs.items() if n]


def label(d: dict) -> str:
    """``portfolio, seed 0``; for trials of an autotile that did not record it, says so."""
    return "an unrecorded sampler and seed" if d.get("sampler") is None else f"{d['sampler']}, seed {d['seed']}"


def resumed_note(summary: dict) -> str:
    """``resumed: 3 trials drawn by portfolio, seed 0`` (the trials other settings than the run's
    drew), or "" when the run's sampler and seed drew them all (or nothing records it)."""
    if not any(r.get("drawn_by") for r in summary.get("results") or []):
        return ""
    others = [d for d in drawers(summary)
              if (d["sampler"], d["seed"]) != (summary.get("sampler"), summary.get("seed"))]
    if not others:
        return ""
    parts = [f"{count(d['trials'], 'trial') if i == 0 else d['trials']} "
             f"{'drawn ' if i == 0 else ''}by {label(d)}" for i, d in enumerate(others)]
    return "resumed: " + "; ".join(parts)
