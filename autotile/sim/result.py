"""Simulation results and the chip-level assembly of per-core runs into one result."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from autotile.hardware import HardwareProfile
from autotile.sim import engine as E


@dataclass(frozen=True)
class CoreRun:
    """One simulated core class: how many cores do this work and what the engine measured.

    ``beside``: vector cores (AIV) working beside the unit's cube cores, as a mix-mode kernel's
    do (split-K matmul's zero-init and cast): their pipes are msprof's aiv_* and they are not
    launched blocks of their own (``block_dim`` counts the cube cores they come with).
    """

    count: int
    cycles: float
    busy: tuple  # per pipe, cycles
    path_bytes: tuple  # per copy path, bytes
    counts: tuple  # useful MACs, padded MACs, vector repeats, scalar ops, ops issued
    beside: bool = False

    @staticmethod
    def from_state(st, count: int) -> CoreRun:
        return CoreRun(
            count=count,
            cycles=max(st.pipe_free.tolist()),
            busy=tuple(st.busy.tolist()),
            path_bytes=tuple(st.path_bytes.tolist()),
            counts=tuple(st.counts.tolist()),
        )


@dataclass(frozen=True)
class SimResult:
    """What `autotile simulate --json` prints (see architecture.md for the field names)."""

    op: str
    unit: str
    dtype: str
    shape: dict
    params: dict
    feasible: bool
    reason: str | None = None
    cycles: float = float("nan")
    time_us: float = float("nan")
    pct_of_peak: float = 0.0
    pct_of_bandwidth: float | None = None
    bound: str = ""
    block_dim: int = 0
    pipes: dict = field(default_factory=dict)
    msprof: dict = field(default_factory=dict)
    bytes: dict = field(default_factory=dict)
    buffers: dict = field(default_factory=dict)
    core_classes: list = field(default_factory=list)

    def to_json(self) -> dict:
        d = asdict(self)
        for k in ("cycles", "time_us"):
            if d[k] != d[k]:
                d[k] = None
        return d


def infeasible(op, unit, dtype, shape, params, reason, buffers=None) -> SimResult:
    """A result for a configuration that cannot run; never simulated."""
    return SimResult(op=op, unit=unit, dtype=dtype, shape=dict(shape), params=dict(params),
                     feasible=False, reason=reason, buffers=buffers or {})


_GM_READ = [i for i, p in enumerate(E.PATH_NAMES) if p.startswith("gm_")]
_GM_WRITE = [i for i, p in enumerate(E.PATH_NAMES) if p.endswith("_gm")]


def assemble(*, op, unit, dtype, shape, params, hw: HardwareProfile, runs: list[CoreRun],
             useful_flops: float, peak_flops: float, must_move_bytes: float | None,
             l2_hit: float, buffers: dict, hbm_write: float | None = None) -> SimResult:
    """Combine core classes: the chip finishes when its slowest core does.

    The per-pipe figures are those of the slowest (critical) core of the unit, as msprof shows
    per block, over the kernel's cycles; msprof's aiv_* ratios come from the slowest vector
    cores working ``beside`` a cube unit's, when there are any. Bytes are summed over all cores.
    ``hbm_write``: the bytes of the GM writes that reach HBM during the kernel (None: all of
    them); L2 keeps the rest until it ends (``l2_write_back``, written back after it), so they
    are not HBM traffic here.
    """
    own = [r for r in runs if not r.beside]
    crit = max(own, key=lambda r: r.cycles)
    side = max((r for r in runs if r.beside), key=lambda r: r.cycles, default=None)
    cycles = max(r.cycles for r in runs)
    time_s = cycles / (hw.clock_ghz * 1e9)
    block_dim = sum(r.count for r in own)
    inv = 1.0 / cycles if cycles else 0.0
    ratio = {name: round(b * inv, 4) for name, b in zip(E.PIPE_NAMES, crit.busy)}
    pipes = {name: {"busy_cycles": round(b, 3), "ratio": ratio[name]} for name, b in zip(E.PIPE_NAMES, crit.busy)}
    msprof = msprof_ratios(unit, ratio, side and {name: round(b * inv, 4) for name, b in zip(E.PIPE_NAMES, side.busy)})
    path_total = [0.0] * E.NPATHS
    for r in runs:
        c = r.count
        for i, b in enumerate(r.path_bytes):
            path_total[i] += b * c
    gm_read = sum(path_total[i] for i in _GM_READ)
    gm_write = sum(path_total[i] for i in _GM_WRITE)
    hbm = gm_write if hbm_write is None else min(gm_write, float(hbm_write))
    byts = {
        "gm_read": gm_read,
        "gm_write": gm_write,
        "l2_hit": float(gm_read * l2_hit),
        "hbm_read": float(gm_read * (1.0 - l2_hit)),
        "hbm_write": hbm,
        **({"l2_write_back": gm_write - hbm} if gm_write > hbm else {}),
        **{p: float(path_total[i]) for i, p in enumerate(E.PATH_NAMES) if path_total[i] > 0},
    }
    pct_bw = None
    if must_move_bytes is not None and time_s > 0:
        pct_bw = 100.0 * must_move_bytes / (hw.hbm_bytes_per_second * time_s)
    return SimResult(
        op=op, unit=unit, dtype=dtype, shape=dict(shape), params=dict(params), feasible=True,
        cycles=cycles, time_us=time_s * 1e6,
        pct_of_peak=100.0 * useful_flops / (peak_flops * time_s) if time_s > 0 else 0.0,
        pct_of_bandwidth=pct_bw, bound=_bound([crit] + ([side] if side else []), cycles), block_dim=block_dim,
        pipes=pipes, msprof=msprof, bytes=byts, buffers=buffers,
        core_classes=[{"count": r.count, "cycles": r.cycles, "core": _core(unit, r)} for r in runs],
    )


def _core(unit: str, run: CoreRun) -> str:
    """msprof's name for the core type a run's cores are: aic (cube) or aiv (vector, scalar)."""
    return "aiv" if run.beside or unit != "cube" else "aic"


def msprof_ratios(unit: str, ratio: dict, beside: dict | None = None) -> dict:
    """msprof's per-block pipe ratios from the critical core's ``ratio`` per pipe.

    The pipes both core types have (scalar, MTE2, MTE3) are named for the core the unit runs on:
    aic_* for the cube, aiv_* for the vector and scalar units. Every unit gets the same keys (the
    other core's copy 0.0), so results of different units line up in one table. ``beside``: the
    ratios of the vector cores working beside a cube unit's (mix mode), which give every aiv_*.
    """
    cube = unit == "cube"
    aiv = beside if beside is not None else ratio

    def on(aic: bool, pipe: str) -> float:
        if beside is not None:
            return ratio[pipe] if aic else beside[pipe]
        return ratio[pipe] if aic == cube else 0.0

    return {
        "aic_mac_ratio": ratio["m"],
        "aic_mte1_ratio": ratio["mte1"],
        "aic_mte2_ratio": on(True, "mte2"),
        "aic_fixpipe_ratio": ratio["fix"],
        "aic_scalar_ratio": on(True, "s"),
        "aic_mte3_ratio": on(True, "mte3"),
        "aiv_vec_ratio": aiv["v"],
        "aiv_mte2_ratio": on(False, "mte2"),
        "aiv_mte3_ratio": on(False, "mte3"),
        "aiv_scalar_ratio": on(False, "s"),
    }


def _bound(runs: list[CoreRun], cycles: float) -> str:
    """What limits the kernel: the busiest pipe of ``runs`` (the critical core, and the vector
    cores beside it) if busy most of the time, else latency."""
    if cycles <= 0:
        return "latency"
    run, i = max(((r, j) for r in runs for j in range(len(r.busy))), key=lambda t: t[0].busy[t[1]])
    share = run.busy[i] / cycles
    if share < 0.6:
        return "latency"
    name = E.PIPE_NAMES[i]
    if name in ("m", "v", "s"):
        return f"compute:{ {'m': 'cube', 'v': 'vector', 's': 'scalar'}[name] }"
    paths = [p for j, p in enumerate(E.PATH_NAMES) if E.PATH_PIPE[j] == i and run.path_bytes[j] > 0]
    return "memory:" + (max(paths, key=lambda p: run.path_bytes[E.PATH_NAMES.index(p)]) if paths else name)
