"""``autotile train``: build (or reuse) the datasets and fit and save the models of some ops.

For a 1-D op with several units: the unit selector on ``dataset.unit_rows``. For an op with a
bundled study spec (``autotile/studies/<op>.yaml``, ``dataset.spec_path``): the cost regressor
on random feasible configurations of its space over a set of training shapes (random
log-uniform shapes for matmul, a size sweep for 1-D ops, shapes around the spec's own for the
others), plus simulated neighbours of the fastest.
By default only matmul's cost regressor is trained (the one a table lookup falls back to and a
study warm-starts from); ``cost="all"`` or naming ops adds the others (see ``selection``).
Each model (dataset and fit) is built in its own worker process, one per core by default.
SIGINT or SIGTERM (tune's handlers and worker pool) stops every model after the simulation under
way, or within a fit (``Stopped``): what finished is kept whole (written atomically), nothing of a
dataset or model cut short is written; a second signal stops at once.
Datasets are cached beside the models, per profile as the models are
(``<cache>/datasets/<profile>/<op>.<kind>.json``), and rebuilt when the fingerprint (profile,
kernel and simulator sources, version) or the dataset settings change.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import math
import random
import time

from autotile.hardware import HardwareProfile
from autotile.kernels import registry
from autotile.models import dataset as D
from autotile.models import store

DEFAULT_COST = ("matmul",)  # cost regressors trained unless asked otherwise (see ``selection``)
COST_SHAPES = 60  # training shapes of matmul
COST_CONFIGS = 200  # random feasible configurations per matmul training shape
COST_1D = (16, 1 << 16, 2, 40)  # 1-D ops: size range, sweep points per octave, configs per size
REFINE = (5, 3)  # matmul and 1-D ops: plus the simulated neighbours of the 5 fastest, 3 rounds
# other multi-dimensional ops (resize, roi_align: 10-100 ms a simulation): shapes around the
# spec's (within 2^+-0.5 per dim), configs per shape, then the neighbours of the best 2, 1 round
COST_ND = (8, 24, 0.5, (2, 1))


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
    With ``ops``, "all" means all of theirs; ops named by ``cost`` but not by ``ops`` are
    trained too (their cost regressor only).
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
                             f"autotile/studies/<op>.yaml)")
    cost_ops = {op for op in cost_ops if trainable(op)["cost"]}

    def has_work(op):
        return trainable(op)["units"] or op in cost_ops

    if ops is None:
        return [op for op in all_ops if has_work(op)], cost_ops
    for op in ops:
        if not has_work(op):
            why = "its cost regressor was not asked for (--cost)" if trainable(op)["cost"] else \
                f"no kernel module, or not a 1-D op with several units and no autotile/studies/{op}.yaml"
            raise InputError(f"--ops: nothing to train for {op} ({why})")
    if cost in (None, "all", "none"):
        return ops, cost_ops & set(ops)
    return ops + sorted(cost_ops - set(ops)), cost_ops


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


def cost_rows(op: str, spec, *, shapes=None, configs: int | None = None, seed: int = 0, stop=None) -> list:
    """Random feasible configurations of ``spec`` over training shapes, every dtype and unit, plus
    the one-param neighbours of the fastest few (so the model sees where good tilings are).
    ``stop``: called before each simulation (it raises to end the build)."""
    dims = spec.op.dims
    if shapes is None:
        if dims == ("n",):
            lo, hi, per, _ = COST_1D
            shapes = [{"n": n} for n in D.sweep_sizes(lo, hi, per, tails=False)]
        elif dims == ("m", "n", "k"):
            shapes = random_shapes(dims, COST_SHAPES, seed)
        else:
            shapes = shapes_around([dict(s) for s in spec.shapes], COST_ND[0], seed, COST_ND[2])
    if configs is None:
        configs = COST_1D[3] if dims == ("n",) else COST_CONFIGS if dims == ("m", "n", "k") else COST_ND[1]
    top, rounds = REFINE if dims in (("n",), ("m", "n", "k")) else COST_ND[3]
    rows = []
    for i, s in enumerate(shapes):
        for dtype in spec.dtypes:
            for unit in spec.units_for(dtype):  # the spec may be on another chip
                space = spec.space(s, dtype, unit)
                sample = D.config_rows(space, configs, seed=seed + i, stop=stop)
                rows += sample + D.refine_rows(space, sample, top, seed=seed + i, rounds=rounds, stop=stop)
    return rows


class Stopped(Exception):
    """A stop request (SIGINT, SIGTERM) seen while a model was being built: neither its dataset
    (unless already finished) nor its model is saved."""


def stop_check(*_) -> None:
    """Raise Stopped once a stop was requested: by this process's signal handler, by the parent
    of a worker (``runner._Stop.shared``), or by the parent's death."""
    from autotile.tune import runner

    if runner._Stop.is_set():
        raise Stopped


