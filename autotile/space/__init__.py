"""Tiling search spaces: YAML specs, parameter kinds, safe expressions, feasible-space enumeration.

>>> from autotile.space import load_spec
>>> spec = load_spec("studies/matmul.yaml")  # doctest: +SKIP
>>> space = spec.space(spec.shapes[0], "fp16", "cube")  # doctest: +SKIP
>>> space.count().feasible_size  # doctest: +SKIP
"""

from autotile.space.enumeration import Count, Enumeration
from autotile.space.expr import EvalError, Expr, ExprError, Scope, compile_expr
from autotile.space.loader import load_spec, load_spec_text
from autotile.space.params import ChoiceParam, IntParam, Param
from autotile.space.space import Space
from autotile.space.spec import Budget, Constraint, Derived, Spec

__all__ = [
    "Budget", "ChoiceParam", "Constraint", "Count", "Derived", "Enumeration", "EvalError", "Expr",
    "ExprError", "IntParam", "Param", "Scope", "Space", "Spec", "compile_expr", "load_spec", "load_spec_text",
]
