"""Unit selector: one regressor of best cycles per unit; the unit predicted fastest wins.

Trained on rows (simulated or measured): for each problem (op, shape, dtype, data placement)
and unit, the least cycles among the rows is that unit's best. Predicting cycles per unit (rather
than only a class) gives ``decide`` its ``predicted_cycles`` and makes the choice cost-aware: a
close call can only be wrong by a little. Each unit's cycles are first fitted, per data
placement, as a non-negative sum of the problem's padded work (``features.work_basis``); the
trees learn log2 of what that fit leaves (cycles / fit), which varies little between training
sizes, where trees are flat.

>>> sel = UnitSelector("weighted_sum").fit(rows)  # doctest: +SKIP
>>> sel.decide({"n": 4096}, "fp16")  # doctest: +SKIP
('cube', {'vector': 857.1, 'cube': 521.9, 'scalar': 1262.0})
"""

from __future__ import annotations

import numpy as np
from sklearn.base import clone

from autotile.errors import InputError
from autotile.models import state as S
from autotile.models.crossover import CATEGORICAL, on_chip_limit, runs, stays_from
from autotile.models.features import (
    matrix,
    outside,
    selector_features,
    shape_features,
    shape_ranges,
    unit_cores,
    work_basis,
)

FOLDS = 3  # held-out error: the training sizes dealt into this many folds, each predicted by the others' fit
HELDOUT_QUANTILE = 0.9  # the error recorded per unit and placement: this quantile of the held-out |relative error|
CLOSE_DEFAULT = 0.05  # the margin under which a pick is a close call when the model records no held-out error


def default_estimator():
    """Gradient boosting on log2 cycles (depth-4 trees; features carry the alignment steps)."""
    from sklearn.ensemble import GradientBoostingRegressor

    return GradientBoostingRegressor(n_estimators=400, max_depth=4, learning_rate=0.1, random_state=0)


def fit_base(problems, cycles) -> dict:
    """{data placement: non-negative coefficients of ``work_basis``} fitted to ``cycles`` (one
    per (shape, dtype, data, cores) in ``problems``) in relative terms, so small sizes count as
    much as large ones."""
    from scipy.optimize import nnls

    groups: dict = {}
    for (shape, dtype, data, cores), c in zip(problems, cycles):
        groups.setdefault(data, ([], []))
        groups[data][0].append(work_basis(shape, dtype, data, cores))
        groups[data][1].append(c)
    out = {}
    for data, (basis, cyc) in groups.items():
        B, c = np.array(basis), np.array(cyc, dtype=float)
        coef, _ = nnls(B / c[:, None], np.ones(len(c)))
        if not (coef > 0).any():  # cannot happen with positive cycles; a constant keeps the fit usable
            coef[0] = float(np.median(c))
        out[data] = [float(x) for x in coef]
    return out


def _work_fit(base: dict, problems, cores: dict) -> np.ndarray:
    """``base`` ({placement: coefficients}) applied to each (shape, dtype, data) of ``problems``."""
    return np.array([float(np.dot(work_basis(shape, dtype, data, cores), base[data]))
                     for shape, dtype, data in problems])


def best_per_unit(rows) -> dict:
    """{(problem key, unit): (cycles, row)} keeping each unit's fastest row per problem."""
    out: dict = {}
    for r in rows:
        k = (r.key(), r.unit)
        if k not in out or r.cycles < out[k][0]:
            out[k] = (r.cycles, r)
    return out