@contextlib.contextmanager
def stoppable(poll: float = 0.1):
    """Raise Stopped in this thread within ``poll`` seconds of a stop request while the block
    runs, for code with no ``stop_check`` of its own: a fit (scikit-learn's boosting loop) took
    up to 45 s on a busy machine. A watcher thread raises it asynchronously (at the block's next
    Python line), so the block must write nothing; one not yet raised when the block ends is
    withdrawn and raised after it instead."""
    import ctypes
    import threading

    from autotile.tune import runner

    me, over, lock, fired = threading.get_ident(), threading.Event(), threading.Lock(), []

    def watch():
        while not over.wait(poll):
            if runner._Stop.is_set():
                with lock:
                    if not over.is_set():
                        ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(me), ctypes.py_object(Stopped))
                        fired.append(True)
                return

    watcher = threading.Thread(target=watch, name="autotile-stop-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        with lock:
            over.set()
            if fired:  # not raised yet if the block ended first: withdrawn, raised below
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(me), None)
        watcher.join()
    if fired:
        raise Stopped


def train(ops, hw: HardwareProfile, out=None, *, cost=None, rebuild: bool = False, log=None,
          jobs: int | None = None) -> dict:
    """Train and save the models of ``ops``; returns a summary per op (paths, rows, seconds).

    ``cost``: the ops whose cost regressor to train (None: every op in ``ops`` that has one).
    ``jobs``: worker processes, each training whole models (a dataset and its fit) longest
    first; None: one per available core (at most one per model), 1: all in this process.
    SIGINT and SIGTERM stop it (``stop_check``, ``stoppable``): a model cut short or never
    started gets ``{"interrupted": True, "kept": [its dataset, if that was finished]}``.
    """
    from autotile.tune import runner
    from autotile.tune.driver import _install_stop_signals

    fp = D.fingerprint(hw)
    tasks = _tasks(ops, cost)
    summary: dict = {op: {} for op in ops}

    def done(key, entry):
        op, kind = key
        summary[op][kind] = entry
        if log and all(k in summary[op] for o, k in tasks if o == op):
            log(op, summary[op])

    jobs = min(len(tasks), jobs if jobs is not None else available_cores())
    runner._Stop.requested, runner._Stop.signum = False, None
    saved = _install_stop_signals()  # tune's: the first signal asks to stop, a second one stops at once
    try:
        if jobs <= 1:
            for op, kind in tasks:
                done((op, kind), train_one(op, kind, hw, out, fp, rebuild))
        else:
            import multiprocessing

            from autotile.tune import workers

            order = sorted(tasks, key=lambda t: -_weight(*t))
            # spawn: a forked child would inherit the parent's OpenMP and Numba thread state
            workers.run_pool([(t, (*t, hw, out, fp, rebuild, _settings())) for t in order], jobs, train_one, done,
                             ctx=multiprocessing.get_context("spawn"), notes=_NOTES)
    finally:
        import signal

        for sig, old in saved.items():
            signal.signal(sig, old)
        runner._Stop.requested = False  # ``signum`` stays: the exit code (``driver.interrupted_code``)
    for op in ops:
        if not summary[op]:
            what = trainable(op)
            summary[op]["skipped"] = "no kernel module" if not implemented(op) else \
                "cost regressor not asked for" if what["cost"] else "one unit and no study spec"
            if log:
                log(op, summary[op])
    return {op: {k: summary[op][k] for k in ("units", "cost", "skipped") if k in summary[op]} for op in ops}


def _tasks(ops, cost) -> list[tuple[str, str]]:
    """The (op, kind) models ``train`` builds (see its ``cost``)."""
    return [(op, kind) for op in ops for kind in ("units", "cost")
            if trainable(op)[kind] and (kind == "units" or cost is None or op in cost)]


def check_outputs(ops, hw: HardwareProfile, out=None, *, cost=None) -> None:
    """An OutputError for the first file ``train`` would write (or the folder it goes in) that is
    in the way: a folder where a dataset or model goes, a file where their profile folders go, a
    read-only folder. Found before any work: it used to surface after minutes of datasets."""
    from autotile.atomic import check_outputs as check

    tasks = _tasks(ops, cost)
    check(D.cache_dir(out), what="the cache folder")
    for what, path in (("datasets", lambda op, kind: dataset_path(op, kind, hw, out)),
                       ("models", lambda op, kind: store.path_for(kind, op, out, hw))):
        names = [path(op, kind) for op, kind in tasks]
        if names:
            check(names[0].parent, files=[n.name for n in names], what=f"the {what} folder of {hw.name}")


def interrupted(summary: dict) -> bool:
    """Whether a stop request cut some model of ``train``'s ``summary`` short (or kept it from starting)."""
    return any(isinstance(e, dict) and e.get("interrupted") for v in summary.values() for e in v.values())


def written(summary: dict) -> list[str]:
    """The files ``train`` wrote (each whole): the models, and the datasets it built."""
    out = []
    for v in summary.values():
        for e in v.values():
            if isinstance(e, dict):
                out += e.get("kept", []) if e.get("interrupted") else \
                    [e["dataset"], e["model"]] if e["rebuilt"] else [e["model"]]
    return out


def available_cores() -> int:
    import os

    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


