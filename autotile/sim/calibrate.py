"""Calibration: compare a profile with measured micro-operation cycles, and fit its constants.

Every prediction goes through ``sim.micro`` (the engine the kernels use). The fit is per
physical group, each a least-squares problem on log cycles with a robust (soft L1) loss:

* cube: ``issue_cycles``, ``latency_cycles`` and the fractal rate (MACs per cycle) from the
  back-to-back (steady state per Mmad) and isolated (one Mmad, with latency) series;
* vector, per (op, dtype signature): ``startup``, ``per_repeat``, ``min_cycles`` of
  ``max(min_cycles, startup + per_repeat * repeat)`` (split at the profile's max repeat).

Rows that stay far off after the fit are flagged, not bent to: the model is physical.
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from scipy.optimize import least_squares

from autotile.dtypes import DTYPES
from autotile.errors import InputError
from autotile.hardware import HardwareProfile, VectorCost
from autotile.hardware.ops import VECTOR_OPS, signature_problem
from autotile.hardware.profile import profile_error
from autotile.sim import engine as E
from autotile.sim import micro as U
from autotile.sim.costs import cost_vector
from autotile.yamlsrc import suggest

COLUMNS = ("chip", "op", "dtype", "m", "k", "n", "elems", "repeat", "cycles", "series")
MMAD_SERIES = ("back_to_back", "isolated")
B2B_REPEAT = 32  # a "long" back-to-back series: its steady state is what the rows record
FAR_OFF = 0.25  # |relative error| above which a row is reported as far off
LOSS_SCALE = 0.05  # soft-L1 transition, in log-cycles (~5%)


@dataclass(frozen=True)
class Measurement:
    """One row of a measurements CSV (``line`` is its 1-based line in the file)."""

    line: int
    chip: str
    op: str
    dtype: str
    m: int | None
    k: int | None
    n: int | None
    elems: int | None
    repeat: int | None
    cycles: float
    series: str


@dataclass(frozen=True)
class RowError:
    """Measured vs predicted cycles of one row."""

    line: int
    op: str
    dtype: str
    series: str
    params: dict
    measured: float
    predicted: float
    rel_error: float
    far_off: bool

    def to_json(self) -> dict:
        return {"line": self.line, "op": self.op, "dtype": self.dtype, "series": self.series,
                "params": self.params, "measured": self.measured,
                "predicted": round(self.predicted, 4), "rel_error": round(self.rel_error, 5),
                "far_off": self.far_off}


@dataclass(frozen=True)
class Report:
    """Errors of a profile against a measurements file."""

    rows: tuple
    median_abs_rel_error: float
    p90_abs_rel_error: float
    notes: tuple = ()

    def worst(self, n: int = 10) -> list[RowError]:
        return sorted(self.rows, key=lambda r: -abs(r.rel_error))[:n]

    def to_json(self, with_rows: bool = True) -> dict:
        out = {"median_abs_rel_error": round(self.median_abs_rel_error, 5),
               "p90_abs_rel_error": round(self.p90_abs_rel_error, 5),
               "far_off": sum(r.far_off for r in self.rows),
               "worst": [r.to_json() for r in self.worst()],
               "notes": list(self.notes)}
        if with_rows:
            out = {"rows": [r.to_json() for r in self.rows], **out}
        return out


@dataclass(frozen=True)
class Fit:
    """A fitted profile, the constants that changed (path -> (value, note)) and the errors."""

    profile: HardwareProfile
    updates: dict
    before: Report
    after: Report
    notes: tuple = field(default=())


# -- reading -----------------------------------------------------------------------------------

def read_measurements(path: str | Path) -> list[Measurement]:
    """Parse and validate a measurements CSV strictly (errors name file, line and column)."""
    path = Path(path)
    try:
        raw = path.read_bytes()
        text = raw.decode("utf-8-sig")
    except OSError as exc:
        raise InputError(f"cannot read measurements: {exc.strerror or exc}", file=str(path)) from None
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise InputError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x}): expected a CSV file",
                         file=str(path), line=line) from None
    reader = csv.reader(text.splitlines())
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError("empty measurements file", file=str(path), line=1) from None
    for col in COLUMNS:
        if col not in header:
            raise InputError(f"missing column {col!r} (expected {', '.join(COLUMNS)})",
                             file=str(path), line=1, field=col)
    idx = {c: header.index(c) for c in COLUMNS}
    rows = []
    for lineno, rec in enumerate(reader, start=2):
        if not rec or all(not x.strip() for x in rec):
            continue
        if len(rec) != len(header):
            raise InputError(f"expected {len(header)} columns, got {len(rec)}", file=str(path), line=lineno)
        rows.append(_row(path, lineno, {c: rec[i].strip() for c, i in idx.items()}))
    if not rows:
        raise InputError("no measurement rows", file=str(path), line=2)
    return rows


def _row(path, line, rec: dict) -> Measurement:
    def err(col, msg):
        return InputError(msg, file=str(path), line=line, col=COLUMNS.index(col) + 1, field=col)

    def num(col, kind, required):
        raw = rec[col]
        if raw == "":
            if required:
                raise err(col, "expected a value")
            return None
        try:
            v = kind(raw)
        except ValueError:
            raise err(col, f"expected a {'whole ' if kind is int else ''}number, got {raw!r}") from None
        if not math.isfinite(v) or v <= 0:
            raise err(col, f"expected a positive number, got {raw!r}")
        return v

    op, series = rec["op"], rec["series"]
    cycles = num("cycles", float, True)
    if op == "mmad":
        if series not in MMAD_SERIES:
            raise err("series", f"mmad series {series!r}: expected one of {', '.join(MMAD_SERIES)}")
        if rec["dtype"] not in DTYPES:
            raise err("dtype", f"mmad dtype {rec['dtype']!r}: expected one of {', '.join(DTYPES)}")
        m, k, n = (num(c, int, True) for c in ("m", "k", "n"))
        return Measurement(line, rec["chip"], op, rec["dtype"], m, k, n, None, num("repeat", int, False),
                           cycles, series)
    if op not in VECTOR_OPS:
        raise err("op", f"unknown op {op!r}: expected mmad or a vector instruction (vadd, vexp, ...)"
                  + suggest(op, ["mmad", *VECTOR_OPS]))
    problem = signature_problem(op, rec["dtype"])
    if problem:
        raise err("dtype", problem)
    elems, repeat = num("elems", int, False), num("repeat", int, False)
    if elems is None and repeat is None:
        raise err("repeat", "a vector row needs elems or repeat")
    return Measurement(line, rec["chip"], op, rec["dtype"], None, None, None, elems, repeat, cycles, series)


def check_ops(rows: list[Measurement], hw: HardwareProfile, path) -> None:
    """Every vector row must be costable by the profile to compare with it: a cost the profile
    lacks is the profile's gap (located in its file), not the row's; fitting (-o) adds it."""
    for r in rows:
        if r.op == "mmad":
            continue
        try:
            U.vector_signature(hw, r.op, r.dtype)
        except InputError as exc:
            where = ("vector", "ops", r.op) if r.op in hw.vector else ("vector", "ops")
            raise profile_error(hw, where, f"{exc.message}; {path} line {r.line} measures it: add it to the "
                                           "profile, or fit one to the measurements with -o") from None


def predictable(hw: HardwareProfile, r: Measurement) -> bool:
    """Can the profile cost this row (its op, and a signature with the same source dtype)?"""
    if r.op == "mmad":
        return True
    try:
        U.vector_signature(hw, r.op, r.dtype)
    except InputError:
        return False
    return True


# -- predicting ------------------------------------------------------------------------------

def row_repeat(hw: HardwareProfile, r: Measurement) -> int:
    """The row's repeat count; derived from elems (256 B of the source dtype per repeat) if absent."""
    if r.repeat is not None:
        return r.repeat
    return -(-r.elems // U.lanes(hw, r.dtype))


def predict(hw: HardwareProfile, r: Measurement) -> float:
    """Predicted cycles of one row, through ``sim.micro``."""
    if r.op == "mmad":
        if r.series == "back_to_back":
            res = U.micro("mmad", {"m": r.m, "k": r.k, "n": r.n, "repeat": B2B_REPEAT}, r.dtype, hw)
            return res.cycles_per_op
        return U.micro("mmad", {"m": r.m, "k": r.k, "n": r.n, "repeat": r.repeat or 1}, r.dtype, hw).cycles
    return U.micro("vector", {"op": r.op, "repeat": row_repeat(hw, r)}, r.dtype, hw).cycles


def evaluate(hw: HardwareProfile, rows: list[Measurement], notes=()) -> Report:
    """Per-row errors and their median / 90th percentile absolute relative error."""
    out = []
    for r in rows:
        pred = predict(hw, r)
        rel = (pred - r.cycles) / r.cycles
        params = ({"m": r.m, "k": r.k, "n": r.n} if r.op == "mmad"
                  else {"elems": r.elems, "repeat": row_repeat(hw, r)})
        out.append(RowError(r.line, r.op, r.dtype, r.series, params, r.cycles, pred, rel, abs(rel) > FAR_OFF))
    errs = np.abs([e.rel_error for e in out])
    return Report(tuple(out), float(np.median(errs)), float(np.percentile(errs, 90)), tuple(notes))


def series_notes(hw: HardwareProfile, rows: list[Measurement]) -> list[str]:
    """Series whose elems/repeat disagree with 256 B of the source dtype per repeat."""
    notes = []
    groups: dict = {}
    for r in rows:
        if r.op != "mmad" and r.elems is not None and r.repeat is not None:
            groups.setdefault((r.op, r.dtype), []).append(r)
    for (op, sig), rs in groups.items():
        per = U.lanes(hw, sig)
        bad = [r for r in rs if -(-r.elems // per) != r.repeat]
        if bad:
            ex = bad[0]
            notes.append(f"{op} {sig}: {len(bad)}/{len(rs)} rows have elems/repeat disagreeing with "
                         f"{hw.vector_bytes_per_repeat} B/repeat ({per} lanes), e.g. line {ex.line}: "
                         f"elems={ex.elems} repeat={ex.repeat}; the repeat column is used")
    return notes


# -- fitting ---------------------------------------------------------------------------------

def _robust(fun, x0, lo, hi):
    x0 = np.clip(np.asarray(x0, float), np.asarray(lo) + 1e-9, np.asarray(hi) - 1e-9)
    return least_squares(fun, x0, bounds=(lo, hi), loss="soft_l1", f_scale=LOSS_SCALE,
                         diff_step=1e-4).x


def fit_cube(hw: HardwareProfile, rows: list[Measurement]) -> tuple[float, float, float]:
    """(issue_cycles, latency_cycles, fp16 MACs per cycle) fitted to the Mmad rows."""
    mm = [r for r in rows if r.op == "mmad"]
    dtype = mm[0].dtype
    meas = np.log([r.cycles for r in mm])
    base = cost_vector(hw, dtype)

    def resid(x):
        c = base.copy()
        c[E.C_CUBE_ISSUE], c[E.C_CUBE_LAT], c[E.C_CUBE_MACS] = x[0], x[1], x[2] * 4096.0
        pred = []
        for r in mm:
            rep = B2B_REPEAT if r.series == "back_to_back" else (r.repeat or 1)
            cyc, per = U.run_mmad(c, r.m, r.k, r.n, DTYPES[r.dtype].c0, rep)
            pred.append(per if r.series == "back_to_back" else cyc)
        return np.log(pred) - meas

    # the profile's rate is the documented peak: a fit may find the cube slower, never faster
    peak = hw.cube.macs_per_cycle[dtype] / 4096.0
    x0 = (hw.cube.issue_cycles, hw.cube.latency_cycles, peak * 0.99)
    x = _robust(resid, x0, [0.0, 0.0, 0.25 * peak], [64.0, 512.0, peak])
    return float(x[0]), float(x[1]), float(x[2] * 4096.0)


def fit_vector(hw: HardwareProfile, rs: list[Measurement]) -> VectorCost:
    """(startup, per_repeat, min_cycles) of one (op, signature) series."""
    reps = np.array([row_repeat(hw, r) for r in rs], float)
    meas = np.array([r.cycles for r in rs])
    cost = cost_vector(hw, "fp16")

    def resid(x):
        return np.log([U.run_vector(cost, x, int(n))[0] for n in reps]) - np.log(meas)

    # start from the physics: the slope of the long instructions, the floor of the short ones
    order = np.argsort(reps)
    tail = order[len(order) // 2:]
    slope, icpt = np.polyfit(reps[tail], meas[tail], 1) if len(set(reps[tail])) > 1 else (meas[tail][0] / reps[tail][0], 0.0)
    x0 = [max(icpt, 0.0), max(slope, 0.05), float(meas[order[0]])]
    x = _robust(resid, x0, [0.0, 0.01, 0.0], [1e3, 1e3, 1e3])
    return VectorCost(*(round(float(v), 4) for v in x))


def fit(hw: HardwareProfile, rows: list[Measurement], source: str, date: str) -> Fit:
    """Fit the profile's cube and vector constants to ``rows``; returns the new profile and errors."""
    notes = series_notes(hw, rows)
    known = [r for r in rows if predictable(hw, r)]
    if len(known) < len(rows):
        notes.append(f"{len(rows) - len(known)} rows the input profile could not cost (op or "
                     "source dtype missing) are only in the 'after' errors")
    before = evaluate(hw, known, notes) if known else None
    updates = {}
    cube = hw.cube
    series = sorted({r.series for r in rows})
    mm = [r for r in rows if r.op == "mmad"]
    if mm:
        issue, lat, macs = fit_cube(hw, rows)
        dtype = mm[0].dtype
        tag = f"fitted to {source} ({len(mm)} rows, mmad {'+'.join(sorted({r.series for r in mm}))}), {date}"
        macs_i = int(round(macs))
        cube = replace(cube, issue_cycles=round(issue, 4), latency_cycles=round(lat, 4),
                       macs_per_cycle={**cube.macs_per_cycle, dtype: macs_i})
        updates[("cube", "issue_cycles")] = (cube.issue_cycles, tag)
        updates[("cube", "latency_cycles")] = (cube.latency_cycles, tag)
        updates[("cube", "macs_per_cycle", dtype)] = (
            macs_i, f"{tag}; fractal rate {macs / 4096.0:.4f} per cycle, bounded above by the "
                    f"documented peak {hw.cube.macs_per_cycle[dtype]} (16x16x16 per cycle)")
    vector = {op: dict(t) for op, t in hw.vector.items()}
    groups: dict = {}
    for r in rows:
        if r.op != "mmad":
            groups.setdefault((r.op, r.dtype), []).append(r)
    for (op, sig), rs in groups.items():
        vc = fit_vector(hw, rs)
        vector.setdefault(op, {})[sig] = vc
        ser = "+".join(sorted({r.series for r in rs}))
        updates[("vector", "ops", op, sig)] = (vc, f"fitted to {source} ({len(rs)} rows, {ser}), {date}")
    new = replace(hw, cube=cube, vector=vector)
    after = evaluate(new, rows, notes)
    if before is None:
        before = after
    return Fit(new, updates, before, after, tuple(notes + [f"series: {', '.join(series)}"]))
