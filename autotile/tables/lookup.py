"""Shape lookup: which tiling a kernel runs for a shape, and how it was found.

The rule, in order (the first that gives a feasible tiling wins):

1. ``exact`` / ``nearest``: among the entries of the queried dtype, in table order, those whose
   tiling is feasible for the queried shape; the one at the smallest log-space distance
   ``sum_d (log x_d - log e_d) ** 2`` (natural log, summed in dim order, ties to the earlier
   entry). Distance 0 (the same shape) is ``exact``. Feasible means: inside the entry's
   :class:`~autotile.tables.region.Region` (what the exported C header checks too; the entry's
   own shape alone when the spec's rules for its unit are not those its region function is
   derived from), and passing the spec's constraints (``space.check``) and the kernel's own ``check``.
2. ``model``: the learned model, when one is given: ``model(op, shape, dtype)`` returns params
   (or ``{"unit": ..., "params": ..., "how": ..., "warning": ..., "match": ...}``) or None; its
   answer is checked the same way. The cost model's hook (``model_hook.regressor_hook``) scores
   the default tiling beside the model's best candidates and answers it, with ``"match":
   "default"``, unless a candidate is faster (``regressor.pick_params``); that answer is
   ``default``, with ``how`` and ``warning`` saying why the model's pick was passed over.
3. ``default``: the kernel's heuristic ``default_params`` moved onto the spec's domains
   (``Space.project``) for each of the spec's units that computes the dtype
   (``Spec.units_for``: matmul's vector kernel has no int8), checked too. With several feasible, the one
   whose default simulates fastest wins (``default_unit``; beyond its simulation budget the
   table's nearest entry's unit, else the spec's order, decides).
   If none is feasible, :class:`NoFeasibleTiling` says why.

A lookup never returns a tiling that is infeasible for the queried shape; a model or default
answer it simulates at the shape is held to the spec's ``limits`` too (``default_unit.scored``),
as tune prunes a trial over a cap (an error limit only where executing the tiling for its errors
is cheap: ``default_unit.EXECUTE_ELEMENTS``; elsewhere ``how`` says it was not checked). An op without a kernel
(``replay``) has no kernel check and no heuristic: its table answers its tuned shapes, and any
other shape is a :class:`NoFeasibleTiling` that lists them.
"""

from __future__ import annotations

import importlib
import inspect
import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass, field

from autotile.errors import InfeasibleConfig, InputError
from autotile.kernels import registry
from autotile.tables.default_unit import OverLimits, also, choose, scored
from autotile.tables.region import Region, empty, exact, region_of
from autotile.tables.region_rules import custom_rule
from autotile.tables.schema import Table, load_table

MATCHES = ("exact", "nearest", "model", "default")
CYCLES_FROM = ("table", "simulator", "model")  # the entry's record, simulated at the shape, predicted


class NoFeasibleTiling(InputError):
    """Neither the table, the model nor the default heuristic fits the shape."""


@dataclass(frozen=True)
class Match:
    """The answer of a lookup."""

    shape: dict
    dtype: str
    match: str  # exact | nearest | model | default
    unit: str
    params: dict
    matched_shape: dict | None = None  # the entry's shape (exact / nearest)
    entry: int | None = None  # index into table.entries
    distance: float | None = None
    skipped: tuple[str, ...] = field(default=(), compare=False)  # why model/default were passed over
    how: str | None = field(default=None, compare=False)  # model: how it chose (ranked, simulated)
    warning: str | None = field(default=None, compare=False)  # model: the shape is outside its training
    # the entry passed the verification gate (exact / nearest); a model or default answer is no entry
    verified: bool = False
    # the answer's cycles at this shape, when known: the exact entry's, or those the model or
    # default step simulated (or the model predicted); ``cycles_from`` says which of CYCLES_FROM
    cycles: float | None = field(default=None, compare=False)
    cycles_from: str | None = field(default=None, compare=False)
    # the entry's recorded objective values beside cycles ({"max_abs_error": 0.021}) and the max abs
    # error the gate allowed it (its recorded error, not the dtype's tolerance), when the table has them
    values: dict | None = field(default=None, compare=False)
    verified_within: float | None = field(default=None, compare=False)
    # why the gate could not check the entry (too large to execute, out of memory), when it could not
    unverified: str | None = field(default=None, compare=False)

    def to_json(self) -> dict:
        out = {"shape": self.shape, "dtype": self.dtype, "matched_shape": self.matched_shape,
               "match": self.match, "unit": self.unit, "params": self.params, "verified": self.verified,
               "cycles": self.cycles, "cycles_from": self.cycles_from}
        if self.values is not None:  # only an entry of a study that trades accuracy has them
            out["values"] = self.values
        if self.verified_within is not None:
            out["verified_within"] = self.verified_within
        if self.unverified:
            out["unverified"] = self.unverified
        if self.how:
            out["how"] = self.how
        if self.warning:
            out["warning"] = self.warning
        return out


