"""Chrome trace / Perfetto export of simulated schedules.

One process per core class ("core class i (x count cores, block ...)"; the vector cores working
beside a cube kernel's, as split-K matmul's, "core class i (x count vector cores: what they do)").
A process shows one of its cores, so ``count`` times its operations is the class's share of the
kernel. One thread (track) per pipe, one complete ("X") event per operation with ``ts``/``dur``
in microseconds at the profile's clock. The file loads in chrome://tracing and ui.perfetto.dev.

A trace holds at most the capacity the simulation was given per core class (its first operations
in program order). When operations were left out, ``otherData`` says so (``trace_truncated``,
``events_kept``, ``events_dropped``, ``complete_until_cycle``: every operation that starts
before that cycle is in the file), and ``coverage`` gives the same figures to callers.

>>> # res, traces = matmul.simulate(shape, params, "fp16", hw, trace_capacity=100_000, want_traces=True)
>>> # write_chrome_trace("mm.json", traces, hw, {"op": "matmul"})
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from autotile.atomic import write_text
from autotile.hardware import HardwareProfile
from autotile.hardware.ops import VECTOR_OP_NAMES
from autotile.sim import engine as E

KIND_NAMES = {E.K_COPY: "copy", E.K_MMAD: "mmad", E.K_VEC: "vector", E.K_SCALAR: "scalar"}


def event_name(kind: int, sub: int) -> str:
    """Copy path name, "mmad", the vector instruction (its code, ``engine.VT_CODE``) or "scalar"."""
    if kind == E.K_COPY:
        return E.PATH_NAMES[sub]
    if kind == E.K_VEC:
        return VECTOR_OP_NAMES[sub] if 0 <= sub < len(VECTOR_OP_NAMES) else "vector"
    return KIND_NAMES.get(kind, f"kind{kind}")


def class_label(i: int, entry) -> str:
    """``core class i (x count cores, block sm x sn)`` from a traces entry (count, *block, rows);
    an entry (count, text, rows) names its cores itself: ``core class i (x count text)``."""
    count, block = entry[0], entry[1:-1]
    if len(block) == 1 and isinstance(block[0], str):
        return f"core class {i} (x {int(count)} {block[0]})"
    shape = " x ".join(str(int(b)) for b in block) if block else "-"
    return f"core class {i} (x {int(count)} cores, block {shape})"


def chrome_events(traces, hw: HardwareProfile, ids=None) -> list[dict]:
    """The ``traceEvents`` list for ``traces`` (entries ``(count, *block, rows)``); ``ids``: the
    class numbers to label them with when they are a selection (default 0, 1, ...)."""
    us_per_cycle = 1.0 / (hw.clock_ghz * 1e3)
    events: list[dict] = []
    for pid, entry in enumerate(traces):
        rows = np.asarray(entry[-1])
        events.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0,
                       "args": {"name": class_label(pid if ids is None else ids[pid], entry)}})
        events.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0,
                       "args": {"sort_index": pid}})
        for tid, pipe in enumerate(E.PIPE_NAMES):
            events.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid,
                           "args": {"name": pipe.upper()}})
            events.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid,
                           "args": {"sort_index": tid}})
        for row in rows:
            pipe, start, end, kind, sub, nbytes, macs = row
            kind, sub = int(kind), int(sub)
            args = {"start_cycle": round(float(start), 3), "cycles": round(float(end - start), 3)}
            if kind == E.K_COPY:
                args["bytes"] = int(nbytes)
            elif kind == E.K_MMAD:
                args["macs"] = int(macs)
            events.append({"ph": "X", "pid": pid, "tid": int(pipe), "cat": KIND_NAMES.get(kind, "op"),
                           "name": event_name(kind, sub),
                           "ts": float(start) * us_per_cycle, "dur": float(end - start) * us_per_cycle,
                           "args": args})
    return events


def coverage(traces) -> dict | None:
    """None when ``traces`` (entries ``(count, *block, rows)``) hold every operation; otherwise
    {trace_truncated: True, events_kept, events_dropped (operations past the trace's capacity),
    complete_until_cycle (the earliest start of a dropped one: the trace is complete before it)}."""
    kept = sum(len(entry[-1]) for entry in traces)
    dropped = sum(int(getattr(entry[-1], "dropped", 0)) for entry in traces)
    if not dropped:
        return None
    until = min(float(getattr(entry[-1], "dropped_from", math.inf)) for entry in traces)
    return {"trace_truncated": True, "events_kept": kept, "events_dropped": dropped,
            "complete_until_cycle": round(until, 3)}


def write_chrome_trace(path: str | Path, traces, hw: HardwareProfile, meta: dict | None = None,
                       ids=None) -> Path:
    """Write a Chrome trace JSON file atomically, compact (an event indented took ~270 bytes);
    ``meta`` lands in ``otherData`` (mappings and lists nested as JSON), with ``coverage``'s figures when the trace lost operations to
    its capacity; ``ids`` as for ``chrome_events``."""
    meta = dict(meta or {})
    doc = {
        "traceEvents": chrome_events(traces, hw, ids),
        "displayTimeUnit": "ns",
        "otherData": {"hw": hw.label, "clock_ghz": hw.clock_ghz,
                      **meta,
                      **(coverage(traces) or {})},
    }
    return write_text(path, json.dumps(doc, separators=(",", ":"), default=_plain) + "\n")


def _plain(v):
    """A value JSON has no form for, for ``json.dumps``: a NumPy scalar as its number, else its text.
    Mappings and lists in ``meta`` nest as JSON (a shape or params mapping a reader can load; their
    repr text was not JSON)."""
    return v.item() if isinstance(v, np.generic) else str(v)


def pipe_overlap(rows, a: int, b: int) -> tuple[float, float]:
    """(cycles during which pipes ``a`` and ``b`` are both busy, busy cycles of ``a``)."""
    rows = np.asarray(rows)
    ia = sorted((r[1], r[2]) for r in rows if int(r[0]) == a)
    ib = sorted((r[1], r[2]) for r in rows if int(r[0]) == b)
    both, j = 0.0, 0
    for s, e in ia:
        while j < len(ib) and ib[j][1] <= s:
            j += 1
        k = j
        while k < len(ib) and ib[k][0] < e:
            both += max(0.0, min(e, ib[k][1]) - max(s, ib[k][0]))
            k += 1
    return both, float(sum(e - s for s, e in ia))
