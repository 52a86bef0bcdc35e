"""Cost regressor: predicted cycles of (op, shape, dtype, unit, params), to rank tilings nobody ran.

One regressor of log2(cycles) per unit, on ``features.config_features`` (params plus closed-form
per-core work of the loop nest). ``predict_params`` picks a tiling for a shape (the fallback of a
table lookup for an untuned shape): the model's few best predictions, simulated, fastest first;
``top_k`` gives the k best predicted configurations of a space (to warm-start a study).

>>> reg = CostRegressor("matmul").fit(rows)  # doctest: +SKIP
>>> predict_params("matmul", {"m": 512, "n": 1024, "k": 768}, "fp16", space, model=reg)  # doctest: +SKIP
{'db_l0a': 2, 'db_l0b': 2, ...}
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from types import SimpleNamespace

import numpy as np
from sklearn.base import clone

from autotile.errors import InputError
from autotile.models import state as S
from autotile.models.features import (
    config_features,
    hw_constants,
    matrix,
    outside,
    shape_ranges,
)
from autotile.space.space import Space

SAMPLES = 2000  # random feasible configurations ranked when given a space
VERIFY = 8  # predict_params simulates this many of the best predicted configurations of a space


def one_thread():
    """Run scikit-learn's OpenMP loops on one thread.

    Histogram gradient boosting opens an OpenMP parallel region per tree node; on a small or
    shared machine, a busy core makes every barrier wait for a descheduled thread, and a fit of
    a few seconds took 440 s (2 cores, another job running). One thread costs ~20% when the
    machine is idle and cannot stall that way.
    """
    from threadpoolctl import threadpool_limits

    return threadpool_limits(1, "openmp")


def default_estimator():
    """Histogram gradient boosting on log2 cycles (fast on tens of thousands of rows)."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    return HistGradientBoostingRegressor(max_iter=300, learning_rate=0.1, random_state=0)


class CostRegressor:
    """Predicts the cycles of tilings of ``op``; one estimator per unit."""

    def __init__(self, op: str, estimator=None, cube_cores: int = 24, hw=None):
        self.op = op
        self.estimator = estimator
        self.cube_cores = cube_cores
        self.hw = dict(hw) if isinstance(hw, dict) else hw_constants(hw)  # a profile, or None: the default
        self.units: list[str] = []
        self.names: list[str] = []
        self.models: dict = {}
        self.n_rows = 0
        self.ranges: dict = {}  # data placement -> {dim: [least, greatest]} of the training shapes
        self.source: str | None = None  # the file it was read from (its errors then name it)
        self.command = "autotile train"  # the train line that rebuilds that file

    def _features(self, shape, dtype, unit, configs, data) -> list[dict]:
        return [config_features(self.op, shape, dtype, unit, c, data, self.cube_cores, self.hw) for c in configs]

    def fit(self, rows) -> CostRegressor:
        """Fit on every row of ``op`` that carries params."""
        rows = [r for r in rows if r.op == self.op and r.params and r.cycles > 0]
        if not rows:
            raise InputError(f"cost regressor: no rows with params for op {self.op}")
        feats = [config_features(r.op, r.shape, r.dtype, r.unit, r.params, r.data, self.cube_cores, self.hw)
                 for r in rows]
        self.names = sorted({k for f in feats for k in f})
        self.units = sorted({r.unit for r in rows})
        self.models = {}
        for u in self.units:
            idx = [i for i, r in enumerate(rows) if r.unit == u]
            X = matrix([feats[i] for i in idx], self.names)
            y = np.log2([rows[i].cycles for i in idx])
            est = self.estimator if self.estimator is not None else default_estimator()
            with one_thread():
                self.models[u] = clone(est).fit(X, y)
        self.n_rows = len(rows)
        self.ranges = shape_ranges(rows)
        return self

    def outside(self, shape: dict, data: str = "gm") -> str | None:
        """Why ``shape`` lies outside the training shapes (its ranking then extrapolates), or None;
        None too for a model saved without its ranges."""
        return outside(self.ranges, shape, data)

    def predict(self, shape: dict, dtype: str, unit: str, configs: list[dict], data: str = "gm") -> np.ndarray:
        """Predicted cycles of each configuration in ``configs``."""
        if unit not in self.models:
            raise InputError(f"cost regressor for {self.op} has no unit {unit!r} (has {', '.join(self.units)})")
        if not configs:
            return np.zeros(0)
        with S.guard(self.source, self.command), one_thread(), np.errstate(over="ignore", under="ignore",
                                                                          invalid="ignore"):
            X = matrix(self._features(shape, dtype, unit, configs, data), self.names)
            pred = 2.0 ** self.models[unit].predict(X)
        # a ranking of inf or 0 everywhere is arbitrary, and a NaN printed is no JSON
        S.check_cycles({unit: pred}, [(shape, dtype, data)] * len(pred), self.source, self.command, self.op,
                       "cost regressor")
        return pred

    def state(self) -> dict:
        return {"op": self.op, "units": self.units, "names": self.names, "n_rows": self.n_rows,
                "cube_cores": self.cube_cores, "hw": self.hw, "ranges": self.ranges}

    @classmethod
    def from_state(cls, state: dict, models: dict, op: str | None = None) -> CostRegressor:
        """The model a file holds, checked (``models.state``); ``op``: the op it must be for."""
        got = S.fields(state, op)
        S.check_names(got["names"], got["op"], exact=False)
        S.check_estimators(models, got["units"], len(got["names"]))
        cores, hw = state.get("cube_cores"), state.get("hw")
        if isinstance(cores, bool) or not isinstance(cores, int) or cores < 1:
            raise ValueError(f"state.cube_cores is {cores!r}, not a core count")
        if hw is not None and not (isinstance(hw, dict) and all(
                isinstance(v, (int, float)) and not isinstance(v, bool) for v in hw.values())):
            raise ValueError("state.hw is not a mapping of profile constants")
        reg = cls(got["op"], cube_cores=cores, hw=hw)
        reg.units, reg.names, reg.n_rows = got["units"], got["names"], got["n_rows"]
        reg.ranges = S.ranges(state)
        reg.models = dict(models)
        return reg


