"""Chrome traces of each exported configuration, re-simulated into ``DIR/traces/``.

The trace records the first ``TRACE_OPS`` operations of each core class: enough to see the
pipeline fill, overlap and steady state without writing files of hundreds of megabytes. Of a
kernel whose cores all differ (roi_align's ROIs: 48 classes, 75 MB a trace) it keeps
``TRACE_CLASSES``: the first class and the slowest others (``simulate --trace`` keeps them all).
"""

from __future__ import annotations

from pathlib import Path

from autotile.atomic import remove
from autotile.kernels import registry
from autotile.report.data import ReportData, slug
from autotile.sim.trace import coverage, write_chrome_trace
from autotile.tune.outputs import trace_name_pattern

TRACE_OPS = 6000
TRACE_CLASSES = 8


def shown_classes(core_classes: list) -> list[int]:
    """Indices of the classes a report trace keeps: all up to ``TRACE_CLASSES``, else the first
    and the slowest others (by their cycles, the earlier on a tie), in class order."""
    if len(core_classes) <= TRACE_CLASSES:
        return list(range(len(core_classes)))
    rest = sorted(range(1, len(core_classes)), key=lambda i: (-float(core_classes[i].get("cycles", 0.0)), i))
    return sorted([0, *rest[:TRACE_CLASSES - 1]])


def write_traces(data: ReportData) -> dict[str, dict]:
    """Simulate each exported configuration with tracing; slug -> {path, cycles, truncated (with
    complete_until_cycle: the trace holds every operation that starts before it), writes_in_l2 (its
    output stays in L2 for the kernel's duration: True, "partly" when part of it overflows L2,
    False)} or {error}."""
    out: dict[str, dict] = {}
    if data.hw is None or registry.get(data.summary["op"]).generic:
        return out  # no profile, or replayed measurements: no kernel to trace
    if data.spec is None:  # the kernel's default inputs could differ from the run's: simulate nothing
        return {slug(r): {"error": f"not simulated: {data.recorded[1]}"} for r in data.exported}
    options = data.spec.inputs or None
    kernel = registry.implementation(data.summary["op"])
    for r in data.exported:
        name = slug(r)
        try:
            res, traces = kernel.simulate(r["shape"], r["params"], r["dtype"], data.hw, unit=r["unit"],
                                          options=options, trace_capacity=TRACE_OPS, want_traces=True)
        except Exception as exc:  # noqa: BLE001 - report it beside the result, keep the report
            out[name] = {"error": f"{type(exc).__name__}: {exc}"}
            continue
        if not res.feasible:
            out[name] = {"error": f"not feasible on this profile: {res.reason}"}
            continue
        rel = f"traces/{name}.json"
        meta = {"op": data.summary["op"], "shape": r["shape"], "dtype": r["dtype"], "unit": r["unit"],
                "params": r["params"], "inputs": registry.get(data.summary["op"]).check_options(options),
                "cycles": res.cycles}
        keep = shown_classes(res.core_classes) if len(res.core_classes) == len(traces) else list(range(len(traces)))
        if len(keep) < len(traces):
            meta["core_classes_shown"] = (f"{len(keep)} of {len(traces)}: class 0 and the slowest others "
                                          f"({', '.join(map(str, keep))})")
            traces = [traces[i] for i in keep]
        write_chrome_trace(data.out_dir / rel, traces, data.hw, meta, ids=keep)
        cut = coverage(traces)  # what the capacity left out, counted by the simulation
        out[name] = {"path": rel, "cycles": res.cycles, "writes_in_l2": writes_in_l2(res.bytes),
                     "truncated": cut is not None}
        if len(keep) < len(res.core_classes):
            out[name]["classes"] = [len(keep), len(res.core_classes)]
        if cut is not None:
            out[name]["complete_until_cycle"] = cut["complete_until_cycle"]
    return out


def writes_in_l2(byts: dict) -> bool | str:
    """Whether a result's output stays in L2 during the kernel: True, "partly" (L2 keeps some of
    it and the rest goes to HBM) or False."""
    if "l2_write_back" not in byts:
        return False
    return "partly" if byts.get("hbm_write", 0.0) > 0 else True


def prune_traces(out_dir: Path, traces: dict) -> list[Path]:
    """Delete the trace files of an earlier render that ``traces`` no longer lists (only names
    ``write_traces`` writes: other files in ``traces/`` are left alone); returns those deleted."""
    folder = Path(out_dir) / "traces"
    keep = {Path(t["path"]).name for t in traces.values() if "path" in t}
    gone = []
    if folder.is_dir():
        pattern = trace_name_pattern()
        for old in sorted(folder.glob("*.json")):
            if old.name not in keep and pattern.fullmatch(old.name) and old.is_file():
                remove(old)
                gone.append(old)
    return gone
