"""The spec rules each region function of :mod:`autotile.tables.region` is derived from.

A region function turns a spec's rules into a box and a core limit by hand, so it is right only
for the rules it was derived from: those of the bundled matmul specs (``studies/matmul.yaml``
for the cube, ``studies/matmul_small.yaml`` for the vector unit), kept here as a normalized spec
writes them (``Spec.to_dict``). A table's entries on a unit get the function's region only when
the spec's params, derived values and constraints for that unit are these (expressions compared
as parsed, so spacing and parentheses do not count, nor do descriptions and messages); with any
other rules an entry serves its own shape only, in the Python lookup and the C header alike.
"""

from __future__ import annotations

import ast
import json

from autotile.space.params import plain
from autotile.space.space import unit_rules

_L1_LEFT_A = "(hw.l1_bytes // dtype.bytes - base_k * base_n)"
_L1_LEFT_B = "(hw.l1_bytes // dtype.bytes - depth_a1 * base_m * base_k)"

WRITTEN_FOR = {
    ("matmul", "cube"): {
        "params": {
            "db_l0a": {"type": "int", "low": 1, "high": 2},
            "db_l0b": {"type": "int", "low": 1, "high": 2},
            "db_l0c": {"type": "int", "low": 1, "high": 2},
            "base_m": {"type": "int", "low": 16, "high": "min(256, align_up(shape.m, 16))", "multiple_of": 16},
            "base_n": {"type": "int", "low": 16, "multiple_of": 16, "high": "min(256, align_up(shape.n, 16), "
                       "hw.l0c_bytes // (db_l0c * base_m * dtype.acc_bytes))"},
            "base_k": {"type": "int", "low": "max(16, dtype.c0)", "multiple_of": "max(16, dtype.c0)",
                       "high": "min(256, align_up(shape.k, max(16, dtype.c0)), hw.l0a_bytes // (db_l0a * base_m * "
                               "dtype.bytes), hw.l0b_bytes // (db_l0b * base_n * dtype.bytes))"},
            "single_core_m": {"type": "int", "low": "align_up(ceil(shape.m / hw.cube_cores), base_m)",
                              "high": "align_up(shape.m, base_m)", "multiple_of": "base_m"},
            "single_core_n": {"type": "int", "high": "align_up(shape.n, base_n)", "multiple_of": "base_n",
                              "low": "align_up(ceil(shape.n / (hw.cube_cores // ceil(shape.m / single_core_m))), "
                                     "base_n)"},
            "single_core_k": {"type": "int", "high": "align_up(shape.k, base_k)", "multiple_of": "base_k",
                              "low": "align_up(ceil(shape.k / (hw.cube_cores // (ceil(shape.m / single_core_m) * "
                                     "ceil(shape.n / single_core_n)))), base_k)"},
            "step_m": {"type": "int", "low": 1,
                       "high": f"min(8, single_core_m // base_m, {_L1_LEFT_A} // (base_m * base_k))"},
            "step_ka": {"type": "int", "low": 1,
                        "high": f"min(8, ceil(shape.k / base_k), {_L1_LEFT_A} // (step_m * base_m * base_k))"},
            "depth_a1": {"type": "int", "low": "step_m * step_ka", "step": "step_m * step_ka",
                         "high": f"min(2 * step_m * step_ka, {_L1_LEFT_A} // (base_m * base_k))"},
            "step_n": {"type": "int", "low": 1,
                       "high": f"min(8, single_core_n // base_n, {_L1_LEFT_B} // (base_k * base_n))"},
            "step_kb": {"type": "int", "low": 1, "where": "divides(step_ka, step_kb) or divides(step_kb, step_ka)",
                        "high": f"min(8, ceil(shape.k / base_k), {_L1_LEFT_B} // (step_n * base_k * base_n))"},
            "depth_b1": {"type": "int", "low": "step_n * step_kb", "high": "2 * step_n * step_kb",
                         "step": "step_n * step_kb"},
            "iterate_order": {"type": "categorical", "choices": ["m_first", "n_first"]},
        },
        "derived": {
            "l0a_used": "base_m * base_k * dtype.bytes * db_l0a",
            "l0b_used": "base_k * base_n * dtype.bytes * db_l0b",
            "l0c_used": "base_m * base_n * dtype.acc_bytes * db_l0c",
            "l1_used": "(depth_a1 * base_m * base_k + depth_b1 * base_k * base_n) * dtype.bytes",
            "cores_used": "ceil(shape.m / single_core_m) * ceil(shape.n / single_core_n) * ceil(shape.k / single_core_k)",
        },
        "constraints": [
            "l0a_used <= hw.l0a_bytes", "l0b_used <= hw.l0b_bytes", "l0c_used <= hw.l0c_bytes",
            "l1_used <= hw.l1_bytes", "cores_used <= hw.cube_cores",
            "divides(step_ka, step_kb) or divides(step_kb, step_ka)",
            "step_m * base_m <= single_core_m and step_n * base_n <= single_core_n",
        ],
    },
    ("matmul", "vector"): {
        "params": {
            "tile_m": {"type": "int", "low": 1, "high": "min(64, shape.m)", "pow2": True},
            "buffer_num": {"type": "int", "low": 1, "high": 2},
            "cores": {"type": "int", "low": 1, "high": "min(hw.vector_cores, ceil(shape.m / tile_m))"},
        },
        # the kernel's own UB check, which the region's (n, k) corner is found with
        "derived": {
            "ub_used": "align_up(shape.k * shape.n * dtype.bytes, 32) + align_up(shape.k * shape.n * 4, 32) "
                       "+ buffer_num * (align_up(tile_m * shape.k * dtype.bytes, 32) "
                       "+ align_up(tile_m * shape.n * dtype.bytes, 32)) + align_up(tile_m * shape.n * 4, 32)",
        },
        "constraints": ["ub_used <= hw.ub_bytes"],
    },
}


