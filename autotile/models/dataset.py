"""Datasets for the learned models: rows of (op, shape, dtype, unit, params, cycles) with a source.

Rows come from the simulator (``unit_rows``: each unit at its best tiling per size;
``config_rows``: random feasible configurations of a spec's space) or from recorded measurements
(``from_measurements``: the (params, time) rows a replay backend yields). The models read only
rows, so they train and evaluate alike on either source. Simulated datasets are cached as JSON
under a cache folder (never inside the package), keyed by ``fingerprint``: the autotile version,
the profile's content hash and the source of the kernels, the simulator and the crossover grid,
so a change to any of them rebuilds the data.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

from autotile import dtypes as dtypes_mod
from autotile.atomic import write_json
from autotile.errors import InputError
from autotile.hardware import HardwareProfile
from autotile.kernels import registry

# data placement -> size range. On chip the data must fit the unit's buffers, and n = 2**14 is the
# most every op, dtype and unit holds on every profile (elementwise fp32 on the 910B: a, b and y,
# 64 KiB each, fill its 192 KiB UB); up to 2**16, fp16 weighted_sum put 128 KiB an operand in the
# cube's 64 KiB L0A (crossover.on_chip_limit; unit_rows also skips a unit past its own limit)
PLACEMENTS = {"on_chip": (16, 1 << 14), "gm": (16, 1 << 20)}
SPEC_EXHAUSTIVE = 4000  # search a spec space exhaustively up to this many feasible configs
SPEC_TRIALS = 60  # else a TPE study of this many trials per size


@dataclass(frozen=True)
class Row:
    """One measured or simulated configuration. ``data``: where the inputs live (gm, on_chip)."""

    op: str
    shape: dict
    dtype: str
    unit: str
    params: dict
    cycles: float
    source: str = "sim"
    data: str = "gm"
    extra: dict = field(default_factory=dict)

    def key(self) -> tuple:
        """The problem this row measures, without the tiling: (op, shape, dtype, data)."""
        return (self.op, tuple(sorted(self.shape.items())), self.dtype, self.data)

    @classmethod
    def from_dict(cls, d: dict) -> Row:
        return cls(d["op"], dict(d["shape"]), d["dtype"], d["unit"], dict(d["params"]), float(d["cycles"]),
                   d.get("source", "sim"), d.get("data", "gm"), dict(d.get("extra", {})))


def fingerprint(hw: HardwareProfile) -> str:
    """Hash of what simulated cycles depend on: the simulator (version, kernel and sim sources),
    the profile's values and the search sources."""
    from autotile.sim.fingerprint import simulator_fingerprint

    root = Path(__file__).resolve().parents[1]
    h = hashlib.sha256(f"{simulator_fingerprint()}\n{hw.content_hash()}\n".encode())
    for f in (root / "models" / "crossover.py", root / "models" / "dataset.py"):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]