def positive_int(v) -> bool:
    """Whether ``v`` is an integer above 0: a Python or NumPy one (``numbers.Integral``), no bool."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool) and v > 0


def distance(a: tuple[int, ...], b: tuple[int, ...]) -> float:
    """Squared log-space distance, summed in dim order (the C header computes it identically)."""
    total = 0.0
    for x, y in zip(a, b):
        t = math.log(x) - math.log(y)
        total += t * t
    return total


class Lookup:
    """A table prepared for many lookups (regions and kernel computed once).

    >>> Lookup(load_table("results/matmul")).find({"m": 1000, "n": 2000, "k": 512}).match  # doctest: +SKIP
    'nearest'
    """

    def __init__(self, table, model: Callable | None = None):
        self.table: Table = load_table(table)
        self.model = model
        # None for a kernel-less op (replay): its table answers its tuned shapes and no more
        self.kernel = registry.implementation(self.table.op) if registry.get(self.table.op).module else None
        spec = self.table.spec
        # units whose region function does not apply to this spec's rules, and why
        self.custom: dict[str, str] = {u: why for u in spec.units if (why := custom_rule(spec, u)) is not None}
        self.regions: tuple[Region, ...] = tuple(self._region(e) for e in self.table.entries)

    def _region(self, e) -> Region:
        """What both lookups require of entry ``e``'s shapes: its op's region, its own shape alone
        with custom rules, and none when Python refuses it even at its own shape."""
        if self.reason(e.shape, e.params, e.dtype, e.unit) is not None:
            return empty(len(e.shape))
        if e.unit in self.custom:
            return exact(e.shape)
        return region_of(self.table.op, e.unit, e.shape, e.params, e.dtype, self.table.hardware)

    def served(self, e, shape: dict) -> dict:
        """Entry ``e``'s params as they run at ``shape``: the kernel's ``served`` where it has one
        (matmul keeps K whole at any K for a tiling that did not split it), else as stored."""
        serve = getattr(self.kernel, "served", None)
        return serve(dict(e.params), dict(e.shape), shape) if serve else dict(e.params)

    # -- feasibility ---------------------------------------------------------------------
    def reason(self, shape: dict, params: dict, dtype: str, unit: str) -> str | None:
        """None if ``params`` is feasible for ``shape``, else why not (spec, then kernel)."""
        spec = self.table.spec
        space = spec.space(shape, dtype, unit)
        try:
            why = space.check(params)
        except InputError as exc:
            return exc.message
        if why is not None or self.kernel is None:
            return why
        return kernel_check(self.kernel, shape, params, dtype, spec.hardware, unit, spec.inputs)

    # -- the rule ------------------------------------------------------------------------
    def find(self, shape: dict, dtype: str | None = None) -> Match:
        """The tiling for ``shape`` (dict of dims) and ``dtype`` (default: the spec's first)."""
        shape, dtype = self._query(shape, dtype)
        got = self.from_table(shape, dtype)
        if got is not None:
            return got
        skipped = []
        if self.model is not None:
            got = self._from_model(shape, dtype, skipped)
            if got is not None:
                return got
        return self._default(shape, dtype, skipped)

    def from_table(self, shape: dict, dtype: str | None = None) -> Match | None:
        """Steps 1-2 of the rule alone (what the C lookup implements): the exact or nearest entry
        for ``shape`` and ``dtype``, or None when no entry fits."""
        shape, dtype = self._query(shape, dtype)
        key = tuple(shape.values())
        best, best_d = None, math.inf
        for i, (e, r) in enumerate(zip(self.table.entries, self.regions)):
            if e.dtype != dtype or not r.contains(key):
                continue
            d = distance(key, tuple(e.shape.values()))
            if d < best_d and self.reason(shape, self.served(e, shape), dtype, e.unit) is None:
                best, best_d = i, d
        if best is not None:
            e = self.table.entries[best]
            known = best_d == 0.0 and e.cycles is not None  # a nearest entry's cycles are another shape's
            return Match(shape, dtype, "exact" if best_d == 0.0 else "nearest", e.unit, self.served(e, shape),
                         dict(e.shape), best, best_d, verified=e.verified, cycles=e.cycles if known else None,
                         cycles_from="table" if known else None, values=e.values,
                         verified_within=e.verified_within if e.verified else None,
                         unverified=None if e.verified else e.unverified)
        return None

    def _query(self, shape: dict, dtype: str | None) -> tuple[dict, str]:
        """``shape`` in dim order with Python ints (NumPy integers accepted: a shape read off an
        array's ``.shape`` or ``.size`` holds them) and the dtype, or an InputError naming the
        missing, unknown or bad dims."""
        dims = self.table.dims
        if not isinstance(shape, dict):
            raise InputError(f"shape: expected a mapping of {', '.join(dims)} to positive integers, got {shape!r}")
        missing, extra = [d for d in dims if d not in shape], [str(k) for k in shape if k not in dims]
        if missing or extra:
            said = ([f"missing {', '.join(missing)}"] if missing else []) + \
                   ([f"unknown {', '.join(extra)}"] if extra else [])
            raise InputError(f"shape: {'; '.join(said)} (a {self.table.op} table's dims: {', '.join(dims)})")
        bad = [f"{d}={shape[d]!r}" for d in dims if not positive_int(shape[d])]
        if bad:
            raise InputError(f"shape: expected positive integers for {', '.join(dims)}, got {', '.join(bad)}")
        dtype = dtype or self.table.dtypes[0]
        if dtype not in self.table.dtypes:  # the spec's: another dtype of the op was never tuned
            raise InputError(f"dtype: expected one of the table's dtypes {', '.join(self.table.dtypes)}, "
                             f"got {dtype!r}")
        return {d: int(shape[d]) for d in dims}, dtype

    def _from_model(self, shape, dtype, skipped) -> Match | None:
        answer = self.model(self.table.op, dict(shape), dtype)
        if answer is None:
            skipped.append("model: no answer")
            return None
        if "params" in answer and isinstance(answer["params"], dict):
            units, params = [answer.get("unit")], dict(answer["params"])
        else:
            params = dict(answer)
            units = [u for u in self.table.spec.units if set(self.table.spec.param_names(u)) == set(params)]
        for unit in units:
            if unit is None or unit not in self.table.spec.units:
                continue
            if unit not in self.table.spec.units_for(dtype):
                skipped.append(f"model ({unit}): {unit} does not compute {dtype}")
                continue
            why, unchecked = self.reason(shape, params, dtype, unit), None
            if why is None:
                why, unchecked = self._over_limits(shape, params, dtype, unit)
            if why is None:
                how, warning = (answer.get("how"), answer.get("warning")) if "params" in answer else (None, None)
                how = also(how, unchecked)
                # the model step may keep the default tiling: it was faster than the model's best
                match = "default" if "params" in answer and answer.get("match") == "default" else "model"
                cycles = answer.get("cycles") if "params" in answer else None
                source = answer.get("cycles_from") if cycles is not None else None
                return Match(shape, dtype, match, unit, params, skipped=tuple(skipped), how=how, warning=warning,
                             cycles=cycles, cycles_from=source if source in CYCLES_FROM else None)
            skipped.append(f"model ({unit}): {why}")
        if not units:
            skipped.append("model: its params fit no unit of the spec")
        return None

    def _over_limits(self, shape, params, dtype, unit) -> tuple[str | None, str | None]:
        """Why ``params`` break one of the spec's ``limits`` at ``shape`` (``default_unit.scored``,
        as tune scores a trial), else None; and why some limits were not checked, else None: all
        of them when the simulation would not fit the lookup's budget, the error limits when
        executing for them would not (their values are then unknown, which is not "over")."""
        spec = self.table.spec
        if not spec.limits or self.kernel is None:
            return None, None
        from autotile.models import sim_budget

        est = sim_budget.estimate_seconds(self.table.op, shape, dtype, unit, params, spec.backend, spec.inputs or {})
        if est > sim_budget.BUDGET_S:
            return None, f"the spec's limits ({', '.join(m for m, _ in spec.limits)}) not checked: not simulated"
        got = scored(self, shape, dtype, unit, params)
        return got.over, got.unchecked

    def _default(self, shape, dtype, skipped) -> Match:
        spec = self.table.spec
        if self.kernel is None:  # no heuristic to fall back on: say what such a table can answer
            text = ",".join(f"{k}={v}" for k, v in shape.items())
            tuned = "; ".join(",".join(f"{k}={v}" for k, v in e.shape.items())
                              for e in self.table.entries if e.dtype == dtype)
            why = "".join(f"{s}; " for s in skipped)
            raise NoFeasibleTiling(f"no tiling for {self.table.op} {text} {dtype}: {why}a table of op "
                                   f"{self.table.op} has no kernel for a default tiling, so it answers only "
                                   f"its tuned shapes ({f'{dtype}: {tuned}' if tuned else f'none in {dtype}'})")
        feasible, infeasible = [], []
        for unit in spec.units_for(dtype):  # a unit that does not compute the dtype has no default
            try:
                params = spec.space(shape, dtype, unit).default_tiling()
            except (InfeasibleConfig, ValueError, ZeroDivisionError) as exc:
                why = str(exc)
            else:
                if (why := self.reason(shape, params, dtype, unit)) is None:
                    feasible.append((unit, params))
                    continue
            skipped.append(f"default ({unit}): {why}")
            infeasible.append(unit)
        if feasible:
            try:
                got = choose(self, shape, dtype, feasible, infeasible)
            except OverLimits as exc:  # tune would have pruned it: no answer, as for an infeasible default
                skipped.extend(f"default ({unit}): over the spec's limits: {why}" for unit, why in exc.reasons)
                feasible = []
        if feasible:
            return Match(shape, dtype, "default", got.unit, got.params, skipped=tuple(skipped), how=got.how,
                         cycles=got.cycles, cycles_from="simulator" if got.cycles is not None else None)
        text = ",".join(f"{k}={v}" for k, v in shape.items())
        raise NoFeasibleTiling(f"no feasible tiling for {self.table.op} {text} {dtype}: no table entry "
                               f"fits, and {'; '.join(skipped)}")


def lookup(table, shape: dict, dtype: str | None = None, *, model: Callable | None = None) -> Match:
    """One lookup (see the module docstring for the rule). For many, build a :class:`Lookup`.

    >>> lookup("results/matmul/table.json", {"m": 1024, "n": 2048, "k": 512}).match  # doctest: +SKIP
    'exact'
    """
    return Lookup(table, model).find(shape, dtype)


# kernels whose ``check`` covers one unit, with another unit's kernel in a module of its own
UNIT_KERNELS = {("autotile.kernels.matmul", "vector"): "autotile.kernels.matmul_vector"}


def kernel_check(kernel, shape, params, dtype, hw, unit, options) -> str | None:
    """The ``unit`` kernel's own ``check`` (signatures differ by op), as None or the reason it fails."""
    if (module := UNIT_KERNELS.get((kernel.__name__, unit))) is not None:
        kernel = importlib.import_module(module)
    names = inspect.signature(kernel.check).parameters
    kw = {}
    if "unit" in names:
        kw["unit"] = unit
    if "kind" in names:
        kw["kind"] = kernel.kind_of(options)
    if "options" in names:
        kw["options"] = options
    try:
        kernel.check(dict(shape), dict(params), dtype, hw, **kw)
    except InfeasibleConfig as exc:
        return exc.reason
    except (KeyError, ValueError, TypeError) as exc:
        return f"the kernel cannot read this tiling: {exc}"
    return None
