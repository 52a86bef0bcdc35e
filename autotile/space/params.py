"""Parameter kinds: integer ranges (step, power of two, multiple of) and choices.

An integer param may also carry ``where``, a condition on its own value (and earlier params)
that filters the domain, for relations a range cannot express (``step_kb`` a multiple or a
divisor of ``step_ka``): define-by-run suggestion then only offers values that satisfy it.

A parameter's domain may depend on the shape, dtype, hardware and earlier parameters through
its bound expressions. Each kind gives its domain two ways: ``domain(env)`` for one
configuration (a ``range`` or a list, what define-by-run suggestion needs) and
``grid(env, n)`` for ``n`` configurations at once (a :class:`Grid`, what enumeration needs).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from autotile.space.expr import CAP, EvalError, Expr

MAX_FILTERED = 100_000  # candidate values one row of a ``where`` domain may test


class BoundError(EvalError):
    """A bound (``low``, ``high``, ``step``, ``multiple_of``: ``key``) that evaluated to no usable
    integer: not finite, beyond 2**62, or a step that is not a positive whole number."""

    def __init__(self, key: str, reason: str):
        self.key = key
        super().__init__(reason)


class GridTooLarge(Exception):
    """Building a filtered domain would test more candidates than allowed."""


@dataclass(frozen=True)
class Grid:
    """Domains of ``n`` rows at once: row r holds ``count[r]`` values.

    Value i of row r is ``start[r] + i * step[r]`` (arithmetic), ``2 ** (start[r] + i)``
    (``pow2``), ``values[i]`` (``values`` given: the same choices on every row), or
    ``flat[offset[r] + i]`` (``flat`` given: explicit per-row lists, row after row).
    """

    count: np.ndarray
    start: np.ndarray | None = None
    step: np.ndarray | None = None
    pow2: bool = False
    values: np.ndarray | None = None
    flat: np.ndarray | None = None

    def value_at(self, rows: np.ndarray, index: np.ndarray) -> np.ndarray:
        """Values number ``index`` of rows ``rows`` (both int arrays of one length)."""
        if self.values is not None:
            return self.values[index]
        if self.flat is not None:
            if not len(self.flat):
                return np.zeros(len(rows), dtype=np.int64)
            offset = np.cumsum(self.count) - self.count
            return self.flat[np.minimum(offset[rows] + index, len(self.flat) - 1)]
        if self.pow2:
            return np.left_shift(np.int64(1), self.start[rows] + index)
        return self.start[rows] + index * self.step[rows]


@dataclass(frozen=True)
class IntParam:
    """Integers in ``[low, high]``: every ``step``-th from ``low``, the multiples of
    ``multiple_of``, or the powers of two (``pow2``). Float bounds round inwards."""

    name: str
    low: Expr
    high: Expr
    step: Expr | None = None
    multiple_of: Expr | None = None
    pow2: bool = False
    where: Expr | None = None
    units: tuple[str, ...] | None = None
    description: str = ""

    kind = "int"
    is_text = False

    @property
    def exprs(self) -> tuple[Expr, ...]:
        """The expressions that define the domain."""
        exprs = (self.low, self.high, self.step, self.multiple_of, self.where)
        return tuple(e for e in exprs if e is not None)

    @property
    def depends(self) -> tuple[str, ...]:
        """Environment keys the domain reads."""
        names = (n for e in self.exprs for n in e.names if n != self.name)
        return tuple(dict.fromkeys(names))

    def domain(self, env) -> Sequence[int]:
        """Allowed values for one configuration; EvalError if a bound cannot be evaluated.

        >>> from autotile.space.expr import Scope, compile_expr as c
        >>> s = Scope({})
        >>> list(IntParam("x", c("10", s), c("40", s), multiple_of=c("16", s)).domain({}))
        [16, 32]
        """
        values = self._unfiltered(env)
        if self.where is None:
            return values
        if len(values) > MAX_FILTERED:
            raise EvalError(f"{len(values)} candidates to filter with where (at most {MAX_FILTERED}): narrow "
                            "the domain first with pow2, multiple_of, step or a tighter high")
        out = []
        for v in values:
            try:
                if self.where.eval({**env, self.name: v}):
                    out.append(v)
            except EvalError:
                continue
        return out

    def _unfiltered(self, env) -> Sequence[int]:
        low = _round(self.low.eval(env), math.ceil, "low")
        high = _round(self.high.eval(env), math.floor, "high")
        if self.pow2:
            lo = max(low, 1)
            if high < lo:
                return []
            return [1 << e for e in range((lo - 1).bit_length(), high.bit_length())]
        if self.multiple_of is not None:
            m = _whole(self.multiple_of.eval(env), "multiple_of")
            return range(-(-low // m) * m, high + 1, m)
        step = _whole(self.step.eval(env), "step") if self.step is not None else 1
        return range(low, high + 1, step)

    def grid(self, env, n: int) -> Grid:
        """Domains of ``n`` rows; rows whose bounds fail to evaluate get an empty domain."""
        if self.where is not None and n > 1 and all(np.ndim(env[k]) == 0 for k in self.depends if k in env):
            # no earlier param read: one domain for every row, filtered once (roi_align's tile_c:
            # up to 19,660 candidates on each of ~1,000 rows of tile_rois x tile_bins, past 5e6)
            one = self.grid(env, 1)
            if not len(one.flat):
                return Grid(np.zeros(n, dtype=np.int64), flat=one.flat)
            return Grid(np.full(n, len(one.flat), dtype=np.int64), values=one.flat)
        grid = self._unfiltered_grid(env, n)
        if self.where is None:
            return grid
        count = np.where(grid.count > MAX_FILTERED, 0, grid.count)
        total = int(count.sum())
        if total > 50 * MAX_FILTERED:
            raise GridTooLarge
        rows = np.repeat(np.arange(n), count)
        index = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
        values = grid.value_at(rows, index)
        sub = {k: np.asarray(env[k])[rows] if np.ndim(env[k]) else env[k]
               for k in self.where.names if k != self.name}
        sub[self.name] = values
        ok, bad = self.where.eval_array(sub, total)
        keep = np.broadcast_to(np.asarray(ok) != 0, (total,)) & ~bad
        return Grid(np.bincount(rows[keep], minlength=n).astype(np.int64), flat=values[keep])

    def _unfiltered_grid(self, env, n: int) -> Grid:
        low, bad = _column(self.low, env, n, np.ceil)
        high, bad_h = _column(self.high, env, n, np.floor)
        bad |= bad_h
        if self.pow2:
            lo = np.maximum(low, 1)
            e_lo = np.where(lo > 1, _floor_log2(np.maximum(lo - 1, 1)) + 1, 0)
            e_hi = np.where(high >= 1, _floor_log2(np.maximum(high, 1)), -1)
            count = np.where(bad, 0, np.maximum(e_hi - e_lo + 1, 0))
            return Grid(count, start=e_lo, pow2=True)
        if self.multiple_of is not None:
            step, bad_s = _column(self.multiple_of, env, n, None)
            bad |= bad_s | (step <= 0)
            step = np.where(bad, 1, step)
            start = -np.floor_divide(-low, step) * step
        elif self.step is not None:
            step, bad_s = _column(self.step, env, n, None)
            bad |= bad_s | (step <= 0)
            step = np.where(bad, 1, step)
            start = low
        else:
            step, start = np.ones(n, dtype=np.int64), low
        count = np.where(bad | (high < start), 0, (high - start) // step + 1)
        return Grid(count, start=start, step=step)

    def to_dict(self) -> dict:
        out: dict = {"type": "int", "low": plain(self.low), "high": plain(self.high)}
        if self.step is not None:
            out["step"] = plain(self.step)
        if self.multiple_of is not None:
            out["multiple_of"] = plain(self.multiple_of)
        if self.pow2:
            out["pow2"] = True
        if self.where is not None:
            out["where"] = plain(self.where)
        return _common(self, out)


@dataclass(frozen=True)
class ChoiceParam:
    """A fixed list of values: ``categorical`` (numbers, text or bools), ``bool`` (false,
    true) or ``fixed`` (one value). Text-valued choices cannot be used in expressions."""

    name: str
    kind: str  # categorical | bool | fixed
    choices: tuple
    units: tuple[str, ...] | None = None
    description: str = ""
    by_unit: tuple | None = None  # ((unit, choices), ...) when the choices depend on the unit

    def for_unit(self, unit: str) -> ChoiceParam:
        """This param as one unit sees it (its own choices when they depend on the unit)."""
        if self.by_unit is None:
            return self
        return dataclasses.replace(self, choices=dict(self.by_unit)[unit], by_unit=None)

    depends = ()
    exprs = ()

    @property
    def is_text(self) -> bool:
        return any(isinstance(c, str) for c in self.choices)

    def domain(self, env) -> Sequence:
        return list(self.choices)

    def column_values(self) -> np.ndarray:
        """What a column of this param holds: the values, or indices into ``choices`` for text."""
        if self.is_text:
            return np.arange(len(self.choices), dtype=np.int64)
        return np.array(self.choices)

    def grid(self, env, n: int) -> Grid:
        return Grid(np.full(n, len(self.choices), dtype=np.int64), values=self.column_values())

    def to_dict(self) -> dict:
        if self.kind == "bool":
            out: dict = {"type": "bool"}
        elif self.kind == "fixed":
            out = {"type": "fixed", "value": self.choices[0]}
        elif self.by_unit is not None:
            out = {"type": "categorical", "choices": {u: list(c) for u, c in self.by_unit}}
        else:
            out = {"type": "categorical", "choices": list(self.choices)}
        return _common(self, out)


Param = IntParam | ChoiceParam


def plain(expr: Expr):
    """An expression as written in a normalized spec: a number when it is one, else its text."""
    for kind in (int, float):
        try:
            return kind(expr.text)
        except ValueError:
            pass
    return expr.text


def _common(p, out: dict) -> dict:
    if p.units is not None:
        out["units"] = list(p.units)
    if p.description:
        out["description"] = p.description
    return out


def _round(value, rounding, what: str) -> int:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise BoundError(what, f"{what} bound is {value}")
        if abs(value) > CAP:  # as _column: an integer beyond 2**62 is an evaluation failure
            raise BoundError(what, f"{what} bound {value:g} exceeds 2**62")
        return int(rounding(value))
    return int(value)


def _whole(value, what: str) -> int:
    if isinstance(value, float):
        if not value.is_integer():
            raise BoundError(what, f"{what} {value} is not a whole number")
        if abs(value) > CAP:
            raise BoundError(what, f"{what} {value:g} exceeds 2**62")
        value = int(value)
    if value <= 0:
        raise BoundError(what, f"{what} {value} is not positive")
    return int(value)


def _column(expr: Expr, env, n: int, rounding) -> tuple[np.ndarray, np.ndarray]:
    """An int64 column of ``expr`` over n rows and its bad mask; floats rounded (or must be whole)."""
    value, bad = expr.eval_array(env, n)
    value = np.broadcast_to(np.asarray(value), (n,))
    bad = np.array(np.broadcast_to(bad, (n,)))
    if value.dtype.kind == "f":
        with np.errstate(invalid="ignore"):
            finite = np.isfinite(value) & (np.abs(value) <= CAP)
            if rounding is None:
                finite &= np.floor(value) == value
                rounded = value
            else:
                rounded = rounding(value)
        bad |= ~finite
        value = np.where(finite, rounded, 0).astype(np.int64)
    else:
        value = value.astype(np.int64)
    return value, bad


def _floor_log2(x: np.ndarray) -> np.ndarray:
    """floor(log2(x)) of positive int64 values, exact."""
    e = (np.frexp(x.astype(np.float64))[1] - 1).astype(np.int64)
    e = np.where(np.left_shift(np.int64(1), e) > x, e - 1, e)
    return e
