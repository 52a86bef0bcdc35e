"""Checks of a model file's JSON state and estimators before they are used.

A hand-edited or tampered file can still be a valid zip of JSON and trusted estimators; without
these checks it failed later, inside a prediction, with a traceback. Each check raises
ValueError naming what is wrong, which ``store`` reports as one line.
"""

from __future__ import annotations

import math
from contextlib import contextmanager

from autotile.errors import InputError
from autotile.models.features import selector_features, shape_features, unit_cores


class UnusableModel(InputError):
    """A model file that loaded but failed to predict; a command that can answer without the
    model (lookup, crossover) catches it and goes on."""


def fields(state, op: str | None = None) -> dict:
    """``state``'s op, units, names and n_rows, type-checked; ``op``: the op it must be for."""
    if not isinstance(state, dict):
        raise ValueError(f"its state is a {type(state).__name__}, not a mapping")
    if op is not None and state.get("op") != op:
        raise ValueError(f"its state is for op {state.get('op')!r}, not {op}")
    n_rows = state.get("n_rows")
    if isinstance(n_rows, bool) or not isinstance(n_rows, int) or n_rows < 0:
        raise ValueError(f"state.n_rows is {n_rows!r}, not a row count")
    return {"op": state.get("op"), "units": _names(state.get("units"), "units"),
            "names": _names(state.get("names"), "names"), "n_rows": n_rows}


def _names(value, what: str) -> list[str]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError(f"state.{what} is {str(value)[:60]!r}, not a non-empty list of names")
    if len(set(value)) != len(value):
        raise ValueError(f"state.{what} names one entry twice")
    return list(value)


def ranges(state: dict) -> dict:
    """The training ranges ``{placement: {dim: [least, greatest]}}`` ({} for a model saved
    without them)."""
    value = state.get("ranges", {})
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError("state.ranges is not a mapping of placements to dimension ranges")
    out = {}
    for where, span in value.items():
        out[where] = {}
        for d, pair in span.items():
            if (not isinstance(pair, list) or len(pair) != 2
                    or not all(isinstance(x, int) and not isinstance(x, bool) for x in pair) or pair[0] > pair[1]):
                raise ValueError(f"state.ranges.{where}.{d} is {str(pair)[:40]}, not [least, greatest]")
            out[where][d] = list(pair)
    return out


def _dims(op: str) -> tuple:
    from autotile.kernels import registry

    try:
        return registry.get(op).dims
    except KeyError:
        raise ValueError(f"its op {op!r} is not one this version knows") from None


def shape_names(op: str, cores: dict | None = None) -> list[str]:
    """The problem features this version computes for ``op``; with ``cores`` (a unit selector's
    ``unit_cores``) its split features too: a unit selector's whole input."""
    dims = _dims(op)
    shape = dict.fromkeys(dims, 256)
    f = shape_features(op, shape, "fp16")
    return sorted(f if cores is None else selector_features(f, shape, "fp16", "gm", cores))


def cores(state: dict, op: str) -> dict:
    """A unit selector's ``cores``: a positive count for each core kind the units of ``op`` use."""
    _dims(op)
    value = state.get("cores")
    want = set(unit_cores(op))
    if (not isinstance(value, dict) or set(value) != want
            or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in value.values())):
        raise ValueError(f"state.cores is {str(value)[:60]!r}, not core counts of {', '.join(sorted(want))} "
                         f"(a model from before the selector knew the core split?)")
    return dict(value)


# Plausible size of a work fit's coefficients (cycles per unit of work: the fixed cost, one
# element, one repeat, one fractal): a trained fit's largest lies between ~0.1 and ~1e3. A file
# edited to 1e308 predicted infinite cycles (invalid JSON), one edited to 1e-320 predicted 0.0.
COEF_MAX = 1e9
COEF_MIN = 1e-6  # the largest coefficient of one fit must reach this


