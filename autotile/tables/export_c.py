"""The ``c`` export: a self-contained C99 header with the entries and the lookup rule.

Names are prefixed ``autotile_<op>_`` / ``AUTOTILE_<OP>_`` so headers of several ops can be
included together (``prefix`` replaces ``autotile``: two tables of one op, say for two SoCs, in one
translation unit); names from the spec (params, choices) are mangled into legal, distinct C
identifiers (:mod:`autotile.tables.cnames`: ``int`` -> ``int_``, a clash gets ``_2``).
Params become ``int32_t`` fields: integers as themselves, integer choices as themselves, other
choices (text, bools, floats) as enum codes in the spec's choice order. The params struct has
the params of the spec's units; one the entry's unit does not have holds ``AUTOTILE_<OP>_NA``
(INT32_MIN), which no param takes (entries must fit int32 above it). The dtype and unit enums
list the spec's own. Each entry says whether it passed the verification gate (``verified``).
Macros name what the table was tuned for: the hardware, the simulator and the op's options (the
spec's ``inputs:``, :mod:`autotile.tables.cinputs`).
The lookup implements the same rule as :mod:`autotile.tables.lookup` over the entries' regions,
the very ones the Python lookup requires (``Lookup.regions``, see :mod:`autotile.tables.region`),
and returns NULL when no entry fits; its ``served`` gives an entry's params as they run at the
queried shape, Python's answer (the kernel's ``served``, spelled in C beside it as ``SERVED_C``).
"""

from __future__ import annotations

import hashlib
import re

from autotile import words
from autotile.errors import InputError
from autotile.tables.cinputs import c_value, rendering
from autotile.tables.cnames import DEFAULT_PREFIX, Names, is_enum
from autotile.tables.ctext import c_string, comment
from autotile.tables.region import describe_rule
from autotile.tables.schema import Table


def encoded(param, value) -> int | str:
    """The C value of one param: the integer itself, or the enum constant's name (see Names)."""
    if not is_enum(param):
        return int(value)
    return next(i for i, c in enumerate(param.choices) if c == value and type(c) is type(value))


def render(table: Table, prefix: str = DEFAULT_PREFIX) -> str:
    """The whole header; ``prefix`` starts every file-scope name (see the module doc)."""
    return "\n".join([_banner(table, "c"), "#pragma once", "", body(table, Names(table, prefix))])


def _banner(table: Table, fmt: str) -> str:
    d = table.doc
    lines = [
        f"autotile tiling table for {table.op} ({fmt} export). Generated: do not edit, re-export.",
        f"  hardware: {d['hardware']['name']} (profile hash {d['hardware']['hash']})",
        f"  spec:     {d['spec']['path']} (hash {d['spec']['hash']})",
        f"  autotile {d['autotile_version']}, table created {d['created']}, {words.count(len(table.entries), 'entry')}"
        + (f" ({k} NOT verified)" if (k := unverified_count(table)) else ""),
        f"  simulator: {table.simulator or ('none (replayed measurements)' if table.spec.backend == 'replay' else 'not recorded')}",
        f"  inputs:   {rendering(table.spec) or 'none (the op has no options)'}",
        f"  dims: x[] = {{{', '.join(table.dims)}}} in this order (the order of a spec's shapes does not matter)",
    ]
    if (cut := table.interrupted) is not None:
        lines.insert(4, f"  PARTIAL: its tune was interrupted ({words.count(cut['not_run'], 'study')} not run, "
                        f"{cut['cut_short']} stopped short of the budget); resume it and re-export")
    return "/*\n" + "\n".join(f" * {comment(s)}".rstrip() for s in lines) + "\n */"


def unverified_count(table: Table) -> int:
    """How many entries did not pass the verification gate (``--no-verify``, replay, or a shape
    too large to execute in verification)."""
    return sum(1 for e in table.entries if not e.verified)


