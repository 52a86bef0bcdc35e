"""Fitting a profile's constants to calibration rows (``calibrate`` reads them), per physical
group, each a least-squares problem on log cycles with a robust (soft L1) loss:

* cube: ``issue_cycles``, ``latency_cycles`` (one pair for every dtype) and one fractal rate (MACs
  per cycle) per dtype measured, from the back-to-back (steady state per Mmad) and isolated
  (Mmads then their latency) series;
* vector, per (op, dtype signature): ``startup``, ``per_repeat``, ``min_cycles`` of
  ``max(min_cycles, startup + per_repeat * repeat)``, one instruction per row.

Only the constants the rows determine (``identify``) are fitted; the others keep the profile's
values and are reported as not determined, never marked calibrated.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
from scipy.optimize import least_squares

from autotile.dtypes import DTYPES
from autotile.errors import InputError
from autotile.hardware import HardwareProfile, VectorCost
from autotile.hardware.profile import follow_value
from autotile.sim import engine as E
from autotile.sim import micro as U
from autotile.sim.calibrate import (
    B2B_REPEAT,
    LOSS_SCALE,
    Measurement,
    Report,
    evaluate,
    predictable,
    row_repeat,
    series_notes,
)
from autotile.sim.costs import cost_vector
from autotile.sim.identify import TIE, VECTOR_NAMES, cube_design, determined, vector_determined
from autotile.words import count


@dataclass(frozen=True)
class Fit:
    """A fitted profile, the constants that changed (path -> (value, note)), the errors, the
    constants the rows cannot determine, kept at the profile's values (path -> (value, why)),
    and the ones the profile derives from a fitted one, moved with it (path -> (value, note))."""

    profile: HardwareProfile
    updates: dict
    before: Report
    after: Report
    notes: tuple = field(default=())
    undetermined: dict = field(default_factory=dict)
    derived: dict = field(default_factory=dict)  # path -> (value, note): moved with what they follow
    warnings: tuple = field(default=())  # one line each: a refit that moves what other dtypes share
    amended: dict = field(default_factory=dict)  # path -> (value, note): kept, fitted with what moved


def _robust(fun, x0, lo, hi):
    x0 = np.clip(np.asarray(x0, float), np.asarray(lo) + 1e-9, np.asarray(hi) - 1e-9)
    return least_squares(fun, x0, bounds=(lo, hi), loss="soft_l1", f_scale=LOSS_SCALE,
                         diff_step=1e-4).x


def _unlimited(fun, x0, lo):
    """``fun``'s least-squares solution above ``lo`` with no upper limit: the value rows ask a
    constant held at a limit for (plain squares, each constant scaled by its own sensitivity,
    where the robust loss crept from the limit by a few percent)."""
    x0 = np.maximum(np.asarray(x0, float), np.asarray(lo) + 1e-9)
    return least_squares(fun, x0, bounds=(lo, np.inf), x_scale="jac", diff_step=1e-4).x


def _padded_macs(base: np.ndarray, r: Measurement) -> float:
    """The MACs one Mmad of row ``r`` pays for (whole fractals), as the engine counts them."""
    c = base.copy()
    c[E.C_CUBE_ISSUE], c[E.C_CUBE_LAT], c[E.C_CUBE_MACS] = 0.0, 0.0, 1.0
    return U.run_mmad(c, r.m, r.k, r.n, DTYPES[r.dtype].c0, 1)[0]


RATE_FLOOR = 0.01  # fractals per cycle: the slowest cube rate a fit considers
MAX_ISSUE, MAX_LATENCY = 64.0, 512.0  # cycles: the cube's issue and latency a fit considers at most
MAX_VECTOR = 1e3  # cycles: a vector op's startup, per_repeat and min_cycles a fit considers at most
MIN_PER_REPEAT = 0.01  # cycles: ... and its per_repeat at least


def fractal_macs(dtype: str) -> int:
    """MACs of one 16 x C0 x 16 fractal of ``dtype`` (4096 fp16/bf16, 2048 fp32, 8192 int8)."""
    return 16 * DTYPES[dtype].c0 * 16


def fractal_shape(dtype: str) -> str:
    return f"16x{DTYPES[dtype].c0}x16"


def rate_ceiling(hw: HardwareProfile, dtype: str) -> float:
    """The fastest ``dtype`` cube rate a fit may find, in fractals per cycle: one fractal per
    cycle, the cube's peak on every chip (domain.md), or the profile's own rate if it claims
    more. Not the profile's rate itself: a profile at half the peak (a guess, or an earlier fit
    to slower rows) refitted to the shared CSV stayed there, pushing issue_cycles to 0."""
    return max(1.0, hw.cube.macs_per_cycle[dtype] / fractal_macs(dtype))


@dataclass(frozen=True)
class CubeFit:
    """The cube constants a fit found: the shared issue and latency, whole MACs per cycle per
    dtype measured, and which of them (path -> bool) the Mmad rows determine."""

    issue_cycles: float
    latency_cycles: float
    macs: dict
    free: dict
    clamped: dict = field(default_factory=dict)  # path -> (bound, value the rows asked for)


def fit_cube(hw: HardwareProfile, rows: list[Measurement]) -> CubeFit:
    """Fit ``issue_cycles``, ``latency_cycles`` (every dtype's Mmad pays them) and one fractal
    rate per dtype the Mmad rows measure; the constants the rows do not determine keep the
    profile's values. Row order does not matter (the rows are sorted first)."""
    mm = sorted((r for r in rows if r.op == "mmad"),
                key=lambda r: (r.dtype, r.series, r.m, r.k, r.n, r.repeat or 1, r.cycles))
    dtypes = sorted({r.dtype for r in mm})
    col = {d: 2 + i for i, d in enumerate(dtypes)}  # x: issue, latency, then fractals per cycle per dtype
    frac = np.array([float(fractal_macs(d)) for d in dtypes])
    meas = np.log([r.cycles for r in mm])
    base = {d: cost_vector(hw, d) for d in dtypes}
    prior = np.array([hw.cube.issue_cycles, hw.cube.latency_cycles]
                     + [hw.cube.macs_per_cycle[d] / fractal_macs(d) for d in dtypes])
    free = np.array(determined(cube_design(mm, lambda r: _padded_macs(base[r.dtype], r), dtypes)))
    ceiling = np.array([rate_ceiling(hw, d) for d in dtypes])
    lo = np.concatenate([[0.0, 0.0], np.full(len(dtypes), RATE_FLOOR)])
    hi = np.concatenate([[MAX_ISSUE, MAX_LATENCY], ceiling])
    limit_lo = np.concatenate([[False, False], np.ones(len(dtypes), bool)])  # the rate floor
    limit_hi = np.concatenate([[True, True], np.zeros(len(dtypes), bool)])  # not the peak: the notes say it

    def resid_of(fixed, mask):
        def resid(xf):
            x = fixed.copy()
            x[mask] = xf
            cost = {}
            for d, f in zip(dtypes, frac):
                c = cost[d] = base[d].copy()
                c[E.C_CUBE_ISSUE], c[E.C_CUBE_LAT], c[E.C_CUBE_MACS] = x[0], x[1], x[col[d]] * f
            pred = []
            for r in mm:
                rep = B2B_REPEAT if r.series == "back_to_back" else (r.repeat or 1)
                cyc, per = U.run_mmad(cost[r.dtype], r.m, r.k, r.n, DTYPES[r.dtype].c0, rep)
                pred.append(per if r.series == "back_to_back" else cyc)
            return np.log(pred) - meas
        return resid

    x = prior.copy()
    at = np.zeros(len(x), bool)
    if free.any():
        x0 = np.concatenate([prior[:2], 0.99 * ceiling])  # the rates start near the peak, not at the profile's
        x[free] = _robust(resid_of(prior, free), x0[free], lo[free], hi[free])
        at |= free & _at_limit(x, lo, hi, limit_lo, limit_hi)
        rates = free.copy()
        rates[:2] = False
        shared = free.copy()
        shared[2:] = False
        if rates.any() and shared.any():
            # the profile stores whole MACs per cycle: fit issue and latency to the rates it will
            # hold, else a refit of the written profile moves them (issue 3.425 -> 3.4237)
            x[2:] = np.where(rates[2:], np.round(x[2:] * frac) / frac, x[2:])
            x[shared] = _robust(resid_of(x, shared), x[shared], lo[shared], hi[shared])
            at |= shared & _at_limit(x, lo, hi, limit_lo, limit_hi)
    names = [("cube", "issue_cycles"), ("cube", "latency_cycles")] + [("cube", "macs_per_cycle", d) for d in dtypes]
    clamped = {}
    if at.any():  # what the rows asked for: the same fit with the limits lifted
        asked = x.copy()
        asked[free] = _unlimited(resid_of(x, free), x[free], np.where(limit_lo, 1e-12, lo)[free])
        scale = np.concatenate([[1.0, 1.0], frac])  # rates in MACs per cycle, as the profile holds them
        clamped = {names[i]: (*_limit(x[i], lo[i], hi[i], limit_hi[i], scale[i]), float(asked[i]) * scale[i])
                   for i in np.flatnonzero(at)}
    macs = {d: int(round(x[col[d]] * f)) for d, f in zip(dtypes, frac)}
    return CubeFit(round(float(x[0]), 4), round(float(x[1]), 4), macs, dict(zip(names, map(bool, free))), clamped)


def _limit(v, lo, hi, has_hi, scale=1.0) -> tuple[float, str]:
    """(the limit ``v`` sits on, times ``scale``; "upper" or "lower")."""
    up = has_hi and abs(hi - v) <= abs(v - lo)
    return float(hi if up else lo) * scale, "upper" if up else "lower"


def _at_limit(x, lo, hi, limit_lo, limit_hi) -> np.ndarray:
    """Which of ``x`` sit on a limit the fit imposes (``limit_lo`` / ``limit_hi`` mark the ones that
    are limits, not physics: a cycle count's floor of 0 is none)."""
    tol = 1e-6 * np.maximum(1.0, np.abs(np.where(np.isfinite(hi), hi, 0.0)))
    return (limit_lo & (x - lo <= tol)) | (limit_hi & (hi - x <= tol))


def fit_vector(hw: HardwareProfile, rs: list[Measurement], prior: VectorCost | None) -> tuple[VectorCost, list, dict]:
    """(startup, per_repeat, min_cycles) of one (op, signature) series, which of them its rows
    determine, and the ones held at a limit of the fit (name -> (limit, value the rows asked
    for): ``clamp_warning``); the others keep ``prior`` (the profile's cost for it; a floor no higher than
    the shortest row). Without a prior an undetermined floor is 0 (none measured); an
    undetermined line is an InputError."""
    reps = np.array([row_repeat(hw, r) for r in rs], float)
    meas = np.array([r.cycles for r in rs])
    cost = cost_vector(hw, "fp16")

    def resid_of(fixed, free):
        def resid(xf):
            x = fixed.copy()
            x[free] = xf
            return np.log([U.run_vector(cost, x, int(n))[0] for n in reps]) - np.log(meas)
        return resid

    # start from the physics: the slope of the long instructions, the floor of the short ones
    order = np.argsort(reps)
    tail = order[len(order) // 2:]
    slope, icpt = np.polyfit(reps[tail], meas[tail], 1) if len(set(reps[tail])) > 1 else (meas[tail][0] / reps[tail][0], 0.0)
    x0 = np.array([max(icpt, 0.0), max(slope, 0.05), float(meas[order[0]])])
    lo, hi = np.array([0.0, MIN_PER_REPEAT, 0.0]), np.full(3, MAX_VECTOR)
    limit_lo, limit_hi = np.array([False, True, False]), np.ones(3, bool)  # a floor of 0 cycles is physics
    every = np.ones(3, bool)
    x = _robust(resid_of(x0, every), x0, lo, hi)
    free = np.array(vector_determined(reps, *x))
    if not free.all():
        if prior is None and not free[:2].all():
            raise _line_undetermined(rs, reps, x)
        held = np.array([prior.startup, prior.per_repeat, prior.min_cycles] if prior else [0.0, 0.0, 0.0])
        if free[0] and not free[2]:  # a floor above the shortest row would contradict it
            held[2] = min(held[2], float(meas.min()))
        x = held.copy()
        if free.any():
            x[free] = _robust(resid_of(held, free), x0[free], lo[free], hi[free])
    at = free & _at_limit(x, lo, hi, limit_lo, limit_hi)
    clamped = {}
    if at.any():  # what the rows asked for: the same fit with the limits lifted
        asked = x.copy()
        start = np.where(at, x0, x)  # the physics' start: from the limit the fit creeps
        asked[free] = _unlimited(resid_of(x, free), start[free], np.where(limit_lo, 1e-12, lo)[free])
        clamped = {VECTOR_NAMES[i]: (*_limit(x[i], lo[i], hi[i], limit_hi[i]), float(asked[i])) for i in np.flatnonzero(at)}
    return VectorCost(*(round(float(v), 4) for v in x)), [bool(f) for f in free], clamped


def _line_undetermined(rs: list[Measurement], reps: np.ndarray, x: np.ndarray) -> InputError:
    """Why rows of a signature the profile has no cost for leave startup and per_repeat open:
    one repeat count, or (at 1 and 10, say) the shorter ones fit the floor as well as the line,
    so the line has a single repeat count to pass through."""
    r = rs[0]
    head = f"{r.op} {r.dtype}: the profile has no cost for it to keep, and its {count(len(rs), 'row')}"
    counts = sorted({int(n) for n in reps})
    if len(counts) < 2:
        msg = (f"{head} are all at repeat {counts[0]}: they cannot separate startup from per_repeat; measure "
               "it at two or more repeat counts of one instruction")
    else:
        on_line = x[0] + x[1] * reps >= x[2] * (1 - TIE)
        line = sorted({int(n) for n in reps[on_line]})
        floor = ", ".join(str(n) for n in sorted({int(n) for n in reps[~on_line]}))
        r = rs[int(np.argmin(reps))]
        rows = f"the row{'s' if (~on_line).sum() > 1 else ''} at repeat {floor}"
        where = (f"leave one repeat count, {line[0]}, on the line startup + per_repeat x repeat: {rows} may be "
                 "the floor (min_cycles) instead" if line else f"all fit the floor (min_cycles): {rows} may all be it")
        msg = (f"{head} (repeat {', '.join(map(str, counts))}) {where}, which leaves the slope open; measure it at "
               "two or more repeat counts above the floor (longer instructions)")
    return InputError(msg, line=r.line, col=r.col("repeat"), field="repeat")


def prior_cost(hw: HardwareProfile, op: str, sig: str) -> VectorCost | None:
    """What the profile costs (op, sig) with today (its own entry: never another signature's),
    or None when it has none."""
    try:
        used, _ = U.vector_signature(hw, op, sig)
    except InputError:
        return None
    return hw.vector[op][used]


CUBE_WHY = ("back_to_back Mmad rows at two or more sizes determine issue_cycles and the MAC rate, "
            "isolated rows then latency_cycles")
VECTOR_WHY = {"startup": "rows at two or more repeat counts on its line (startup + per_repeat x repeat) "
                         "determine it", "per_repeat": "rows at two or more repeat counts on its line determine it",
              "min_cycles": "a row on its floor (a short instruction) determines it"}


def follow(hw: HardwareProfile, updates: dict, source: str, date: str) -> dict:
    """The constants ``hw`` declares derived (``derived: {from, scale}``) from one ``updates``
    refits, at ``scale`` times its new value (path -> (value, note)). Left behind, a refit fp16
    cube rate of 1372 MACs/cycle kept bf16 "same rate as fp16" at 4096 and fp32 "half" at 2048."""
    out = {}
    for path, (src, scale) in hw.derived.items():
        if path in updates or src not in updates:
            continue
        value = follow_value(updates[src][0], scale)
        was = hw.notes.get(".".join(path), "").split(": ", 1)[-1].split("; follows ")[0]
        times = f" x {scale:g}" if scale != 1 else ""
        out[path] = (value, f"{was}; follows {'.'.join(src)}{times} as fitted to {source}, {date}")
    return out


SHARED_CUBE = (("cube", "issue_cycles"), ("cube", "latency_cycles"))  # one value times every dtype's Mmad
MOVED = 0.01  # a refit "moves" a shared constant by more than 1% (of at least one cycle)


def shared_cube(hw: HardwareProfile, updates: dict, measured: list, source: str,
                date: str) -> tuple[tuple, dict, list]:
    """(warnings, amended notes, notes of what it keeps) when ``updates`` move a cube constant every dtype's Mmad shares
    (issue, latency) while the rows measured Mmads of ``measured`` dtypes only. Fitting three
    fp32 Mmads moved issue_cycles 2.2 -> 4.0, put the fp16 anchor m=32,k=16,n=32 33% off, and
    left the fp16 rate and the latency saying 'fitted to ascend910b_microops.csv' as if that fit
    still held. Now the warning names the dtypes not measured and the constants fitted to other
    rows with the old value; the moved constant's note names those dtypes, and each such
    constant's note says what moved under it. (A per-dtype issue constant would avoid this.) A
    refit that moves such a constant, fitted to rows before, by no more than ``MOVED`` while its
    rows leave dtypes unmeasured keeps it, value and note (the first fit's caveat included), and
    says so in a note (one the profile estimates is fitted as before): 9 int8 Mmads moved issue 2.1999 -> 2.2 and latency 20.8896 -> 20.8 and relabelled both
    "fitted to i8.csv ... mmad int8", with no warning, though fp16's rows had fitted them."""
    others = [d for d in hw.cube.macs_per_cycle if d not in measured]
    moved = {p: (getattr(hw.cube, p[1]), updates[p][0]) for p in SHARED_CUBE
             if p in updates and abs(updates[p][0] - getattr(hw.cube, p[1])) > MOVED * max(1.0, getattr(hw.cube, p[1]))}
    rows, also = f"{'+'.join(measured)} Mmad rows only", ", ".join(others)
    kept = []
    for p in [p for p in SHARED_CUBE if p in updates and p not in moved and others
              and hw.notes.get(".".join(p), "").startswith("calibrated: ")]:  # an estimate takes the fit
        was = getattr(hw.cube, p[1])
        kept.append(f"{'.'.join(p)} kept at {was:g}: {source}'s {rows} put it at {updates.pop(p)[0]:g}, within "
                    f"{MOVED:.0%} (of at least one cycle), and it also times {also} Mmads, which they do not measure")
    if not moved or not others:
        return (), {}, kept
    what = ", ".join(f"{'.'.join(p)} {a:g} -> {b:g}" for p, (a, b) in moved.items())
    was = ", ".join(f"{'.'.join(p)} = {a:g}" for p, (a, _) in moved.items())
    amended = {}
    for p in [p for p in SHARED_CUBE if p not in updates] + [("cube", "macs_per_cycle", d) for d in others]:
        note = hw.notes.get(".".join(p), "")
        if note.startswith("calibrated: ") and p not in hw.derived:  # a fit to other rows, with the old value
            value = hw.cube.macs_per_cycle[p[2]] if len(p) == 3 else getattr(hw.cube, p[1])
            amended[p] = (value, f"{note.split(': ', 1)[1]}; fitted with {was}, since moved ({what}) by a fit "
                                 f"to {source}'s {rows}, {date}")
    for p in moved:
        value, note = updates[p]
        updates[p] = (value, f"{note}; {rows}: shared with {also}, not measured there")
    warning = (f"{what}, moved by {source}'s {rows}, also time{'' if len(moved) > 1 else 's'} {also} Mmads, "
               f"which {source} does not measure: their cycles change unchecked"
               + (f", and {', '.join('.'.join(p) for p in amended)}, fitted to other rows with the old value, "
                  "no longer fit them"
                  if amended else "") + " (refit with their rows in the same file)")
    return (warning,), amended, kept



def _clamp_note(clamp, name: str = "") -> str:
    """What a constant's note adds when the fit held it (``name`` of a vector cost) at a limit."""
    if clamp is None:
        return ""
    limit, _side, asked = clamp
    return f"; {name + ' ' if name else ''}held at the fit's limit {limit:g} (with none, the rows ask for {asked:.4g})"


def clamp_warning(path: tuple, limit: float, side: str, asked: float, source: str) -> str:
    """A fitted constant held at a limit of the fit (README: calibrate): rows of 5e11 cycles gave
    a vadd per_repeat of 1000 and an Mmad rate of 41 MACs per cycle, "fitted" and unremarked."""
    return (f"{'.'.join(path)} held at the fit's {side} limit, {limit:g}: fitted with no limits, {source}'s rows "
            f"ask for {asked:.4g}, so the written profile does not match them (cycles in another unit, or another "
            "operation?)")


def compute_dtype_warnings(hw: HardwareProfile, new: HardwareProfile, source: str, missing_costs=None) -> tuple:
    """One warning per dtype whose Vector arithmetic the fit moves (``vector_compute_dtype``): a
    VADD cost fitted in bf16 makes the 910B compute bf16 natively, not in fp32 between VCONVs, so
    every bf16 kernel then asks for bf16 costs the profile may lack (weighted_sum and sigmoid in
    bf16 failed on the written profile, and nothing had said so). ``missing_costs(new, dtype)``
    (the caller's: ``tune.preflight.missing_vector_costs``, since the simulator does not read
    specs) names those the bundled studies' kernels ask for."""
    out = []
    for d in DTYPES:
        was, now = hw.vector_compute_dtype(d), new.vector_compute_dtype(d)
        if was == now or hw.dtype_problem(None, d):
            continue
        missing = missing_costs(new, d) if missing_costs else {}
        head = (f"vadd {'_'.join([d] * 3)} fitted to {source} makes the Vector compute {d} in {now}, not in {was}"
                + (" between VCONVs" if was != d else "") + f": every {d} vector kernel is costed anew")
        if missing:
            studies = sorted({s for v in missing.values() for s in v})
            head += (f", and the profile has no cost for {', '.join(f'{op} {sig}' for op, sig in sorted(missing))}, "
                     f"which the kernels of the bundled studies {', '.join(studies)} ask for in {d}: they fail "
                     f"on it in {d} until those are added (or fitted: measure them in the same file)")
        out.append(head)
    return tuple(out)


def fit(hw: HardwareProfile, rows: list[Measurement], source: str, date: str, notes=(), missing_costs=None) -> Fit:
    """Fit the profile's cube and vector constants to ``rows``; returns the new profile and errors.

    Only the constants the rows determine (``identify``) change and are marked calibrated; the
    others keep the profile's values and are listed in ``Fit.undetermined``. ``notes`` (rows
    left out, say) lead the fit's own; ``missing_costs`` as for ``compute_dtype_warnings``.
    """
    notes = list(notes) + series_notes(hw, rows)
    known = [r for r in rows if predictable(hw, r)]
    if len(known) < len(rows):
        notes.append(f"{len(rows) - len(known)} rows the input profile could not cost (op or "
                     "signature missing) are only in the 'after' errors")
    before = evaluate(hw, known, notes) if known else None
    updates, undetermined = {}, {}
    cube = hw.cube
    series = sorted({r.series for r in rows})
    mm = [r for r in rows if r.op == "mmad"]
    warnings, amended, clamps = (), {}, []
    if mm:
        cf = fit_cube(hw, rows)
        measured = sorted(cf.macs)
        tag = (f"fitted to {source} ({len(mm)} rows, mmad {'+'.join(measured)} "
               f"{'+'.join(sorted({r.series for r in mm}))}), {date}")
        values = {("cube", "issue_cycles"): (cf.issue_cycles, tag), ("cube", "latency_cycles"): (cf.latency_cycles, tag)}
        for d, macs in cf.macs.items():
            ceiling = rate_ceiling(hw, d)
            bound = ("one fractal per cycle, the cube's peak" if ceiling == 1.0 else
                     f"the profile's {hw.cube.macs_per_cycle[d]} MACs per cycle ({ceiling:.4f} fractals)")
            values[("cube", "macs_per_cycle", d)] = (
                macs, f"{tag}; fractal rate {macs / fractal_macs(d):.4f} per cycle ({fractal_shape(d)} = "
                      f"{fractal_macs(d)} MACs), bounded above by {bound}")
        cube = replace(cube, issue_cycles=cf.issue_cycles, latency_cycles=cf.latency_cycles,
                       macs_per_cycle={**cube.macs_per_cycle, **cf.macs})
        for path, (value, note) in values.items():
            if cf.free[path]:
                updates[path] = (value, note + _clamp_note(cf.clamped.get(path)))
            else:
                undetermined[path] = (value, f"{count(len(mm), 'Mmad row')} do not determine it alone (kept "
                                             f"from the profile): {CUBE_WHY}")
        warnings, amended, kept = shared_cube(hw, updates, measured, source, date)
        notes += kept
        cube = replace(cube, **{p[1]: getattr(hw.cube, p[1]) for p in SHARED_CUBE if p not in updates})
        clamps += [clamp_warning(path, *cf.clamped[path], source) for path in values if path in cf.clamped]
    vector = {op: dict(t) for op, t in hw.vector.items()}
    groups: dict = {}
    for r in rows:
        if r.op != "mmad":
            groups.setdefault((r.op, r.dtype), []).append(r)
    for (op, sig), rs in groups.items():
        prior = prior_cost(hw, op, sig)
        vc, free, clamped = fit_vector(hw, rs, prior)
        path = ("vector", "ops", op, sig)
        clamps += [clamp_warning(path + (name,), *clamped[name], source) for name in clamped]
        kept = [n for n, ok in zip(VECTOR_NAMES, free) if not ok]
        held = "kept from the profile" if prior else "0: no floor measured"
        if prior and vc.min_cycles < prior.min_cycles:
            held = f"kept from the profile; min_cycles lowered from {prior.min_cycles} to the shortest row's cycles"
        for name in kept:
            undetermined[path + (name,)] = (getattr(vc, name), f"{count(len(rs), 'row')} do not determine it ({held}): "
                                                               f"{VECTOR_WHY[name]}")
        if len(kept) == 3:
            continue  # nothing learned: the profile's cost stays as it is
        vector.setdefault(op, {})[sig] = vc
        ser = "+".join(sorted({r.series for r in rs}))
        note = f"fitted to {source} ({len(rs)} rows, {ser}), {date}"
        if kept:
            note += f"; {', '.join(kept)} not determined by them, {held}"
        for name, clamp in clamped.items():
            note += _clamp_note(clamp, name)
        updates[path] = (vc, note)
    derived = follow(hw, updates, source, date)
    for path, (value, _) in derived.items():
        if path[0] == "cube":
            cube = replace(cube, macs_per_cycle={**cube.macs_per_cycle, path[-1]: value})
        else:
            vector[path[2]][path[3]] = value
    new = replace(hw, cube=cube, vector=vector,
                  derived={p: rel for p, rel in hw.derived.items() if p not in updates})  # a fitted one follows no other
    warnings = tuple(warnings) + tuple(clamps) + compute_dtype_warnings(hw, new, source, missing_costs)
    after = evaluate(new, rows, notes)
    if before is None:
        before = after
    return Fit(new, updates, before, after, tuple(notes + [f"series: {', '.join(series)}"]), undetermined, derived,
               warnings, amended)
