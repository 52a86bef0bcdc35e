"""Safe expressions for spec bounds, derived values and constraints.

User text is parsed with :mod:`ast` (``mode="eval"``) and checked against a strict whitelist; it is
never passed to ``eval``, ``exec`` or ``compile``. Each expression is compiled once into closures
that evaluate either on Python scalars (one configuration) or on NumPy arrays (a whole column of
configurations at once, for enumeration) with the same results.

Evaluation problems (division by zero, an exponent above 64, an integer beyond 2**62, ``log2`` of
a non-positive number) make the configuration infeasible: in scalar mode they raise
:class:`EvalError`, in array mode they mark the row in a ``bad`` mask. Sub-expressions without
names are folded at compile time, so ``10**10**10``, ``1/0`` or ``1e300 * 1e300`` (not finite)
is refused when the spec loads.

>>> e = compile_expr("align_up(shape.m, 16) // base_m", Scope({"shape": ("m",)}, ("base_m",)))
>>> e.eval({"shape.m": 1000, "base_m": 64})
15
"""

from __future__ import annotations

import ast
import functools
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from autotile.dtypes import DTYPES
from autotile.yamlsrc import suggest

BOOLS = {"true": True, "false": False}  # YAML's spelling; True and False are Python's
FUNCTIONS = {  # name -> (min args, max args)
    "min": (2, 16),
    "max": (2, 16),
    "ceil": (1, 1),
    "floor": (1, 1),
    "log2": (1, 1),
    "align_up": (2, 2),
    "divides": (2, 2),
    "is_pow2": (1, 1),
}
DTYPE_NAME = "dtype.name"  # a text field of the namespaces (as are the text options in ``inputs``)
TEXT_CHOICES = "text_choices."  # environment key prefix: a text param's choices in its space
MAX_TEXT = 1000  # characters of one expression
MAX_NODES = 400  # AST nodes of one expression
MAX_EXPONENT = 64  # largest |exponent| of **
CAP = 2**62  # largest integer magnitude an expression may produce


class ExprError(Exception):
    """A static problem in an expression; ``offset`` is the 0-based column within its text."""

    def __init__(self, message: str, offset: int | None = None):
        self.message = message
        self.offset = offset
        super().__init__(message)


