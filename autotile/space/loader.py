"""Strict loading of a YAML spec file into a frozen :class:`~autotile.space.spec.Spec`.

Every problem is an InputError located at ``file:line:col`` with the dotted field, saying what
was expected; unknown keys suggest the closest valid one. See the README, "Spec format reference".
"""

from __future__ import annotations

import itertools
import keyword
import math
import unicodedata
from dataclasses import replace
from pathlib import Path

from autotile.errors import InputError
from autotile.hardware import HardwareProfile, load_profile
from autotile.hardware.profile import DEFAULT_PROFILE
from autotile.kernels.registry import OPS, OpInfo, OptionError
from autotile.space.expr import BOOLS, CAP, FUNCTIONS, Expr, ExprError, Scope, compile_expr
from autotile.space.params import ChoiceParam, IntParam, Param, plain
from autotile.space.spec import Budget, Constraint, Derived, Spec
from autotile.space.studies import spec_file
from autotile.yamlsrc import Located, dotted, load_file, suggest

TOP_KEYS = (
    "op", "hardware", "dtypes", "units", "shapes", "params", "derived", "constraints",
    "objective", "limits", "budget", "sampler", "seed", "backend", "measurements", "inputs", "description",
)
SAMPLERS = ("tpe", "random", "cmaes", "gp", "nsga2", "exhaustive", "portfolio")
OBJECTIVES = ("cycles", "time_us", "max_abs_error", "max_rel_error")
BACKENDS = ("simulator", "replay")
DTYPE_FIELDS = ("bytes", "c0", "acc_bytes", "name")  # name: text, compared (== or !=) only
UNIT_FIELDS = ("cores",)
PARAM_TYPES = ("int", "categorical", "bool", "fixed")
MAX_DIM = 2**31 - 1
MAX_TRIALS = 1_000_000_000  # a study's budget (budget.trials, tune --trials): a typo, not a run, beyond
MAX_SHAPES = 10_000


def load_spec(path: str | Path) -> Spec:
    """Load and strictly validate the spec file at ``path``, or the bundled study a bare name
    names when no such file exists (``matmul``; see :mod:`autotile.space.studies`).

    >>> load_spec("matmul").op.name  # doctest: +SKIP
    'matmul'
    """
    return _Parser(load_file(spec_file(path))).spec()


def load_spec_text(text: str, file: str, *, embedded: bool = False) -> Spec:
    """Validate a spec given as YAML (or JSON) text; ``file`` names it in errors.

    ``embedded``: the normalized copy a table records. Its ``measurements`` is kept as recorded
    and never opened: a table is self-contained and never replays, so the measurements file may
    have moved or gone (and a relative path was relative to where the tune ran, not the table).
    """
    from autotile.yamlsrc import load_text

    return _Parser(load_text(text, file), embedded=embedded).spec()


def namespaces(op: OpInfo, hw: HardwareProfile, backend: str = "simulator") -> dict[str, tuple[str, ...]]:
    """The attribute namespaces of expressions: ``shape``, ``dtype``, ``hw``, ``unit`` (the unit a
    space is for) and ``inputs`` (the op's options, as the spec's ``inputs:`` sets them or their
    defaults; only for an op that has options, and not with ``backend: replay``, where ``inputs:``
    is a free record)."""
    out = {"shape": op.dims, "dtype": DTYPE_FIELDS, "hw": tuple(hw.symbols()), "unit": UNIT_FIELDS}
    if input_fields(op, backend):
        out["inputs"] = input_fields(op, backend)
    return out


def input_fields(op: OpInfo, backend: str = "simulator") -> tuple[str, ...]:
    """The ``inputs.<name>`` fields expressions may read: the op's options on the simulator."""
    return tuple(o.name for o in op.options) if backend == "simulator" else ()


def text_fields(op: OpInfo, backend: str = "simulator") -> dict[str, tuple]:
    """Namespace fields with text values besides ``dtype.name``: the op's choice options
    (``inputs.mode``), compared only (``inputs.mode == "nearest"``)."""
    fields = input_fields(op, backend)
    return {f"inputs.{o.name}": o.choices for o in op.options if o.kind == "choice" and o.name in fields}


