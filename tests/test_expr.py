"""The expression language: semantics, refusals with positions, and scalar == vector."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.space.expr import EvalError, ExprError, Scope, compile_expr

SCOPE = Scope(
    {"shape": ("m", "n", "k"), "dtype": ("bytes", "c0", "acc_bytes"), "hw": ("l1_bytes", "cube_cores")},
    ("a", "b", "c"),
    {"z": "z is declared below a"},
)
ENV = {"a": 7, "b": 2, "c": 0, "shape.m": 1000, "shape.n": 64, "shape.k": 48, "dtype.bytes": 2,
       "dtype.c0": 16, "dtype.acc_bytes": 4, "hw.l1_bytes": 524288, "hw.cube_cores": 24}


@pytest.mark.parametrize("text,value", [
    ("a // b", 3), ("-a // b", -4), ("a % b", 1), ("-a % b", 1), ("a / b", 3.5),
    ("a ** b", 49), ("b ** -1", 0.5), ("2 ** 62", 2**62), ("-a", -7), ("+a", 7), ("not c", True),
    ("1 < b < a", True), ("1 < a < b", False), ("a == 7 != b", True),
    ("c and 1 / c", False), ("c or a", True), ("a if c else b", 2),
    ("min(a, b, 3)", 2), ("max(a, b)", 7), ("ceil(a / b)", 4), ("floor(a / b)", 3),
    ("log2(shape.n)", 6.0), ("align_up(shape.m, 16)", 1008), ("align_up(shape.k, 16)", 48),
    ("divides(b, shape.n)", True), ("divides(a, shape.n)", False), ("divides(c, 0)", True),
    ("is_pow2(shape.n)", True), ("is_pow2(shape.k)", False), ("is_pow2(c)", False), ("is_pow2(-b)", False),
    ("is_pow2(a / 3.5)", True), ("is_pow2(b / 4)", False), ("is_pow2(True)", True),
    ("hw.l1_bytes // (dtype.bytes * shape.k)", 5461), ("dtype.acc_bytes * 2.5", 10.0),
    ("True + b", 3), ("16", 16), ("1.5e3", 1500.0),
    ("true", True), ("not false", True), ("a > b or false", True), ("true + b", 3), ("0x10", 16), ("0o17", 15),
])
def test_values(text, value):
    got = compile_expr(text, SCOPE).eval(ENV)
    assert got == value and type(got) is type(value)


def test_numbers_compile_to_constants():
    e = compile_expr(16, SCOPE)
    assert e.is_constant and e.eval({}) == 16 and e.names == ()


def test_names_are_listed_in_order_of_use():
    assert compile_expr("hw.l1_bytes // (a * b) + a", SCOPE).names == ("hw.l1_bytes", "a", "b")


@pytest.mark.parametrize("text,reason", [
    ("a // c", "division by zero"), ("a % c", "division by zero"), ("a / c", "division by zero"),
    ("align_up(a, c)", "division by zero"), ("a ** (b * 40)", "exponent 80 is larger than 64"),
    ("shape.m ** a", "1000**7 exceeds 2**62"), ("log2(c)", "log2 of 0 (expected a positive number)"),
    ("(-a) ** 0.5", "negative number to a fractional power"), ("c ** -1", "division by zero"),
    ("ceil(a / c)", "division by zero"),
])
def test_evaluation_failures_make_the_config_infeasible(text, reason):
    e = compile_expr(text, SCOPE)
    with pytest.raises(EvalError) as info:
        e.eval(ENV)
    assert info.value.reason == reason
    values, bad = e.eval_array({**ENV, "a": np.array([7, 7])}, 2)
    assert bad.tolist() == [True, True]


def test_guarded_division_is_not_an_error_in_either_mode():
    cols = {**ENV, "c": np.array([0, 7, 2])}
    for text, scalar, column in (("c != 0 and a % c == 0", False, [False, True, False]),
                                 ("c == 0 or a % c == 0", True, [True, True, False]),
                                 ("a if c == 0 else a // c", 7, [7, 1, 3])):
        e = compile_expr(text, SCOPE)
        assert e.eval(ENV) == scalar
        values, bad = e.eval_array(cols, 3)
        assert values.tolist() == column and not bad.any()


@pytest.mark.parametrize("text,message,offset", [
    ("__import__('os').system('id')", "only the functions min, max, ceil, floor, log2, align_up, divides, is_pow2 can be called", 0),
    ("__import__('os')", "unknown function '__import__', expected one of min, max, ceil, floor, log2, align_up, divides, is_pow2", 0),
    ("().__class__", "attribute access is only allowed as shape.<name>, dtype.<name>, hw.<name>", 0),
    ("hw.__dict__", "unknown hw field '__dict__', expected one of l1_bytes, cube_cores", 0),
    ("10**10**10", "exponent 10000000000 is larger than 64", 0),
    ("2**65", "exponent 65 is larger than 64", 0),
    ("a + 2**99999", "exponent 99999 is larger than 64", 4),
    ("a + 99999999999999999999999", "integer literal larger than 2**62", 4),
    ("a + 1/0", "division by zero", 4),
    ("1e300 * 1e300", "part computes to inf, not a finite number", 0),
    ("1e308*10 - 1e308*10", "part computes to inf, not a finite number", 0),
    ("a + -(1e300 * 1e300)", "part computes to inf, not a finite number", 6),
    ("min(a, max(1e300 * 1e300, 1))", "part computes to inf, not a finite number", 11),
    ("a[0]", "subscripts are not allowed in expressions", 0),
    ("lambda: 1", "lambdas are not allowed in expressions", 0),
    ("[x for x in a]", "comprehensions are not allowed in expressions", 0),
    ("'text'", "text literals are only allowed compared (== or !=) with a text-valued param", 0),
    ("a + bb", "unknown name 'bb', did you mean b?", 4),
    ("a + d", "unknown name 'd'", 4),
    ("b + z", "z is declared below a", 4),
    ("min(a, key=b)", "min() takes no keyword arguments", 0),
    ("max(*a)", "starred arguments are not allowed in expressions", 4),
    ("min(a)", "min() takes 2 to 16 arguments, got 1", 0),
    ("sqrt(a)", "unknown function 'sqrt', expected one of min, max, ceil, floor, log2, align_up, divides, is_pow2", 0),
    ("shape.q", "unknown shape field 'q', expected one of m, n, k", 0),
    ("dtype.byts", "unknown dtype field 'byts', expected one of bytes, c0, acc_bytes, did you mean bytes?", 0),
    ("shape", "shape is a namespace, use one of shape.m, shape.n, shape.k", 0),
    ("ceil", "ceil is a function, call it as ceil(...)", 0),
    ("a is b", "comparison Is is not allowed", 0),
    ("a in b", "comparison In is not allowed", 0),
    ("a @ b", "operator MatMult is not allowed", 0),
    ("~a", "operator ~ is not allowed", 0),
    ("(a := 3)", "assignments are not allowed in expressions", 1),
    ("a +", "invalid expression: invalid syntax", None),
    ("a + (b", "invalid expression: '(' was never closed", 4),
    ("a + 1_000", "number 1_000: expected plain digits (no _), or 0o / 0x for octal / hex", 4),
    ("0b11", "number 0b11: expected plain digits (no _), or 0o / 0x for octal / hex", 0),
    ("", "empty expression", None),
    ("a + " * 300 + "a", "expression longer than 1000 characters", None),
    ("-" * 300 + "a", "expression has more than 400 parts", None),
    ("(" * 300 + "a" + ")" * 300, "invalid expression: too many nested parentheses", 200),
])
def test_refusals(text, message, offset):
    with pytest.raises(ExprError) as info:
        compile_expr(text, SCOPE)
    assert (info.value.message, info.value.offset) == (message, offset)


# -- scalar and vectorized evaluation agree ----------------------------------------------

_LEAVES = st.one_of(
    st.sampled_from(["a", "b", "c", "shape.m", "dtype.c0"]),
    st.integers(-20, 20).map(str),
    st.sampled_from(["0.5", "2.0", "True", "False", "true", "false"]),
)


def _grow(children):
    binary = st.tuples(children, st.sampled_from(["+", "-", "*", "/", "//", "%", "**", "<", "<=", "==", "!=", "and", "or"]), children)
    return st.one_of(
        binary.map(lambda t: f"({t[0]} {t[1]} {t[2]})"),
        children.map(lambda x: f"(-{x})"),
        children.map(lambda x: f"(not {x})"),
        st.tuples(children, children, children).map(lambda t: f"({t[0]} if {t[1]} else {t[2]})"),
        st.tuples(st.sampled_from(["min", "max", "align_up", "divides"]), children, children).map(
            lambda t: f"{t[0]}({t[1]}, {t[2]})"),
        st.tuples(st.sampled_from(["ceil", "floor", "log2", "is_pow2"]), children).map(lambda t: f"{t[0]}({t[1]})"),
    )


EXPRESSIONS = st.recursive(_LEAVES, _grow, max_leaves=8)
COLUMN = st.lists(st.integers(-9, 9), min_size=1, max_size=12)


@settings(max_examples=400, deadline=None)
@given(EXPRESSIONS, COLUMN, COLUMN, COLUMN)
def test_vectorized_evaluation_equals_scalar_evaluation(text, a, b, c):
    try:
        expr = compile_expr(text, SCOPE)
    except ExprError:
        return  # constant parts failing statically (e.g. 1/0) are refused at load: fine
    n = min(len(a), len(b), len(c))
    cols = {**ENV, "a": np.array(a[:n]), "b": np.array(b[:n]), "c": np.array(c[:n])}
    values, bad = expr.eval_array(cols, n)
    values = np.broadcast_to(np.asarray(values), (n,))
    for i in range(n):
        try:
            expected = expr.eval({**ENV, "a": a[i], "b": b[i], "c": c[i]})
        except EvalError:
            assert bad[i], (text, i)
            continue
        assert not bad[i], (text, i)
        got = values[i].item()
        if isinstance(expected, float) or isinstance(got, float):
            assert math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12), (text, i, got, expected)
        else:
            assert got == expected, (text, i, got, expected)


def test_ready_parts_are_the_largest_computable_pieces():
    from autotile.space.expr import ready_parts

    bound = {"a", "b"}

    def is_bound(k):
        return "." in k or k in bound

    assert ready_parts("min(8, a // b, c * a)", is_bound) == ["min(8, a // b)", "a"]
    assert ready_parts("a * b <= c and c < hw.l1_bytes // a", is_bound) == ["a * b", "hw.l1_bytes // a"]
    assert ready_parts("c + hw.l1_bytes * dtype.bytes", is_bound) == []
    assert ready_parts("a if c else b + 1", is_bound) == ["a", "b + 1"]
    assert ready_parts("a + b", is_bound) == ["a + b"]
    assert ready_parts("a * b + (1 if true else 0)", is_bound) == ["a * b + (1 if true else 0)"]  # no name


TEXT_SCOPE = Scope({"dtype": ("bytes", "name")}, ("a",), texts={"form": ("trace", "naive")})


@pytest.mark.parametrize("text,form,value", [
    ('form == "naive"', "naive", True), ('form == "naive"', "trace", False),
    ('"naive" != form', "naive", False), ('a * 2 if form == "trace" else a', "trace", 14),
    ('form == "trace" and dtype.name == "fp16"', "trace", True),
    ('form == "trace" and dtype.name != "fp16"', "trace", False),
])
def test_text_params_compare_to_their_choices(text, form, value):
    """A text param (its text for one configuration, an index into its space's choices for a
    column) compared to one of its choices, scalar == vector; dtype.name likewise."""
    e = compile_expr(text, TEXT_SCOPE)
    env = {"a": 7, "form": form, "dtype.bytes": 2, "dtype.name": "fp16"}
    assert e.eval(env) == value
    col = {"a": np.array([7, 7]), "form": np.array([("naive", "trace").index(form)] * 2),
           "text_choices.form": ("naive", "trace"), "dtype.bytes": 2, "dtype.name": "fp16"}
    got, bad = e.eval_array(col, 2)
    assert list(np.broadcast_to(got, (2,))) == [value] * 2 and not bad.any()


INPUTS_SCOPE = Scope({"inputs": ("mode", "align_corners")}, ("a",), text_fields={"inputs.mode": ("nearest", "bilinear")})


@pytest.mark.parametrize("text,mode,ac,value", [
    ('inputs.mode == "nearest"', "nearest", False, True), ("inputs.mode != 'nearest'", "nearest", False, False),
    ('a * 2 if inputs.mode == "bilinear" and inputs.align_corners else a', "bilinear", True, 14),
    ('a * 2 if inputs.mode == "bilinear" and inputs.align_corners else a', "bilinear", False, 7),
    ("a + inputs.align_corners", "nearest", True, 8),
])
def test_text_fields_of_namespaces_compare_to_their_choices(text, mode, ac, value):
    """A namespace field with text values (an op's choice option, ``inputs.mode``) compares to
    one of its choices like ``dtype.name``; a bool option is a number; scalar == vector."""
    e = compile_expr(text, INPUTS_SCOPE)
    env = {"a": 7, "inputs.mode": mode, "inputs.align_corners": ac}
    assert e.eval(env) == value
    got, bad = e.eval_array({**env, "a": np.array([7, 7])}, 2)
    assert list(np.broadcast_to(got, (2,))) == [value] * 2 and not bad.any()


@pytest.mark.parametrize("text,message", [
    ("inputs.mode + 1", "inputs.mode is text: compare it with == or != to one of 'nearest', 'bilinear'"),
    ('inputs.mode == "bicubic"', "'bicubic' is not a choice of inputs.mode, expected one of 'nearest', 'bilinear'"),
    ("inputs.mode == a", "inputs.mode has text values: compare it to one of 'nearest', 'bilinear'"),
    ("inputs.layout == 1", "unknown inputs field 'layout', expected one of mode, align_corners"),
])
def test_text_fields_only_compare(text, message):
    with pytest.raises(ExprError) as exc:
        compile_expr(text, INPUTS_SCOPE)
    assert message in str(exc.value)


@pytest.mark.parametrize("text,message", [
    ("form + 1", "form has text values: compare it with == or != to one of 'trace', 'naive'"),
    ('form == "nave"', "'nave' is not a choice of form, expected one of 'trace', 'naive', did you mean naive?"),
    ("form == a", "form has text values: compare it to one of 'trace', 'naive'"),
    ("dtype.name + 1", "dtype.name is text: compare it with == or != to one of 'fp32', 'fp16', 'bf16', 'int8'"),
    ('form < "naive"', "form has text values: compare it with == or != to one of 'trace', 'naive'"),
])
def test_text_params_only_compare(text, message):
    with pytest.raises(ExprError, match=None) as exc:
        compile_expr(text, TEXT_SCOPE)
    assert message in str(exc.value)
