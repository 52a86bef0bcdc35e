"""Scoring configurations: constraints first, then the cost backend, with a duplicate cache.

An ``Evaluator`` belongs to one (shape, dtype, unit) space. ``score(params)`` returns an
``Outcome``: infeasible configurations are recognized by the spec's constraints (and the
kernel's own capacity checks) before any simulation; a configuration seen before is answered
from the cache without simulating again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np

from autotile.kernels import registry
from autotile.space.space import Space
from autotile.tune.verify import execute_shape

ERROR_OBJECTIVES = ("max_abs_error", "max_rel_error")


@dataclass(frozen=True)
class Outcome:
    """The score of one configuration."""

    params: dict
    feasible: bool
    reason: str | None = None
    values: dict = field(default_factory=dict)  # objective name -> value
    result: object = None  # the backend's full result (SimResult for the simulator)
    cached: bool = False


def config_key(params: dict) -> str:
    """A canonical text for a configuration (cache key, and how trials record it)."""
    return json.dumps(params, sort_keys=True, separators=(",", ":"), default=_plain)


def _plain(v):
    if isinstance(v, np.generic):
        return v.item()
    raise TypeError(type(v))


class Evaluator:
    """Scores configurations of one space on the simulator (the default backend)."""

    def __init__(self, space: Space, objectives: tuple[str, ...] = ("cycles",), *, kernel=None):
        self.space = space
        self.objectives = tuple(objectives)
        if kernel is None:
            space.spec.require_kernel_params(space.unit)
        self.kernel = kernel or registry.implementation(space.spec.op.name)
        self.hw = space.spec.hardware
        self.options = dict(space.spec.inputs or {})
        self.cache: dict[str, Outcome] = {}
        self.simulated = 0
        self._inputs = None

    def score(self, params: dict) -> Outcome:
        """Constraints, then simulation; repeated configurations come from the cache."""
        params = {k: _plain(v) if isinstance(v, np.generic) else v for k, v in params.items()}
        key = config_key(params)
        hit = self.cache.get(key)
        if hit is not None:
            return Outcome(hit.params, hit.feasible, hit.reason, hit.values, hit.result, cached=True)
        reason = self.space.check(params)
        if reason is not None:
            out = Outcome(params, False, reason)
        else:
            out = self._simulate(params)
        self.cache[key] = out
        return out

    def _simulate(self, params: dict) -> Outcome:
        sp = self.space
        res = self.kernel.simulate(sp.shape, params, sp.dtype, self.hw, unit=sp.unit, options=self.options)
        self.simulated += 1
        if not res.feasible:
            return Outcome(params, False, res.reason, result=res)
        values = {"cycles": float(res.cycles), "time_us": float(res.time_us)}
        limits = dict(self.space.spec.limits)
        if any(o in ERROR_OBJECTIVES for o in (*self.objectives, *limits)):
            errs = self.errors(params)
            if isinstance(errs, str):
                return Outcome(params, False, errs, result=res)
            values.update(errs)
        reason = over_limit(values, limits)
        if reason is not None:
            return Outcome(params, False, reason, values, res)
        return Outcome(params, True, None, values, res)

    def errors(self, params: dict) -> dict | str:
        """Max absolute and relative error of execute mode against the reference, on the shape
        verification runs (the kernel's ``verify_shape``: huge shapes run smaller with the same
        tiling structure); a string says why it was not executed."""
        sp = self.space
        shape, too_large = execute_shape(self.kernel, sp.shape, params)
        if too_large:
            return f"errors not measured: {too_large}"
        key = tuple(sorted(shape.items()))
        if self._inputs is None or self._inputs[0] != key:  # one shape's inputs kept at a time
            self._inputs = None
            inputs = self.kernel.make_inputs(shape, sp.dtype, 0, options=self.options)
            ref = np.asarray(self.kernel.reference(inputs, sp.dtype, options=self.options), dtype=np.float64)
            self._inputs = (key, inputs, ref)
        _, inputs, ref = self._inputs
        got = np.asarray(self.kernel.execute(inputs, params, sp.dtype, self.hw, unit=sp.unit,
                                             options=self.options), dtype=np.float64)
        return error_metrics(got, ref)


def over_limit(values: dict, limits: dict, where: str = "") -> str | None:
    """Why ``values`` break one of the spec's ``limits`` (a metric above its cap, or absent),
    else None; every backend prunes with this same text. ``where`` locates a missing value."""
    for metric, cap in limits.items():
        if metric not in values:
            return f"no {metric} recorded{f' ({where})' if where else ''}, so the limit {cap:g} cannot be checked"
        if values[metric] > cap:
            return f"{metric} {values[metric]:.3g} exceeds the limit {cap:g}"
    return None


def make_evaluator(space: Space, objectives: tuple[str, ...] = ("cycles",)) -> Evaluator:
    """The evaluator of the spec's backend: the simulator, or recorded measurements (replay)."""
    if space.spec.backend == "replay":
        from autotile.tune.replay import ReplayEvaluator

        return ReplayEvaluator(space, objectives)
    return Evaluator(space, objectives)


def error_metrics(got: np.ndarray, ref: np.ndarray) -> dict:
    """max_abs_error and max_rel_error (relative to max(|ref|, tiny) per element)."""
    diff = np.abs(got - ref)
    denom = np.maximum(np.abs(ref), 1e-30)
    bad = ~np.isfinite(got)
    if bad.any():
        return {"max_abs_error": float("inf"), "max_rel_error": float("inf")}
    return {"max_abs_error": float(diff.max(initial=0.0)),
            "max_rel_error": float((diff / denom).max(initial=0.0))}
