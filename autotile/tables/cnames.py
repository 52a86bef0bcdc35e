"""Legal, unique C / C++ identifiers for the exported headers, from a spec's names and values.

A spec may name a param ``int``, ``n`` (like a dim) or ``tileLen`` (the camel case of
``tile_len``), and choices such as ``-0.5`` / ``0.5`` or ``a-b`` / ``a_b`` map to one fragment.
Names are mangled, not refused, so every valid spec exports:

- a fragment keeps ASCII letters and digits, each run of anything else becomes one ``_``
  (outer ``_`` dropped, ``_`` before a leading digit, ``X`` if nothing is left); a negative number
  gets ``NEG`` (``-0.5`` -> ``NEG_0_5``, ``0.5`` -> ``_0_5``); after a prefix the fragment drops
  that leading ``_`` (``AUTOTILE_OP_SCALE_0_5``). So no name holds ``__`` or starts with ``_``
  and an upper-case letter, both reserved in C++ (the ``--prefix`` is refused a ``__`` too);
- a member name that is a C or C++ keyword, a name the headers the exports include define in
  any language mode (``NULL``, ``int32_t``, ``M_PI``, ``INT8_WIDTH``, ``SNAN``; in C++, where
  ``<math.h>`` brings ``<stdlib.h>``, ``EXIT_SUCCESS``, ...) or a macro compilers predefine
  without an underscore (``unix``, ``linux``, ``i386``, ...) gets a trailing ``_`` (``int`` ->
  ``int_``);
- a name already given in its scope gets ``_2``, ``_3``, ... Names are given in a fixed order
  (the exporter's own first, then dtypes, units, dims and params in spec order, then the op's
  options), so the first keeps its name and the result is the same on every export.
"""

from __future__ import annotations

import re

from autotile.tables.cinputs import tuned_inputs

KEYWORDS = frozenset("""
auto break case char const continue default do double else enum extern float for goto if inline
int long register restrict return short signed sizeof static struct switch typedef union unsigned
void volatile while _Bool _Complex _Imaginary _Alignas _Alignof _Atomic _Generic _Noreturn
_Static_assert _Thread_local typeof typeof_unqual
alignas alignof and and_eq asm bitand bitor bool catch char8_t char16_t char32_t class compl
concept consteval constexpr constinit const_cast co_await co_return co_yield decltype delete
dynamic_cast explicit export false friend mutable namespace new noexcept not not_eq nullptr
operator or or_eq private protected public reinterpret_cast requires static_assert static_cast
template this thread_local throw true try typeid typename using virtual wchar_t xor xor_eq
NULL offsetof errno math_errhandling INFINITY NAN HUGE HUGE_VAL HUGE_VALF HUGE_VALL MAXFLOAT
MATH_ERRNO MATH_ERREXCEPT size_t ptrdiff_t max_align_t float_t double_t nullptr_t std
""".split())
# object-like macros without a leading underscore that <math.h>, <stddef.h> and <stdint.h> define
# beside the families below: glibc in any -std (GNU modes and _GNU_SOURCE add the most; the SVID
# error codes are older glibc's), and in C++ (g++ defines _GNU_SOURCE, and <math.h> brings
# <stdlib.h> with <endian.h>, <sys/select.h> and the wait macros) for the Ascend C header
HEADER_MACROS = frozenset("""
INFINITY NAN HUGE MAXFLOAT DOMAIN SING OVERFLOW UNDERFLOW TLOSS PLOSS X_TLOSS
EXIT_FAILURE EXIT_SUCCESS MB_CUR_MAX RAND_MAX BIG_ENDIAN LITTLE_ENDIAN PDP_ENDIAN BYTE_ORDER
FD_SETSIZE NFDBITS WNOHANG WUNTRACED WSTOPPED WEXITED WCONTINUED WNOWAIT
""".split())
# macros gcc and clang predefine without an underscore in their GNU modes (-std=gnu99, the
# default) on common targets: Linux and other Unix, x86 (32-bit), SPARC, MIPS, m68k, VAX, POWER,
# PA-RISC, PDP-11, ns32k, Windows (MinGW)
PREDEFINED = frozenset("""
unix linux i386 sun sparc mips MIPSEB MIPSEL m68k mc68000 mc68010 mc68020 mc68030 mc68040 mc68060
vax PPC powerpc hppa hpux hp9000s700 hp9000s800 pdp11 ns32000 WIN32 WIN64 WINNT
""".split())
# families of names <math.h>, <stddef.h> and <stdint.h> (C up to C23 and C++, glibc) define as
# macros or types: <stdint.h>'s types and their _MIN / _MAX / _WIDTH (C23) / _C macros, <math.h>'s
# FP_ (classes, FP_INT_ rounding, FP_FAST_ hints) and MATH_ macros, constants, HUGE_VAL and SNAN
# of every float type. No rule matches a name ending in "_" or "_<digits>" beyond the few real ones
# (M_PI_2), so the mangled forms Scope.take tries are soon free.
_STANDARD = re.compile(r"u?int(_least|_fast)?\d+_t|u?int(ptr|max)_t|U?INT(_LEAST|_FAST)?\d+_(MIN|MAX|WIDTH|C)"
                       r"|U?INT(PTR|MAX)_(MIN|MAX|WIDTH|C)|(SIZE|PTRDIFF|SIG_ATOMIC|WCHAR|WINT)_(MIN|MAX|WIDTH)"
                       r"|M_(E|LOG2E|LOG10E|LN2|LN10|PI|PI_2|PI_4|1_PI|2_PI|2_SQRTPI|SQRT2|SQRT1_2)(l|f|f\d+x?)?"
                       r"|FP_((INT|FAST)_)?[A-Z][A-Z0-9]*|MATH_[A-Z]+|HUGE_VAL(F|L|_F\d+X?)?|SNAN(F|L|F\d+X?)?")


