"""Calibration: read measured micro-operation cycles strictly and compare a profile with them.

Every prediction goes through ``sim.micro`` (the engine the kernels use); ``sim.fitting`` fits
the profile's constants to the rows. Rows that stay far off after a fit are flagged, not bent
to: the model is physical.
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autotile.dtypes import DTYPES
from autotile.errors import InputError
from autotile.hardware import HardwareProfile
from autotile.hardware.ops import VECTOR_OPS, signature_problem
from autotile.hardware.profile import profile_error
from autotile.sim import micro as U
from autotile.sim.footprint import mmad_uses, overflow, vector_uses
from autotile.words import count
from autotile.yamlsrc import suggest

COLUMNS = ("chip", "op", "dtype", "m", "k", "n", "elems", "repeat", "cycles", "series")
MMAD_SERIES = ("back_to_back", "isolated")
VECTOR_SERIES = "vector"  # one instruction of elems / repeat
B2B_REPEAT = 32  # a "long" back-to-back series: its steady state is what the rows record
FAR_OFF = 0.25  # |relative error| above which a row is reported as far off
LOSS_SCALE = 0.05  # soft-L1 transition, in log-cycles (~5%)
MIN_CYCLES = 0.01  # a measured micro-operation takes at least this long (1e-308 is not a time)
MAX_CYCLES = 1e12  # ... and at most this (minutes at NPU clocks)
# how a number is written: Python's int() and float() also read 3_0 (30), full-width digits and
# "nan", which no measurement tool writes, so a typo such as 1_28 read as 128
INT = re.compile(r"[+-]?[0-9]+", re.ASCII)
FLOAT = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?", re.ASCII)
# the chips a row may say it was measured on (its `chip` column, "Ascend" and case optional) ->
# their AI Core: only 910B1..910B4 share one (domain.md), so only they calibrate one another
AI_CORES = {"910b1": "910B", "910b2": "910B", "910b3": "910B", "910b4": "910B", "910": "910A", "910a": "910A",
            "310p3": "310P"}


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
    header: tuple = COLUMNS  # the file's columns, in its order

    def col(self, name: str) -> int:
        """1-based column of ``name`` in the row's file."""
        return self.header.index(name) + 1


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


# -- reading -----------------------------------------------------------------------------------

def chip_key(name: str) -> str:
    """A chip's name as rows and profiles compare it: ``Ascend910B1`` and ``910b1`` alike."""
    key = name.strip().lower()
    return key[len("ascend"):] if key.startswith("ascend") else key


def read_measurements(path: str | Path, known_ops=None, profile: str | None = None) -> list[Measurement]:
    """Parse and validate a measurements CSV strictly (errors name file, line and column).

    ``known_ops``: the vector instructions the profile costs; an unknown op's "did you mean" is
    one of them (or mmad), never a catalogue name the profile lacks. ``profile``: the profile's
    name, a chip a row may name besides ``AI_CORES``' (a chip of your own)."""
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
    for i, h in enumerate(header):
        if h not in COLUMNS:
            what = "an empty column name" if not h else f"unknown column {h!r}"
            raise InputError(f"{what}: expected the columns {', '.join(COLUMNS)}" + suggest(h, COLUMNS),
                             file=str(path), line=1, col=i + 1, field=h or None)
        if h in header[:i]:
            raise InputError(f"column {h!r} appears twice (columns {header[:i].index(h) + 1} and {i + 1}): "
                             "expected each column once", file=str(path), line=1, col=i + 1, field=h)
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
            raise _width_error(path, lineno, header, len(rec))
        rows.append(_row(path, lineno, {c: rec[i].strip() for c, i in idx.items()}, tuple(header), known_ops,
                         profile))
    if not rows:
        raise InputError("no measurement rows", file=str(path), line=2)
    return rows


def _width_error(path, line: int, header: list, got: int) -> InputError:
    """A row with fewer or more fields than the header, located like any row error: at the first
    missing field (and its column's name), or at the first one past the header."""
    if got < len(header):
        return InputError(f"expected {len(header)} columns, got {got}", file=str(path), line=line,
                          col=got + 1, field=header[got])
    return InputError(f"expected {len(header)} columns, got {got} (a value past the last one, {header[-1]})",
                      file=str(path), line=line, col=len(header) + 1)