def body(table: Table, n: Names) -> str:
    """Everything after ``#pragma once``: includes, enums, structs, entries, lookup.

    The Ascend C header embeds it too, so it has an include guard of its own (``#pragma once`` is
    per file): both headers of a table go in one translation unit. The guard's value is a hash of
    the body, so a second table of the same op is an ``#error``, not silently left out.
    """
    text = _body(table, n)
    guard, mark = n.guard, "0x" + hashlib.sha256(text.encode()).hexdigest()[:12]
    return (f"#ifndef {guard}\n#define {guard} {mark}\n\n{text}\n#elif {guard} != {mark}\n"
            f'#error "another {n.prefix} {n.op} table is already included (export one of them with another --prefix)"\n'
            f"#endif /* {guard} */\n")


def _body(table: Table, n: Names) -> str:
    from autotile.tables.lookup import Lookup

    look = Lookup(table)
    spec = table.spec
    dims = table.dims
    out = ["#include <math.h>", "#include <stddef.h>", "#include <stdint.h>", ""]
    out += _rule_comment(table, n, look.custom)
    out += _identity(table, n)
    out += _dim_order(table, n)
    out.append(f"#define {n.count} {len(table.entries)}")
    out.append(f"/* entries that did not pass the verification gate (tuned with --no-verify, replayed, or too large "
               f"to execute in verification); define "
               f"{n.verified_only} before the include to make the lookup skip them */")
    out.append(f"#define {n.unverified} {unverified_count(table)}")
    out.append("")
    out.append("/* dtypes (a lookup's dtype argument): the spec's; any other value finds no entry */")
    out.append(f"enum {n.pre}dtype {{")
    out += [f"    {n.dtype(d)} = {i}," for i, d in enumerate(spec.dtypes)]
    out += ["};", "", "/* compute units */", f"enum {n.pre}unit {{"]
    out += [f"    {n.unit(u)} = {i}," for i, u in enumerate(spec.units)]
    out += ["};", ""]
    out.append("/* A param the entry's unit does not have (INT32_MIN: no value nor enum code of a param). */")
    out += [f"#define {n.na} (-2147483647 - 1)", ""]
    params = n.params
    for p in filter(is_enum, params):
        out.append(f"/* {comment(p.name)}: {comment(p.description or 'choice')} */")
        out.append(f"enum {n.enum(p.name)} {{")
        out += [f"    {n.choice(p.name, c)} = {i}," for i, c in enumerate(p.choices)]
        out += ["};", ""]
    out.append(f"/* One tiling: a field per param of the spec's units ({n.na} where the entry's unit has none). */")
    out.append(f"typedef struct {n.params_t} {{")
    width = max((len(n.field(p.name)) for p in params), default=0) + 1
    for p in params:
        if not is_enum(p):
            note = p.description or ("one of " + ", ".join(str(c) for c in p.choices) if p.kind != "int" else "")
        else:
            note = f"enum {n.enum(p.name)}"
        only = [u for u in spec.units if p.units is not None and u in p.units]
        if p.units is not None and len(only) < len(spec.units):
            note = f"{note}; {', '.join(only)} only".lstrip("; ")
        if n.field(p.name) != p.name:
            note = f"{p.name}; {note}".rstrip("; ")
        out.append((f"    int32_t {(n.field(p.name) + ';').ljust(width)}" + (f" /* {comment(note)} */" if note else "")).rstrip())
    if not params:  # C99 has no empty struct
        out.append("    int32_t none_; /* the spec has no params */")
    out += [f"}} {n.params_t};", ""]
    nd = len(dims)
    out += [
        "/* A tuned shape, its validity region and its tiling. */",
        f"typedef struct {n.entry_t} {{",
        f"    int64_t shape[{nd}];     /* {comment(', '.join(dims))} */",
        f"    int32_t dtype;        /* enum {n.pre}dtype */",
        f"    int32_t unit;         /* enum {n.pre}unit */",
        "    int32_t verified;     /* 1: passed the verification gate; 0: not verified (--no-verify, replay, too large) */",
        f"    int64_t lo[{nd}];        /* region: lo[d] <= x[d] <= hi[d] */",
        f"    int64_t hi[{nd}];",
        f"    int64_t split[{nd}];     /* region: core block per dim (0: not split) */",
        "    int64_t max_blocks;   /* region: prod ceil(x[d] / split[d]) <= max_blocks (0: no limit) */",
        f"    {n.params_t} params;",
        f"}} {n.entry_t};",
        "",
    ]
    out += _entries(table, n, params, look.regions)
    out += _lookup(table, n, nd)
    out += _served(table, n, nd, getattr(look.kernel, "SERVED_C", {}))
    return "\n".join(out) + "\n"