def feasible_sample(space, count: int = SAMPLES, seed: int = 0, max_draws: int | None = None) -> list[dict]:
    """Up to ``count`` distinct feasible configurations of ``space`` (define-by-run uniform draws).

    A space of at most ``count`` feasible configurations is enumerated instead (what the draws
    would find, in milliseconds: 20 * ``count`` draws over 64 configurations took seconds).
    """
    from autotile.models.dataset import random_config
    from autotile.tune.evaluate import config_key

    draws = max_draws or 20 * count
    every = _small_space(space, count, draws)
    if every is not None:
        return every
    rng = random.Random(seed)
    out, seen = [], set()
    drawn = SimpleNamespace(params=space.params, domain=space.domain_memo())  # the same draws, domains remembered
    for _ in range(draws):
        if len(out) >= count:
            break
        cfg = random_config(drawn, rng)
        if cfg is None:
            continue
        key = config_key(cfg)
        if key in seen:
            continue
        seen.add(key)
        if space.check(cfg) is None:
            out.append(cfg)
    return out


def _small_space(space, count: int, rows: int) -> list[dict] | None:
    """Every feasible configuration of ``space`` if there are at most ``count`` and enumerating
    them needs at most ``rows`` rows (the work of as many draws), else None."""
    from autotile.space.enumeration import enumerate_space

    try:
        every = enumerate_space(space, max_rows=rows)
    except InputError:
        return None
    return [every.row(i) for i in range(len(every))] if len(every) <= count else None


