"""The study spec as data: the frozen :class:`Spec` that ``load_spec`` (loader.py) builds.

The file format is documented in the README ("Spec format reference").
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path

from autotile.errors import InputError
from autotile.hardware import HardwareProfile
from autotile.kernels.registry import OpInfo
from autotile.space.expr import Expr
from autotile.space.params import Param, plain

DEFAULT_TRIALS = 100


@dataclass(frozen=True)
class Derived:
    """A named value computed from params (e.g. a buffer's byte count)."""

    name: str
    expr: Expr


@dataclass(frozen=True)
class Constraint:
    """A condition every feasible configuration satisfies, and what to say when it fails."""

    expr: Expr
    message: str
    units: tuple[str, ...] | None = None  # the units it applies to (None: every unit)


@dataclass(frozen=True)
class Budget:
    """How long one study may run: a trial count, a wall-clock limit, or both."""

    trials: int | None = DEFAULT_TRIALS
    timeout_s: float | None = None


@dataclass(frozen=True)
class Spec:
    """A validated study spec. ``shapes`` are dicts in the op's dim order.

    ``hardware_ref`` is the profile as written (bundled name or path); ``space(...)`` gives
    the per-(shape, dtype, unit) search space.
    """

    file: str
    op: OpInfo
    hardware: HardwareProfile
    hardware_ref: str
    dtypes: tuple[str, ...]
    units: tuple[str, ...]
    shapes: tuple[dict, ...]
    params: tuple[Param, ...]
    derived: tuple[Derived, ...] = ()
    constraints: tuple[Constraint, ...] = ()
    objectives: tuple[str, ...] = ("cycles",)
    limits: tuple = ()  # ((metric, cap), ...): a configuration above a cap is infeasible
    budget: Budget = Budget()
    sampler: str = "portfolio"
    seed: int = 0
    backend: str = "simulator"
    measurements: Path | None = None
    inputs: dict = field(default_factory=dict)
    description: str = ""
    params_at: tuple[int, int] = (1, 1)  # line and column of the ``params`` key, for errors
    expr_at: tuple = ()  # (field, line, column) of each expression and limit, for errors found after loading
    param_at: tuple = ()  # (name, line, column) of each param's key, for errors about the param itself
    # the text it was parsed from: tune --jobs workers parse it again (a Spec holds compiled expressions,
    # which do not pickle) rather than read the file, which may have been edited since
    source: str = field(default="", repr=False, compare=False)

    def param(self, name: str) -> Param:
        """The param called ``name``; KeyError if there is none."""
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(name)

    def units_for(self, dtype: str) -> tuple[str, ...]:
        """The spec's units that compute ``dtype``, in spec order: the op's kernel on the unit has
        the dtype and the chip's unit a rate for it. Only these have a space for ``dtype``
        (``Space.of`` refuses the others), so whatever walks the units of a dtype walks these."""
        return tuple(u for u in self.units if self.computes(u, dtype))

    def param_names(self, unit: str) -> tuple[str, ...]:
        """Names of the params in ``unit``'s space, in declaration order."""
        return tuple(p.name for p in self.params if p.units is None or unit in p.units)

    def computes(self, unit: str, dtype: str) -> bool:
        """Whether ``unit`` runs this op in ``dtype`` on the spec's chip: its kernel has the dtype
        and the unit of the chip computes it (the 910A and 310P cubes have no fp32, though their
        vectors do). The tune, the bench search and ``space`` leave out the pairs it refuses."""
        return self.op.supports(unit, dtype) and self.hardware.dtype_problem(unit, dtype) is None

    def require_kernel_params(self, unit: str | None = None) -> None:
        """Raise an InputError at ``params`` if the simulated kernel on ``unit`` (default: each
        of the spec's units) reads a param this spec does not declare: the simulator has no value
        to give it. Loading does not check (a spec may describe a space it never simulates), nor
        does a replayed spec."""
        if self.backend == "replay":
            return
        for u in (unit,) if unit else self.units:
            needs = self.op.needs(u)
            missing = [name for name in self.op.required(u) if name not in self.param_names(u)]
            if missing:
                raise InputError(f"missing {', '.join(missing)}, which the {self.op.name} kernel on {u} reads "
                                 "(declare each; {type: fixed, value: V} pins one)",
                                 file=self.file, line=self.params_at[0], col=self.params_at[1], field="params")
            extra = [name for name in self.param_names(u) if name not in needs]
            if extra:
                from autotile.yamlsrc import suggest

                line, col = next(((ln, c) for n, ln, c in self.param_at if n == extra[0]), self.params_at)
                raise InputError(f"{extra[0]!r} is not read by the {self.op.name} kernel on {u}, so it would "
                                 f"change nothing (it reads {', '.join(needs)}; `units:` on a param limits it "
                                 f"to some units)" + suggest(extra[0], needs),
                                 file=self.file, line=line, col=col, field=f"params.{extra[0]}")

    def error_at(self, field: str, message: str) -> InputError:
        """An InputError located at the expression ``field`` (e.g. ``params.base_m.high``; a
        param's name alone: its first expression)."""
        line, col = next(((ln, c) for f, ln, c in self.expr_at if f in (field, f"{field}.low")), (None, None))
        return InputError(message, file=self.file, line=line, col=col, field=field)

    def space(self, shape, dtype: str | None = None, unit: str | None = None):
        """The search space of one shape (dict or tuple in dim order), dtype and unit.

        >>> spec = load_spec("studies/matmul.yaml")  # doctest: +SKIP
        >>> spec.space(spec.shapes[0]).count().feasible_size  # doctest: +SKIP
        """
        from autotile.space.space import Space

        return Space.of(self, shape, dtype, unit)

    def evaluate(self, params: dict, shape, dtype=None, unit=None) -> dict:
        """Environment of one configuration with derived values (see Space.evaluate)."""
        return self.space(shape, dtype, unit).evaluate(params)

    def check(self, params: dict, shape, dtype=None, unit=None) -> str | None:
        """None if the configuration is feasible, else the first reason it is not."""
        return self.space(shape, dtype, unit).check(params)

    def enumerate(self, shape, dtype=None, unit=None, **kw):
        """Every feasible configuration (see Space.enumerate)."""
        return self.space(shape, dtype, unit).enumerate(**kw)

    def count(self, shape, dtype=None, unit=None, **kw):
        """Raw and feasible sizes (see Space.count)."""
        return self.space(shape, dtype, unit).count(**kw)

    def to_dict(self) -> dict:
        """The normalized spec: defaults filled in, grids expanded, expressions as text."""
        out = {
            "op": self.op.name,
            "hardware": self.hardware_ref,
            "dtypes": list(self.dtypes),
            "units": list(self.units),
            "shapes": [dict(s) for s in self.shapes],
            "params": {p.name: p.to_dict() for p in self.params},
            "derived": {d.name: plain(d.expr) for d in self.derived},
            "constraints": [{"expr": plain(c.expr), "message": c.message,
                             **({"units": list(c.units)} if c.units is not None else {})}
                            for c in self.constraints],
            "objective": list(self.objectives),
            "budget": {k: v for k, v in (("trials", self.budget.trials),
                                         ("timeout_s", self.budget.timeout_s)) if v is not None},
            "sampler": self.sampler,
            "seed": self.seed,
            "backend": self.backend,
            "inputs": self.inputs,
            "description": self.description,
        }
        if self.measurements is not None:
            out["measurements"] = str(self.measurements)
        if self.limits:
            out["limits"] = dict(self.limits)
        return out

    def content_hash(self) -> str:
        """sha256 (16 hex digits) of the normalized spec, with the profile by its content."""
        data = self.to_dict()
        data["hardware"] = self.hardware.content_hash()
        data.pop("description")
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]