def ident(text) -> str:
    """A C identifier fragment of ``text``: each run of non-alphanumerics becomes one ``_``.

    >>> ident("x*/y"), ident(0.5), ident(-0.5)
    ('x_y', '_0_5', 'NEG_0_5')
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool) and text < 0:
        return "NEG_" + ident(-text).lstrip("_")
    s = re.sub(r"[^0-9A-Za-z]+", "_", str(text)).strip("_") or "X"
    return s if not s[0].isdigit() else "_" + s


def joined(head: str, text) -> str:
    """``head`` (ending in ``_``) and the fragment of ``text``, without the ``_`` that keeps a
    leading digit off a name's start: ``..._TILE_LEN_`` and 0.5 -> ``..._TILE_LEN_0_5`` (it was
    ``TILE_LEN__0_5``, and a name holding ``__`` is reserved in C++)."""
    return head + ident(text).lstrip("_")


def reserved(name: str) -> bool:
    """Whether ``name`` is a C / C++ keyword, a name the included headers define or a predefined macro."""
    return name in KEYWORDS or name in HEADER_MACROS or name in PREDEFINED or _STANDARD.fullmatch(name) is not None


class Scope:
    """Names given out in one scope: each new one is legal and unlike the others."""

    def __init__(self, taken=(), members: bool = False):
        self.taken = set(taken)
        self.members = members  # names the spec chose outright: keywords are mangled too

    def take(self, name: str) -> str:
        """``name``, or its mangled form when it is reserved or already given (see module doc)."""
        base = name + "_" if self.members and reserved(name) else name
        out, i = base, 2
        while out in self.taken or (self.members and reserved(out)):
            out, i = f"{base.rstrip('_')}_{i}", i + 1
        self.taken.add(out)
        return out


def int_choices(param) -> bool:
    """Whether a choice param's values are all integers (the header holds them as themselves)."""
    return param.kind != "int" and all(isinstance(c, int) and not isinstance(c, bool) for c in param.choices)


def is_enum(param) -> bool:
    """Whether the header holds ``param`` as codes of an enum of its own (text, bools, floats)."""
    return param.kind != "int" and not int_choices(param)


def spec_params(spec) -> list:
    """The spec's params that one of its units has: a cube-only param of a vector-only spec gets no
    field, enum or TilingData member (it would only ever hold the not-applicable value)."""
    return [p for p in spec.params if p.units is None or any(u in p.units for u in spec.units)]


DEFAULT_PREFIX = "autotile"
_PREFIX = re.compile(r"[A-Za-z](?:_?[A-Za-z0-9])*")


def prefix_problem(name: str) -> str | None:
    """Why ``name`` cannot start the exported C names (``--prefix``) or name the Ascend C op
    (``--op-type``), or None: a C identifier starting with a letter, no ``__`` nor a trailing
    ``_`` (reserved in C++ once ``_<op>`` follows), and not a keyword or a standard header's name."""
    if not _PREFIX.fullmatch(name):
        return "a C identifier (ASCII letters, digits and single underscores, starting with a letter)"
    if reserved(name):
        return "a name that is not a C / C++ keyword nor defined by a standard header"
    return None