def refine(space, reg: CostRegressor, configs: list[dict], pred: np.ndarray, *, starts: int = 8,
           rounds: int = 4, seed: int = 0, data: str = "gm") -> tuple[list[dict], np.ndarray]:
    """Model-guided local search: from the ``starts`` best predicted configs, move to the best
    predicted neighbour while it improves. Returns every config seen with its prediction."""
    from autotile.models.dataset import neighbours
    from autotile.tune.evaluate import config_key

    rng = random.Random(seed)
    seen = {config_key(c): float(v) for c, v in zip(configs, pred)}
    pool = list(configs)
    cur = [configs[i] for i in np.argsort(pred, kind="stable")[:starts]]
    for _ in range(rounds):
        nbs = [neighbours(space, c, rng) for c in cur]
        uniq = list({config_key(n): n for nb in nbs for n in nb if config_key(n) not in seen}.values())
        if uniq:
            p = reg.predict(space.shape, space.dtype, space.unit, uniq, data)
            for c, v in zip(uniq, p):
                seen[config_key(c)] = float(v)
            pool += uniq
        nxt = []
        for c, nb in zip(cur, nbs):
            best = min(nb, key=lambda n: seen[config_key(n)], default=None)
            if best is not None and seen[config_key(best)] < seen[config_key(c)]:
                nxt.append(best)
        if not nxt:
            break
        cur = nxt
    return pool, np.array([seen[config_key(c)] for c in pool])


def _candidates(candidates_or_space, samples: int, seed: int) -> tuple[list[dict], str | None]:
    if hasattr(candidates_or_space, "domain") and hasattr(candidates_or_space, "params"):
        return feasible_sample(candidates_or_space, samples, seed), candidates_or_space.unit
    return [dict(c) for c in candidates_or_space], None


def _model(op: str, model, models_dir):
    if model is not None:
        return model
    from autotile.models import store

    return store.load_regressor(op, models_dir)


def top_k(op: str, shape: dict, dtype: str, candidates_or_space, k: int = 10, *, unit: str | None = None,
          data: str = "gm", model: CostRegressor | None = None, models_dir=None, samples: int = SAMPLES,
          seed: int = 0, local_search: bool = True) -> list[tuple[dict, float]]:
    """The ``k`` configurations with the least predicted cycles: [(params, cycles)], best first.

    ``candidates_or_space``: a list of param dicts (ranked as given), or a Space (then
    ``samples`` random feasible configurations are ranked and, with ``local_search``, improved by
    a model-guided local search). Without ``model`` the stored model of ``op`` is loaded.
    """
    reg = _model(op, model, models_dir)
    configs, space_unit = _candidates(candidates_or_space, samples, seed)
    unit = unit or space_unit or reg.units[0]
    if not configs:
        return []
    pred = reg.predict(shape, dtype, unit, configs, data)
    if space_unit is not None and local_search:
        configs, pred = refine(candidates_or_space, reg, configs, pred, seed=seed, data=data)
    order = np.argsort(pred, kind="stable")[:k]
    return [(configs[i], float(pred[i])) for i in order]


@dataclass(frozen=True)
class Pick:
    """The params the model picked and how (what was ranked, what was simulated)."""

    params: dict
    how: str
    cycles: float | None = None  # simulated when the pick was simulated, else the model's prediction
    default: bool = False  # the ``baseline`` (the default tiling) was kept: the model's candidates were not faster
    verified: bool = False  # ``cycles`` were scored by the spec's backend, not predicted


def predict_params(op: str, shape: dict, dtype: str, candidates_or_space, *, verify: int = VERIFY,
                   **kw) -> dict | None:
    """The params the model picks for a shape (None without candidates); see ``pick_params``."""
    got = pick_params(op, shape, dtype, candidates_or_space, verify=verify, **kw)
    return None if got is None else got.params


