"""The ``ascendc`` export: the op's TilingData declaration and a host function filling it.

The header embeds the C lookup of the ``c`` export, then declares the tiling data with
``BEGIN_TILING_DATA_DEF`` / ``TILING_DATA_FIELD_DEF`` / ``END_TILING_DATA_DEF`` /
``REGISTER_TILING_DATA_CLASS`` (from CANN's ``register/tilingdata_base.h``) in namespace
``optiling``, and ``static inline <Op>TilingFromTable(x, dtype, tiling, &blockDim)`` that fills it
for a shape. ``<Op>`` is the registered OpType: the op's name in camel case (``Matmul``), or the
``op_type`` given (a custom op registers under its own, e.g. ``MatmulCustom``). With another
prefix than ``autotile`` the functions are ``<prefix>_<Op>...`` and the TilingData class, whose
definition sits under a guard keyed by its name, is defined once: two SoCs' tables of one op,
exported with two prefixes, go in one translation unit (a class of the same name with other
fields, or with a field whose codes mean other units or choices, is an ``#error``; see
:func:`_tiling_data`). The registration defines a global object in CANN, so it is emitted only
where ``AUTOTILE_REGISTER_<Op>TilingData`` is defined (the one host tiling .cpp of the op), once
per translation unit: the header goes in any number of files linked together.

For a matmul spec whose cube unit declares every param TCubeTiling is built from (see
:func:`fills_tcube`) the struct is TCubeTiling's fields (int32, in TCubeTiling's order,
usedCoreNum to dbL0C). Fields the tuner does not choose are fixed: no bias, no transLength,
shareMode 0, batch 1, no UB caching of L1; singleCoreK is K for an entry that did not split K
at its tuned shape (it keeps K whole at any K), else single_core_k (usedCoreNum counts the K
ranges too); shareL1Size / shareL0CSize are the bytes the tiling
uses there; iterateOrder is 0 (M first) or 1 (N first) whatever the C enum's codes (they follow
the spec's choices). Then ``unit`` and one field per param TCubeTiling has no place for (the
vector kernel's). On an entry of another unit than cube only usedCoreNum and the shape (M, N,
Ka, Kb) are filled: the cube-only fields are derived from cube params that entry does not have.
Other ops, and matmul specs without those cube params (vector only), get one int32 field per
dim, ``unit`` when the spec has several units, then one per param of the spec's units, named in camel case and mangled
like the C names (:mod:`autotile.tables.cnames`) to stay legal and distinct. ``unit`` holds the codes of the C header's
enum ``autotile_<op>_unit`` (and a param held as enum codes its enum's), in the spec's order, which
a comment above the TilingData lists, as the device kernel cannot see the enums; a field that does not apply to the entry's unit holds
``AUTOTILE_<OP>_NA`` (INT32_MIN), never a value or enum code.
blockDim is, per unit, the cores its kernel gives work at the shape, as the simulator counts them
(``SimResult.block_dim``), from the op's declaration (``registry.CoreSplit``): the cube's core
blocks (usedCoreNum), else the cores among those the count param (``cores``, copy's ``block_dim``)
asks for that the kernel's split leaves work, else 1. It was the ``cores`` param or 1: a copy
tiling tuned for block_dim 28 launched one core. A param the count reads must be a count: an int
param (or integer choices) whose values are all >= 1 (``count_problem``), else blockDim is 1, said
in the header and by ``core_notes`` (export warns): a replay spec's ``cores: [few, many]`` set
blockDim to the enum code, 0 for ``few``, and a ``cores`` admitting 0 or -1 gave 0 or 2**32 - 1.
"""

from __future__ import annotations

import hashlib
import json
import math
import re

from autotile.dtypes import get as get_dtype
from autotile.kernels import registry
from autotile.space.params import plain
from autotile.tables import export_c
from autotile.tables.cnames import DEFAULT_PREFIX, Names, Scope, ident, int_choices, is_enum
from autotile.tables.ctext import c_string, comment
from autotile.tables.schema import Table

