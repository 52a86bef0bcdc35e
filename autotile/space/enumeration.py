"""Enumerating and counting a space with vectorized NumPy expansion.

Params are expanded in declaration order over a table of partial configurations; dependent
bounds are evaluated on whole columns, derived values are computed and constraints pruned as
soon as all their names are bound. Counting merges partial configurations that no later step
can tell apart into one weighted row: two rows are alike when every sub-expression of a later
bound, derived value or constraint that is already computable (``expr.ready_parts``) has the
same value on both. An exact count thus stays cheap even when the raw space has 1e15 points. When even that frontier would exceed ``max_rows``, the count is estimated by
sampling random root-to-leaf paths (Knuth's tree-size estimator, unbiased, with a 95% interval
that stays honest when few or none of the paths end feasible).
"""

from __future__ import annotations

import math
from collections import ChainMap
from dataclasses import dataclass

import numpy as np

from autotile.errors import InputError
from autotile.space.expr import Expr, Scope, compile_expr, ready_parts
from autotile.space.loader import namespaces, text_fields
from autotile.space.params import ChoiceParam, GridTooLarge, Param
from autotile.space.spec import Constraint, Derived

MAX_ROWS = 4_000_000  # rows of the working table an enumeration may build
COUNT_ROWS = 500_000  # rows of the merged table before counting falls back to sampling
SAMPLES = 50_000
_WEIGHT_LIMIT = 2.0**62


@dataclass(frozen=True)
class Enumeration:
    """Feasible configurations as columns: one NumPy array per param and derived value.

    Text-valued params (e.g. ``iterate_order``) hold indices into ``decoders[name]``; all
    other columns hold the values themselves.
    """

    columns: dict
    decoders: dict
    names: tuple[str, ...]  # the param columns, in declaration order

    def __len__(self) -> int:
        return len(next(iter(self.columns.values()))) if self.columns else 0

    def row(self, i: int) -> dict:
        """Param values of configuration ``i`` as plain Python values (text decoded)."""
        out = {}
        for name in self.names:
            v = self.columns[name][i].item()
            out[name] = self.decoders[name][v] if name in self.decoders else v
        return out


@dataclass(frozen=True)
class Count:
    """Sizes of one space. ``method`` is ``exact`` or ``sampled`` (then ``samples``, the
    number of them that ended feasible ``feasible_samples``, and the 95% interval ``ci95`` of
    the feasible size are set, and ``raw_exact`` says whether the raw size was still counted
    exactly). ``top_constraint`` is the message of the constraint failed
    by most raw points, ``top_removes`` how many raw points fail it."""

    raw_size: int
    feasible_size: int
    method: str
    top_constraint: str | None
    top_removes: int
    samples: int | None = None
    ci95: tuple[int, int] | None = None
    raw_exact: bool = True
    feasible_samples: int | None = None

    def to_dict(self) -> dict:
        out = {"raw_size": self.raw_size, "feasible_size": self.feasible_size,
               "method": self.method, "top_constraint": self.top_constraint,
               "top_constraint_removes": self.top_removes}
        if self.method == "sampled":
            out.update(samples=self.samples, feasible_samples=self.feasible_samples,
                       ci95=list(self.ci95), raw_exact=self.raw_exact)
        return out


class _TooLarge(Exception):
    """The exact computation would need more rows (or larger counts) than allowed."""


def enumerate_space(space, max_rows: int = MAX_ROWS) -> Enumeration:
    """All feasible configurations of ``space``; InputError if more than ``max_rows`` rows
    would be needed at any step."""
    try:
        cols, _ = _expand(space, space.constraints, keep_all=True, max_rows=max_rows)
    except (_TooLarge, GridTooLarge):
        raise InputError(f"space of {space.spec.op.name} {space.shape} {space.dtype} {space.unit} "
                         f"needs more than {max_rows} rows to enumerate; use count() or "
                         "narrow the params", file=space.spec.file, field="params") from None
    names = space.names
    decoders = {p.name: p.choices for p in space.params if isinstance(p, ChoiceParam) and p.is_text}
    return Enumeration(cols, decoders, names)