def _identity(table: Table, n: Names) -> list[str]:
    """Macros naming what the table was tuned for: a kernel built for one SoC can check them."""
    hw = table.doc["hardware"]
    return [
        "/* What the table was tuned for: the hardware profile (name, content hash) and the simulator. */",
        f"#define {n.PRE}HARDWARE {c_string(hw['name'])}",
        f"#define {n.PRE}HARDWARE_HASH {c_string(hw['hash'])}",
        f"#define {n.PRE}SIMULATOR {c_string(table.simulator or '')}",
        "",
    ] + _inputs(table, n)


def _inputs(table: Table, n: Names) -> list[str]:
    """Macros naming the op's options the table was tuned for (see :mod:`autotile.tables.cinputs`):
    the canonical text, then on the simulator one macro per option (a choice's as one of its
    values' constants, usable in ``#if``)."""
    what = (" * The op's options (the spec's inputs:, defaults filled in) the table was tuned for. They change"
            if table.spec.backend == "simulator" else
            " * The spec's inputs: as recorded beside the measurements (keys sorted; not checked). Options change")
    out = ["/*", what,
           " * which tilings fit (elementwise add and mul charge UB for 3 tiles a buffer, relu for 2): a kernel",
           " * built for other options must not take this table's tilings.",
           " */",
           f"#define {n.inputs} {c_string(rendering(table.spec))}"]
    for name, value, o in n.tuned_inputs:
        if o is None:
            continue
        if o.kind == "choice":
            out += [f"#define {n.input_choice(name, c)} {i}" for i, c in enumerate(o.choices)]
            out.append(f"#define {n.input(name)} {n.input_choice(name, value)}")
        else:
            out.append(f"#define {n.input(name)} {c_value(value, o)}")
    return out + [""]


def _dim_order(table: Table, n: Names) -> list[str]:
    """The order of a lookup's ``x[]`` in words, as index macros and as a struct of named dims."""
    dims = table.dims
    order = ", ".join(f"x[{i}] = {d}" for i, d in enumerate(dims))
    example = ", ".join(f".{n.member(d)} = {d.upper()}" for d in dims)
    out = ["/*",
           f" * DIM ORDER: a lookup's x[] holds the dims in this order: {comment(order)}.",
           " * It is the table's order, whatever order a spec lists a shape's dims in. Index x[] with the",
           f" * {n.PRE}DIM_* macros, or name the dims: {comment(f'{n.shape_t} s = {{{example}}};')}",
           f" * then {n.lookup_shape}(&s, dtype, &exact).",
           " */",
           f"#define {n.PRE}NDIMS {len(dims)} /* {comment(', '.join(dims))} */"]
    out += [f"#define {n.dim(d)} {i}" for i, d in enumerate(dims)]
    out += ["", f"typedef struct {n.shape_t} {{"]
    out += [f"    int64_t {n.member(d)};" for d in dims]
    out += [f"}} {n.shape_t};", ""]
    return out