# the entry did not split K at its tuned shape: it keeps K whole at any K (kernels.matmul.served)
WHOLE_K = "(p->single_core_k >= e->shape[2])"
# TCubeTiling field -> C expression over x (the shape), p (the entry's params), e (the entry), dbytes
TCUBE = (
    ("usedCoreNum", "used"),
    ("M", "x[0]"), ("N", "x[1]"), ("Ka", "x[2]"), ("Kb", "x[2]"),
    ("singleCoreM", "p->single_core_m"), ("singleCoreN", "p->single_core_n"),
    ("singleCoreK", f"{WHOLE_K} ? x[2] : p->single_core_k"),
    ("baseM", "p->base_m"), ("baseN", "p->base_n"), ("baseK", "p->base_k"),
    ("depthA1", "p->depth_a1"), ("depthB1", "p->depth_b1"),
    ("stepM", "p->step_m"), ("stepN", "p->step_n"),
    ("isBias", "0"), ("transLength", "0"),
    ("iterateOrder", None),  # from iterate_order's enum codes: see _iterate_order
    ("shareMode", "0"),
    ("shareL1Size", "(p->depth_a1 * p->base_m * p->base_k + p->depth_b1 * p->base_k * p->base_n) * dbytes"),
    ("shareL0CSize", "p->base_m * p->base_n * 4 * p->db_l0c"),
    ("shareUbSize", "0"),
    ("batchM", "1"), ("batchN", "1"), ("singleBatchM", "1"), ("singleBatchN", "1"),
    ("stepKa", "p->step_ka"), ("stepKb", "p->step_kb"),
    ("depthAL1CacheUB", "0"), ("depthBL1CacheUB", "0"),
    ("dbL0A", "p->db_l0a"), ("dbL0B", "p->db_l0b"), ("dbL0C", "p->db_l0c"),
)

SHAPE_FIELDS = ("usedCoreNum", "M", "N", "Ka", "Kb")  # filled for every unit; the rest are cube-only
CUBE_PARAMS = tuple(dict.fromkeys(name for _, e in TCUBE for name in re.findall(r"p->(\w+)", e or "")))
ORDERS = ("m_first", "n_first")  # iterate_order's values, iterateOrder 0 and 1
# a param as the entry runs it at shape x, where that is not as stored (the kernel's ``served``)
SERVED = {("matmul", "single_core_k"): f"({WHOLE_K} ? x[2] : p->single_core_k)"}
OPTIONAL = ("single_core_k",)  # a spec from before split K leaves it out: every entry keeps K whole


def _splits_k(table: Table) -> bool:
    """Whether the spec declares single_core_k (if not, singleCoreK is K and no K ranges are counted)."""
    return "single_core_k" in table.spec.param_names("cube")


def _tcube(table: Table) -> tuple[tuple[str, str | None], ...]:
    """TCUBE for this table: without single_core_k, singleCoreK is the shape's K."""
    if _splits_k(table):
        return TCUBE
    return tuple((f, "x[2]" if f == "singleCoreK" else e) for f, e in TCUBE)


def camel(name: str) -> str:
    """``single_core_m`` -> ``singleCoreM``; ``x`` before a leading digit (a replay dim ``_1a``
    -> ``x1a``), as a field starts with a letter once CANN's macros paste it after ``set_``."""
    head, *rest = name.split("_")
    out = head + "".join(w[:1].upper() + w[1:] for w in rest)
    return "x" + out if out[:1].isdigit() else out


def class_name(op: str) -> str:
    """``weighted_sum`` -> ``WeightedSum`` (the OpType and the TilingData prefix)."""
    return "".join(w[:1].upper() + w[1:] for w in ident(op).split("_"))