def count_space(space, max_rows: int = COUNT_ROWS, samples: int = SAMPLES,
                seed: int | None = None) -> Count:
    """Raw size, feasible size and the constraint that removes the most raw points.

    Exact whenever the merged expansion stays under ``max_rows`` rows, else estimated from
    ``samples`` random paths seeded with ``seed`` (default: the spec's seed).
    """
    seed = space.spec.seed if seed is None else seed
    parts = _PartCache(space)
    raw = _exact(space, (), max_rows, parts)
    feasible = _exact(space, space.constraints, max_rows, parts) if raw is not None else None
    if feasible is not None:
        kept = [_exact(space, (c,), max_rows, parts) for c in space.constraints]
        if None not in kept:
            removes = [raw - k for k in kept]
            top = max(range(len(removes)), key=lambda i: removes[i], default=None)
            if top is None or removes[top] == 0:
                return Count(raw, feasible, "exact", None, 0)
            return Count(raw, feasible, "exact", space.constraints[top].message, removes[top])
    try:
        return _sampled(space, samples, seed, raw)
    except GridTooLarge:
        raise InputError("a 'where' domain has too many candidates to sample; give its "
                         "param tighter bounds", file=space.spec.file, field="params") from None


class _PartCache:
    """Compiled ready parts of a space's expressions, shared by the counts of one space."""

    def __init__(self, space):
        op, backend = space.spec.op, space.spec.backend
        ns = namespaces(op, space.spec.hardware, backend)
        names = tuple(p.name for p in space.params if not p.is_text)
        here = {p.name for p in space.params if p.is_text}  # checked against every unit's choices, as loaded
        texts = {p.name: p.choices for p in space.spec.params if p.name in here}
        self.scope = Scope(ns, names + tuple(d.name for d in space.derived), texts=texts,
                           text_fields=text_fields(op, backend))
        self.compiled: dict[str, Expr] = {}
        self.texts: dict[tuple, list[str]] = {}

    def after(self, later_steps, bound: frozenset) -> list[Expr]:
        """Ready parts of the expressions of ``later_steps`` once ``bound`` names are known."""
        out: dict[str, None] = {}
        for step in later_steps:
            for e in _exprs(step):
                key = (e.text, bound)
                if key not in self.texts:
                    self.texts[key] = ready_parts(e.text, lambda k: "." in k or k in bound)
                out.update(dict.fromkeys(self.texts[key]))
        return [self.compiled.setdefault(t, compile_expr(t, self.scope)) for t in out]


def _exact(space, constraints, max_rows: int, parts: _PartCache) -> int | None:
    """Number of raw points satisfying ``constraints``; None if too large to count exactly."""
    try:
        _, weight = _expand(space, constraints, keep_all=False, max_rows=max_rows, parts=parts)
    except (_TooLarge, GridTooLarge):
        return None
    if weight.astype(np.float64).sum() < _WEIGHT_LIMIT:
        return int(weight.sum())
    return sum(int(w) for w in weight)


def _steps(space, constraints, keep_all: bool) -> list:
    """Params in order, each followed by the derived values and constraints it completes;
    constraints on shape/hw alone come first. Without ``keep_all``, unneeded derived are dropped."""
    pending_d = list(space.derived)
    pending_c = list(constraints)
    bound: set[str] = set()
    steps: list = []

    def flush():
        changed = True
        while changed:
            changed = False
            for d in list(pending_d):
                if _bare(d.expr.names) <= bound:
                    steps.append(d)
                    bound.add(d.name)
                    pending_d.remove(d)
                    changed = True
        for c in list(pending_c):
            if _bare(c.expr.names) <= bound:
                steps.append(c)
                pending_c.remove(c)

    flush()
    for p in space.params:
        steps.append(p)
        bound.add(p.name)
        flush()
    if keep_all:
        return steps
    needed: set[str] = set()
    kept = []
    for s in reversed(steps):
        if isinstance(s, Derived) and s.name not in needed:
            continue
        kept.append(s)
        needed |= set(_reads(s))
    return kept[::-1]