# dataset settings a worker process must see as the parent has them (tests shrink them)
_SETTINGS = (("autotile.models.dataset", "PLACEMENTS"), ("autotile.models.training", "COST_SHAPES"),
             ("autotile.models.training", "COST_CONFIGS"), ("autotile.models.training", "COST_1D"),
             ("autotile.models.training", "COST_ND"), ("autotile.models.training", "REFINE"))
# rough relative cost of a model, to start the longest first (others: units 1.5, cost 1)
_WEIGHT = {("roi_align", "cost"): 8.0, ("weighted_sum", "units"): 3.0, ("matmul", "cost"): 3.0}
_NOTES = ("new workers take over its models", "before any model finished (out of memory?); the models "
          "and datasets that finished are kept, rerun to train the others")


def _settings() -> list:
    import importlib

    return [(mod, name, getattr(importlib.import_module(mod), name)) for mod, name in _SETTINGS]


def _apply(settings: list) -> None:
    import importlib

    for mod, name, value in settings:
        setattr(importlib.import_module(mod), name, value)


def _quick_exit() -> None:
    """Skip the final garbage collection when this (spawned worker) process exits: it went through
    every object Numba and scikit-learn left, and took 2-5 s of a stopped run's exit on a busy
    2-core machine (a forked tune worker skips it too, as it ends with ``os._exit``)."""
    import atexit
    import gc

    atexit.unregister(gc.freeze)  # once per process
    atexit.register(gc.freeze)


def _weight(op: str, kind: str) -> float:
    return _WEIGHT.get((op, kind), 1.5 if kind == "units" else 1.0)


def train_one(op: str, kind: str, hw: HardwareProfile, out, fp: str, rebuild: bool = False,
              settings: list | None = None) -> dict:
    """Build (or reuse) one dataset, fit its model and save it: the ``kind`` ("units" or "cost")
    model of ``op``. Returns its summary entry (paths, rows, rebuilt, data_s, fit_s), or, when a
    stop request cuts it short (``stop_check``), ``{"interrupted": True, "kept": [the dataset
    if it was built and saved]}``."""
    kept: list[str] = []
    try:
        return _train_one(op, kind, hw, out, fp, rebuild, settings, kept)
    except Stopped:
        return {"interrupted": True, "kept": kept}


def _train_one(op, kind, hw, out, fp, rebuild, settings, kept) -> dict:
    from autotile.models.regressor import CostRegressor
    from autotile.models.selector import UnitSelector
    from autotile.space import load_spec

    if settings:  # in a worker process
        _apply(settings)
        _quick_exit()
    stop_check()  # a stop before this model started: leave it unrun
    t0 = time.monotonic()
    spec = load_spec(str(D.spec_path(op))) if D.spec_path(op) else None
    if spec is not None and spec.hardware.content_hash() != hw.content_hash():
        spec = _with_hw(spec, hw)
    if kind == "units":
        mod = registry.implementation(op)
        dtypes = tuple(d for d in registry.get(op).dtypes if d in hw.dtypes)  # no bf16 on the 910A
        meta = {"kind": "units", "op": op, "fingerprint": fp, "dtypes": list(dtypes), "units": list(mod.UNITS),
                "placements": {k: list(D.PLACEMENTS[k]) for k in registry.get(op).placements}}

        def build():
            rows = D.unit_rows(op, dtypes, hw, spec=spec, stop=stop_check)
            stop_check()  # a spec search a stop cut short gave rows that are not the best: not saved
            return rows
    else:
        meta = {"kind": "cost", "op": op, "fingerprint": fp, "spec": spec.content_hash(),
                "settings": json.loads(json.dumps([COST_SHAPES, COST_CONFIGS, COST_1D, COST_ND, REFINE]))}

        def build():
            return cost_rows(op, spec, stop=stop_check)
    path = dataset_path(op, kind, hw, out)
    if rebuild:
        rows, built = build(), True
        D.save_rows(path, rows, meta)
    else:
        rows, built = D.cached(path, meta, build)
    if built:
        kept.append(str(path))
    t1 = time.monotonic()
    with stoppable():
        model = (UnitSelector(op, hw=hw) if kind == "units" else
                 CostRegressor(op, cube_cores=hw.cube_cores, hw=hw)).fit(rows)
    if kind == "units":
        mpath = store.save_selector(model, hw, fp, out)
    else:
        mpath = store.save_regressor(model, hw, fp, out)
    return {"model": str(mpath), "dataset": str(path), "rows": len(rows), "rebuilt": built,
            "data_s": round(t1 - t0, 2), "fit_s": round(time.monotonic() - t1, 2)}


def dataset_path(op: str, kind: str, hw: HardwareProfile, out=None):
    """Where the ``kind`` dataset of ``op`` for profile ``hw`` is cached."""
    return D.cache_dir(out) / "datasets" / store.profile_folder(hw) / f"{op}.{kind}.json"


def _with_hw(spec, hw):
    from dataclasses import replace

    return replace(spec, hardware=hw)


def total_seconds(summary: dict) -> float:
    return math.fsum(v.get(k, {}).get(s, 0.0) for v in summary.values() for k in ("units", "cost")
                     for s in ("data_s", "fit_s"))