class Names:
    """The C names of one table: the file-scope names (macros, enum constants, types, functions)
    in one scope, the params struct's and the shape struct's members in another. ``prefix``
    replaces ``autotile`` in every file-scope name (``<prefix>_<op>_lookup``,
    ``<PREFIX>_<OP>_ENTRIES``), so tables of one op for two SoCs fit in one translation unit."""

    def __init__(self, table, prefix: str = DEFAULT_PREFIX):
        spec = table.spec
        self.op = ident(table.op).lower()
        self.OP = self.op.upper()
        self.prefix = prefix
        self.pre = pre = f"{prefix}_{self.op}_"
        self.PRE = PRE = f"{prefix.upper()}_{self.OP}_"
        self.params_t, self.entry_t, self.lookup = pre + "params", pre + "entry", pre + "lookup"
        self.shape_t, self.lookup_shape = pre + "shape", pre + "lookup_shape"
        self.served = pre + "served"
        self.entries, self.count, self.na = PRE + "ENTRIES", PRE + "NENTRIES", PRE + "NA"
        self.unverified, self.verified_only = PRE + "NUNVERIFIED", PRE + "VERIFIED_ONLY"
        self.guard = PRE + "TABLE_H"  # the include guard of the C body
        own = [pre + s for s in ("params", "entry", "lookup", "fits", "distance", "dtype", "unit", "shape",
                                 "lookup_shape", "served")]
        g = Scope(own + [PRE + s for s in ("ENTRIES", "NENTRIES", "NA", "NDIMS", "TABLE_H", "NUNVERIFIED",
                                           "VERIFIED_ONLY", "HARDWARE", "HARDWARE_HASH", "SIMULATOR",
                                           "INPUTS")])
        self._dims = {d: g.take(joined(PRE + "DIM_", d).upper()) for d in table.dims}
        self._dtypes = {d: g.take(joined(PRE, d).upper()) for d in spec.dtypes}
        self._units = {u: g.take(joined(PRE + "UNIT_", u).upper()) for u in spec.units}
        self.params = spec_params(spec)
        self._enums, self._choices = {}, {}
        for p in filter(is_enum, self.params):
            self._enums[p.name] = g.take(joined(pre, p.name).lower())
            for c in p.choices:
                self._choices[p.name, type(c), c] = g.take(joined(joined(PRE, p.name) + "_", c).upper())
        # the op's options last, so adding them renamed nothing: a macro each (INPUT_<NAME>), and
        # for a choice a constant per value (INPUT_<NAME>_<VALUE>) it is one of
        self.inputs = PRE + "INPUTS"
        self.tuned_inputs = tuned_inputs(spec)
        self._inputs, self._input_choices = {}, {}
        for name, _, o in self.tuned_inputs:
            if o is not None:
                self._inputs[name] = head = g.take(joined(PRE + "INPUT_", name).upper())
                for c in o.choices if o.kind == "choice" else ():
                    self._input_choices[name, c] = g.take(joined(head + "_", c).upper())
        self.globals = frozenset(g.taken)
        members = Scope(self.globals, members=True)
        self._fields = {p.name: members.take(ident(p.name)) for p in self.params}
        dims = Scope(self.globals, members=True)
        self._members = {d: dims.take(ident(d)) for d in table.dims}

    def dim(self, d: str) -> str:
        """The index macro of dim ``d`` in a lookup's ``x[]``."""
        return self._dims[d]

    def member(self, d: str) -> str:
        """The shape struct's member holding dim ``d``."""
        return self._members[d]

    def dtype(self, d: str) -> str:
        return self._dtypes[d]

    def unit(self, u: str) -> str:
        return self._units[u]

    def enum(self, param: str) -> str:
        """The enum type (tag) of a param held as enum codes."""
        return self._enums[param]

    def choice(self, param: str, value) -> str:
        """The enum constant of one value of a param held as enum codes."""
        return self._choices[param, type(value), value]

    def input(self, name: str) -> str:
        """The macro holding option ``name``'s value (a simulator spec's options only)."""
        return self._inputs[name]

    def input_choice(self, name: str, value) -> str:
        """The macro of one value of a choice option (its code in the op's choice order)."""
        return self._input_choices[name, value]

    def field(self, param: str) -> str:
        """The params struct's member holding ``param``."""
        return self._fields[param]