def render(table: Table, prefix: str = DEFAULT_PREFIX, op_type: str | None = None) -> str:
    """The whole Ascend C header: C names start with ``prefix`` (see export_c), the TilingData
    registers under ``op_type`` (default: the op's name in camel case)."""
    n = Names(table, prefix)
    cls = op_type or class_name(table.op)
    fn = function_prefix(cls, prefix)
    fields = _fields(table, n, cls, fn)
    codes = {f: code for f, _, code in fields if code is not None}
    out = [export_c._banner(table, "ascendc"), "#pragma once", "",
           '#include "register/tilingdata_base.h"', "", export_c.body(table, n), "namespace optiling {", ""]
    out += _codes_comment(table, n, codes)
    out += [_tiling_data(cls, [(f, e) for f, e, _ in fields], codes), ""]
    used, used_doc = _used(table, n, fn)
    helpers = ""
    if fills_tcube(table) or f"{fn}DtypeBytes(" in used:
        cases = "".join(f"    case {n.dtype(d)}: return {get_dtype(d).bytes};\n" for d in table.spec.dtypes)
        helpers += (f"/* Bytes of one input element of dtype. */\n"
                    f"static inline int32_t {fn}DtypeBytes(int dtype)\n{{\n    switch (dtype) {{\n{cases}    }}\n"
                    f"    return 2;\n}}\n\n")
    if f"{fn}Mul(" in used:
        helpers += (f"/* a * b (both >= 1), saturated at INT64_MAX: a count of work items past it is no tuned\n"
                    f" * shape's. */\nstatic inline int64_t {fn}Mul(int64_t a, int64_t b)\n{{\n"
                    f"    return a > INT64_MAX / b ? INT64_MAX : a * b;\n}}\n\n")
    if f"{fn}Busy(" in used:
        helpers += (f"/*\n * The cores that get work when count cores each take a run of ceil(items / count) items\n"
                    f" * rounded up to granule: ceil(items / run), in divisions only (items, count, granule >= 1).\n"
                    f" */\nstatic inline int64_t {fn}Busy(int64_t items, int64_t count, int64_t granule)\n{{\n"
                    f"    return ((items - 1) / granule) / ((items - 1) / count / granule + 1) + 1;\n}}\n\n")
    none = ("use the default tiling then" if table.spec.backend != "replay" else
            "a replay table has no default tiling, only its tuned shapes")
    out.append(helpers + f"""\
/*
 * Fill tiling from the table for shape x (x[{n.PRE}DIM_*], in this order: {comment(', '.join(table.dims))})
 * and dtype (enum {n.pre}dtype); sets *blockDim ({comment(used_doc)}) and returns 0.
 * Returns -1 and leaves both untouched when no entry fits: {none}.
 */
static inline int {fn}TilingFromTable(const int64_t x[{len(table.dims)}], int dtype, {cls}TilingData &tiling,
                                uint32_t *blockDim)
{{
    const {n.entry_t} *e = {n.lookup}(x, dtype, NULL);
    if (e == NULL)
        return -1;
    const {n.params_t} *p = &e->params;""")
    if fills_tcube(table):
        out.append(f"    const int cube = e->unit == {n.unit('cube')};")
        out.append(f"    const int32_t dbytes = {fn}DtypeBytes(dtype);")
    out.append(f"    const int32_t used = (int32_t)({used});")
    out += [f"    tiling.set_{f}((int32_t)({expr}));" for f, expr, _ in fields]
    out += ["    *blockDim = (uint32_t)used;", "    return 0;", "}", "", "}  // namespace optiling", ""]
    return "\n".join(out)


def function_prefix(cls: str, prefix: str = DEFAULT_PREFIX) -> str:
    """What the header's functions are named after: ``Matmul`` (``MatmulTilingFromTable``), or
    with another ``--prefix`` ``soc_a_Matmul``, so two tables' headers of one OpType fit in one
    translation unit (they share the TilingData class, defined once)."""
    return cls if prefix == DEFAULT_PREFIX else f"{prefix}_{cls}"


def _hash(text: str) -> str:
    return "0x" + hashlib.sha256(text.encode()).hexdigest()[:12]