class UnitSelector:
    """Picks the execution unit of ``op`` for a (shape, dtype, data placement)."""

    def __init__(self, op: str, estimator=None, hw=None):
        self.op = op
        self.estimator = estimator
        try:  # core kind -> cores, of ``hw`` (None: the default profile)
            self.cores = unit_cores(op, hw)
        except KeyError:  # an op this version does not know: ``fit`` finds no rows for it
            self.cores = {}
        self.base: dict = {}  # unit -> data placement -> coefficients of ``work_basis``
        self.units: list[str] = []
        self.names: list[str] = []
        self.models: dict = {}
        self.n_rows = 0
        self.ranges: dict = {}  # data placement -> {dim: [least, greatest]} of the training shapes
        self.error: dict = {}  # unit -> data placement -> held-out relative error (``_heldout_error``)
        self.source: str | None = None  # the file it was read from (its errors then name it)
        self.command = "autotile train"  # the train line that rebuilds that file

    def fit(self, rows) -> UnitSelector:
        """Fit one regressor per unit on the best cycles of each problem in ``rows``."""
        best = [(c, r) for c, r in best_per_unit(r for r in rows if r.op == self.op).values()]
        if not best:
            raise InputError(f"unit selector: no rows for op {self.op}")
        self.units = sorted({r.unit for _, r in best})
        feats = {id(r): self._features(r.shape, r.dtype, r.data) for _, r in best}
        self.names = sorted({k for f in feats.values() for k in f})
        self.models, self.base = {}, {}
        for u in self.units:
            self.base[u], self.models[u] = self._fit_unit([(c, r) for c, r in best if r.unit == u], feats)
        self.n_rows = len(best)
        self.ranges = shape_ranges(r for _, r in best)
        self.error = self._heldout_error(best, feats)
        return self

    def _fit_unit(self, sub, feats) -> tuple[dict, object]:
        """(work fit per placement, fitted regressor of log2 cycles / fit) of one unit's (cycles, row)s."""
        X = matrix([feats[id(r)] for _, r in sub], self.names)
        cyc = [c for c, _ in sub]
        base = fit_base([(r.shape, r.dtype, r.data, self.cores) for _, r in sub], cyc)
        y = np.log2(cyc) - np.log2(_work_fit(base, [(r.shape, r.dtype, r.data) for _, r in sub], self.cores))
        return base, clone(self.estimator if self.estimator is not None else default_estimator()).fit(X, y)

    def _heldout_error(self, best, feats) -> dict:
        """{unit: {placement: HELDOUT_QUANTILE of |predicted / simulated - 1|}} on sizes the fit did
        not see: the problem sizes are dealt in order into FOLDS folds, and each fold is predicted by
        a model fitted on the others. {} with fewer than 2 x FOLDS sizes. ``decide`` calls a pick
        whose margin is within the two units' errors a close call."""
        sizes = sorted({tuple(sorted(r.shape.items())) for _, r in best})
        if len(sizes) < 2 * FOLDS:
            return {}
        fold = {s: i % FOLDS for i, s in enumerate(sizes)}
        errs: dict = {}
        for k in range(FOLDS):
            for u in self.units:
                train = [(c, r) for c, r in best if r.unit == u and fold[tuple(sorted(r.shape.items()))] != k]
                seen = {r.data for _, r in train}
                test = [(c, r) for c, r in best if r.unit == u and fold[tuple(sorted(r.shape.items()))] == k
                        and r.data in seen]
                if not train or not test:
                    continue
                base, model = self._fit_unit(train, feats)
                X = matrix([feats[id(r)] for _, r in test], self.names)
                pred = 2.0 ** model.predict(X) * _work_fit(base, [(r.shape, r.dtype, r.data) for _, r in test],
                                                           self.cores)
                for (c, r), p in zip(test, pred):
                    errs.setdefault(u, {}).setdefault(r.data, []).append(abs(p / c - 1))
        return {u: {d: round(float(np.quantile(v, HELDOUT_QUANTILE)), 5) for d, v in sorted(per.items())}
                for u, per in sorted(errs.items())}

    def confidence(self, cycles: dict, data: str = "gm", shape: dict | None = None) -> dict:
        """How sure a pick among ``cycles`` ({unit: predicted cycles}) is: the runner-up, the margin
        (its cycles over the pick's, minus 1), the error it is weighed against (the two units'
        held-out errors at ``data`` added, else CLOSE_DEFAULT for a model saved without them) and
        ``close_call``: the margin is within that error, so the runner-up may well be faster.

        ``extrapolated``: ``shape`` lies outside the training shapes (``outside``). The held-out
        error says nothing there, and the margin can be wildly wrong (weighted_sum on chip at
        n = 32,784: the Cube predicted 493% ahead, simulated 13x slower, past the size where its
        trace form stops fitting), so such a pick is always a close call, even with no runner-up
        (weighted_sum on chip at n = 50,000, where only the Cube holds the data)."""
        far = shape is not None and self.outside(shape, data) is not None
        order = sorted(cycles, key=cycles.get)
        if len(order) < 2:
            return {"runner_up": None, "margin": None, "error": None, "error_from": None, "close_call": far,
                    "extrapolated": far}
        pick, second = order[:2]
        errs = [self.error.get(u, {}).get(data) for u in (pick, second)]
        known = all(e is not None for e in errs)
        error = sum(errs) if known else CLOSE_DEFAULT
        margin = cycles[second] / cycles[pick] - 1
        return {"runner_up": second, "margin": margin, "error": error,
                "error_from": "held-out" if known else "default", "close_call": far or margin <= error,
                "extrapolated": far}

    def _features(self, shape: dict, dtype: str, data: str) -> dict:
        return selector_features(shape_features(self.op, shape, dtype, data), shape, dtype, data, self.cores)

    def _base(self, unit: str, problems) -> np.ndarray:
        """The work fit of ``unit`` for each (shape, dtype, data) in ``problems``."""
        for _, _, data in problems:
            if data not in self.base[unit]:
                raise InputError(f"unit selector for {self.op}: {unit} was not trained with data {data} (has "
                                 f"{', '.join(sorted(self.base[unit]))}); run `{self.command}` again")
        return _work_fit(self.base[unit], problems, self.cores)

    def outside(self, shape: dict, data: str = "gm") -> str | None:
        """Why ``shape`` lies outside the training shapes of ``data`` (the prediction then
        extrapolates), or None; None too for a model saved without its ranges."""
        return outside(self.ranges, shape, data)

    def outside_spans(self, lo: int, hi: int, data: str = "gm") -> list[list[int]] | None:
        """The parts [first, last] of n = ``lo..hi`` outside the training sizes of ``data``, where
        an answer resting on them extrapolates ([]: none); None for a model saved without its ranges."""
        if not self.ranges:
            return None
        span = self.ranges.get(data, {}).get("n")
        if span is None:  # trained on none of ``data``
            return [[lo, hi]]
        out = []
        if lo < span[0]:
            out.append([lo, min(hi, span[0] - 1)])
        if hi > span[1]:
            out.append([max(lo, span[1] + 1), hi])
        return out

    def predict_many(self, problems) -> list[dict]:
        """Predicted cycles per unit for each (shape, dtype, data) in ``problems``."""
        problems = list(problems)
        with S.guard(self.source, self.command), np.errstate(over="ignore", under="ignore", invalid="ignore"):
            X = matrix([self._features(s, d, p) for s, d, p in problems], self.names)
            preds = {u: 2.0 ** m.predict(X) * self._base(u, problems) for u, m in self.models.items()}
        S.check_cycles(preds, problems, self.source, self.command, self.op)
        return [{u: float(preds[u][i]) for u in self.units} for i in range(len(problems))]

    def predict_cycles(self, shape: dict, dtype: str, data: str = "gm") -> dict:
        """{unit: predicted cycles at its best tiling}."""
        return self.predict_many([(shape, dtype, data)])[0]

    def unrunnable(self, dtype: str, hw) -> dict:
        """{unit: why it cannot compute ``dtype`` on ``hw``} among the trained units (a profile's
        cube without a bf16 rate): the model would still predict cycles for it, from other dtypes."""
        if hw is None:
            return {}
        return {u: why for u in self.units if (why := hw.dtype_problem(u, dtype))}

    def unfit(self, shape: dict, dtype: str, data: str, hw) -> dict:
        """{unit: why} for the trained units whose buffers cannot hold ``shape``'s data on chip
        (``crossover.on_chip_limit``): there the on-chip framing, and so the model, says nothing.
        Empty in GM, without ``hw``, and for ops the crossover grid does not search."""
        if data != "on_chip" or hw is None or set(shape) != {"n"} or self.op not in CATEGORICAL:
            return {}
        n = int(shape["n"])
        limits = {u: on_chip_limit(self.op, u, dtype, hw) for u in self.units}
        return {u: f"its buffers hold {dtype} data on chip up to n={top:,} only" for u, top in limits.items()
                if n > top}

    def decide(self, shape: dict, dtype: str, data: str = "gm", units=None, hw=None) -> tuple[str, dict]:
        """(fastest predicted unit among ``units`` (default all), predicted cycles per unit); with
        ``hw``, units that cannot compute ``dtype`` there (``unrunnable``) or cannot hold the data
        on chip (``unfit``) are neither picked nor listed."""
        cyc = self.predict_cycles(shape, dtype, data)
        unfit = self.unfit(shape, dtype, data, hw)
        for u in [*self.unrunnable(dtype, hw), *unfit]:
            cyc.pop(u, None)
        pool = [u for u in (units or self.units) if u in cyc]
        if not pool and unfit:
            held = "; ".join(f"{u}: {why}" for u, why in unfit.items())
            raise InputError(f"--data on_chip: {self.op} {dtype} n={int(shape['n']):,} does not fit on chip ({held}); "
                             f"use --data gm")
        if not pool:
            where = f" on {hw.reference}" if hw is not None else ""
            raise InputError(f"unit selector for {self.op}: no unit of {', '.join(units or self.units)} computes "
                             f"{dtype}{where}")
        return min(pool, key=lambda u: cyc[u]), cyc

    def crossover(self, dtype: str, *, small_unit: str = "vector", large_unit: str = "cube",
                  data: str = "on_chip", lo: int = 16, hi: int = 16384, hw=None) -> int | None:
        """Smallest n from which the model predicts ``large_unit`` stays faster than ``small_unit``
        (the start of the last of ``crossover_windows`` if it reaches ``hi``)."""
        spans = self.crossover_windows(dtype, small_unit=small_unit, large_unit=large_unit, data=data, lo=lo, hi=hi,
                                       hw=hw)
        return stays_from(spans, hi)

    def crossover_windows(self, dtype: str, *, small_unit: str = "vector", large_unit: str = "cube",
                          data: str = "on_chip", lo: int = 16, hi: int = 16384, hw=None) -> list[list[int]]:
        """The size ranges in which the model predicts ``large_unit`` faster, asked at every integer
        n in ``lo..hi`` (a batch prediction, well under a second), so they agree with ``decide`` at
        each n; a grid would miss the narrow ranges a learned curve has near a tie. With ``hw``, a
        unit that cannot compute ``dtype`` there is an InputError: the pair has no crossover."""
        for u in (small_unit, large_unit):
            if u not in self.models:
                raise InputError(f"unit selector for {self.op} has no unit {u!r} (has {', '.join(self.units)})")
            if why := self.unrunnable(dtype, hw).get(u):
                raise InputError(f"{u} cannot run {dtype}: {why}; there is no {small_unit}/{large_unit} crossover")
        ns = range(lo, hi + 1)
        preds = self.predict_many([({"n": n}, dtype, data) for n in ns])
        return runs(ns, [c[large_unit] < c[small_unit] for c in preds])

    # -- persistence (see store.py): JSON state + estimators
    def state(self) -> dict:
        return {"op": self.op, "units": self.units, "names": self.names, "n_rows": self.n_rows,
                "ranges": self.ranges, "cores": self.cores, "base": self.base, "error": self.error}

    @classmethod
    def from_state(cls, state: dict, models: dict, op: str | None = None) -> UnitSelector:
        """The model a file holds, checked (``models.state``); ``op``: the op it must be for."""
        got = S.fields(state, op)
        cores = S.cores(state, got["op"])
        S.check_names(got["names"], got["op"], exact=True, cores=cores)
        S.check_estimators(models, got["units"], len(got["names"]))
        sel = cls(got["op"])
        sel.units, sel.names, sel.n_rows = got["units"], got["names"], got["n_rows"]
        sel.cores, sel.base = cores, S.base(state, got["units"], len(work_basis({"n": 1}, "fp16", "gm", cores)))
        sel.ranges = S.ranges(state)
        sel.error = S.error(state, got["units"])
        sel.models = dict(models)
        return sel
