"""``autotile train``: build (or reuse) the datasets and fit and save the models of some ops.

For a 1-D op with several units: the unit selector on ``dataset.unit_rows``. For an op with a
study spec (``studies/<op>.yaml``): the cost regressor on random feasible configurations of its
space over a set of training shapes (random log-uniform shapes for matmul, a size sweep for 1-D
ops, shapes around the spec's own for the others), plus simulated neighbours of the fastest.
By default only matmul's cost regressor is trained (the one a table lookup falls back to and a
study warm-starts from); ``cost="all"`` or naming ops adds the others (see ``selection``).
Datasets are cached beside the models and rebuilt when the fingerprint (profile, kernel and
simulator sources, version) changes.
"""

from __future__ import annotations

import importlib.util
import math
import random
import time

from autotile.hardware import HardwareProfile
from autotile.kernels import registry
from autotile.models import dataset as D
from autotile.models import store

DEFAULT_COST = ("matmul",)  # cost regressors trained unless asked otherwise (see ``selection``)
COST_SHAPES = 40  # training shapes of matmul
COST_ND = (12, 40)  # other multi-dimensional ops: shapes around the spec's, configs per shape
COST_CONFIGS = 300  # random feasible configurations per training shape
COST_1D = (16, 1 << 16, 2, 40)  # 1-D ops: size range, sweep points per octave, configs per size
REFINE_TOP = 3  # plus the simulated neighbours of this many fastest sampled configs per shape


def implemented(op: str) -> bool:
    """Whether the kernel module of ``op`` exists in this installation."""
    return importlib.util.find_spec(f"autotile.kernels.{registry.get(op).module}") is not None


def trainable(op: str) -> dict:
    """{"units": bool, "cost": bool} - what can be trained for ``op``.

    A unit selector needs several units and a 1-D op (its dataset sweeps ``n``: matmul has a
    Vector kernel for tiny shapes but no such sweep); a cost regressor needs a study spec.
    """
    if not implemented(op):
        return {"units": False, "cost": False}
    mod = registry.implementation(op)
    return {"units": len(getattr(mod, "UNITS", ())) > 1 and registry.get(op).dims == ("n",),
            "cost": D.spec_path(op) is not None}


def selection(ops=None, cost=None) -> tuple[list[str], set[str]]:
    """(ops to train, ops whose cost regressor to train) for ``autotile train``.

    ``ops``: names, or None for every op with a unit selector or a default cost regressor.
    ``cost``: "all", "none", names, or None: the named ``ops`` when given, else DEFAULT_COST.
    Raises InputError for an unknown op or one with nothing to train under this choice.
    """
    from autotile.errors import InputError

    def known(names, what):
        for op in names:
            try:
                registry.get(op)
            except KeyError as exc:
                raise InputError(f"{what}: {exc.args[0]}") from None
        return list(names)

    if ops is not None:
        ops = known(ops, "--ops")
    all_ops = [op for op in registry.OPS if any(trainable(op).values())]
    if cost == "all":
        cost_ops = {op for op in all_ops if trainable(op)["cost"]}
    elif cost == "none":
        cost_ops = set()
    elif cost is None:
        cost_ops = set(ops) if ops is not None else set(DEFAULT_COST)
    else:
        cost_ops = set(known(cost, "--cost"))
        bad = sorted(op for op in cost_ops if not trainable(op)["cost"])
        if bad:
            raise InputError(f"--cost: no cost regressor for {', '.join(bad)} (no kernel module or no "
                             f"studies/<op>.yaml)")
    cost_ops = {op for op in cost_ops if trainable(op)["cost"]}

    def has_work(op):
        return trainable(op)["units"] or op in cost_ops

    if ops is None:
        return [op for op in all_ops if has_work(op)], cost_ops
    for op in ops:
        if not has_work(op):
            why = "its cost regressor was not asked for (--cost)" if trainable(op)["cost"] else \
                f"no kernel module, or not a 1-D op with several units and no studies/{op}.yaml"
            raise InputError(f"--ops: nothing to train for {op} ({why})")
    return ops, cost_ops & set(ops)


