"""The search space of one (shape, dtype, unit): domains, evaluation, checking.

This is what the tuner and the simulator use: ``names`` for the params to suggest,
``domain(name, env)`` for define-by-run suggestion, ``check(params)`` for feasibility with a
readable reason, ``evaluate(params)`` for the derived values, ``enumerate()`` and ``count()``
for the whole space.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from autotile import dtypes as dtypes_mod
from autotile.errors import InfeasibleConfig, InputError
from autotile.space.enumeration import MAX_ROWS, Count, Enumeration, count_space, enumerate_space
from autotile.space.expr import TEXT_CHOICES, EvalError, Scope, compile_expr, fixed_parts
from autotile.space.loader import input_fields, namespaces, text_fields
from autotile.space.options import kernel_options
from autotile.space.params import BoundError, ChoiceParam, IntParam, Param
from autotile.space.repair import nearest_feasible
from autotile.space.spec import Constraint, Derived, Spec
from autotile.yamlsrc import suggest


@dataclass(frozen=True)
class Space:
    """One shape x dtype x unit of a spec, with the params, derived values and constraints
    that apply to that unit (those referring to a param of another unit are left out)."""

    spec: Spec
    shape: dict
    dtype: str
    unit: str
    params: tuple[Param, ...]
    derived: tuple[Derived, ...]
    constraints: tuple[Constraint, ...]

    @classmethod
    def of(cls, spec: Spec, shape, dtype: str | None = None, unit: str | None = None) -> Space:
        """Validate the shape (dict, or tuple in dim order), dtype and unit and build the space."""
        dims = spec.op.dims
        if not isinstance(shape, dict):
            shape = dict(zip(dims, shape)) if len(shape) == len(dims) else {}
        if set(shape) != set(dims) or any(
            isinstance(v, bool) or not isinstance(v, int) or v <= 0 for v in shape.values()
        ):
            raise InputError(f"shape: expected positive integers for {', '.join(dims)}, got {shape}")
        dtype = dtype or spec.dtypes[0]
        if dtype not in spec.op.dtypes:
            raise InputError(f"dtype: unknown dtype {dtype!r} for {spec.op.name}, expected one of "
                             f"{', '.join(spec.op.dtypes)}" + suggest(dtype, spec.op.dtypes))
        unit = unit or spec.units[0]
        if unit not in spec.units:
            raise InputError(f"unit: {unit!r} is not a unit of this spec, expected one of "
                             f"{', '.join(spec.units)}" + suggest(unit, spec.units))
        if not spec.op.supports(unit, dtype):
            has = dict(spec.op.unit_dtypes)[unit]
            raise InputError(f"dtype: the {spec.op.name} kernel on {unit} computes in {', '.join(has)}, "
                             f"not {dtype}")
        problem = spec.hardware.dtype_problem(unit, dtype)
        if problem:
            raise InputError(f"dtype: {problem}")
        shape = {d: shape[d] for d in dims}
        return cls(spec, shape, dtype, unit, *unit_rules(spec, unit))

    @property
    def names(self) -> tuple[str, ...]:
        """Param names of this space, in declaration order (the order to suggest them)."""
        return tuple(p.name for p in self.params)

    def base_env(self) -> dict:
        """The ``shape.``, ``dtype.``, ``hw.`` and ``unit.`` values of expressions (``unit.cores``:
        the cube cores for the cube, the vector cores for the units that run on them); a copy."""
        return dict(self._base_env)

    @functools.cached_property
    def _base_env(self) -> dict:
        """``base_env``, built once (never modified: callers get a copy or merge it)."""
        dt = dtypes_mod.get(self.dtype)
        env = {f"shape.{k}": v for k, v in self.shape.items()}
        env.update({"dtype.bytes": dt.bytes, "dtype.c0": dt.c0, "dtype.acc_bytes": dt.acc_bytes,
                    "dtype.name": dt.name})
        env.update({f"hw.{k}": v for k, v in self.spec.hardware.symbols().items()})
        hw = self.spec.hardware
        env["unit.cores"] = hw.cube_cores if self.unit == "cube" else hw.vector_cores
        env.update(self._inputs_env)
        # what a text param's column (indices) means, for ``param == "choice"`` on columns
        env.update({TEXT_CHOICES + p.name: tuple(p.choices) for p in self.params
                    if isinstance(p, ChoiceParam) and p.is_text})
        return env

    @functools.cached_property
    def _inputs_env(self) -> dict:
        """``inputs.<option>``: the op's options as the spec sets them, defaults filled in, in the
        kernel's one spelling (``options.kernel_options``)."""
        if not input_fields(self.spec.op, self.spec.backend):
            return {}
        return {f"inputs.{k}": v for k, v in kernel_options(self.spec.op, self.spec.inputs).items()}

    def param(self, name: str) -> Param:
        for p in self.params:
            if p.name == name:
                return p
        raise InputError(f"unknown param {name!r} in unit {self.unit}" + suggest(name, self.names))

    def domain(self, name: str, env: dict) -> Sequence:
        """Allowed values of ``name`` given the values of the params above it in ``env``.

        Returns a ``range`` for integer steps and multiples, else a list; empty when the
        bounds cannot be evaluated (the configuration is infeasible). InputError naming them
        when ``env`` lacks params the domain reads (a bare KeyError said only one name).

        >>> space.domain("base_k", {"db_l0a": 2, "db_l0b": 2, "base_m": 128, "base_n": 128})  # doctest: +SKIP
        range(16, 129, 16)
        """
        p = self.param(name)
        missing = [d for d in self._reads[name] if d not in env]
        if missing:
            raise InputError(f"missing params: {', '.join(missing)} (the domain of {name} reads them)")
        try:
            return p.domain({**self._base_env, **env})
        except EvalError:
            return []

    @functools.cached_property
    def _reads(self) -> dict:
        """The params of this space each param's domain reads, by name."""
        return {p.name: tuple(d for d in p.depends if d in self.names) for p in self.params}

    def domain_memo(self):
        """``domain`` remembered per param and values of the earlier params it reads: for many
        configurations drawn over one space (a domain reads few params, so values repeat)."""
        reads = self._reads
        memo: dict = {}
        missing = object()

        def domain(name: str, env: dict) -> Sequence:
            key = (name, *((type(v), v) for v in (env.get(d, missing) for d in reads[name])))
            got = memo.get(key)
            if got is None:
                got = memo[key] = self.domain(name, env)
            return got

        return domain

    def _env(self, params: dict) -> dict:
        for k in params:
            if k not in self.names:
                raise InputError(f"unknown param {k!r} in unit {self.unit}" + suggest(k, self.names))
        missing = [n for n in self.names if n not in params]
        if missing:
            raise InputError(f"missing params: {', '.join(missing)}")
        return {**self._base_env, **params}

    def evaluate(self, params: dict) -> dict:
        """The environment of one configuration: shape/dtype/hw, params and derived values.

        Raises InfeasibleConfig if a derived value cannot be computed (e.g. division by zero).
        """
        env = self._env(params)
        for d in self.derived:
            try:
                env[d.name] = d.expr.eval(env)
            except EvalError as exc:
                raise InfeasibleConfig(f"{d.name}: {exc.reason}") from None
        return env

    def check(self, params: dict) -> str | None:
        """None if ``params`` is feasible, else the first reason it is not, with the numbers.

        >>> space.check({..., "base_k": 48, ...})  # doctest: +SKIP
        'base_k=48 outside its domain [16, 32, 64, 128, 256]'
        """
        env = self._env(params)
        for p in self.params:
            dom, reason = _domain_of(p, env)
            if reason is not None:
                return reason
            if not _contains(dom, env[p.name]):
                return f"{p.name}={_fmt(env[p.name])} outside its domain {describe(dom)}"
        return self.constraint_failure(params)

    def outside_domain(self, params: dict) -> tuple[str, Sequence] | None:
        """The first param whose value lies outside its domain (given the values above it) and
        that domain, or None. A domain that cannot be evaluated is skipped: ``check`` calls the
        configuration infeasible then, while this asks only whether a value is a possible one."""
        env = {**self._base_env, **params}
        for p in self.params:
            try:
                dom = p.domain(env)
            except EvalError:
                continue
            if p.name in params and not _contains(dom, params[p.name]):
                return p.name, dom
        return None

    def project(self, params: dict) -> dict:
        """``params`` moved onto this space's domains, param by param in spec order: a number to
        the nearest value its domain allows (by ratio, ties going down, so 304 becomes 256 among
        powers of two), a choice the spec leaves out to its first choice.

        The kernels' heuristic tilings know nothing of a spec's domains; this is the same tiling
        as the spec can say it. Constraints are not looked at (``check`` the result).
        """
        out = dict(params)
        env = {**self._base_env, **out}
        for p in self.params:
            v = out.get(p.name)
            try:
                dom = p.domain(env)
            except EvalError:
                break
            if v is None or not len(dom) or _contains(dom, v):
                continue
            numeric = near_values(dom, v) if _is_num(v) and not isinstance(p, ChoiceParam) else []
            out[p.name] = min(numeric, key=lambda d: (_distance(d, v), d)) if numeric else dom[0]
            env[p.name] = out[p.name]
        return out

    def default_tiling(self) -> dict:
        """The kernel's heuristic tiling for this shape, dtype, unit and the spec's ``inputs``,
        restricted to this space's params and ``project``-ed onto their domains; when that breaks
        a constraint, the nearest feasible tiling a short walk over the domains finds
        (``repair.nearest_feasible``), else the projection (``check`` it). The tune baseline,
        simulate's and lookup's default."""
        from autotile.kernels import registry

        kernel = registry.implementation(self.spec.op.name)
        base = kernel.default_params(dict(self.shape), self.dtype, self.spec.hardware, self.unit,
                                     options=self.spec.inputs)
        base = {k: v for k, v in base.items() if k in self.names}
        moved = self.project(base)
        if set(moved) != set(self.names) or self.check(moved) is None:
            return moved
        return nearest_feasible(self, moved, base) or moved

    def require_evaluable(self) -> None:
        """Raise an InputError, located at the expression, if a part of one that reads no param
        (``expr.fixed_parts``) cannot be evaluated here, or a param's domain that reads none
        cannot be built: every configuration would be infeasible for that one reason, which is
        a spec error for this shape (a count would just say the space is empty)."""
        env = self.base_env()
        for field, expr in self._exprs():
            for part in fixed_parts(expr.text):
                try:
                    compile_expr(part, self._scope).eval(env)
                except EvalError as exc:
                    self._unevaluable(field, exc.reason)
        for p in self.params:
            if isinstance(p, IntParam) and not _bare(p.depends):
                try:
                    p.domain(env)
                except EvalError as exc:
                    key = f".{exc.key}" if isinstance(exc, BoundError) else ""
                    self._unevaluable(f"params.{p.name}{key}", exc.reason)

    def _exprs(self):
        """(spec field, expression) of every expression of this space."""
        for p in self.params:
            if isinstance(p, IntParam):
                for key in ("low", "high", "step", "multiple_of", "where"):
                    if getattr(p, key) is not None:
                        yield f"params.{p.name}.{key}", getattr(p, key)
        for d in self.derived:
            yield f"derived.{d.name}", d.expr
        for c in self.constraints:
            yield f"constraints[{self.spec.constraints.index(c)}].expr", c.expr

    @property
    def _scope(self) -> Scope:
        op, backend = self.spec.op, self.spec.backend
        return Scope(namespaces(op, self.spec.hardware, backend), text_fields=text_fields(op, backend))

    def _unevaluable(self, field: str, reason: str):
        shape = ",".join(f"{k}={v}" for k, v in self.shape.items())
        raise self.spec.error_at(field, f"cannot evaluate for {shape} {self.dtype} {self.unit}: {reason}")

    def empty_reason(self) -> str | None:
        """Why the space has no point at all (raw size 0), as ``check`` says it: the first param
        whose domain is empty when each param above it takes its first value; None if none is.
        With raw size 0 every path has such a param, so one is found."""
        env = dict(self._base_env)
        for p in self.params:
            dom, reason = _domain_of(p, env)
            if reason is not None:
                return reason
            env[p.name] = dom[0]
        return None

    def constraint_failure(self, params: dict) -> str | None:
        """The second half of ``check``, for params already known to lie in their domains (drawn
        from them): None if the derived values and the constraints hold, else the first reason."""
        try:
            env = self.evaluate(params)
        except InfeasibleConfig as exc:
            return exc.reason
        for c in self.constraints:
            try:
                ok = c.expr.eval(env)
            except EvalError as exc:
                return f"{c.message}: {exc.reason} ({_numbers(c, env)})"
            if not ok:
                return f"{c.message} ({c.expr.text} with {_numbers(c, env)})"
        return None

    def enumerate(self, max_rows: int = MAX_ROWS) -> Enumeration:
        """Every feasible configuration as columns (see enumeration.Enumeration)."""
        return enumerate_space(self, max_rows)

    def count(self, **kw) -> Count:
        """Raw and feasible sizes, method and top constraint (see enumeration.count_space)."""
        return count_space(self, **kw)