def base(state: dict, units: list[str], width: int) -> dict:
    """A unit selector's ``base``: for each unit, per data placement, ``width`` non-negative
    coefficients of plausible size (none above COEF_MAX, the largest at least COEF_MIN)."""
    value = state.get("base")
    if not isinstance(value, dict) or set(value) != set(units):
        raise ValueError("state.base does not hold a work fit per unit")
    for u, fits in value.items():
        if not isinstance(fits, dict) or not fits:
            raise ValueError(f"state.base.{u} is not a mapping of data placements to coefficients")
        for where, coef in fits.items():
            if (not isinstance(coef, list) or len(coef) != width
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) and x >= 0
                            for x in coef)
                    or not any(x > 0 for x in coef)):
                raise ValueError(f"state.base.{u}.{where} is {str(coef)[:60]}, not {width} non-negative coefficients")
            if max(coef) > COEF_MAX or max(coef) < COEF_MIN:
                raise ValueError(f"state.base.{u}.{where} has implausible coefficients (largest {max(coef):.3g}; "
                                 f"expected between {COEF_MIN:g} and {COEF_MAX:g} cycles per unit of work)")
    return {u: {w: [float(x) for x in c] for w, c in fits.items()} for u, fits in value.items()}


def error(state: dict, units: list[str]) -> dict:
    """A unit selector's held-out errors ``{unit: {placement: fraction}}`` ({} for a model saved
    without them: ``decide`` then weighs its margins against a default)."""
    value = state.get("error", {})
    if not isinstance(value, dict) or not set(value) <= set(units) or not all(isinstance(v, dict)
                                                                             for v in value.values()):
        raise ValueError("state.error is not a mapping of units to held-out errors per placement")
    for u, per in value.items():
        for where, e in per.items():
            if isinstance(e, bool) or not isinstance(e, (int, float)) or not 0 <= e <= 10:
                raise ValueError(f"state.error.{u}.{where} is {str(e)[:40]}, not a relative error between 0 and 10")
    return {u: {w: float(e) for w, e in per.items()} for u, per in value.items()}


def check_names(names: list[str], op: str, exact: bool, cores: dict | None = None) -> None:
    """The feature names must be this version's for ``op``: all of them for a selector
    (``exact``, with its ``cores``), and at least its problem features for a cost regressor
    (which adds params); in sorted order, as ``fit`` writes them: the estimators take their
    columns in that order, so a reordered list (same names) answered, wrongly."""
    want = shape_names(op, cores)
    missing = sorted(set(want) - set(names))
    extra = sorted(set(names) - set(want)) if exact else []
    if missing or extra:
        diff = ", ".join([f"lacks {', '.join(missing[:3])}"] * bool(missing) + [f"has {', '.join(extra[:3])}"] * bool(extra))
        raise ValueError(f"its features are not this version's ({diff})")
    order = sorted(names)
    if names != order:
        i = next(i for i, (a, b) in enumerate(zip(names, order)) if a != b)
        raise ValueError(f"its features are out of order (state.names[{i}] is {names[i]!r}, expected {order[i]!r}): "
                         f"the estimators would read the wrong columns")


def check_estimators(models: dict, units: list[str], n_features: int) -> None:
    """One fitted regressor per unit, each taking ``n_features`` columns."""
    if set(models) != set(units):
        raise ValueError("unit models do not match the units")
    for u in units:
        m = models[u]
        if not callable(getattr(m, "predict", None)):
            raise ValueError(f"its {u} estimator is a {type(m).__name__}, not a fitted regressor")
        n = getattr(m, "n_features_in_", None)
        if n != n_features:
            raise ValueError(f"its {u} estimator takes {n} features, the file names {n_features}")


def check_cycles(preds: dict, problems, source: str | None, command: str, op: str,
                 kind: str = "unit selector") -> None:
    """An UnusableModel when a predicted cycle count is not a positive finite number (a model
    whose trees or fit were edited past what the checks at load see): decide printed Infinity, not
    JSON, and picked an arbitrary unit."""
    import numpy as np

    for u, values in preds.items():
        values = np.asarray(values, dtype=float)
        bad = np.flatnonzero(~(np.isfinite(values) & (values > 0)))
        if bad.size:
            i = int(bad[0])
            where = f"{source}: unusable model file" if source else f"{kind} for {op}"
            raise UnusableModel(f"{where} (predicted {values[i]:.3g} cycles for {u} at {problems[i][0]}, not a "
                                f"positive finite number); run `{command}` again")


@contextmanager
def guard(source: str | None, command: str = "autotile train"):
    """Turn an error inside a prediction of a model read from ``source`` into an UnusableModel
    naming the file and ``command``, the train line that rebuilds it (a model fitted in this
    process, ``source`` None, raises as it is)."""
    try:
        yield
    except InputError:
        raise
    except Exception as exc:
        if source is None:
            raise
        text = " ".join(f"{type(exc).__name__}: {exc}".split())[:200]
        raise UnusableModel(f"{source}: unusable model file ({text}); run `{command}` again") from None