def random_shapes(dims, count: int, seed: int, lo: float = 4.0, hi: float = 12.5) -> list[dict]:
    """Log-uniform shapes (2^lo..2^hi per dim); half of them rounded to multiples of 16."""
    rng = random.Random(seed)
    out = []
    while len(out) < count:
        s = {d: int(round(2 ** rng.uniform(lo, hi))) for d in dims}
        if len(out) % 2:
            s = {d: max(16, v // 16 * 16) for d, v in s.items()}
        out.append(s)
    return out


def shapes_around(shapes, count: int, seed: int, spread: float = 1.0) -> list[dict]:
    """``count`` shapes, each a spec shape with every dim scaled by 2^U(-spread, spread) (>= 1).

    For ops with many dims (resize, roi_align) independent log-uniform dims give shapes far
    larger than any real one (hours of simulation); these stay near the shapes the spec tunes.
    """
    rng = random.Random(seed)
    out = []
    for i in range(count):
        base = shapes[i % len(shapes)]
        out.append({d: max(1, int(round(v * 2 ** rng.uniform(-spread, spread)))) for d, v in base.items()})
    return out


def cost_rows(op: str, spec, *, shapes=None, configs: int | None = None, seed: int = 0) -> list:
    """Random feasible configurations of ``spec`` over training shapes, every dtype and unit, plus
    the one-param neighbours of the fastest few (so the model sees where good tilings are)."""
    dims = spec.op.dims
    if shapes is None:
        if dims == ("n",):
            lo, hi, per, _ = COST_1D
            shapes = [{"n": n} for n in D.sweep_sizes(lo, hi, per)]
        elif dims == ("m", "n", "k"):
            shapes = random_shapes(dims, COST_SHAPES, seed)
        else:
            shapes = shapes_around([dict(s) for s in spec.shapes], COST_ND[0], seed)
    if configs is None:
        configs = COST_1D[3] if dims == ("n",) else COST_CONFIGS if dims == ("m", "n", "k") else COST_ND[1]
    rows = []
    for i, s in enumerate(shapes):
        for dtype in spec.dtypes:
            for unit in spec.units:
                space = spec.space(s, dtype, unit)
                sample = D.config_rows(space, configs, seed=seed + i)
                rows += sample + (D.refine_rows(space, sample, REFINE_TOP, seed=seed + i) if REFINE_TOP else [])
    return rows


def train(ops, hw: HardwareProfile, out=None, *, cost=None, rebuild: bool = False, log=None) -> dict:
    """Train and save the models of ``ops``; returns a summary per op (paths, rows, seconds).

    ``cost``: the ops whose cost regressor to train (None: every op in ``ops`` that has one).
    """
    from autotile.models.regressor import CostRegressor
    from autotile.models.selector import UnitSelector
    from autotile.space import load_spec

    fp = D.fingerprint(hw)
    root = D.cache_dir(out)
    summary = {}
    for op in ops:
        what = trainable(op)
        entry: dict = {}
        if what["units"]:
            t0 = time.monotonic()
            mod = registry.implementation(op)
            dtypes = registry.get(op).dtypes
            meta = {"kind": "units", "op": op, "fingerprint": fp, "dtypes": list(dtypes), "units": list(mod.UNITS)}
            path = root / "datasets" / f"{op}.units.json"
            spec = load_spec(str(D.spec_path(op))) if D.spec_path(op) else None
            build = lambda op=op, dtypes=dtypes, spec=spec: D.unit_rows(op, dtypes, hw, spec=spec)  # noqa: E731
            if rebuild:
                rows, built = build(), True
                D.save_rows(path, rows, meta)
            else:
                rows, built = D.cached(path, meta, build)
            t1 = time.monotonic()
            sel = UnitSelector(op).fit(rows)
            mpath = store.save_selector(sel, hw, fp, out)
            entry["units"] = {"model": str(mpath), "dataset": str(path), "rows": len(rows), "rebuilt": built,
                              "data_s": round(t1 - t0, 2), "fit_s": round(time.monotonic() - t1, 2)}
        if what["cost"] and (cost is None or op in cost):
            t0 = time.monotonic()
            spec = load_spec(str(D.spec_path(op)))
            if spec.hardware.content_hash() != hw.content_hash():
                spec = _with_hw(spec, hw)
            meta = {"kind": "cost", "op": op, "fingerprint": fp, "spec": spec.content_hash()}
            path = root / "datasets" / f"{op}.cost.json"
            if rebuild:
                rows, built = cost_rows(op, spec), True
                D.save_rows(path, rows, meta)
            else:
                rows, built = D.cached(path, meta, lambda spec=spec, op=op: cost_rows(op, spec))
            t1 = time.monotonic()
            reg = CostRegressor(op, cube_cores=hw.cube_cores).fit(rows)
            mpath = store.save_regressor(reg, hw, fp, out)
            entry["cost"] = {"model": str(mpath), "dataset": str(path), "rows": len(rows), "rebuilt": built,
                             "data_s": round(t1 - t0, 2), "fit_s": round(time.monotonic() - t1, 2)}
        if not entry:
            entry["skipped"] = "no kernel module" if not implemented(op) else \
                "cost regressor not asked for" if what["cost"] else "one unit and no study spec"
        summary[op] = entry
        if log:
            log(op, entry)
    return summary


def _with_hw(spec, hw):
    from dataclasses import replace

    return replace(spec, hardware=hw)


def total_seconds(summary: dict) -> float:
    return math.fsum(v.get(k, {}).get(s, 0.0) for v in summary.values() for k in ("units", "cost")
                     for s in ("data_s", "fit_s"))