def _domain_of(p, env: dict):
    """(``p``'s domain given ``env``, None), or (None, why it has no value: its domain cannot be
    evaluated or is empty), as ``check`` reports it."""
    try:
        dom = p.domain(env)
    except EvalError as exc:
        return None, f"{p.name}: cannot evaluate its domain: {exc.reason}"
    if not len(dom):
        return None, _no_value(p, env)
    return dom, None


def _no_value(p, env: dict) -> str:
    """Why ``p`` has no value here (its domain is empty), with its bounds and what they read:
    a domain bounded by a buffer of the profile (``hw.l0c_bytes``) that admits nothing means
    no tiling of this param fits that profile (a 512-byte L0C holds no 16 x 16 fp32 block),
    which "base_n=64 outside its domain (empty)" did not say.

    >>> _no_value(spec.param("base_n"), env)  # doctest: +SKIP
    "base_n: no value fits the profile's buffers (its domain is empty: low 16, high 8, with hw.l0c_bytes=512, ...)"
    """
    bounds = []
    for key in ("low", "high"):
        try:
            bounds.append(f"{key} {_fmt(getattr(p, key).eval(env))}")
        except (EvalError, AttributeError):  # a bound that fails, or a choice param (no bounds)
            continue
    reads = [f"{k}={_fmt(env[k])}" for k in getattr(p, "depends", ()) if k in env]
    detail = ", ".join(bounds) + (f", with {', '.join(reads)}" if reads else "")
    buffers = any(k.startswith("hw.") and k.endswith("_bytes") for k in getattr(p, "depends", ()))
    what = "no value fits the profile's buffers" if buffers else "no value is allowed"
    return f"{p.name}: {what} (its domain is empty" + (f": {detail})" if detail else ")")