def pick_params(op: str, shape: dict, dtype: str, candidates_or_space, *, verify: int = VERIFY,
                budget_s: float | None = None, baseline: dict | None = None, **kw) -> Pick | None:
    """The params the model picks for a shape, and how (None without candidates).

    Given a Space, the model's ``verify`` best predicted configurations are then scored by the
    spec's backend (the simulator; recorded measurements for a replay spec) and the fastest
    feasible one is returned: the model ranks a space of thousands, the backend settles the last
    few, where a learned ranking is least sure. Only candidates whose estimated simulation time
    (``sim_budget``) fits in what is left of ``budget_s`` are scored, so a huge shape answers in
    seconds from the ranking alone. ``verify=1`` (or a list of candidates) scores nothing.

    ``baseline`` (a Space only): the tiling to beat, the default heuristic's. It is scored first,
    within the same budget, and kept (``Pick.default``) unless a candidate is strictly faster on
    the backend; kept too when none of the candidates could be scored but it could; when nothing
    was scored, the model's predictions of both decide. A model that extrapolates can rank a
    tiling using 4 of 24 cores first (14x slower than the default at 100000^3): the default
    beside the candidates keeps such a pick from replacing a better tiling the lookup had.
    """
    from autotile.models import sim_budget
    from autotile.tune.evaluate import config_key

    budget = sim_budget.BUDGET_S if budget_s is None else budget_s
    space = candidates_or_space if isinstance(candidates_or_space, Space) else None
    k = max(1, verify) if space is not None else 1
    kw["model"] = _model(op, kw.get("model"), kw.pop("models_dir", None))
    best = top_k(op, shape, dtype, candidates_or_space, k, **kw)
    if not best:
        return None
    n_top = len(best)
    base = dict(baseline) if baseline is not None and space is not None else None
    if base is not None:  # the model's own candidate equal to the baseline is scored once, as the baseline
        best = [(p, c) for p, c in best if config_key(p) != config_key(base)] or best[:1]
    if k == 1:
        return _unscored(kw["model"], space, base, best, "the model's best predicted configuration (not simulated)",
                         kw.get("data", "gm"))
    from autotile.tune.evaluate import make_evaluator

    ev = make_evaluator(space)
    scored, skipped, t0 = [], [], time.monotonic()
    opts = space.spec.inputs or {}
    base_cycles, base_why = None, None
    if base is not None:
        est = sim_budget.estimate_seconds(op, space.shape, dtype, space.unit, base, space.spec.backend, opts)
        if est > budget:
            base_why = sim_budget.too_long(est, budget)
        else:
            out = ev.score(base)
            if out.feasible and "cycles" in out.values:
                base_cycles = out.values["cycles"]
            else:
                base_why = "it was not feasible on the simulator"
    for i, (p, _) in enumerate(best):
        est = sim_budget.estimate_seconds(op, space.shape, dtype, space.unit, p, space.spec.backend, opts)
        if time.monotonic() - t0 + est > budget:
            skipped.append(est)
            continue
        out = ev.score(p)
        if out.feasible and "cycles" in out.values:
            scored.append((out.values["cycles"], i))
    over = (("too large to simulate" if math.isinf(min(skipped)) else
             f"~{min(skipped):.3g} s each or more, over the {budget:g} s budget") if skipped else "")
    top = f"the model's top {n_top}"
    if scored and (base_cycles is None or min(scored)[0] < base_cycles):
        how = f"the fastest on the simulator of {top}"
        if skipped:
            how += f": {len(best) - len(skipped)} simulated, {len(skipped)} not ({over})"
        if base is not None:
            how += (f"; the default tiling took {base_cycles:,.0f} cycles" if base_cycles is not None
                    else f"; the default tiling was not simulated ({base_why})")
        return Pick(best[min(scored)[1]][0], how, min(scored)[0], verified=True)
    if base_cycles is not None:
        if scored:
            why = f"the fastest of {top} took {min(scored)[0]:,.0f} cycles"
        else:
            why = (f"none of {top} was simulated ({over})" if skipped
                   else f"none of {top} was feasible on the simulator")
        return Pick(base, f"the default tiling, {base_cycles:,.0f} cycles on the simulator; {why}", base_cycles,
                    default=True, verified=True)
    why = ("the shape is too large to simulate" if skipped and math.isinf(min(skipped))
           else f"simulating them would take {over}" if skipped else "none was feasible on the simulator")
    return _unscored(kw["model"], space, base, best, f"the model's best predicted of its top {n_top}, not "
                     f"verified ({why})",
                     kw.get("data", "gm"))


def _unscored(reg, space, base, best, how: str, data: str) -> Pick:
    """Nothing was scored: the model's predictions of its best and of ``base`` decide."""
    if base is not None:
        pred = float(reg.predict(space.shape, space.dtype, space.unit, [base], data)[0])
        if pred <= best[0][1]:
            return Pick(base, f"the default tiling, predicted {pred:,.0f} cycles against {best[0][1]:,.0f} for "
                              f"{how}", pred, default=True)
    return Pick(best[0][0], how, best[0][1])