def _rule_comment(table: Table, n: Names, custom) -> list[str]:
    fallback = ("the Python lookup then answers \"model\" or \"default\"); the caller falls back to its own "
                "default tiling." if table.spec.backend != "replay" else
                "a replay table has no kernel, so no default tiling either: it answers its tuned shapes only).")
    if table.spec.backend != "replay" and len(table.spec.units) > 1:
        fallback += (f"\n     Python's default step simulates each unit's default ({', '.join(table.spec.units)}) and "
                     "answers the fastest;\n     this header has no simulator, so the caller chooses the unit.")
    text = f"""\
Lookup rule ({n.lookup}), the same as autotile's Python lookup so both agree:
  1. Candidates are the entries of the queried dtype, in table order, whose validity region
     holds the queried shape x: lo[d] <= x[d] <= hi[d] for every dim d, and the product over
     dims with split[d] > 0 of ceil(x[d] / split[d]) is at most max_blocks. For {table.op}:
     {describe_rule(table.op, table.spec.units, custom)}.
  2. The candidate at the smallest distance sum over d of (log x[d] - log e[d])^2 (natural
     log, summed in dim order) wins; a tie goes to the earlier entry. Distance 0 is an exact match.
  3. No candidate: the lookup returns NULL ({fallback}
Run the winner's params as {n.served}(e, x) serves them (Python's answer), not e->params.
Needs <math.h> (link with -lm); compile without -ffast-math so distances round as in Python."""
    return ["/*"] + [f" * {comment(s)}".rstrip() for s in text.splitlines()] + [" */", ""]


def _entries(table: Table, n: Names, params, regions) -> list[str]:
    out = [f"/* params order: {comment(', '.join(p.name for p in params))} */"]
    count = max(1, len(table.entries))
    out.append(f"static const {n.entry_t} {n.entries}[{count}] = {{")
    width = max(1, len(params))
    if not table.entries:
        zeros = ", ".join("0" for _ in table.dims)
        out.append(f"    /* no entries: a placeholder the lookup never reads ({n.count} is 0) */")
        out.append(f"    {{{{{zeros}}}, 0, 0, 0, {{{zeros}}}, {{{zeros}}}, {{{zeros}}}, 0, {{{', '.join('0' for _ in range(width))}}}}},")
    for i, (e, r) in enumerate(zip(table.entries, regions)):
        shape = " ".join(f"{k}={v}" for k, v in e.shape.items())
        perf = (f"{e.cycles:,.0f} cycles, {e.pct_of_peak:.1f}% of peak" if e.cycles is not None
                and e.pct_of_peak is not None else "no prediction")
        ver = e.held_to() or ("verified" if e.verified else "NOT verified"
                              + (f" ({words.lead(e.unverified)})" if e.unverified else ""))
        acc = f", {e.accuracy()}" if e.accuracy() else ""
        out.append(f"    /* {comment(f'{shape} {e.dtype} {e.unit}')}: {perf}{comment(acc)}, {ver} */")
        vals = []
        for p in params:
            if p.name not in e.params:
                vals.append(n.na)
                continue
            v = encoded(p, e.params[p.name])
            if not -2**31 < v < 2**31:
                raise InputError(f"expected a value that fits int32 (above INT32_MIN, the header's "
                                 f"not-applicable {n.na}), got {v}", file=table.file,
                                 field=f"entries[{i}].params.{p.name}")
            vals.append(n.choice(p.name, e.params[p.name]) if is_enum(p) else str(v))
        out.append(f"    {{{{{_ints(e.shape.values())}}}, {n.dtype(e.dtype)}, {n.unit(e.unit)}, {int(e.verified)},")
        out.append(f"     {{{_ints(r.lo)}}}, {{{_ints(r.hi)}}}, {{{_ints(r.split)}}}, {r.max_blocks},")
        out.append(f"     {{{', '.join(vals or ['0'])}}}}},")
    out += ["};", ""]
    return out


def _ints(values) -> str:
    return ", ".join(str(int(v)) for v in values)