def _row(path, line, rec: dict, header: tuple, known_ops=None, profile: str | None = None) -> Measurement:
    def err(col, msg):
        return InputError(msg, file=str(path), line=line, col=header.index(col) + 1, field=col)

    chip = chip_key(rec["chip"])
    if chip not in AI_CORES and (profile is None or chip != chip_key(profile)):
        known = list(AI_CORES) + ([profile] if profile and chip_key(profile) not in AI_CORES else [])
        got = "nothing" if not chip else repr(_short(rec["chip"]))
        raise err("chip", f"expected the chip the row was measured on, one of {', '.join(known)}, got {got}"
                  + suggest(chip, known))

    def num(col, kind, required):
        raw = rec[col]
        if raw == "":
            if required:
                raise err(col, "expected a value")
            return None
        if not (INT if kind is int else FLOAT).fullmatch(raw):
            spelled = "ASCII digits" if kind is int else "ASCII decimal or exponent form, e.g. 4.8 or 1e3"
            raise err(col, f"expected a {'whole ' if kind is int else ''}number in {spelled}, got {_short(raw)!r}")
        v = kind(raw)
        if not math.isfinite(v) or v <= 0:
            raise err(col, f"expected a positive finite number, got {_short(raw)!r}")
        from autotile.space.loader import MAX_DIM  # m, k, n and elems: as sim.micro takes them

        top = U.MAX_REPEAT if col == "repeat" else MAX_DIM
        if kind is int and v > top:  # as sim.micro takes them
            raise err(col, f"expected a positive whole number up to {top}, got {_short(raw)!r}")
        if kind is float and not MIN_CYCLES <= v <= MAX_CYCLES:
            raise err(col, f"expected {MIN_CYCLES:g} to {MAX_CYCLES:g} cycles for one micro-operation, "
                           f"got {_short(raw)!r}")
        return v

    op, series = rec["op"], rec["series"]
    cycles = num("cycles", float, True)
    if op == "mmad":
        if series not in MMAD_SERIES:
            raise err("series", f"mmad series {series!r}: expected one of {', '.join(MMAD_SERIES)}")
        if rec["dtype"] not in DTYPES:
            raise err("dtype", f"mmad dtype {rec['dtype']!r}: expected one of {', '.join(DTYPES)}")
        m, k, n = (num(c, int, True) for c in ("m", "k", "n"))
        if rec["elems"]:
            raise err("elems", f"an Mmad row takes no elems, got {_short(rec['elems'])!r}: expected it empty "
                               "(m, k, n size an Mmad)")
        return Measurement(line, chip, op, rec["dtype"], m, k, n, None, num("repeat", int, False),
                           cycles, series, header)
    if op not in VECTOR_OPS:
        raise err("op", f"unknown op {op!r}: expected mmad or a vector instruction (vadd, vexp, ...)"
                  + suggest(op, ["mmad", *(VECTOR_OPS if known_ops is None
                                           else [o for o in known_ops if o in VECTOR_OPS])]))
    problem = signature_problem(op, rec["dtype"])
    if problem:
        raise err("dtype", problem)
    for col in ("m", "k", "n"):
        if rec[col]:
            raise err(col, f"a vector row ({op}) takes no {col}, got {_short(rec[col])!r}: expected it empty "
                           "(m, k, n size an Mmad; elems or repeat a vector instruction)")
    elems, repeat = num("elems", int, False), num("repeat", int, False)
    if elems is None and repeat is None:
        raise err("repeat", "a vector row needs elems or repeat")
    if series != VECTOR_SERIES:
        raise err("series", f"a vector row's series {_short(series)!r}: expected {VECTOR_SERIES} "
                            f"({' and '.join(MMAD_SERIES)} are Mmad series)")
    return Measurement(line, chip, op, rec["dtype"], None, None, None, elems, repeat, cycles, series, header)


def _short(text: str) -> str:
    return text if len(text) <= 30 else text[:27] + "..."