def _whole_k(cube: dict) -> dict:
    """The cube rules as the bundled spec wrote them before split K: no single_core_k (each core
    keeps K whole, which the region function serves an entry without it as) and no K ranges in
    cores_used."""
    params = {k: v for k, v in cube["params"].items() if k != "single_core_k"}
    derived = cube["derived"] | {"cores_used": "ceil(shape.m / single_core_m) * ceil(shape.n / single_core_n)"}
    return {"params": params, "derived": derived, "constraints": cube["constraints"]}


# earlier bundled rules a region function still serves (tables tuned from specs written then)
ALSO_WRITTEN_FOR = {("matmul", "cube"): (_whole_k(WRITTEN_FOR[("matmul", "cube")]),)}

EXPR_FIELDS = ("low", "high", "step", "multiple_of", "where")


def rules(spec, unit: str) -> dict:
    """``unit``'s params, derived values and constraints as a normalized spec writes them."""
    params, derived, constraints = unit_rules(spec, unit)
    drop = ("description", "units")
    return {"params": {p.name: {k: v for k, v in p.to_dict().items() if k not in drop} for p in params},
            "derived": {d.name: plain(d.expr) for d in derived},
            "constraints": [plain(c.expr) for c in constraints]}


def custom_rule(spec, unit: str) -> str | None:
    """None when ``unit``'s region function applies to ``spec`` (or ``unit`` has none), else the
    first of the spec's rules that differs from those it is derived from.

    >>> custom_rule(load_spec("studies/matmul.yaml"), "cube") is None  # doctest: +SKIP
    True
    """
    want = WRITTEN_FOR.get((spec.op.name, unit))
    if want is None:
        return None
    got = rules(spec, unit)
    first = _differs(got, want)
    if first is None or any(_differs(got, w) is None for w in ALSO_WRITTEN_FOR.get((spec.op.name, unit), ())):
        return None
    return first


def _differs(got: dict, want: dict) -> str | None:
    """The first of the rules ``got`` that differs from ``want``, in words; None if none."""
    for part in ("params", "derived"):
        for name in [*want[part], *(n for n in got[part] if n not in want[part])]:
            a, b = got[part].get(name), want[part].get(name)
            if a is None or b is None:
                return f"{part}.{name} is {'missing' if a is None else 'not one of the bundled rules'}"
            if part == "derived" and _key(a) != _key(b):
                return f"{part}.{name} is {_show(a)}, not {_show(b)}"
            if part == "params":
                for field in [*b, *(f for f in a if f not in b)]:
                    if _key(a.get(field), field) != _key(b.get(field), field):
                        return f"{part}.{name}.{field} is {_show(a.get(field))}, not {_show(b.get(field))}"
    extra = _diff(got["constraints"], want["constraints"])
    missing = _diff(want["constraints"], got["constraints"])
    if extra:
        return f"the constraint {_show(extra[0])} is not one of the bundled rules"
    if missing:
        return f"the constraint {_show(missing[0])} is missing"
    return None


def _key(value, field: str | None = None) -> str:
    """A comparable text of one rule: an expression as parsed, anything else as JSON."""
    if field is None or field in EXPR_FIELDS:
        if isinstance(value, str) or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            return ast.dump(ast.parse(str(value).strip(), mode="eval"))
    return json.dumps(value, sort_keys=True)


def _diff(a: list, b: list) -> list:
    """The items of ``a`` (expressions) not matched one for one in ``b``."""
    left = [_key(x) for x in b]
    out = []
    for x in a:
        if _key(x) in left:
            left.remove(_key(x))
        else:
            out.append(x)
    return out


def _show(value) -> str:
    return "absent" if value is None else json.dumps(" ".join(value.split()) if isinstance(value, str) else value)