def _tiling_data(cls: str, fields: list[tuple[str, str]], codes: dict[str, tuple[tuple, str]]) -> str:
    """The TilingData class, under a guard keyed by the class name: a second header of the OpType
    (another --prefix, say another SoC's table) with the same fields and codes skips it, one with
    other fields, or a field whose codes mean other units or choices (``codes``: field -> its values
    in code order, and whose codes they are; the device kernel reads the codes, not the host
    header's enums), is an #error
    (the guards' values are hashes of the definition and of each field's codes). Then its
    registration, which only the translation unit defining :func:`register_macro` gets."""
    text = "\n".join([f"BEGIN_TILING_DATA_DEF({cls}TilingData)"]
                     + [f"    TILING_DATA_FIELD_DEF(int32_t, {f});" for f, _ in fields]
                     + ["END_TILING_DATA_DEF;"])
    guard, mark = f"AUTOTILE_TILING_DATA_{cls}TilingData", _hash(text)
    marks = [(f"AUTOTILE_TILING_CODES_{cls}TilingData_{f}", _hash(json.dumps(list(values))), f, values)
             for f, (values, _) in codes.items()]
    out = [f"#ifndef {guard}", f"#define {guard} {mark}", *(f"#define {g} {m}" for g, m, _, _ in marks), text,
           f"#elif {guard} != {mark}",
           f'#error "{cls}TilingData is already defined with other fields by another header '
           f'(export one of them with another --op-type)"']
    for g, m, f, values in marks:
        said = c_string(f"{cls}TilingData is already defined with other {f} codes by another header (here "
                        f"{_said(values)}; the kernel reads either: export one of them with another "
                        f"--op-type, or write the specs' units and choices in one order)")
        out += [f"#elif !defined({g}) || {g} != {m}", f"#error {said}"]
    return "\n".join(out + ["#endif", "", _registration(cls)])


def _said(values) -> str:
    """A field's codes in words: ``0 vector, 1 scalar``."""
    return ", ".join(f"{i} {str(v).lower() if isinstance(v, bool) else v}" for i, v in enumerate(values))


def _codes_comment(table: Table, n: Names, codes: dict[str, tuple[tuple, str]]) -> list[str]:
    """The comment above the TilingData saying which code means which unit or choice (the device
    kernel sees the codes, not the host header's enums), and what a field not of the entry's unit holds."""
    if not codes:
        return []
    out = ["/*", " * Codes of the TilingData fields that hold them (the device kernel reads these, not the",
           " * host header's enums; another header sharing the TilingData must give the same ones):"]
    out += [f" *   {f}: {comment(_said(values))} ({where})" for f, (values, where) in codes.items()]
    if _multi_unit(table):
        out += [f" * A field that does not apply to the entry's unit holds {n.na} (INT32_MIN), never a",
                " * value or enum code."]
    return out + [" */"]


def register_macro(cls: str) -> str:
    """The macro that one translation unit (the op's host tiling .cpp) defines before including
    the header to register ``<cls>TilingData`` there."""
    return f"AUTOTILE_REGISTER_{cls}TilingData"


def _registration(cls: str) -> str:
    """``REGISTER_TILING_DATA_CLASS``, only where :func:`register_macro` is defined and once per
    translation unit. CANN's macro defines a global object (``g_tilingdata_<Op><Cls>helper``):
    registered in every file that included the header, two files linked together were a multiple
    definition of it."""
    macro, done = register_macro(cls), f"AUTOTILE_REGISTERED_{cls}TilingData"
    return (f"/*\n * CANN's REGISTER_TILING_DATA_CLASS defines a global object: define {macro} in the one\n"
            f" * .cpp that registers the OpType (its host tiling file), before including this header. Other\n"
            f" * files that include it get the class and the functions, without the registration.\n */\n"
            f"#if defined({macro}) && !defined({done})\n#define {done}\n"
            f"REGISTER_TILING_DATA_CLASS({cls}, {cls}TilingData)\n#endif")