def not_held(hw: HardwareProfile, r: Measurement) -> str | None:
    """Why ``hw``'s chip cannot run row ``r`` at all (None when it can): one of its dtypes is not
    on the chip (bf16 on the 910A / 310P), or, for an Mmad, the cube has no rate for it."""
    if r.op == "mmad":
        return hw.dtype_problem("cube", r.dtype)
    return next((hw.dtype_problem(None, d) for d in r.dtype.split("_")
                 if d in DTYPES and hw.dtype_problem(None, d)), None)


def held_rows(hw: HardwareProfile, rows: list[Measurement], path) -> tuple[list[Measurement], list[str]]:
    """(the rows ``hw``'s chip can run, one note per reason counting the others, skipped).

    A CSV measured on a 910B holds bf16 rows; a chip without bf16 does not cost them, and
    adding a cost for them would make it appear to have bf16, so they are left out, not refused.
    A file none of whose rows the chip can run is an InputError."""
    kept, why = [], {}
    for r in rows:
        problem = not_held(hw, r)
        if problem is None:
            kept.append(r)
        else:
            why.setdefault(problem, []).append(r.line)
    if not kept:
        raise InputError(f"no row {hw.reference} can run ({'; '.join(why)}): expected rows in its dtypes",
                         file=str(path), line=rows[0].line)
    notes = [f"{count(len(lines), 'row')} not costed, skipped: {problem} (lines {_spans(lines)})"
             for problem, lines in why.items()]
    return kept, notes


def ai_core(hw: HardwareProfile) -> str | None:
    """The AI Core of ``hw``'s chip by its name (``ascend910b4``: 910B), None for a name that is
    no chip ``AI_CORES`` knows (a profile of your own)."""
    return AI_CORES.get(chip_key(hw.name))


def foreign_rows(hw: HardwareProfile, rows: list[Measurement]) -> list[Measurement]:
    """The rows measured on a chip whose AI Core is not, or not known to be, ``hw``'s."""
    core, own = ai_core(hw), chip_key(hw.name)
    return [r for r in rows if r.chip != own and (core is None or AI_CORES.get(r.chip) != core)]


def check_chips(hw: HardwareProfile, rows: list[Measurement], path, fitting: bool, allow: bool) -> list[str]:
    """Rows of another AI Core than ``hw``'s: fitted to them (``fitting``), the profile's constants
    would read "calibrated" for a core they were not measured on (the 310P3's assumed costs were
    relabelled "fitted to ascend910b_microops.csv" from 910B1 rows), so that is an InputError at
    the first such row unless ``allow`` (``--other-chip``). Otherwise one note names them."""
    foreign = foreign_rows(hw, rows)
    if not foreign:
        return []
    core, r = ai_core(hw), foreign[0]
    if fitting and not allow:
        if core is None:
            why = (f"{hw.reference} is named for no chip calibrate knows ({', '.join(AI_CORES)}), so whether it has "
                   f"the AI Core of {r.chip} is unknown; expected rows whose chip is {hw.name}")
        else:
            why = (f"a {AI_CORES[r.chip]} AI Core, not the {core} of {hw.reference} (only 910B1..910B4 share one): "
                   f"fitted to them, its constants would read calibrated on a core they were not measured on; "
                   f"expected rows measured on a {core} chip")
        raise InputError(f"{r.chip}: {why}, or --other-chip to fit them anyway", file=str(path), line=r.line,
                         col=r.col("chip"), field="chip")
    whose = f"the {core} AI Core of {hw.name}" if core else f"known to be the AI Core of {hw.name}"
    what = "fitted with --other-chip" if fitting else "these errors compare the profile with another core"
    return [f"{count(len(foreign), 'row')} measured on {', '.join(sorted({x.chip for x in foreign}))}, not {whose} "
            f"(lines {_spans([x.line for x in foreign])}): {what}"]