def _expand(space, constraints, *, keep_all: bool, max_rows: int, parts: _PartCache | None = None):
    """(columns, weights) after all steps; see the module docstring. Without ``keep_all``,
    rows are merged after each step using ``parts``."""
    steps = _steps(space, constraints, keep_all)
    needed_after: list[set[str]] = [set()] * len(steps)
    acc: set[str] = set()
    for i in range(len(steps) - 1, -1, -1):
        needed_after[i] = set(acc)
        acc |= set(_reads(steps[i]))
    base = space.base_env()
    cols: dict[str, np.ndarray] = {}
    weight = np.ones(1, dtype=np.int64)
    n = 1
    bound: set[str] = set()
    for i, step in enumerate(steps):
        if isinstance(step, (Param, Derived)):
            bound.add(step.name)
        env = ChainMap(cols, base)
        if isinstance(step, Param):
            grid = step.grid(env, n)
            count = grid.count
            if not keep_all and step.name not in needed_after[i]:
                if weight.size and float(weight.max()) * float(count.max(initial=0)) >= _WEIGHT_LIMIT:
                    raise _TooLarge
                weight = weight * count
                keep = weight > 0
            else:
                total = int(count.sum())
                if total > max_rows:
                    raise _TooLarge
                rows = np.repeat(np.arange(n), count)
                index = np.arange(total) - np.repeat(np.cumsum(count) - count, count)
                cols = {k: v[rows] for k, v in cols.items()}
                cols[step.name] = grid.value_at(rows, index)
                weight = weight[rows]
                n = total
                keep = None
        elif isinstance(step, Derived):
            value, bad = step.expr.eval_array(env, n)
            cols[step.name] = np.array(np.broadcast_to(value, (n,)))
            keep = ~bad
        else:
            value, bad = step.expr.eval_array(env, n)
            keep = np.broadcast_to(np.asarray(value) != 0, (n,)) & ~bad
        if keep is not None and not keep.all():
            cols = {k: v[keep] for k, v in cols.items()}
            weight = weight[keep]
            n = int(keep.sum())
        if not keep_all:
            cols = {k: v for k, v in cols.items() if k in needed_after[i]}
            env = ChainMap(cols, base)
            keys = []
            for part in parts.after(steps[i + 1:], frozenset(bound)):
                value, bad = part.eval_array(env, n)
                keys.append(np.where(bad, 0, np.broadcast_to(value, (n,))))
                if bad.any():
                    keys.append(bad)
            cols, weight = _merge(cols, weight, keys)
            n = len(weight)
    return cols, weight


def _merge(cols: dict, weight: np.ndarray, keys: list):
    """Merge rows with equal ``keys`` into their first row, summing their weights."""
    if len(weight) <= 1:
        return cols, weight
    if weight.astype(np.float64).sum() >= _WEIGHT_LIMIT:
        raise _TooLarge
    if not keys:
        return {k: v[:1] for k, v in cols.items()}, np.array([weight.sum()], dtype=np.int64)
    columns = [_key(k) for k in keys]
    digest = np.zeros(len(weight), dtype=np.uint64)
    for col in columns:  # a hash of the keys; checked below, so a collision costs time only
        digest = digest * np.uint64(0x9E3779B97F4A7C15) + col.view(np.uint64)
    _, first, group = np.unique(digest, return_index=True, return_inverse=True)
    if len(first) == len(weight):
        return cols, weight  # all rows differ
    if all(np.array_equal(col, col[first][group]) for col in columns):
        merged = np.zeros(len(first), dtype=np.int64)
        np.add.at(merged, group, weight)
        return {k: v[first] for k, v in cols.items()}, merged
    stacked = np.stack(columns)
    order = np.lexsort(stacked)
    stacked = stacked[:, order]
    starts = np.flatnonzero(np.r_[True, np.any(stacked[:, 1:] != stacked[:, :-1], axis=0)])
    return {k: v[order][starts] for k, v in cols.items()}, np.add.reduceat(weight[order], starts)


def _key(col: np.ndarray) -> np.ndarray:
    if col.dtype.kind == "f":
        return np.ascontiguousarray(col, dtype=np.float64).view(np.int64)
    return col.astype(np.int64)