class _Parser:
    """One pass over a loaded spec document, building the Spec or raising located errors."""

    def __init__(self, doc: Located, *, embedded: bool = False):
        self.doc = doc
        self.embedded = embedded  # a table's copy: files it names are records, not read
        self.folder = Path(doc.file).parent
        self.taken: dict[str, str] = {}  # name -> what uses it (params, then derived)
        self.expr_at: dict[str, tuple] = {}  # field -> (line, col) of each expression
        self.text_fields: dict[str, tuple] = {}  # namespace fields with text values (inputs' choices)

    # -- generic checks ---------------------------------------------------------------
    def err(self, path, message, *, key=False) -> InputError:
        return self.doc.error(path, message, key=key)

    def mapping(self, path, value, allowed, required=()):
        if not isinstance(value, dict):
            raise self.err(path, f"expected a mapping, got {_kind(value)}")
        for k in value:
            if k not in allowed:
                raise self.err(path + (k,), "unknown key" + suggest(k, allowed), key=True)
        for k in required:
            if k not in value:
                raise self.err(path, f"missing key {k!r}")
        return value

    def text(self, path, value, *, empty_ok=False) -> str:
        if not isinstance(value, str) or (not empty_ok and not value.strip()):
            raise self.err(path, f"expected {'text' if empty_ok else 'non-empty text'}, got {_kind(value)}")
        return value

    def positive_int(self, path, value, limit=None) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.err(path, f"expected a positive integer, got {_show(value)}")
        if limit is not None and value > limit:
            raise self.err(path, f"expected at most {limit}, got {value}")
        return value

    def one_of(self, path, value, choices, what, where="") -> str:
        if not isinstance(value, str) or value not in choices:
            raise self.err(path, f"unknown {what} {_show(value)}{where}, expected one of "
                                 f"{', '.join(choices)}" + suggest(value, choices))
        return value

    def names_list(self, path, value, choices, what, where="") -> tuple[str, ...]:
        if isinstance(value, str):
            value = [value]
            items = [(path, value[0])]
        elif isinstance(value, list) and value:
            items = [(path + (i,), v) for i, v in enumerate(value)]
        else:
            raise self.err(path, f"expected a non-empty list of {what}s, got {_kind(value)}")
        out = []
        for p, v in items:
            v = self.one_of(p, v, choices, what, where)
            if v in out:
                raise self.err(p, f"{what} {v} listed twice")
            out.append(v)
        return tuple(out)

    # -- the spec ---------------------------------------------------------------------
    def spec(self) -> Spec:
        top = self.doc.value
        if not isinstance(top, dict):
            raise InputError(f"expected a spec mapping, got {_kind(top)}", file=self.doc.file,
                             line=1, col=1)
        self.mapping((), top, TOP_KEYS, ("op", "shapes", "params"))
        op = OPS[self.one_of(("op",), top["op"], tuple(OPS), "op")]
        if op.generic:
            op = replace(op, dims=self.generic_dims(top["shapes"]))
        hw_ref, hw = self.hardware(top.get("hardware", DEFAULT_PROFILE))
        dtypes = (self.names_list(("dtypes",), top["dtypes"], op.dtypes, "dtype", f" for {op.name}")
                  if "dtypes" in top else op.dtypes[:1])
        units = (self.names_list(("units",), top["units"], op.units, "unit", f" for {op.name}")
                 if "units" in top else op.units[:1])
        for i, d in enumerate(dtypes):
            at = ("dtypes", i) if isinstance(top.get("dtypes"), list) else ("dtypes",)
            if not any(op.supports(u, d) for u in units):
                raise self.err(at, f"no unit of this spec computes {op.name} in {d} "
                                   f"(units: {', '.join(units)}; add one that does, or drop {d})")
            problems = [hw.dtype_problem(u, d) for u in units if op.supports(u, d)]
            if all(problems):
                raise self.err(at, f"{problems[0]}: drop {d} or choose another hardware")
        shapes = self.shapes(op, top["shapes"])
        backend = self.one_of(("backend",), top.get("backend", "simulator"), BACKENDS, "backend")
        ns = namespaces(op, hw, backend)
        self.text_fields = text_fields(op, backend)
        later = tuple(top["derived"]) if isinstance(top.get("derived"), dict) else ()
        # a param or constraint may name any unit of the op: narrowing the spec's ``units`` then
        # leaves the other units' params dormant instead of making each one an error
        params = self.params(top["params"], ns, op, later)
        if backend == "simulator" and not self.embedded:  # a table's copy was checked when it was tuned
            self.kernel_values(params, op, units)
        derived = self.derived(top.get("derived", {}), ns, params)
        constraints = self.constraints(top.get("constraints", []), ns, params, derived, op)
        objectives = self.names_list(("objective",), top.get("objective", "cycles"), OBJECTIVES,
                                     "objective")
        if len(objectives) > 2:
            raise self.err(("objective",), f"expected one or two objectives, got {len(objectives)}")
        limits = self.limits(top.get("limits", {}))
        if op.generic and backend != "replay":
            raise self.err(("op",), f"op {op.name} has no kernel to simulate; it needs backend: replay "
                                    "and a measurements file")
        return Spec(
            file=self.doc.file,
            op=op,
            hardware=hw,
            hardware_ref=hw_ref,
            dtypes=dtypes,
            units=units,
            shapes=shapes,
            params=params,
            derived=derived,
            constraints=constraints,
            objectives=objectives,
            limits=limits,
            budget=self.budget(top["budget"]) if "budget" in top else Budget(),
            sampler=self.one_of(("sampler",), top.get("sampler", "portfolio"), SAMPLERS, "sampler"),
            seed=self.seed(top.get("seed", 0)),
            backend=backend,
            measurements=self.measurements(top, backend),
            params_at=self.doc.where(("params",), key=True),
            param_at=tuple((p.name, *self.doc.where(("params", p.name), key=True)) for p in params),
            expr_at=tuple((f, *at) for f, at in self.expr_at.items()),
            inputs=self.inputs(op, top.get("inputs", {}), backend, hw, dtypes),
            description=self.text(("description",), top.get("description", ""), empty_ok=True),
            source=self.doc.source,
        )

    def inputs(self, op: OpInfo, value, backend: str, hw: HardwareProfile, dtypes) -> dict:
        """``inputs:``: with the simulator, the op's options (``registry.Option``), each checked
        where it stands, so a bad one is refused here rather than making every configuration
        infeasible (as one no tiling holds on the profile ``hw`` in one of ``dtypes``); with
        replay, a free record of how the measurements were taken."""
        names = tuple(o.name for o in op.options)
        if not isinstance(value, dict):
            raise self.err(("inputs",), f"expected a mapping, got {_kind(value)}")
        if backend != "simulator":
            return dict(value)
        for k in value:
            if k not in names:
                takes = f" ({op.name} takes " + (", ".join(names) if names else "none") + ")"
                raise self.err(("inputs", k), "unknown option" + suggest(k, names) + takes, key=True)
        try:
            op.check_fit(op.check_options(value), hw, dtypes)
        except OptionError as exc:
            raise self.err(("inputs", exc.key), str(exc)) from None
        return dict(value)

    def limits(self, value) -> tuple:
        """``limits: {max_rel_error: 1e-3}``: caps on measured metrics; a configuration above one
        is infeasible, so a single-objective study picks the fastest admissible variant."""
        self.mapping(("limits",), value, OBJECTIVES)
        out = []
        for name, cap in value.items():
            path = ("limits", name)
            self.expr_at[dotted(path)] = self.doc.where(path, key=True)  # a replay file may lack it
            if isinstance(cap, bool) or not isinstance(cap, (int, float)) or not cap >= 0 or cap == float("inf"):
                raise self.err(path, f"expected a number >= 0, got {_show(cap)}")
            out.append((name, float(cap)))
        return tuple(out)

    def hardware(self, ref) -> tuple[str, HardwareProfile]:
        path = ("hardware",)
        ref = self.text(path, ref)
        is_file = ref.endswith((".yaml", ".yml")) or "/" in ref
        target = str(self.folder / ref) if is_file and not Path(ref).is_absolute() else ref
        line, col = self.doc.where(path)
        if is_file:  # not `target != ref`: with the spec in the current folder the two are equal
            if not Path(target).is_file():
                raise InputError(f"profile file not found: {target}", file=self.doc.file,
                                 line=line, col=col, field="hardware")
        try:
            return ref, load_profile(target)
        except InputError as exc:
            if exc.file is not None:
                raise  # a problem inside the profile file: its own location says more
            raise exc.located(file=self.doc.file, line=line, col=col, field="hardware") from None

    def shapes(self, op: OpInfo, value) -> tuple[dict, ...]:
        path = ("shapes",)
        if not isinstance(value, list) or not value:
            raise self.err(path, f"expected a non-empty list of shapes, got {_kind(value)}")
        out: dict[tuple, None] = {}
        for i, item in enumerate(value):
            ipath = path + (i,)
            if isinstance(item, dict) and "grid" in item:
                self.mapping(ipath, item, ("grid",))
                grid = self.mapping(ipath + ("grid",), item["grid"], op.dims, op.dims)
                axes = []
                for d in op.dims:
                    dpath = ipath + ("grid", d)
                    vals = grid[d] if isinstance(grid[d], list) else [grid[d]]
                    if not vals:
                        raise self.err(dpath, "expected a non-empty list of positive integers")
                    axes.append([self.positive_int(dpath + ((j,) if isinstance(grid[d], list) else ()),
                                                   v, MAX_DIM) for j, v in enumerate(vals)])
                combos = itertools.product(*axes)
            else:
                self.mapping(ipath, item, op.dims + ("grid",), op.dims)
                combos = [tuple(self.positive_int(ipath + (d,), item[d], MAX_DIM) for d in op.dims)]
            for combo in combos:
                if (bad := op.shape_problem(dict(zip(op.dims, combo)))) is not None:
                    dim, why = bad
                    raise self.err(ipath + (("grid", dim) if isinstance(item, dict) and "grid" in item else (dim,)),
                                   why)
                out[combo] = None
                if len(out) > MAX_SHAPES:
                    raise self.err(ipath, f"more than {MAX_SHAPES} shapes")
        return tuple(dict(zip(op.dims, combo)) for combo in out)

    def generic_dims(self, value) -> tuple[str, ...]:
        """Dims of a generic op: the keys of the first shape (every shape must have them)."""
        path = ("shapes", 0)
        if not isinstance(value, list) or not value or not isinstance(value[0], dict):
            raise self.err(("shapes",), "expected a non-empty list of shapes, e.g. [{problem: 1}]")
        first = value[0]
        keys = first["grid"] if isinstance(first.get("grid"), dict) else first
        path = path + (("grid",) if keys is not first else ())
        if not keys:
            raise self.err(path, "expected at least one dimension, e.g. {problem: 1}")
        for k in keys:
            # any identifier (a replay's größe) that expressions read as written: shape.ｘ is shape.x
            if not isinstance(k, str) or not k.isidentifier() or unicodedata.normalize("NFKC", k) != k \
                    or k == "grid":
                raise self.err(path + (k,), f"{_show(k)} is not a valid dimension name", key=True)
        return tuple(keys)

    def expr(self, path, value, scope: Scope) -> Expr:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise self.err(path, f"expected a number or an expression, got {_kind(value)}")
        try:
            compiled = compile_expr(value, scope)
            self.expr_at[dotted(path)] = self.doc.where(path)
            return compiled
        except ExprError as exc:
            line, col = self.doc.where(path)
            if exc.offset is not None and isinstance(value, str):  # the offset in value.strip()
                line, col = self.doc.where_in(path, exc.offset + len(value) - len(value.lstrip()))
            raise InputError(exc.message, file=self.doc.file, line=line, col=col,
                             field=dotted(path)) from None

    def within_cap(self, path, e: Expr) -> None:
        """A constant bound beyond 2**62 is refused as its integer literal is (``4.7e18``,
        ``1e300``): as a range it would silently leave the param no value."""
        if e.is_constant:
            v = e.eval({})
            if isinstance(v, float) and math.isfinite(v) and abs(v) > CAP:
                raise self.err(path, f"number {v:g} larger than 2**62")

    def new_name(self, path, name, taken: dict) -> str:
        if not isinstance(name, str) or not _ascii_name(name) or name.startswith("_"):
            raise self.err(path, f"{_show(name)} is not a valid name (ASCII letters, digits and _, "
                                 "not starting with _ or a digit)", key=True)
        if keyword.iskeyword(name):  # expressions parse as Python: `class` cannot name a value there
            raise self.err(path, f"name {name} is a reserved word of the expression language; expected "
                                 "another name", key=True)
        if name in ("shape", "dtype", "hw", "unit", "inputs"):
            raise self.err(path, f"name {name} shadows the {name} namespace", key=True)
        if name in FUNCTIONS:
            raise self.err(path, f"name {name} shadows the function {name}()", key=True)
        if name in BOOLS:
            raise self.err(path, f"name {name} shadows the boolean {name}", key=True)
        if name in taken:
            raise self.err(path, f"name {name} is already used by {taken[name]}", key=True)
        return name

    def params(self, value, ns, op, derived_names=()) -> tuple[Param, ...]:
        path = ("params",)
        if not isinstance(value, dict) or not value:
            raise self.err(path, f"expected a mapping of parameter names to definitions, got {_kind(value)}")
        names = list(value)
        out: list[Param] = []
        taken = self.taken
        for i, name in enumerate(names):
            ppath = path + (name,)
            self.new_name(ppath, name, taken)
            hidden = {n: f"{n} is a derived value; a bound may only use params declared above it"
                      for n in derived_names}
            hidden.update({n: f"{n} is declared below {name}; a bound may only use params declared above it"
                           for n in names[i + 1:]})
            hidden.update({p.name: f"{p.name} has text values: only derived values and constraints "
                                   "may compare it (== or !=) to a choice" for p in out if p.is_text})
            scope = Scope(ns, tuple(p.name for p in out if not p.is_text), hidden, text_fields=self.text_fields)
            p = self.param(ppath, value[name], scope, op)
            for dep in p.depends:
                if dep in taken:
                    self.check_units(ppath, p, _by_name(out, dep))
            out.append(p)
            taken[name] = f"param {name}"
        return tuple(out)

    def check_units(self, path, p: Param, dep: Param) -> None:
        if dep.units is not None and (p.units is None or not set(p.units) <= set(dep.units)):
            where = ", ".join(p.units) if p.units else "every unit"
            raise self.err(path, f"{p.name} is in {where} but its bounds use {dep.name}, "
                                 f"which is only in units {', '.join(dep.units)}")

    def choice_list(self, path, choices) -> tuple:
        """A non-empty list of distinct choices, all text or all numbers/bools."""
        if not isinstance(choices, list) or not choices:
            raise self.err(path, f"expected a non-empty list of choices, got {_kind(choices)}")
        for j, c in enumerate(choices):
            self.choice_value(path + (j,), c)
            # equal numbers are one value whatever their type: 1 and 1.0, or true and 1 (a bool
            # is the number 0 or 1 in expressions and in a column), so the space would hold it twice
            same = next((o for o in choices[:j] if c == o and isinstance(c, str) == isinstance(o, str)), None)
            if same is not None:
                also = "" if type(c) is type(same) else f" (as {_show(same)}: the same number)"
                raise self.err(path + (j,), f"choice {_show(c)} listed twice{also}")
        if len({isinstance(c, str) for c in choices}) > 1:
            raise self.err(path, "expected all choices text or all numbers/bools, not both")
        return tuple(choices)

    def choices_by_unit(self, path, name, choices: dict, units, op, desc) -> ChoiceParam:
        """``choices: {scalar: [...], vector: [...]}``: each unit has its own list; a unit not
        listed does not have the param (as if ``units:`` left it out)."""
        if not choices:
            raise self.err(path + ("choices",), "expected a non-empty mapping of unit to choices")
        by_unit = []
        for unit, lst in choices.items():
            self.one_of(path + ("choices", unit), unit, op.units, "unit", f" for {op.name}")
            by_unit.append((unit, self.choice_list(path + ("choices", unit), lst)))
        kinds = {isinstance(c, str) for _, lst in by_unit for c in lst}
        if len(kinds) > 1:
            raise self.err(path + ("choices",), "expected all choices text or all numbers/bools, not both")
        listed = tuple(u for u, _ in by_unit)
        units = tuple(u for u in (units or listed) if u in listed)
        union = tuple(dict.fromkeys(c for _, lst in by_unit for c in lst))
        return ChoiceParam(name, "categorical", union, units, desc, by_unit=tuple(by_unit))

    def param(self, path, d, scope: Scope, op) -> Param:
        if not isinstance(d, dict):
            raise self.err(path, f"expected a parameter definition mapping with a type, got {_kind(d)}")
        if "type" not in d:
            raise self.err(path, "missing key 'type' (one of " + ", ".join(PARAM_TYPES) + ")")
        kind = self.one_of(path + ("type",), d["type"], PARAM_TYPES, "parameter type")
        common = ("type", "units", "description")
        name = path[-1]
        units = None
        if "units" in d:
            units = self.names_list(path + ("units",), d["units"], op.units, "unit", f" for {op.name}")
        desc = self.text(path + ("description",), d.get("description", ""), empty_ok=True)
        if kind == "int":
            self.mapping(path, d, common + ("low", "high", "step", "pow2", "multiple_of", "where"),
                         ("low", "high"))
            exclusive = [k for k in ("step", "pow2", "multiple_of") if k in d]
            if len(exclusive) > 1:
                raise self.err(path + (exclusive[1],),
                               f"{exclusive[0]} and {exclusive[1]} cannot be combined", key=True)
            if "pow2" in d and d["pow2"] is not True:
                raise self.err(path + ("pow2",), f"expected true, got {_show(d['pow2'])}")
            low = self.expr(path + ("low",), d["low"], scope)
            high = self.expr(path + ("high",), d["high"], scope)
            for key, e in (("low", low), ("high", high)):
                if isinstance(d[key], float) and not d[key].is_integer():
                    raise self.err(path + (key,), f"expected an integer, got {d[key]}")
                self.within_cap(path + (key,), e)
            if low.is_constant and high.is_constant and low.eval({}) > high.eval({}):
                raise self.err(path + ("high",), f"low {plain(low)} is greater than high {plain(high)}")
            extra = {}
            for key in ("step", "multiple_of"):
                if key in d:
                    e = self.expr(path + (key,), d[key], scope)
                    self.within_cap(path + (key,), e)
                    if e.is_constant:
                        v = e.eval({})
                        if isinstance(v, bool) or not float(v).is_integer() or v <= 0:
                            raise self.err(path + (key,), f"expected a positive integer, got {_show(d[key])}")
                    extra[key] = e
            if "where" in d:
                own = Scope(scope.namespaces, scope.names + (name,), scope.hidden, text_fields=scope.text_fields)
                extra["where"] = self.expr(path + ("where",), d["where"], own)
                if extra["where"].is_constant:  # as a constant constraint: `where: 0` emptied the domain
                    raise self.err(path + ("where",), f"where does not read {name} (it is always true "
                                                      "or always false)")
            return IntParam(name, low, high, pow2="pow2" in d, units=units, description=desc, **extra)
        if kind == "categorical":
            self.mapping(path, d, common + ("choices",), ("choices",))
            choices = d["choices"]
            if isinstance(choices, dict):
                return self.choices_by_unit(path, name, choices, units, op, desc)
            return ChoiceParam(name, "categorical", self.choice_list(path + ("choices",), choices), units, desc)
        if kind == "bool":

            self.mapping(path, d, common)
            return ChoiceParam(name, "bool", (False, True), units, desc)
        self.mapping(path, d, common + ("value",), ("value",))
        return ChoiceParam(name, "fixed", (self.choice_value(path + ("value",), d["value"]),), units, desc)

    def kernel_values(self, params, op: OpInfo, units) -> None:
        """Refuse, where it stands, a value the kernel takes on none of its param's units: a
        text choice it does not know (``Exact`` for sigmoid's ``variant``), a number for a param
        it reads as text (``type: int``, ``bool``) or text for one it reads as a number. Every
        configuration holding it would be infeasible, found out one simulation at a time (a
        study spent its whole trial cap). Only the values are checked, not the shapes or dtypes
        a value suits (``acc_dtype: fp16`` is infeasible for fp32 input alone)."""
        for p in params:
            on = tuple(u for u in (p.units or units) if p.name in op.needs(u))
            if not on:
                continue  # not read (require_kernel_params says so when simulating)
            admits = {u: op.admits(u, p.name) for u in on}
            path = ("params", p.name)
            if p.kind in ("int", "bool"):
                if all(a is not None for a in admits.values()):
                    raise self.err(path + ("type",), f"the {op.name} kernel takes {p.name} as text, one of "
                                                     f"{_admitted(admits)}, not {'a bool' if p.kind == 'bool' else 'an integer'}: "
                                                     "declare it {type: categorical, choices: [...]}")
                continue
            if p.kind == "fixed":
                values = [(path + ("value",), p.choices[0], on)]
            elif p.by_unit is not None:
                values = [(path + ("choices", u, j), c, (u,) if u in on else ()) for u, lst in p.by_unit
                          for j, c in enumerate(lst)]
            else:
                values = [(path + ("choices", j), c, on) for j, c in enumerate(p.choices)]
            for at, c, where in values:
                if not where or any(c in admits[u] if admits[u] is not None else not isinstance(c, str)
                                    for u in where):
                    continue
                texts = {u: admits[u] for u in where if admits[u] is not None}
                if not texts:
                    raise self.err(at, f"the {op.name} kernel takes {p.name} as a number, got text {_show(c)}")
                known = tuple(dict.fromkeys(v for lst in texts.values() for v in lst))
                raise self.err(at, f"the {op.name} kernel takes {p.name} as one of {_admitted(texts)}, "
                                   f"got {_show(c)}" + suggest(c, known))

    def choice_value(self, path, c):
        """A choice or fixed value: text, a bool, or a finite number at most 2**62 in magnitude,
        as a number in an expression must be (``-.inf`` crashed the kernels' integer check, an
        integer beyond int64 the enumeration)."""
        if not isinstance(c, (int, float, str, bool)) or (isinstance(c, float) and c != c):
            raise self.err(path, f"expected a number, text or a bool, got {_kind(c)}")
        if isinstance(c, float) and not math.isfinite(c):
            raise self.err(path, f"expected a finite number, got {_show(c)}")
        if not isinstance(c, (str, bool)) and abs(c) > CAP:
            shown = f"{c:g}" if isinstance(c, float) else (str(c) if c.bit_length() < 200 else
                                                           f"an integer of {c.bit_length()} bits")
            raise self.err(path, f"number {shown} larger than 2**62")
        return c

    def derived(self, value, ns, params) -> tuple[Derived, ...]:
        path = ("derived",)
        if not isinstance(value, dict):
            raise self.err(path, f"expected a mapping of names to expressions, got {_kind(value)}")
        names = list(value)
        out: list[Derived] = []
        visible = [p.name for p in params if not p.is_text]
        texts = {p.name: p.choices for p in params if p.is_text}
        for i, name in enumerate(names):
            dpath = path + (name,)
            self.new_name(dpath, name, self.taken)
            hidden = {n: f"{n} is declared below {name}" for n in names[i + 1:]}
            expr = self.expr(dpath, value[name], Scope(ns, tuple(visible), hidden, texts, self.text_fields))
            out.append(Derived(name, expr))
            visible.append(name)
            self.taken[name] = f"derived {name}"
        return tuple(out)

    def constraints(self, value, ns, params, derived, op) -> tuple[Constraint, ...]:
        path = ("constraints",)
        if not isinstance(value, list):
            raise self.err(path, f"expected a list of {{expr, message}} mappings, got {_kind(value)}")
        visible = tuple(p.name for p in params if not p.is_text) + tuple(d.name for d in derived)
        texts = {p.name: p.choices for p in params if p.is_text}
        out = []
        for i, item in enumerate(value):
            cpath = path + (i,)
            self.mapping(cpath, item, ("expr", "message", "units"), ("expr", "message"))
            expr = self.expr(cpath + ("expr",), item["expr"], Scope(ns, visible, texts=texts,
                                                                     text_fields=self.text_fields))
            if expr.is_constant:
                raise self.err(cpath + ("expr",), "constraint uses no parameter (it is always "
                                                  "true or always false)")
            units = None
            if "units" in item:
                units = self.names_list(cpath + ("units",), item["units"], op.units, "unit",
                                        f" for {op.name}")
            out.append(Constraint(expr, self.text(cpath + ("message",), item["message"]), units))
        return tuple(out)

    def budget(self, value) -> Budget:
        path = ("budget",)
        self.mapping(path, value, ("trials", "timeout_s"))
        if not value:
            raise self.err(path, "expected trials, timeout_s or both")
        trials = self.positive_int(path + ("trials",), value["trials"], MAX_TRIALS) if "trials" in value else None
        timeout = None
        if "timeout_s" in value:
            t = value["timeout_s"]
            if isinstance(t, bool) or not isinstance(t, (int, float)) or not t > 0 or t == float("inf"):
                raise self.err(path + ("timeout_s",), f"expected a positive number of seconds, got {_show(t)}")
            timeout = t
        return Budget(trials, timeout)

    def seed(self, value) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < 2**32:
            raise self.err(("seed",), f"expected an integer from 0 to 2**32-1, got {_show(value)}")
        return value

    def measurements(self, top, backend) -> Path | None:
        path = ("measurements",)
        if backend != "replay":
            if "measurements" in top:
                raise self.err(path, "measurements are only used with backend: replay", key=True)
            return None
        if "measurements" not in top:
            raise self.err(("backend",), "backend replay needs a measurements file (missing key 'measurements')")
        p = Path(self.text(path, top["measurements"]))
        if self.embedded:
            return p  # as the tuned spec resolved it (the hash covers this text)
        p = p if p.is_absolute() else self.folder / p
        if not p.is_file():
            raise self.err(path, f"file not found: {p}")
        return p


def _ascii_name(name: str) -> bool:
    """An identifier of ASCII letters, digits and _: Python reads names in expressions
    NFKC-normalised, so a fullwidth ``ｘ`` would be ``x`` and a micro sign ``µ`` a Greek ``μ``."""
    return name.isascii() and name.isidentifier()


def _by_name(params, name) -> Param:
    return next(p for p in params if p.name == name)


def _admitted(admits: dict) -> str:
    """``{"vector": ("exact", "poly")}`` -> ``exact, poly (on vector)``; units with different
    lists each named: ``exact, poly on vector; exact, poly, lut_nearest on scalar``."""
    lists = set(admits.values())
    if len(lists) == 1:
        return f"{', '.join(next(iter(lists)))} (on {' and '.join(admits)})"
    return "; ".join(f"{', '.join(lst)} on {u}" for u, lst in admits.items())


def _kind(value) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"{str(value).lower()}"
    if isinstance(value, (dict, list)):
        what = "mapping" if isinstance(value, dict) else "list"
        return f"an empty {what}" if not value else f"a {what}"
    if isinstance(value, str):
        return f"text {value!r}"
    return _show(value)


def _show(value) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return repr(value)
    if value is None:
        return "nothing"
    return str(value)