def _numbers(c: Constraint, env: dict) -> str:
    return ", ".join(f"{k}={_fmt(env[k])}" for k in c.expr.names)


def describe(dom: Sequence) -> str:
    """A short text for a domain that shows its pattern: up to 12 values in full; a longer
    progression as its first three values, "..." and the last; anything else as its first five
    and last two. A long domain says how many values it has, so ``...`` never reads as "every
    integer in between" when it is not.

    >>> describe([1, 2, 3, 4, 6, 8, 12, 16, 24, 48])
    '[1, 2, 3, 4, 6, 8, 12, 16, 24, 48]'
    >>> describe([2**i for i in range(13)])
    '[1, 2, 4, ..., 4096] (13 values)'
    """
    if len(dom) == 0:
        return "(empty)"
    if len(dom) <= 12:
        return "[" + ", ".join(_fmt(v) for v in dom) + "]"
    head = 3 if _progression(dom) else 5
    tail = [dom[-1]] if head == 3 else list(dom[-2:])
    shown = [_fmt(v) for v in dom[:head]] + ["..."] + [_fmt(v) for v in tail]
    return f"[{', '.join(shown)}] ({len(dom)} values)"


def _progression(dom: Sequence) -> bool:
    """True for numbers with a constant step or a constant ratio."""
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in dom):
        return False
    steps = {b - a for a, b in zip(dom, dom[1:])}
    ratios = {b / a for a, b in zip(dom, dom[1:])} if all(dom) else set()
    return len(steps) == 1 or len(ratios) == 1