def cache_dir(out: str | Path | None = None) -> Path:
    """``out``, else ``$AUTOTILE_CACHE``, else ``~/.cache/autotile``."""
    if out:
        return Path(out)
    env = os.environ.get("AUTOTILE_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "autotile"


def sweep_sizes(lo: int, hi: int, per_octave: int = 3, tails: bool = True) -> list[int]:
    """Log-spaced sizes: ``per_octave`` points per octave plus 1.5 x and (``tails``) 2^k + 16 for
    each power of two.

    Powers of two and 1.5 x 2^k are multiples of 256 from 512 on (whole cube fractals); from 256
    on, the octave's middle point (e = per_octave // 2) is moved to a multiple of 16 that is not
    one of 256 (whole fractal rows, a partial fractal), the others are left as they fall (rarely
    multiples of 16), so a model sees all three alignments the kernels cost differently.
    2^k + 16 is one 16-element block past a power of two: where a power of two fills its cores'
    slices, tiles, repeats and fractals exactly, it starts a new one of each (2^k + 1 .. 2^k + 16
    cost the same), and without it a model gave those sizes the power of two's cycles (sigmoid's
    Scalar 20-24% low). Three points an octave, not four, keep five sizes an octave in all.

    >>> sweep_sizes(16, 64, 2)
    [16, 23, 24, 32, 45, 48, 64]
    >>> [n % 256 for n in sweep_sizes(1024, 2048)]
    [0, 16, 16, 0, 89, 0]
    """
    out = set()
    e = 0
    while lo * 2 ** (e / per_octave) <= hi:
        v = lo * 2 ** (e / per_octave)
        n = int(round(v))
        if v >= 256 and per_octave > 1 and e % per_octave == per_octave // 2:
            n = max(16, int(round(v / 16)) * 16)
            if n % 256 == 0:
                n += 16
        out.add(n)
        if e % per_octave == 0:
            out.update(m for m in (int(1.5 * v), n + 16 if tails else hi + 1) if m <= hi)
        e += 1
    return sorted(out)


def holdout_sizes(lo: int, hi: int, count: int, seed: int, exclude=()) -> list[int]:
    """Log-uniform random sizes not in ``exclude``: a third raw, a third multiples of 16, a third of 256."""
    rng = random.Random(seed)
    bad = set(exclude)
    out: list[int] = []
    while len(out) < count:
        v = int(round(2 ** rng.uniform(math.log2(lo), math.log2(hi))))
        snap = (1, 16, 256)[len(out) % 3]
        v = max(snap, int(round(v / snap)) * snap)
        if lo <= v <= hi and v not in bad:
            bad.add(v)
            out.append(v)
    return sorted(out)


def spec_path(op: str) -> Path | None:
    """The bundled study spec of ``op`` (``autotile/studies/<op>.yaml``, package data; the
    repository's ``studies/`` links to it), or None. Never one in the working folder: a user's
    own ``studies/<op>.yaml`` must not change what the shipped models are trained on."""
    p = Path(__file__).resolve().parents[1] / "studies" / f"{op}.yaml"
    return p if p.exists() else None


def random_config(space, rng: random.Random) -> dict | None:
    """One define-by-run uniform draw over ``space.domain``; None if a domain comes out empty."""
    env: dict = {}
    for p in space.params:
        dom = space.domain(p.name, env)
        if len(dom) == 0:
            return None
        env[p.name] = dom[rng.randrange(len(dom))]
    return env


def _repair(space, cfg: dict, start: int) -> dict | None:
    """Re-fit the params after index ``start`` to their domains (keep, else nearest allowed value)."""
    env = {p.name: cfg[p.name] for p in space.params[:start + 1]}
    for p in space.params[start + 1:]:
        dom = space.domain(p.name, env)
        if len(dom) == 0:
            return None
        v = cfg[p.name]
        if v not in dom:
            v = _nearest(dom, v) if isinstance(v, (int, float)) and not isinstance(v, str) else dom[0]
        env[p.name] = v
    return env


def _nearest(dom, v):
    """The allowed value nearest ``v`` (the lower one on a tie); O(1) for a range, whose length
    grows with the shape (single_core_m of m = 3e9 has ~2e8 values)."""
    from autotile.space.space import near_values

    return min(near_values(dom, v), key=lambda d: (abs(d - v), d))


def neighbours(space, cfg: dict, rng: random.Random, width: int = 12) -> list[dict]:
    """Feasible configurations differing from ``cfg`` in one param (later params repaired)."""
    out = []
    env: dict = {}
    for i, p in enumerate(space.params):
        dom = space.domain(p.name, env)
        env[p.name] = cfg[p.name]
        values = dom if isinstance(dom, range) else list(dom)  # a range is never listed: it may be huge
        if len(values) > width:  # the nearest values in order, plus a few far ones
            j = values.index(cfg[p.name]) if cfg[p.name] in values else 0
            r = max(1, width // 4)
            near = list(values[max(0, j - r):j + r + 1])
            values = near + rng.sample(values, max(0, width - len(near)))
        for v in values:
            if v == cfg[p.name]:
                continue
            new = _repair(space, {**cfg, p.name: v}, i)
            if new is not None and space.check(new) is None:
                out.append(new)
    return out


def best_of_unit(op: str, unit: str, shape: dict, dtype: str, hw: HardwareProfile, data: str = "gm",
                 spec=None, seed: int = 0) -> tuple[float, dict]:
    """(cycles, params) of ``unit`` at its best tiling for one problem.

    1-D ops the crossover search knows use its exhaustive grid (``crossover.best``), so learned
    and simulated crossovers share one definition of "best"; other ops search their spec's
    space: exhaustively when small, else a quick TPE study.
    """
    from autotile.models import crossover

    if op in crossover.CATEGORICAL and set(shape) == {"n"}:
        return crossover.best(op, unit, int(shape["n"]), dtype, hw, data == "on_chip")
    if spec is None:
        raise InputError(f"op {op}: no study spec to search its units (autotile/studies/{op}.yaml)")
    return _search_spec(spec, shape, dtype, unit, seed)


def _search_spec(spec, shape, dtype, unit, seed) -> tuple[float, dict]:
    import optuna

    from autotile.tune import exhaustive, runner

    space = spec.space(shape, dtype, unit)
    if space.count().feasible_size <= SPEC_EXHAUSTIVE:
        rows = exhaustive.scores(space)
        if not rows:
            return math.inf, {}
        params, values = min(rows, key=lambda r: r[1]["cycles"])
        return values["cycles"], params
    plan = runner.StudyPlan(name=f"{spec.op.name}-{unit}-{dtype}", space=space, objectives=("cycles",),
                            sampler="tpe", seed=seed, budget=SPEC_TRIALS, timeout_s=None,
                            baseline=space.default_tiling())
    out = runner.run(plan, optuna.storages.InMemoryStorage())
    if not out.best:
        return math.inf, {}
    params, values, _ = out.best[0]
    return values["cycles"], params


def unit_rows(op: str, dtypes, hw: HardwareProfile, *, per_octave: int = 3, placements=None,
              sizes=None, spec=None, progress=None, stop=None) -> list[Row]:
    """Each unit of ``op`` at its best tiling over a log-spaced size sweep, per dtype and placement
    (by default every placement the op's kernels model, ``OpInfo.placements``), plus the sizes
    ``step_sizes`` adds where the fastest unit changes or nearly does (not to given ``sizes``).
    ``stop``: called before each unit's search (it raises to end the build)."""
    info = registry.get(op)
    rows: list[Row] = []
    for data in placements or info.placements:
        lo, hi = PLACEMENTS[data]
        for dtype in dtypes:
            units = [u for u in info.units if info.supports(u, dtype) and not hw.dtype_problem(u, dtype)]
            run = _runner(op, units, dtype, data, hw, spec, rows, progress, stop)
            for n in sizes if sizes is not None else sweep_sizes(lo, hi, per_octave):
                run(n)
            if sizes is None:
                step_sizes(run, sorted(run.best), hw.vector_bytes_per_repeat // dtypes_mod.get(dtype).bytes)
    return rows


def _runner(op, units, dtype, data, hw, spec, rows, progress, stop):
    """``run(n)``: each of ``units`` at its best tiling for size n (simulated once, its rows
    appended to ``rows``), as {unit: cycles}; ``run.best`` holds every size run."""
    def run(n: int) -> dict:
        if n in run.best:
            return run.best[n]
        run.best[n] = {}
        for unit in units:
            if stop:
                stop()
            cycles, params = best_of_unit(op, unit, {"n": n}, dtype, hw, data, spec)
            if math.isfinite(cycles):
                run.best[n][unit] = cycles
                rows.append(Row(op, {"n": n}, dtype, unit, params, float(cycles), "sim", data))
        if progress:
            progress(op, data, n)
        return run.best[n]

    run.best = {}
    return run


CLOSE_FLIP = 0.01  # a change of winner with both ends within this is a tie (decide flags it), not bisected
CLOSE_TRAIN = 0.05  # runner-up within this of the fastest unit at a sweep size: the gap gets lane multiples
LANE_STEPS = 4  # ... when it holds at most this many (past that one lane step is a small share of the work)


def winner(cycles: dict) -> str | None:
    """The unit with the fewest ``cycles`` ({unit: cycles}), None for none."""
    return min(cycles, key=cycles.get) if cycles else None


def lead(cycles: dict) -> float:
    """The runner-up's cycles over the fastest's, minus 1 (inf with fewer than two units)."""
    c = sorted(cycles.values())
    return c[1] / c[0] - 1 if len(c) > 1 else math.inf


def step_sizes(run, sizes: list[int], lane: int, grain: int = 16) -> None:
    """Simulate (``run(n)`` -> {unit: cycles}) the sizes that pin down where the fastest unit
    changes between two neighbouring ``sizes``: bisection on ``grain`` multiples until both sides
    of the change are one block apart, and, in a gap where the winner changes or the runner-up is
    within CLOSE_TRAIN, each multiple of ``lane`` elements (one vector repeat of the profile) and the block
    after it, when there are at most LANE_STEPS of them.

    The cost of a unit steps up by a repeat, a fractal or a core's share at such multiples; a
    regressor smooths over a step its sizes straddle: weighted_sum on chip, whose Vector steps at
    n = 1,153 (9 x 128 + 1) between the sweep's 1,040 and 1,296, was picked over the Cube up to
    n = 1,280 (4.3% slower)."""
    def bisect(a, b):
        while b - a > grain:
            m = (a + b) // 2 // grain * grain
            if m <= a:
                m = a + grain - a % grain
            if m >= b:
                return
            wa, wm = winner(run(a)), winner(run(m))
            if wa != wm:
                if wm != winner(run(b)):  # a third unit between: both halves change
                    bisect(m, b)
                b = m
            else:
                a = m

    for a, b in zip(sizes, sizes[1:]):
        ca, cb = run(a), run(b)
        flip = winner(ca) != winner(cb) and max(lead(ca), lead(cb)) >= CLOSE_FLIP
        if flip:
            bisect(a, b)
        if flip or min(lead(ca), lead(cb)) < CLOSE_TRAIN:
            lanes = list(range((a // lane + 1) * lane, b, lane))
            if len(lanes) <= LANE_STEPS:
                for m in lanes:
                    run(m)
                    if m + grain < b:
                        run(m + grain)


class _Sim:
    """Cycles of configurations already known to lie in their domains.

    ``Evaluator.score`` re-derives every param's domain to check a configuration (pure-Python
    expressions: more time than a matmul simulation); a configuration drawn from its domains
    (``random_config``) or repaired into them (``neighbours``) needs only the derived values and
    the constraints. Specs with limits (e.g. on the numerical error) still go through the
    evaluator, which computes them.
    """

    def __init__(self, space):
        from autotile.tune.evaluate import Evaluator

        self.space = space
        self.ev = Evaluator(space)
        self.plain = not space.spec.limits

    def cycles(self, cfg: dict, *, checked: bool = False) -> float | None:
        """Simulated cycles, or None when infeasible; ``checked``: constraints already hold."""
        if not self.plain:
            out = self.ev.score(cfg)
            return float(out.values["cycles"]) if out.feasible else None
        if not checked and self.space.constraint_failure(cfg) is not None:
            return None
        sp = self.space
        res = self.ev.kernel.simulate(sp.shape, cfg, sp.dtype, self.ev.hw, unit=sp.unit, options=self.ev.options)
        return float(res.cycles) if res.feasible else None


def placement(spec) -> str:
    """Where ``spec``'s op keeps its data (its ``inputs: {data: ...}``, default gm), as the rows
    record it: a model predicts, and checks its training range, for that placement."""
    return (spec.inputs or {}).get("data", "gm")


def config_rows(space, count: int, seed: int = 0, *, max_draws: int | None = None, stop=None) -> list[Row]:
    """Up to ``count`` distinct feasible random configurations of ``space``, simulated.
    ``stop``: called before each simulation (it raises to end the build)."""
    from autotile.tune.evaluate import config_key

    sim = _Sim(space)
    rng = random.Random(seed)
    data = placement(space.spec)
    rows, seen = [], set()
    for _ in range(max_draws or 20 * count):
        if len(rows) >= count:
            break
        cfg = random_config(space, rng)
        if cfg is None or config_key(cfg) in seen:
            continue
        seen.add(config_key(cfg))
        if stop:
            stop()
        cycles = sim.cycles(cfg)
        if cycles is not None:
            rows.append(Row(space.spec.op.name, dict(space.shape), space.dtype, space.unit, dict(cfg), cycles,
                            "sim", data))
    return rows


def refine_rows(space, rows: list[Row], top: int = 3, width: int = 6, seed: int = 0, rounds: int = 1,
                stop=None) -> list[Row]:
    """Simulated one-param neighbours of the ``top`` fastest rows: more data where tilings are good.

    Each further round takes the neighbours of the ``top`` fastest rows found so far. ``stop``:
    called before each simulation (it raises to end the build).
    """
    from autotile.tune.evaluate import config_key

    sim = _Sim(space)
    rng = random.Random(seed)
    seen = {config_key(r.params) for r in rows}
    out: list[Row] = []
    expanded: set = set()
    for _ in range(rounds):
        best = [r for r in sorted(rows + out, key=lambda r: r.cycles) if config_key(r.params) not in expanded][:top]
        for r in best:
            expanded.add(config_key(r.params))
            for cfg in neighbours(space, r.params, rng, width):  # already checked against the space
                if config_key(cfg) in seen:
                    continue
                seen.add(config_key(cfg))
                if stop:
                    stop()
                cycles = sim.cycles(cfg, checked=True)
                if cycles is not None:
                    out.append(Row(r.op, dict(r.shape), r.dtype, r.unit, dict(cfg), cycles, r.source, r.data,
                                   {"refined": True}))
    return out


def from_measurements(records, *, op: str, shape: dict, dtype: str, unit: str, hw: HardwareProfile,
                      data: str = "gm", source: str = "replay", time_unit: str = "ms") -> list[Row]:
    """Rows from recorded ``(params, time)`` pairs (a replay backend's output).

    Times are converted to cycles at the profile's clock; failed entries (a non-numeric time such
    as Kernel Tuner's "RuntimeFailedConfig", NaN, or <= 0) are skipped.

    >>> rows = from_measurements([({"tile_len": 64}, 0.002)], op="copy", shape={"n": 64},
    ...                          dtype="fp16", unit="vector", hw=load_profile())  # doctest: +SKIP
    """
    scale = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}.get(time_unit)
    if scale is None:
        raise InputError(f"time_unit: expected s, ms, us or ns, got {time_unit!r}")
    registry.get(op)
    rows = []
    for params, t in records:
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not math.isfinite(t) or t <= 0:
            continue
        cycles = float(t) * scale * hw.clock_ghz * 1e9
        rows.append(Row(op, dict(shape), dtype, unit, dict(params), cycles, source, data))
    return rows


def save_rows(path: str | Path, rows: list[Row], meta: dict) -> Path:
    """Write a dataset as JSON: ``{meta, rows}``."""
    return write_json(path, {"meta": meta, "rows": [asdict(r) for r in rows]})


def load_rows(path: str | Path, expect: dict | None = None) -> list[Row] | None:
    """Rows of a cached dataset, or None when missing or built for other ``expect`` meta.

    A file whose meta matches but whose rows are not what a build writes (hand-edited, damaged:
    a "cycles" of 0 made the fit fail on infinite logarithms) is a DamagedDataset naming the
    first bad field, as is one that is not a dataset's JSON at all.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise DamagedDataset(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise DamagedDataset(f"{path}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("meta"), dict):
        raise DamagedDataset(f"{path}: meta: expected an object (a dataset is {{meta, rows}})")
    if expect and any(doc["meta"].get(k) != v for k, v in expect.items()):
        return None
    rows = doc.get("rows")
    if not isinstance(rows, list) or not rows:
        raise DamagedDataset(f"{path}: rows: expected a non-empty list of rows")
    op = (expect or {}).get("op")
    return [_row(r, f"{path}: rows[{i}]", op) for i, r in enumerate(rows)]


class DamagedDataset(ValueError):
    """A cached dataset that cannot be used as it is; the message names the file and field."""


def _row(d, where: str, op: str | None) -> Row:
    """The Row of one cached row ``d``, checked as ``Row`` holds it; a DamagedDataset otherwise."""
    def bad(field, expected, got):
        raise DamagedDataset(f"{where}.{field}: expected {expected}, got {json.dumps(got)[:60]}")

    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    if not isinstance(d, dict):
        bad("", "an object", d)
    for f in ("op", "shape", "dtype", "unit", "params", "cycles"):
        if f not in d:
            bad(f, "a value (the field is missing)", None)
    try:
        info = registry.get(d["op"]) if isinstance(d["op"], str) else None
    except KeyError:
        info = None
    if info is None or (op is not None and d["op"] != op):
        bad("op", op or "a known op", d["op"])
    shape = d["shape"]
    if not isinstance(shape, dict) or set(shape) != set(info.dims) or not all(
            isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in shape.values()):
        bad("shape", f"positive integers for {', '.join(info.dims)}", shape)
    if d["dtype"] not in info.dtypes:
        bad("dtype", f"one of {', '.join(info.dtypes)}", d["dtype"])
    if d["unit"] not in info.units:
        bad("unit", f"one of {', '.join(info.units)}", d["unit"])
    params = d["params"]
    if not isinstance(params, dict) or not all(isinstance(v, (str, bool)) or number(v) for v in params.values()):
        bad("params", "an object of numbers, texts and true/false", params)
    if not number(d["cycles"]) or d["cycles"] <= 0:
        bad("cycles", "a positive finite number", d["cycles"])
    if not isinstance(d.get("source", "sim"), str):
        bad("source", "a text", d["source"])
    if d.get("data", "gm") not in PLACEMENTS:
        bad("data", f"one of {', '.join(PLACEMENTS)}", d["data"])
    if not isinstance(d.get("extra", {}), dict):
        bad("extra", "an object", d["extra"])
    return Row.from_dict(d)


def cached(path: Path, meta: dict, build) -> tuple[list[Row], bool]:
    """(rows, built): the dataset at ``path`` if its meta matches, else ``build()`` saved there.

    A damaged one (``load_rows``) is rebuilt too, with a one-line warning saying why: it is a
    cache of simulations, so rebuilding loses nothing, while refusing would leave the user to
    delete it or rerun with --rebuild.
    """
    try:
        rows = load_rows(path, meta)
    except DamagedDataset as exc:
        print(f"autotile: warning: {exc}; rebuilding the dataset", file=sys.stderr)
        rows = None
    if rows is not None:
        return rows, False
    rows = build()
    save_rows(path, rows, meta)
    return rows, True