def _multi_unit(table: Table) -> bool:
    return len(table.spec.units) > 1


def fills_tcube(table: Table) -> bool:
    """Whether the tiling data is TCubeTiling: a matmul spec whose cube unit declares every param
    TCubeTiling is built from, as integers (iterate_order as m_first / n_first)."""
    spec = table.spec
    if table.op != "matmul" or "cube" not in spec.units:
        return False
    names = spec.param_names("cube")
    if any(name not in names for name in CUBE_PARAMS + ("iterate_order",) if name not in OPTIONAL):
        return False
    order = spec.param("iterate_order")
    return (order.kind != "int" and set(order.choices) <= set(ORDERS)
            and all(spec.param(name).kind == "int" or int_choices(spec.param(name))
                    for name in CUBE_PARAMS if name in names))


def _iterate_order(table: Table, n: Names) -> str:
    """iterateOrder (0: M first, 1: N first) as a C expression over the entry's enum code."""
    if "n_first" not in table.spec.param("iterate_order").choices:
        return "0"
    return f"p->iterate_order == {n.choice('iterate_order', 'n_first')} ? 1 : 0"


def _fields(table: Table, n: Names, cls: str, fn: str) -> list[tuple[str, str, tuple | None]]:
    """(field, C expression, codes) in declaration order; params missing on a unit are NA in the
    entries. Field names are camel case, mangled like the C names (see cnames) to stay legal and
    unique. ``codes`` is None for a field holding a value, else (its values in code order, whose
    codes they are): the unit, an enum param's choices (export_c's codes), iterateOrder's fixed two."""
    taken = {cls, f"{cls}TilingData"} | {f"{fn}{f}" for f in ("TilingFromTable", "DtypeBytes", "Mul", "Busy")}
    scope = Scope(n.globals | taken, members=True)
    units = (tuple(table.spec.units), f"enum {n.pre}unit")
    unit = [(scope.take("unit"), "e->unit", units)] if _multi_unit(table) else []
    params = n.params
    if fills_tcube(table):
        order = (ORDERS, "TCubeTiling's, whatever the C enum's")
        tcube = [(scope.take(f), e or _iterate_order(table, n), None if e else order) for f, e in _tcube(table)]
        out = [(f, e if f in SHAPE_FIELDS else f"cube ? ({e}) : {n.na}", c) for f, e, c in tcube]
        params = [p for p in params if p.name not in CUBE_PARAMS + ("iterate_order",)]
    else:
        out = [(scope.take(camel(ident(d))), f"x[{i}]", None) for i, d in enumerate(table.dims)]
    out += unit + [(scope.take(camel(ident(p.name))), f"p->{p.name}",
                    (tuple(p.choices), f"enum {n.enum(p.name)}") if is_enum(p) else None) for p in params]
    return [(f, _members(e, n), c) for f, e, c in out]


def _members(expr: str, n: Names) -> str:
    """``expr`` with each ``p->param`` naming the param's member in the C params struct."""
    return re.sub(r"p->(\w+)", lambda m: f"p->{n.field(m.group(1))}", expr)


def _used(table: Table, n: Names, fn: str) -> tuple[str, str]:
    """The blockDim of an entry, as a C expression switching on its unit, and in words: the cores
    its kernel gives work at shape x, as the op declares them (``registry.CoreSplit``)."""
    info = registry.get(table.op)
    per_unit = {}
    for u in table.spec.units:
        split, have = info.core_split(u), table.spec.param_names(u)
        if split is None or (split.count is not None and split.count not in have):
            per_unit[u] = ("1", "1: one core")
        elif (why := _split_problem(table, u, split, have)) is not None:
            per_unit[u] = ("1", f"1: {why}")
        else:
            per_unit[u] = _busy(table, split, have, fn)
    per_unit = {u: (_members(e, n), d) for u, (e, d) in per_unit.items()}
    exprs = list(per_unit.values())
    if len({e for e, _ in exprs}) == 1:
        return exprs[0]
    *head, (_, last) = [(u, e) for u, (e, _) in per_unit.items()]
    expr = "".join(f"e->unit == {n.unit(u)} ? ({e}) : " for u, e in head) + f"({last})"
    return expr, "; ".join(f"{u}: {d}" for u, (_, d) in per_unit.items())