class EvalError(Exception):
    """Evaluation made a configuration infeasible (division by zero, overflow, ...)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(reason)


@dataclass(frozen=True)
class Scope:
    """What an expression may refer to.

    ``namespaces`` maps ``shape``/``dtype``/``hw`` to their attribute names; ``names`` are the
    bare names visible here (earlier params, derived values); ``hidden`` maps names that exist
    but are not visible here to the reason why (e.g. declared below); ``texts`` maps the
    text-valued params visible here to their choices: they may only be compared with ``==`` or
    ``!=`` to one of them (``cube_form == "naive"``). ``text_fields`` does the same for namespace
    fields with text values (``inputs.mode == "nearest"``); ``dtype.name`` always is one.
    """

    namespaces: Mapping[str, tuple[str, ...]]
    names: tuple[str, ...] = ()
    hidden: Mapping[str, str] = field(default_factory=dict)
    texts: Mapping[str, tuple] = field(default_factory=dict)  # text-valued params -> their choices
    text_fields: Mapping[str, tuple] = field(default_factory=dict)  # "ns.attr" with text values -> choices

    def text_field(self, key: str) -> tuple | None:
        """The choices of namespace field ``key`` ("ns.attr") if its values are text, else None."""
        if key == DTYPE_NAME and "name" in self.namespaces.get("dtype", ()):
            return tuple(DTYPES)
        return tuple(self.text_fields[key]) if key in self.text_fields else None


@dataclass(frozen=True)
class Expr:
    """A compiled expression. ``names`` are the environment keys it reads, in order of use.

    Environment keys are bare names for params and derived values and ``ns.attr`` for
    namespaces (``shape.m``, ``dtype.bytes``, ``hw.l1_bytes``).
    """

    text: str
    names: tuple[str, ...]
    _fn: Callable = field(repr=False, compare=False)

    def eval(self, env: Mapping):
        """Value on scalars; raises EvalError if the configuration is infeasible."""
        return self._fn(env, _Ctx(None))

    def eval_array(self, env: Mapping, n: int):
        """(values, bad) over ``n`` rows: ``env`` holds arrays of length n or scalars."""
        ctx = _Ctx(n)
        out = self._fn(env, ctx)
        return out, ctx.bad

    @property
    def is_constant(self) -> bool:
        return not self.names


class _Ctx:
    """Evaluation state: scalar mode raises, array mode marks rows (only where guarded)."""

    __slots__ = ("vec", "bad", "guard")

    def __init__(self, n: int | None):
        self.vec = n is not None
        self.bad = np.zeros(n, dtype=bool) if self.vec else False
        self.guard = True

    def fail(self, cond, reason: str) -> None:
        if self.vec:
            self.bad |= np.asarray(cond, dtype=bool) & self.guard
        elif cond:
            raise EvalError(reason)


def compile_expr(source, scope: Scope) -> Expr:
    """Parse and check ``source`` (text, int, float or bool) and compile it.

    Raises ExprError (with the column offset of the offending part) for anything outside the
    language: unknown names, attributes other than ``shape.<dim>``, ``dtype.<field>``,
    ``hw.<name>``, calls other than the whitelisted functions, strings, subscripts, ...
    """
    if isinstance(source, float) and not math.isfinite(source):  # .inf, .nan, 1e400: repr is a name
        raise ExprError(f"expected a finite number, got {source}")
    if isinstance(source, bool) or isinstance(source, (int, float)):
        source = repr(source)
    if not isinstance(source, str):
        raise ExprError(f"expected a number or an expression, got {type(source).__name__}")
    text = source.strip()
    if not text:
        raise ExprError("empty expression")
    if len(text) > MAX_TEXT:
        raise ExprError(f"expression longer than {MAX_TEXT} characters")
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        col = _text_offset(text, exc.lineno or 1, exc.offset - 1) if exc.offset else None
        raise ExprError(f"invalid expression: {exc.msg}", col) from None
    except (RecursionError, MemoryError, ValueError):
        raise ExprError("expression too deeply nested") from None
    if sum(1 for _ in ast.walk(tree)) > MAX_NODES:
        raise ExprError(f"expression has more than {MAX_NODES} parts")
    compiler = _Compiler(text, scope)
    fn, names = compiler.node(tree.body)
    return Expr(text, tuple(dict.fromkeys(names)), fn)


def _lines(text: str) -> list[str]:
    """The lines of ``text`` with their ends, split as Python's tokenizer splits them."""
    return re.findall(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$", text)


def _line(text: str, lineno: int) -> str:
    """Line ``lineno`` (1-based) of ``text`` without its end, or ``""``."""
    lines = _lines(text)
    return lines[lineno - 1].rstrip("\r\n") if 1 <= lineno <= len(lines) else ""


def _text_offset(text: str, lineno: int, col: int) -> int | None:
    """The offset in ``text`` of character ``col`` (0-based) of line ``lineno`` (1-based)."""
    lines = _lines(text)
    if not 1 <= lineno <= len(lines) + 1 or col < 0:
        return None
    return sum(len(line) for line in lines[: lineno - 1]) + col


def ready_parts(text: str, is_bound: Callable[[str], bool]) -> list[str]:
    """Source texts of the largest sub-expressions of ``text`` whose names are all bound.

    Only parts that read at least one bare name (a param or derived value) are listed: parts of
    namespaces alone are the same for every configuration of a space. Ready arguments of a
    ``min``/``max`` that is not ready as a whole are grouped (``min(8, a // b)``), which says
    more with fewer values. Counting uses these parts to merge partial configurations that no
    later step can tell apart.

    >>> ready_parts("min(8, a // b, c * a)", lambda k: k in ("a", "b"))
    ['min(8, a // b)', 'a']
    """
    out: list[str] = []

    def ready(node) -> bool:
        return all(is_bound(k) for k in _keys(node))

    def informative(node) -> bool:
        return any("." not in k for k in _keys(node))

    def visit(node) -> None:
        if ready(node):
            if informative(node):
                out.append(ast.unparse(node))
            return
        if isinstance(node, ast.Call) and node.func.id in ("min", "max"):
            group = [a for a in node.args if ready(a)]
            if any(informative(a) for a in group):
                only = len(group) == 1
                out.append(ast.unparse(group[0] if only else ast.Call(node.func, group, [])))
            for a in node.args:
                if not ready(a):
                    visit(a)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                visit(child)

    visit(ast.parse(text, mode="eval").body)
    return list(dict.fromkeys(out))


def fixed_parts(text: str) -> list[str]:
    """Source texts of the largest sub-expressions of ``text`` that read namespaces only (shape,
    dtype, hw, unit, inputs) and are evaluated whatever the params are: not inside a branch of ``if``,
    nor after the first operand of ``and``/``or`` or a comparison chain. One that cannot be
    evaluated makes every configuration of a space infeasible.

    >>> fixed_parts("min(a, shape.m // 0) if a > shape.n else 1")
    ['shape.n']
    >>> fixed_parts("a <= shape.c % (shape.h - 16)")
    ['shape.c % (shape.h - 16)']
    """
    out: list[str] = []

    def visit(node) -> None:
        keys = _keys(node)
        if keys and all("." in k for k in keys):
            out.append(ast.unparse(node))
            return
        if isinstance(node, ast.IfExp):
            visit(node.test)
        elif isinstance(node, ast.BoolOp):
            visit(node.values[0])
        elif isinstance(node, ast.Compare):
            visit(node.left)
            visit(node.comparators[0])
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    visit(child)

    visit(ast.parse(text, mode="eval").body)
    return list(dict.fromkeys(out))


def _keys(node) -> set[str]:
    """Environment keys read by an (already validated) expression tree."""
    if isinstance(node, ast.Attribute):
        return {f"{node.value.id}.{node.attr}"}
    if isinstance(node, ast.Name):
        return set() if node.id in BOOLS else {node.id}
    if isinstance(node, ast.Call):
        return set().union(*(_keys(a) for a in node.args))
    return set().union(*(_keys(c) for c in ast.iter_child_nodes(node) if isinstance(c, ast.expr)))


# -- the compiler ---------------------------------------------------------------------------

_FORBIDDEN = {
    ast.Subscript: "subscripts",
    ast.Lambda: "lambdas",
    ast.ListComp: "comprehensions",
    ast.SetComp: "comprehensions",
    ast.DictComp: "comprehensions",
    ast.GeneratorExp: "comprehensions",
    ast.List: "lists",
    ast.Tuple: "tuples",
    ast.Set: "sets",
    ast.Dict: "dicts",
    ast.Starred: "starred arguments",
    ast.NamedExpr: "assignments",
    ast.JoinedStr: "text",
    ast.Await: "await",
    ast.Slice: "slices",
}


class _Compiler:
    def __init__(self, text: str, scope: Scope):
        self.text = text
        self.scope = scope

    def col(self, node) -> int | None:
        """The 0-based character offset of ``node`` in the text (which may span lines)."""
        # ast offsets count UTF-8 bytes within the node's line; report characters of the text
        return _text_offset(self.text, getattr(node, "lineno", 1),
                            len(_line(self.text, getattr(node, "lineno", 1)).encode()[: node.col_offset]
                                .decode(errors="ignore")))

    def error(self, node, message: str) -> ExprError:
        return ExprError(message, self.col(node))

    def node(self, node):
        """(closure, names) for ``node``; constant sub-trees are folded to literals."""
        fn, names = self._node(node)
        if not names and not isinstance(node, ast.Constant):
            try:
                value = fn({}, _Ctx(None))
            except EvalError as exc:
                raise self.error(node, exc.reason) from None
            # 1e300 * 1e300 (inf) or inf - inf (nan): no bound, value or test means anything with it
            if isinstance(value, float) and not math.isfinite(value):
                raise self.error(node, f"part computes to {value}, not a finite number")
            fn = _literal(value)
        return fn, names

    def _node(self, node):
        for kind, what in _FORBIDDEN.items():
            if isinstance(node, kind):
                raise self.error(node, f"{what} are not allowed in expressions")
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise self.error(node, f"{type(node).__name__} is not allowed in expressions")
        return method(node)

    def _Constant(self, node):
        v = node.value
        if isinstance(v, bool):
            return _literal(v), []
        written = ast.get_source_segment(self.text, node) or ""
        if isinstance(v, (int, float)) and ("_" in written or written[:2].lower() == "0b"):
            # as a spec's YAML 1.2 numbers and the command line read them: 1_000 is no number there
            raise self.error(node, f"number {written}: expected plain digits (no _), or 0o / 0x for octal / hex")
        if isinstance(v, int):
            if abs(v) > CAP:
                raise self.error(node, "integer literal larger than 2**62")
            return _literal(v), []
        if isinstance(v, float):
            if not math.isfinite(v):
                raise self.error(node, "number literal is not finite")
            return _literal(v), []
        if isinstance(v, (str, bytes)):
            raise self.error(node, "text literals are only allowed compared (== or !=) with a text-valued param")
        raise self.error(node, f"literal {v!r} is not allowed in expressions")

    def _Name(self, node):
        name = node.id
        if name in BOOLS:  # YAML's spelling, as the README lists it and scalar_text writes it
            return _literal(BOOLS[name]), []
        if name in self.scope.names:
            return _lookup(name), [name]
        if name in self.scope.texts:
            raise self.error(node, f"{name} has text values: compare it with == or != to one of "
                                   f"{', '.join(map(repr, self.scope.texts[name]))}")
        if name in self.scope.hidden:
            raise self.error(node, self.scope.hidden[name])
        if name in self.scope.namespaces:
            fields = ", ".join(f"{name}.{a}" for a in self.scope.namespaces[name])
            raise self.error(node, f"{name} is a namespace, use one of {fields}")
        if name in FUNCTIONS:
            raise self.error(node, f"{name} is a function, call it as {name}(...)")
        known = [*self.scope.names, *self.scope.namespaces, *FUNCTIONS]
        raise self.error(node, f"unknown name {name!r}" + suggest(name, known))

    def _Attribute(self, node):
        base = node.value
        if not isinstance(base, ast.Name) or base.id not in self.scope.namespaces:
            raise self.error(
                node,
                "attribute access is only allowed as "
                + ", ".join(f"{ns}.<name>" for ns in self.scope.namespaces),
            )
        fields = self.scope.namespaces[base.id]
        if node.attr not in fields:
            raise self.error(
                node,
                f"unknown {base.id} field {node.attr!r}, expected one of {', '.join(fields)}"
                + suggest(node.attr, fields),
            )
        key = f"{base.id}.{node.attr}"
        choices = self.scope.text_field(key)
        if choices is not None:
            raise self.error(node, f"{key} is text: compare it with == or != to one of {', '.join(map(repr, choices))}")
        return _lookup(key), [key]

    def _BinOp(self, node):
        op = _BINOPS.get(type(node.op))
        if op is None:
            raise self.error(node, f"operator {type(node.op).__name__} is not allowed")
        fa, na = self.node(node.left)
        fb, nb = self.node(node.right)
        return (lambda env, ctx: op(fa(env, ctx), fb(env, ctx), ctx)), na + nb

    def _UnaryOp(self, node):
        fa, na = self.node(node.operand)
        if isinstance(node.op, ast.USub):
            return (lambda env, ctx: _neg(fa(env, ctx), ctx)), na
        if isinstance(node.op, ast.UAdd):
            return (lambda env, ctx: _pos(fa(env, ctx), ctx)), na
        if isinstance(node.op, ast.Not):
            return (lambda env, ctx: _not(fa(env, ctx), ctx)), na
        raise self.error(node, "operator ~ is not allowed")

    def _Compare(self, node):
        text = self._text_compare(node)
        if text is not None:
            return text
        parts = [self.node(node.left)] + [self.node(c) for c in node.comparators]
        ops = []
        for o in node.ops:
            if type(o) not in _COMPARE:
                raise self.error(node, f"comparison {type(o).__name__} is not allowed")
            ops.append(_COMPARE[type(o)])
        fns = [p[0] for p in parts]
        names = [n for p in parts for n in p[1]]

        def compare(env, ctx):
            left = fns[0](env, ctx)
            result = True
            for op, f in zip(ops, fns[1:]):
                right = f(env, ctx)
                r = op(_num(left, ctx), _num(right, ctx))
                if ctx.vec:
                    result = np.logical_and(result, r)
                elif not r:
                    return False
                left = right
            return result

        return compare, names

    def _text_compare(self, node):
        """``name == "choice"`` or ``!=`` for a text-valued param (either side), else None.

        The param's value is its text for one configuration, and an index into its space's
        choices (``TEXT_CHOICES`` + name in the environment) for a column of configurations."""
        if len(node.ops) != 1 or type(node.ops[0]) not in (ast.Eq, ast.NotEq):
            return None
        left, right = node.left, node.comparators[0]
        if isinstance(left, ast.Constant) and isinstance(right, (ast.Name, ast.Attribute)):
            left, right = right, left
        if isinstance(left, ast.Name) and left.id in self.scope.texts:
            name, choices = left.id, tuple(self.scope.texts[left.id])
        elif (isinstance(left, ast.Attribute) and isinstance(left.value, ast.Name)
              and left.attr in self.scope.namespaces.get(left.value.id, ())
              and self.scope.text_field(f"{left.value.id}.{left.attr}") is not None):
            name = f"{left.value.id}.{left.attr}"
            choices = self.scope.text_field(name)
        else:
            return None
        if not (isinstance(right, ast.Constant) and isinstance(right.value, str)):
            raise self.error(right, f"{name} has text values: compare it to one of "
                                    f"{', '.join(map(repr, choices))}")
        literal = right.value
        if literal not in choices:
            raise self.error(right, f"{literal!r} is not a choice of {name}, expected one of "
                                    f"{', '.join(map(repr, choices))}" + suggest(literal, choices))
        equal = isinstance(node.ops[0], ast.Eq)

        def compare(env, ctx):
            value = env[name]
            if isinstance(value, str):
                return (value == literal) == equal
            choices_here = env[TEXT_CHOICES + name]
            index = choices_here.index(literal) if literal in choices_here else -1
            return (np.asarray(value) == index) == equal

        return compare, [name]

    def _BoolOp(self, node):
        parts = [self.node(v) for v in node.values]
        fns = [p[0] for p in parts]
        names = [n for p in parts for n in p[1]]
        is_and = isinstance(node.op, ast.And)

        def boolop(env, ctx):
            if not ctx.vec:
                for f in fns:
                    if bool(f(env, ctx)) != is_and:
                        return not is_and
                return is_and
            acc = _truth(fns[0](env, ctx))
            saved = ctx.guard
            for f in fns[1:]:
                ctx.guard = saved & (acc if is_and else ~acc)
                v = _truth(f(env, ctx))
                acc = (acc & v) if is_and else (acc | v)
            ctx.guard = saved
            return acc

        return boolop, names

    def _IfExp(self, node):
        ft, nt = self.node(node.test)
        fa, na = self.node(node.body)
        fb, nb = self.node(node.orelse)

        def ifexp(env, ctx):
            t = ft(env, ctx)
            if not ctx.vec:
                return fa(env, ctx) if t else fb(env, ctx)
            t = _truth(t)
            saved = ctx.guard
            ctx.guard = saved & t
            a = fa(env, ctx)
            ctx.guard = saved & ~t
            b = fb(env, ctx)
            ctx.guard = saved
            return np.where(t, _num(a, ctx), _num(b, ctx))

        return ifexp, nt + na + nb

    def _Call(self, node):
        if not isinstance(node.func, ast.Name):
            raise self.error(node, f"only the functions {', '.join(FUNCTIONS)} can be called")
        if node.func.id not in FUNCTIONS:
            what = node.func.id
            raise self.error(
                node,
                f"unknown function {what!r}, expected one of {', '.join(FUNCTIONS)}"
                + suggest(what, FUNCTIONS),
            )
        name = node.func.id
        if node.keywords:
            raise self.error(node, f"{name}() takes no keyword arguments")
        parts = [self.node(a) for a in node.args]
        lo, hi = FUNCTIONS[name]
        if not lo <= len(node.args) <= hi:
            count = str(lo) if lo == hi else f"{lo} to {hi}"
            raise self.error(node, f"{name}() takes {count} arguments, got {len(node.args)}")
        fns = [p[0] for p in parts]
        names = [n for p in parts for n in p[1]]
        impl = _FUNCS[name]
        return (lambda env, ctx: impl([f(env, ctx) for f in fns], ctx)), names


def _literal(value):
    return lambda env, ctx: value


def _lookup(key):
    return lambda env, ctx: env[key]


# -- operations on scalars and arrays -----------------------------------------------------

def _num(x, ctx):
    """Bool arrays become int64 so arithmetic matches Python's bool-as-int."""
    if ctx.vec and isinstance(x, (np.ndarray, np.bool_)) and x.dtype == bool:
        return np.asarray(x).astype(np.int64)
    return x


def _truth(x):
    return np.asarray(x) != 0


def _is_int(x) -> bool:
    if isinstance(x, np.ndarray):
        return x.dtype.kind in "iub"
    return isinstance(x, (int, np.integer))


def _cap(r, ctx):
    """Integers beyond CAP make the configuration infeasible (floats may grow to inf)."""
    if _is_int(r):
        if ctx.vec:
            big = np.abs(r) > CAP
            if np.any(big):
                ctx.fail(big, "value exceeds 2**62")
                r = np.where(big, 0, r)
        elif abs(r) > CAP:
            ctx.fail(True, f"value {r} exceeds 2**62")
    return r


def _add(a, b, ctx):
    return _cap(_num(a, ctx) + _num(b, ctx), ctx)


def _sub(a, b, ctx):
    return _cap(_num(a, ctx) - _num(b, ctx), ctx)


def _mul(a, b, ctx):
    a, b = _num(a, ctx), _num(b, ctx)
    if ctx.vec and _is_int(a) and _is_int(b):
        big = np.abs(np.multiply(a, b, dtype=np.float64)) > CAP
        if np.any(big):
            ctx.fail(big, "value exceeds 2**62")
            a = np.where(big, 0, a)
    return _cap(a * b, ctx)


def _divisor(b, ctx):
    zero = b == 0
    ctx.fail(zero, "division by zero")
    return np.where(zero, 1, b) if ctx.vec else b


def _truediv(a, b, ctx):
    b = _divisor(_num(b, ctx), ctx)
    return np.true_divide(_num(a, ctx), b) if ctx.vec else a / b


def _floordiv(a, b, ctx):
    b = _divisor(_num(b, ctx), ctx)
    return np.floor_divide(_num(a, ctx), b) if ctx.vec else a // b


def _mod(a, b, ctx):
    b = _divisor(_num(b, ctx), ctx)
    return np.mod(_num(a, ctx), b) if ctx.vec else a % b


def _pow(a, b, ctx):
    a, b = _num(a, ctx), _num(b, ctx)
    if not ctx.vec:
        if abs(b) > MAX_EXPONENT:
            ctx.fail(True, f"exponent {b} is larger than {MAX_EXPONENT}")
        if a == 0 and b < 0:
            ctx.fail(True, "division by zero")
        if a < 0 and not float(b).is_integer():
            ctx.fail(True, "negative number to a fractional power")
        if abs(a) > 1 and b > 0 and b * math.log2(abs(a)) > 62:
            ctx.fail(True, f"{a}**{b} exceeds 2**62")
        return _cap(a**b, ctx)
    a_arr, b_arr = np.asarray(a), np.asarray(b)
    with np.errstate(all="ignore"):
        mag = b_arr * np.log2(np.maximum(np.abs(a_arr), 1.0))
        bad = (np.abs(b_arr) > MAX_EXPONENT) | ((a_arr == 0) & (b_arr < 0)) | (mag > 62)
        bad |= (a_arr < 0) & (np.floor(b_arr) != b_arr)
    ctx.fail(bad, "invalid power")
    a_safe = np.where(bad, 1, a_arr)
    b_safe = np.where(bad, 1, b_arr)
    if _is_int(a_safe) and _is_int(b_safe) and not np.any(b_safe < 0):
        return np.power(a_safe, b_safe)
    return np.power(a_safe.astype(np.float64), b_safe)


def _neg(a, ctx):
    return -_num(a, ctx)


def _pos(a, ctx):
    return +_num(a, ctx)


def _not(a, ctx):
    return ~_truth(a) if ctx.vec else not a


_BINOPS = {
    ast.Add: _add,
    ast.Sub: _sub,
    ast.Mult: _mul,
    ast.Div: _truediv,
    ast.FloorDiv: _floordiv,
    ast.Mod: _mod,
    ast.Pow: _pow,
}

_COMPARE = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
}