def _sampled(space, samples: int, seed: int, raw_exact: int | None) -> Count:
    """Knuth's estimator: walk ``samples`` random paths, weight each leaf by the product of
    the domain sizes along it; the mean weight estimates the raw size (unless ``raw_exact``
    is known), the mean over feasible leaves the feasible size."""
    rng = np.random.default_rng(seed)
    n = samples
    cols: dict[str, np.ndarray] = {}
    base = space.base_env()
    weight = np.ones(n, dtype=np.float64)
    feasible = np.ones(n, dtype=bool)
    fails = {}
    for step in _steps(space, space.constraints, keep_all=True):
        env = ChainMap(cols, base)
        if isinstance(step, Param):
            grid = step.grid(env, n)
            count = grid.count
            index = np.minimum((rng.random(n) * count).astype(np.int64), np.maximum(count - 1, 0))
            with np.errstate(all="ignore"):
                cols[step.name] = grid.value_at(np.arange(n), index)
            weight *= count
        elif isinstance(step, Derived):
            value, bad = step.expr.eval_array(env, n)
            cols[step.name] = np.array(np.broadcast_to(value, (n,)))
            feasible &= ~bad
        else:
            value, bad = step.expr.eval_array(env, n)
            ok = np.broadcast_to(np.asarray(value) != 0, (n,)) & ~bad
            fails[id(step)] = (step, ~ok)
            feasible &= ok
    if raw_exact is not None:
        # ratio estimator: the exact raw size times the weighted feasible share
        raw = raw_exact
        total = weight.sum()
        share = float((weight * feasible).sum() / total) if total else 0.0
        se = float(np.std(weight * (feasible - share)) / weight.mean() / math.sqrt(n)) if total else 0.0
        estimate, half = raw * share, 1.96 * raw * se

        def removed(failed):
            return raw * float((weight * failed).sum() / total) if total else 0.0
    else:
        raw = round(float(weight.mean()))
        estimate = float((weight * feasible).mean())
        half = 1.96 * float((weight * feasible).std()) / math.sqrt(n)

        def removed(failed):
            return float((weight * failed).mean())
    top, removes = None, 0.0
    for step, failed in fails.values():
        r = removed(failed)
        if r > removes:
            top, removes = step.message, r
    estimate = min(round(estimate), raw)
    # the normal interval collapses to a point when no (or every) path is feasible, so widen it
    # to the Wilson score interval of the feasible share; each covers 95%, so their union does
    lo, hi = _wilson(weight, feasible)
    ci = (max(0, min(math.floor(estimate - half), math.floor(raw * lo))),
          min(raw, max(math.ceil(estimate + half), math.ceil(raw * hi))))
    return Count(raw, estimate, "sampled", top, round(removes), samples, ci, raw_exact is not None,
                 int(feasible.sum()))


def _wilson(weight: np.ndarray, feasible: np.ndarray, z: float = 1.96) -> tuple[float, float]:
    """95% Wilson score interval of the weighted feasible share. Unlike the normal interval it
    is not empty at zero hits (upper bound ~3.8 / samples) nor at all hits. Its sample size is
    the effective one of the ratio estimator's variance (so it matches the normal interval
    where that holds), or Kish's (all samples when the weights are equal) at 0 or all hits."""
    if not weight.size or not weight.max():
        return 0.0, 1.0
    weight = weight / weight.max()  # the squares of path weights of 1e200 would overflow
    total = float(weight.sum())
    share = float((weight * feasible).sum()) / total
    var = float(((weight * (feasible - share)) ** 2).sum()) / (total * total)
    if 0 < share < 1 and var > 0:
        n = min(len(weight), share * (1 - share) / var)
    else:
        n = total * total / float((weight * weight).sum())
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z / (1 + z * z / n) * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n))
    return max(0.0, centre - half), min(1.0, centre + half)


def _exprs(step) -> tuple[Expr, ...]:
    if isinstance(step, Param):
        return step.exprs
    return (step.expr,)


def _reads(step) -> tuple[str, ...]:
    if isinstance(step, Param):
        return tuple(_bare(step.depends))
    if isinstance(step, (Derived, Constraint)):
        return tuple(_bare(step.expr.names))
    return ()


def _bare(names) -> set[str]:
    return {n for n in names if "." not in n}