def _is_num(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def near_values(dom: Sequence, v) -> list:
    """The values of ``dom`` that can be nearest to ``v``, by any measure that grows with the gap:
    an increasing range's two neighbours of v (a range may hold ~1e8 values), else every number."""
    if isinstance(dom, range) and dom.step > 0:
        k = min(max((int(v) - dom.start) // dom.step, 0), len(dom) - 1)
        return [dom[i] for i in {k, min(k + 1, len(dom) - 1)}]
    return [d for d in dom if _is_num(d)]


def _distance(d, v) -> float:
    """How far apart two sizes are: by ratio when both are positive, else by difference."""
    if d > 0 and v > 0:
        return max(d / v, v / d)
    return abs(d - v) + 1e12


def _contains(dom: Sequence, value) -> bool:
    if isinstance(dom, range):
        return (not isinstance(value, bool) and isinstance(value, (int, float))
                and float(value).is_integer() and int(value) in dom)
    return any(value == v and isinstance(value, str) == isinstance(v, str) for v in dom)


def _fmt(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def unit_rules(spec: Spec, unit: str) -> tuple[tuple[Param, ...], tuple[Derived, ...], tuple[Constraint, ...]]:
    """The params, derived values and constraints of ``unit``'s space (whatever the shape)."""
    params = tuple(p.for_unit(unit) if isinstance(p, ChoiceParam) else p
                   for p in spec.params if p.units is None or unit in p.units)
    bound = {p.name for p in params}
    derived = []
    for d in spec.derived:
        if _bare(d.expr.names) <= bound:
            derived.append(d)
            bound.add(d.name)
    constraints = tuple(c for c in spec.constraints
                        if _bare(c.expr.names) <= bound and (c.units is None or unit in c.units))
    return params, tuple(derived), constraints


def _bare(names) -> set[str]:
    """Param and derived names among expression keys (namespace keys contain a dot)."""
    return {n for n in names if "." not in n}