def _lookup(table: Table, n: Names, nd: int) -> list[str]:
    fill = "\n".join(f"    x[{n.dim(d)}] = s->{n.member(d)};" for d in table.dims)
    return f"""\
/*
 * 1 when shape x (every x[d] >= 1) lies in entry e's validity region. No int64 overflow at any
 * x: ceil(x / split) is (x - 1) / split + 1, and the block product is never formed past
 * max_blocks (blocks * b > max_blocks exactly when blocks > max_blocks / b).
 */
static inline int {n.pre}fits(const {n.entry_t} *e, const int64_t x[{nd}])
{{
    int64_t blocks = 1;
    int d;
    for (d = 0; d < {nd}; ++d) {{
        if (x[d] < e->lo[d] || x[d] > e->hi[d])
            return 0;
        if (e->split[d] > 0 && e->max_blocks > 0) {{
            int64_t b = (x[d] - 1) / e->split[d] + 1;
            if (blocks > e->max_blocks / b)
                return 0;
            blocks *= b;
        }}
    }}
    return 1;
}}

/* Squared log-space distance from x to entry e's shape, summed in dim order. */
static inline double {n.pre}distance(const {n.entry_t} *e, const int64_t x[{nd}])
{{
    double total = 0.0;
    int d;
    for (d = 0; d < {nd}; ++d) {{
        double t = log((double)x[d]) - log((double)e->shape[d]);
        total += t * t;
    }}
    return total;
}}

/*
 * The entry whose tiling to run for shape x (x[{n.PRE}DIM_*]: see DIM ORDER above) and dtype
 * (enum {n.pre}dtype; another value finds no entry), or NULL when no entry fits (see the rule
 * above). When exact is not NULL it is set to 1 for an exact match and 0 otherwise.
 */
static inline const {n.entry_t} *{n.lookup}(const int64_t x[{nd}], int dtype, int *exact)
{{
    const {n.entry_t} *best = NULL;
    double best_d = 0.0;
    int i, d;
    if (exact != NULL)
        *exact = 0;
    for (d = 0; d < {nd}; ++d)
        if (x[d] <= 0)
            return NULL;
    for (i = 0; i < {n.count}; ++i) {{
        const {n.entry_t} *e = &{n.entries}[i];
        double dist;
        if (e->dtype != dtype || !{n.pre}fits(e, x))
            continue;
#ifdef {n.verified_only}
        if (!e->verified)
            continue;
#endif
        dist = {n.pre}distance(e, x);
        if (best == NULL || dist < best_d) {{
            best = e;
            best_d = dist;
        }}
    }}
    if (best != NULL && exact != NULL)
        *exact = best_d == 0.0;
    return best;
}}

/* {n.lookup} with the dims named, so they cannot be passed in the wrong order. */
static inline const {n.entry_t} *{n.lookup_shape}(const {n.shape_t} *s, int dtype, int *exact)
{{
    int64_t x[{nd}];
{fill}
    return {n.lookup}(x, dtype, exact);
}}
""".splitlines()


def _served(table: Table, n: Names, nd: int, rules: dict) -> list[str]:
    """The ``served`` function: an entry's params as they run at shape x, as Python's lookup
    answers them (``Lookup.served``: matmul keeps K whole at any K for a tiling that did not split
    it). ``rules`` is the kernel's ``SERVED_C``, kept beside its ``served``; a rule reading a param
    the spec does not declare is left out, as ``served`` then leaves the params as stored."""
    names = {p.name for p in n.params}
    dims = {d: n.dim(d) for d in table.dims}
    lines = []
    for name, expr in rules.items():
        if name not in names or any(m not in names for m in re.findall(r"p->(\w+)", expr)):
            continue
        expr = re.sub(r"(x|e->shape)\[(\w+)\]", lambda m: f"{m.group(1)}[{dims[m.group(2)]}]", expr)
        expr = re.sub(r"p->(\w+)", lambda m: f"p->{n.field(m.group(1))}", expr)
        lines.append(f"    out.{n.field(name)} = (int32_t)({expr});")
    body = (f"    const {n.params_t} *p = &e->params;\n    {n.params_t} out = *p;\n" + "\n".join(lines)
            + "\n    return out;") if lines else "    (void)x; /* this op runs every entry's params as stored */\n    return e->params;"
    return f"""\
/*
 * Entry e's params as they run at shape x: run these, not e->params, which hold them as tuned at
 * e->shape. They are Python's lookup answer (Lookup.served), e.g. a matmul tiling that kept K whole
 * (single_core_k >= its tuned k) keeps it whole at any k: single_core_k = k rounded up to base_k.
 */
static inline {n.params_t} {n.served}(const {n.entry_t} *e, const int64_t x[{nd}])
{{
{body}
}}
""".splitlines()