def other_chip_caveat(hw: HardwareProfile, rows: list[Measurement], path: tuple) -> str | None:
    """What a fitted constant's note adds when rows of another AI Core (``foreign_rows``) fitted
    it: the cube's constants from Mmad rows, a vector cost from its (op, signature) rows."""
    mine = [r for r in foreign_rows(hw, rows) if (r.op == "mmad" if path[0] == "cube" else
                                                   (r.op, r.dtype) == (path[2], path[3]))]
    if not mine:
        return None
    core = ai_core(hw)
    return (f"rows measured on {', '.join(sorted({r.chip for r in mine}))}, "
            f"{'not a ' + core if core else 'not known to be this chip'}'s AI Core (--other-chip)")


def _spans(lines: list[int]) -> str:
    """1-based line numbers as ranges: 283-312, 400."""
    out, start = [], lines[0]
    for a, b in zip(lines, lines[1:] + [None]):
        if b != a + 1:
            out.append(str(start) if start == a else f"{start}-{a}")
            start = b
    return ", ".join(out)


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


def check_repeats(rows: list[Measurement], hw: HardwareProfile, path) -> None:
    """A vector row times one instruction: its repeat (given, or from elems) is 1..max_repeat."""
    top = hw.vector_max_repeat
    for r in rows:
        if r.op == "mmad":
            continue
        if r.repeat is not None and r.repeat > top:
            raise InputError(f"expected 1..max_repeat ({top} in {hw.reference}) for one vector instruction, "
                             f"got {r.repeat}", file=str(path), line=r.line, col=r.col("repeat"),
                             field="repeat")
        if r.repeat is None and row_repeat(hw, r) > top:
            raise InputError(f"{r.elems} elements take {row_repeat(hw, r)} repeats of {U.lanes(hw, r.op, r.dtype)} "
                             f"lanes: expected 1..max_repeat ({top} in {hw.reference}) for one vector instruction",
                             file=str(path), line=r.line, col=r.col("elems"), field="elems")


def check_fits(rows: list[Measurement], hw: HardwareProfile, path) -> None:
    """A row times an operation the chip can hold: its operands fit the profile's buffers (an
    Mmad's in L0A / L0B / L0C, a vector op's in UB), as ``sim.micro`` requires."""
    for r in rows:
        if r.op == "mmad":
            uses, col = mmad_uses(r.m, r.k, r.n, r.dtype, hw), "m"
        else:
            repeat = row_repeat(hw, r)
            uses = vector_uses(r.op, r.dtype, repeat * U.lanes(hw, r.op, r.dtype), repeat, hw)
            col = "repeat" if r.repeat is not None else "elems"
        problem = overflow(uses, hw)
        if problem:
            raise InputError(f"{r.op} {r.dtype}: {problem}", file=str(path), line=r.line, col=r.col(col), field=col)


def predictable(hw: HardwareProfile, r: Measurement) -> bool:
    """Can the profile cost this row (its op in its exact signature)?"""
    if r.op == "mmad":
        return True
    try:
        U.vector_signature(hw, r.op, r.dtype)
    except InputError:
        return False
    return True


# -- predicting ------------------------------------------------------------------------------

def row_repeat(hw: HardwareProfile, r: Measurement) -> int:
    """The row's repeat count; derived from elems (``micro.lanes`` per repeat) if absent."""
    if r.repeat is not None:
        return r.repeat
    return -(-r.elems // U.lanes(hw, r.op, r.dtype))


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
    """Series whose elems/repeat disagree with the lanes a repeat holds (``micro.lanes``)."""
    notes = []
    groups: dict = {}
    for r in rows:
        if r.op != "mmad" and r.elems is not None and r.repeat is not None:
            groups.setdefault((r.op, r.dtype), []).append(r)
    for (op, sig), rs in groups.items():
        per = U.lanes(hw, op, sig)
        bad = [r for r in rs if -(-r.elems // per) != r.repeat]
        if bad:
            ex = bad[0]
            notes.append(f"{op} {sig}: {len(bad)}/{len(rs)} rows have elems/repeat disagreeing with "
                         f"{hw.vector_bytes_per_repeat} B/repeat ({per} lanes), e.g. line {ex.line}: "
                         f"elems={ex.elems} repeat={ex.repeat}; the repeat column is used")
    return notes
