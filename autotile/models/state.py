"""Checks of a model file's JSON state and estimators before they are used.

A hand-edited or tampered file can still be a valid zip of JSON and trusted estimators; without
these checks it failed later, inside a prediction, with a traceback. Each check raises
ValueError naming what is wrong, which ``store`` reports as one line.
"""

from __future__ import annotations

from contextlib import contextmanager

from autotile.errors import InputError
from autotile.models.features import shape_features


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


def shape_names(op: str) -> list[str]:
    """The problem features this version computes for ``op`` (a unit selector's whole input)."""
    from autotile.kernels import registry

    try:
        dims = registry.get(op).dims
    except KeyError:
        raise ValueError(f"its op {op!r} is not one this version knows") from None
    return sorted(shape_features(op, dict.fromkeys(dims, 256), "fp16"))


def check_names(names: list[str], op: str, exact: bool) -> None:
    """The feature names must be this version's for ``op``: all of them for a selector
    (``exact``), and at least its problem features for a cost regressor (which adds params)."""
    want = shape_names(op)
    missing = sorted(set(want) - set(names))
    extra = sorted(set(names) - set(want)) if exact else []
    if missing or extra:
        diff = ", ".join([f"lacks {', '.join(missing[:3])}"] * bool(missing) + [f"has {', '.join(extra[:3])}"] * bool(extra))
        raise ValueError(f"its features are not this version's ({diff})")


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