def _busy(table: Table, split: registry.CoreSplit, have, fn: str) -> tuple[str, str]:
    """``split``'s busy cores as a C expression over x and p, and in words."""
    def param(name: str) -> str:
        return SERVED.get((table.op, name), f"p->{name}")

    dims = table.dims
    factors, said = [], []
    for names, by in split.work:
        size = f"x[{dims.index(names[0])}]"
        for d in names[1:]:
            size = f"{fn}Mul({size}, x[{dims.index(d)}])"
        if by is None:
            factors.append(size)
            said.append("*".join(names))
        elif by in have:  # else an optional param left out: the whole dim on each core
            factors.append(f"(({size}) - 1) / {param(by)} + 1")
            said.append(f"ceil({'*'.join(names)} / {by})")
    if split.in_bytes:
        factors.append(f"{fn}DtypeBytes(dtype)")
        said.append("dtype bytes")
    items = factors[0] if factors else "1"
    for f in factors[1:]:
        items = f"{fn}Mul({items}, {f})"
    if split.count is None:
        return items, " x ".join(said) + " core blocks"
    if not split.work:
        return f"p->{split.count}", f"the {split.count} param"
    granule = split.granule if isinstance(split.granule, int) else param(split.granule)
    return (f"{fn}Busy({items}, p->{split.count}, {granule})",
            f"the {split.count} param's cores that get a run of {' x '.join(said)} in granules of {split.granule}")


def count_problem(table: Table, unit: str, name: str) -> str | None:
    """Why param ``name`` of ``unit`` cannot be read as a count of cores or items (a C value of 0 or
    less, or an enum code), or None: an int param whose low bound is a number >= 1 (or pow2), else
    whose entries on ``unit`` all hold ints >= 1 (the values the header serves), or integer choices
    all >= 1."""
    param = table.spec.param(name)
    if param.kind == "int":
        if param.pow2:
            return None
        low = plain(param.low)
        if isinstance(low, (int, float)):  # a fractional bound rounds up
            return None if math.ceil(low) >= 1 else f"param {name} admits {math.ceil(low)}, not a count of cores"
        held = [e.params.get(name) for e in table.entries if e.unit == unit]
        if all(isinstance(v, int) and not isinstance(v, bool) and v >= 1 for v in held):
            return None
        return f"param {name} (low {param.low.text}) holds values below 1 in the table"
    choices = param.for_unit(unit).choices
    shown = ", ".join(str(c).lower() if isinstance(c, bool) else str(c) for c in choices)
    if not int_choices(param.for_unit(unit)):
        return f"param {name} is {param.kind} ({shown}), not a count of cores"
    if min(choices) < 1:
        return f"param {name} admits {min(choices)} ({shown}), not a count of cores"
    return None


def _split_problem(table: Table, unit: str, split: registry.CoreSplit, have) -> str | None:
    """The first ``count_problem`` of the params ``split`` reads on ``unit`` (those it has)."""
    for name in split.params():
        if name in have and (why := count_problem(table, unit, name)) is not None:
            return why
    return None


def core_notes(table: Table) -> list[str]:
    """One line per unit whose blockDim falls back to 1 because a param its core split reads is
    not a count (export prints them as warnings)."""
    info, out = registry.get(table.op), []
    for u in table.spec.units:
        split, have = info.core_split(u), table.spec.param_names(u)
        if split is None or (split.count is not None and split.count not in have):
            continue
        if (why := _split_problem(table, u, split, have)) is not None:
            where = f" on {u}" if len(table.spec.units) > 1 else ""
            out.append(f"ascendc: blockDim{where} is 1: {why} (blockDim reads cores only from int params "
                       f"whose values are all >= 1)")
    return out