def _fmin(args, ctx):
    args = [_num(a, ctx) for a in args]
    return functools.reduce(np.minimum, args) if ctx.vec else min(args)


def _fmax(args, ctx):
    args = [_num(a, ctx) for a in args]
    return functools.reduce(np.maximum, args) if ctx.vec else max(args)


def _rounding(np_fn, py_fn):
    def rounded(args, ctx):
        x = _num(args[0], ctx)
        if _is_int(x):
            return x
        if not ctx.vec:
            if not math.isfinite(x) or abs(x) > CAP:
                ctx.fail(True, f"cannot round {x} to an integer")
            return py_fn(x)
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(x) | (np.abs(x) > CAP)
        ctx.fail(bad, "cannot round to an integer")
        return np_fn(np.where(bad, 0.0, x)).astype(np.int64)

    return rounded


def _log2(args, ctx):
    x = _num(args[0], ctx)
    bad = x <= 0
    ctx.fail(bad, f"log2 of {x} (expected a positive number)" if not ctx.vec else "log2 of <= 0")
    if ctx.vec:
        return np.log2(np.where(bad, 1, x).astype(np.float64))
    return math.log2(x)


def _align_up(args, ctx):
    x, a = _num(args[0], ctx), _num(args[1], ctx)
    a = _divisor(a, ctx)
    return _cap(-(np.floor_divide(-x, a) if ctx.vec else (-x // a)) * a, ctx)


def _divides(args, ctx):
    a, b = _num(args[0], ctx), _num(args[1], ctx)
    if not ctx.vec:
        return b == 0 if a == 0 else b % a == 0
    zero = np.asarray(a == 0)
    return np.where(zero, b == 0, np.mod(b, np.where(zero, 1, a)) == 0)


def _is_pow2(args, ctx):
    """``x`` is a power of two (1, 2, 4, ...; a whole float counts): a domain of powers of two
    plus another value is ``where: "is_pow2(x) or x == ..."``."""
    x = _num(args[0], ctx)
    if _is_int(x):
        return (x >= 1) & ((x & (x - 1)) == 0)
    with np.errstate(invalid="ignore"):
        mant, _ = np.frexp(x)
        return (np.asarray(x) >= 1) & (mant == 0.5) if ctx.vec else bool(x >= 1 and mant == 0.5)


_FUNCS = {
    "min": _fmin,
    "max": _fmax,
    "ceil": _rounding(np.ceil, math.ceil),
    "floor": _rounding(np.floor, math.floor),
    "log2": _log2,
    "align_up": _align_up,
    "divides": _divides,
    "is_pow2": _is_pow2,
}
