"""Safe YAML loading that remembers where every key and value came from.

Specs, profiles and tables all need errors of the form ``file:line:col: field: message``.
PyYAML's safe loader gives us nodes with marks; we build plain Python values and a side table of
positions keyed by the path of each value (a tuple of keys and indices).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from autotile.errors import InputError

MAX_NODES = 200_000  # refuse alias bombs ("billion laughs") before they expand
MAX_DEPTH = 100  # refuse deeper nesting: the composer and ``build`` recurse once per level

Path_ = tuple  # a path into the document: keys (str) and list indices (int)

# YAML 1.2 floats with an exponent that YAML 1.1 (PyYAML) reads as text: 1e6, 1.0e6, -2E-3, .5e3
FLOAT_12 = re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$")
# YAML 1.2 core schema numbers. YAML 1.1 (PyYAML's default) read a leading zero as octal (0064 is
# 52, 0128 text) and colons as base 60 (1:00 is 60), while the command line reads the same digits
# as decimal; 1.2 has decimal with any leading zeros, explicit 0o / 0x, and no _ or base 60.
INT_12 = re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")
FLOAT_CORE = re.compile(r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
                        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")
NUMBER_START = list("-+0123456789.")


class SafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader with YAML 1.2 core numbers: ``0064`` is 64, ``1e6`` a float,
    ``0o17`` and ``0x1f`` explicit octal and hex; ``1:00`` and ``1_000`` are text.

    It refuses nesting deeper than ``MAX_DEPTH`` while composing: PyYAML's composer recurses once
    per level, so ``[[[...]]]`` a few hundred deep ended in a RecursionError traceback.
    """

    _depth = 0

    def compose_node(self, parent, index):
        if self._depth >= MAX_DEPTH:
            mark = self.peek_event().start_mark
            raise yaml.composer.ComposerError(
                None, None, f"nesting deeper than {MAX_DEPTH} levels", mark)
        self._depth += 1
        try:
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


class SafeDumper(yaml.SafeDumper):
    """PyYAML's safe dumper that quotes text ``SafeLoader`` would read as a float (``"1e6"``)."""


def _construct_int_12(loader, node) -> int:
    """An int as YAML 1.2 reads it (PyYAML's own constructor reads 010 as octal, 1:00 as 60)."""
    text = loader.construct_scalar(node)
    if re.fullmatch(r"[-+]?[0-9]+", text):
        return int(text, 10)
    if re.fullmatch(r"0o[0-7]+", text):
        return int(text[2:], 8)
    if re.fullmatch(r"0x[0-9a-fA-F]+", text):
        return int(text[2:], 16)
    raise yaml.constructor.ConstructorError(None, None, f"{text!r} is not a YAML 1.2 integer",
                                            node.start_mark)


_NUMBERS = ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
SafeLoader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag not in _NUMBERS]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
SafeLoader.add_implicit_resolver(_NUMBERS[0], INT_12, NUMBER_START)
SafeLoader.add_implicit_resolver(_NUMBERS[1], FLOAT_CORE, NUMBER_START)
SafeLoader.add_constructor(_NUMBERS[0], _construct_int_12)
# the dumper keeps YAML 1.1's rules and adds 1.2's, so it quotes text either would read as a number
SafeDumper.add_implicit_resolver(_NUMBERS[0], INT_12, NUMBER_START)
SafeDumper.add_implicit_resolver(_NUMBERS[1], FLOAT_12, NUMBER_START)


def scalar_text(value) -> str:
    """A scalar as a spec (and ``--set`` / ``--inputs``) spells it: booleans ``true`` / ``false``."""
    return str(value).lower() if isinstance(value, bool) else str(value)


@dataclass(frozen=True)
class Located:
    """A loaded YAML document: its plain value and where each part of it stands."""

    value: Any
    file: str
    value_pos: dict = field(default_factory=dict)  # path -> (line, col) of the value
    key_pos: dict = field(default_factory=dict)  # path -> (line, col) of the mapping key
    style: dict = field(default_factory=dict)  # path -> scalar style ('"', "'", '|', '>', None)
    source: str = ""  # the document's text
    span: dict = field(default_factory=dict)  # path -> (start index, end index, line, col) of a text scalar

    def where(self, path: Path_, *, key: bool = False) -> tuple[int | None, int | None]:
        """(line, col), 1-based, of the value (or key) at ``path``; nearest known ancestor."""
        table = self.key_pos if key else self.value_pos
        p = tuple(path)
        while True:
            if p in table:
                return table[p]
            if key and p in self.value_pos:
                return self.value_pos[p]
            if not p:
                return (None, None)
            p = p[:-1]

    def where_in(self, path: Path_, offset: int) -> tuple[int | None, int | None]:
        """(line, col), 1-based, of character ``offset`` of the text value at ``path``, which may
        be quoted, folded or a block scalar spanning several lines; an escape stands at its
        backslash. Where the value cannot be rebuilt from the source, the value's own position."""
        span = self.span.get(tuple(path))
        value = self.value
        try:
            for part in path:
                value = value[part]
        except (KeyError, IndexError, TypeError):
            value = None
        if span is None or not isinstance(value, str) or not value:
            return self.where(path)
        start, end, line, col = span
        offsets = scalar_offsets(self.source, start, end, self.style.get(tuple(path)), value)
        if offsets is None:
            return self.where(path)
        return source_position(self.source, (start, line, col), offsets[max(0, min(offset, len(offsets) - 1))])

    def error(self, path: Path_, message: str, *, key: bool = False) -> InputError:
        """An InputError located at ``path`` (the key itself when ``key`` is true)."""
        line, col = self.where(path, key=key)
        return InputError(message, file=self.file, line=line, col=col, field=dotted(path))


def dotted(path: Path_) -> str:
    """``("params", "base_m", "high")`` -> ``params.base_m.high``; indices as ``[i]``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def suggest(word: str, choices) -> str:
    """`, did you mean X?` for the closest valid choice, or an empty string."""
    match = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1, cutoff=0.6)
    return f", did you mean {match[0]}?" if match else ""


def load_text(text: str, file: str) -> Located:
    """Parse YAML text with the safe loader into plain values plus positions."""
    try:
        loader = SafeLoader(text)
    except yaml.reader.ReaderError as exc:  # a character YAML does not allow, e.g. NUL
        line = text.count("\n", 0, exc.position) + 1
        col = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        raise InputError(f"invalid YAML: unacceptable character #x{exc.character:04x}",
                         file=file, line=line, col=col) from None
    try:
        try:
            node = loader.get_single_node()
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line = mark.line + 1 if mark else None
            col = mark.column + 1 if mark else None
            problem = exc.problem or exc.context or "invalid YAML"
            raise InputError(f"invalid YAML: {problem}", file=file, line=line, col=col) from None
        except yaml.YAMLError as exc:
            raise InputError(f"invalid YAML: {exc}", file=file) from None
        except RecursionError:  # MAX_DEPTH should stop it first; never a traceback
            raise InputError("invalid YAML: nesting too deep", file=file,
                             line=loader.line + 1, col=loader.column + 1) from None
        value_pos: dict = {}
        key_pos: dict = {}
        style: dict = {}
        span: dict = {}
        counter = [0]
        open_nodes: set[int] = set()  # ids of the collection nodes being built (path's nodes)
        merged_entries: dict[int, dict] = {}  # id of a mapping node -> its entries (merges applied)

        def located(n, path, message):
            return InputError(message, file=file, line=n.start_mark.line + 1,
                              col=n.start_mark.column + 1, field=dotted(path))

        def build(n, path):
            counter[0] += 1
            if counter[0] > MAX_NODES:
                raise InputError(
                    f"document too large (more than {MAX_NODES} nodes after aliases)", file=file
                )
            if not isinstance(n, yaml.ScalarNode):
                if id(n) in open_nodes:  # &a [*a]: expanding it would never end
                    raise located(n, path, "a YAML alias refers to a node that contains it")
                if len(path) >= MAX_DEPTH:  # aliases can nest what the composer saw shallow
                    raise located(n, path, f"nesting deeper than {MAX_DEPTH} levels (after aliases)")
                open_nodes.add(id(n))
                try:
                    return build_collection(n, path)
                finally:
                    open_nodes.discard(id(n))
            value_pos[path] = (n.start_mark.line + 1, n.start_mark.column + 1)
            style[path] = n.style
            span[path] = (n.start_mark.index, n.end_mark.index, n.start_mark.line, n.start_mark.column)
            return construct(n, path, "value")

        def build_collection(n, path):
            value_pos[path] = (n.start_mark.line + 1, n.start_mark.column + 1)
            if isinstance(n, yaml.MappingNode):
                out = {}
                for key, (knode, vnode) in entries(n, path, frozenset()).items():
                    kpath = path + (key,)
                    key_pos[kpath] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
                    out[key] = build(vnode, kpath)
                return out
            return [build(v, path + (i,)) for i, v in enumerate(n.value)]

        def entries(n, path, seen) -> dict:
            """key -> (key node, value node) of mapping node ``n``: its own keys (each once)
            override those its merge keys (``<<``) bring, and an earlier source a later one, as
            YAML's merge says (PyYAML's flatten_mapping lists both, so an override was taken for
            a duplicate key). Keys stand in PyYAML's order, merged ones first."""
            if id(n) in seen:  # &a {<<: *a}
                raise located(n, path, "a YAML alias refers to a node that contains it")
            if id(n) in merged_entries:  # an anchor merged many times: work it out once
                return merged_entries[id(n)]
            own, sources = [], []
            for knode, vnode in n.value:
                if knode.tag != "tag:yaml.org,2002:merge":
                    own.append((knode, vnode))
                elif isinstance(vnode, yaml.MappingNode):
                    sources.append(vnode)
                elif isinstance(vnode, yaml.SequenceNode):
                    for sub in vnode.value:
                        if not isinstance(sub, yaml.MappingNode):
                            raise located(sub, path, f"invalid YAML: expected a mapping for merging, "
                                                     f"but found {sub.id}")
                        sources.append(sub)
                else:
                    raise located(vnode, path, "invalid YAML: expected a mapping or list of mappings "
                                               f"for merging, but found {vnode.id}")
            out: dict = {}
            for knode, vnode in own:
                if not isinstance(knode, yaml.ScalarNode):
                    raise located(knode, path, "mapping keys must be plain scalars")
                if knode.tag == "tag:yaml.org,2002:value":  # a plain `=` key is text, as in PyYAML
                    knode.tag = "tag:yaml.org,2002:str"
                key = construct(knode, path, "key")
                if not isinstance(key, (str, int)) or isinstance(key, bool):
                    key = str(key)
                if key in out:
                    raise located(knode, path + (key,), "duplicate key")
                out[key] = (knode, vnode)
            merged = [entries(source, path, seen | {id(n)}) for source in sources]
            for got in merged:
                for key, pair in got.items():
                    out.setdefault(key, pair)
            # keys in PyYAML's order: the merged ones first (the last source's first), then its own
            order = [k for got in reversed(merged) for k in got] + list(out)
            merged_entries[id(n)] = {k: out[k] for k in dict.fromkeys(order)}
            return merged_entries[id(n)]

        def construct(n, path, what):
            """A scalar's value; a tag that cannot build it (e.g. !!binary on text) is an error."""
            try:
                return loader.construct_object(n)
            except yaml.YAMLError as exc:
                raise InputError(
                    f"invalid {what}: {getattr(exc, 'problem', exc)}",
                    file=file,
                    line=n.start_mark.line + 1,
                    col=n.start_mark.column + 1,
                    field=dotted(path),
                ) from None

        try:
            value = None if node is None else build(node, ())
        except RecursionError:  # MAX_DEPTH should stop it first; never a traceback
            raise InputError("invalid YAML: nesting too deep", file=file) from None
        return Located(value, file, value_pos, key_pos, style, text, span)
    finally:
        loader.dispose()


def load_file(path: str | Path) -> Located:
    """Read and parse a YAML file; unreadable files are InputErrors naming the file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", file=str(p)) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a YAML file", file=str(p)) from None
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=str(p)) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=str(p)) from None
    return load_text(text, str(p))


# -- where a character of a scalar's value stands in the source ----------------------------------

_BREAKS = "\r\n\x85\u2028\u2029"
_ESCAPES = {"0": "\0", "a": "\x07", "b": "\x08", "t": "\t", "\t": "\t", "n": "\n", "v": "\x0b",
            "f": "\x0c", "r": "\r", "e": "\x1b", " ": " ", '"': '"', "\\": "\\", "/": "/",
            "N": "\x85", "_": "\xa0", "L": "\u2028", "P": "\u2029"}
_HEX = {"x": 2, "u": 4, "U": 8}


class _Rebuild:
    """The value of one scalar rebuilt from its source text as PyYAML's scanner builds it, with
    the source index of each character: a character copied from the source stands where it was,
    an escape at its backslash, and a line break folded into a space (or into the breaks of empty
    lines) at the first character of the line that continues the value."""

    def __init__(self, src: str, pos: int):
        self.src = src
        self.pos = pos
        self.start_of_line = max(src.rfind(b, 0, pos) for b in _BREAKS) + 1
        self.chars: list[str] = []
        self.at: list[int] = []

    def peek(self, k: int = 0) -> str:
        i = self.pos + k
        return self.src[i] if i < len(self.src) else "\0"

    def put(self, text: str, at: int) -> None:
        self.chars.extend(text)
        self.at.extend([at] * len(text))

    def copy(self, length: int) -> None:
        self.chars.extend(self.src[self.pos:self.pos + length])
        self.at.extend(range(self.pos, self.pos + length))
        self.pos += length

    def line_break(self) -> str:
        ch = self.peek()
        if ch in "\r\n\x85":
            self.pos += 2 if self.src[self.pos:self.pos + 2] == "\r\n" else 1
            self.start_of_line = self.pos
            return "\n"
        if ch in "\u2028\u2029":
            self.pos += 1
            self.start_of_line = self.pos
            return ch
        return ""

    def column(self) -> int:
        return self.pos - self.start_of_line

    def folded(self, join: str, breaks: list[str], line_break: str) -> None:
        """A line break inside a plain or quoted scalar: a space, or the empty lines' breaks."""
        if line_break != "\n":
            self.put(line_break, self.pos)
        elif not breaks:
            self.put(join, self.pos)
        self.put("".join(breaks), self.pos)

    # plain scalars (PyYAML's scan_plain and scan_plain_spaces)
    def plain(self, end: int) -> None:
        while self.pos < end:
            length = 0
            while self.pos + length < end and self.peek(length) not in " \t" + _BREAKS:
                length += 1
            self.copy(length)
            if self.pos >= end:
                return
            spaces = 0
            while self.peek(spaces) == " ":
                spaces += 1
            start = self.pos
            self.pos += spaces
            if self.peek() in _BREAKS:
                line_break = self.line_break()
                breaks = []
                while self.peek() in " " + _BREAKS:
                    if self.peek() == " ":
                        self.pos += 1
                    else:
                        breaks.append(self.line_break())
                self.folded(" ", breaks, line_break)
            elif spaces:
                self.chars.extend(self.src[start:self.pos])
                self.at.extend(range(start, self.pos))
            else:
                return  # a tab ends a plain scalar's run as in PyYAML; the check below decides

    # quoted scalars (PyYAML's scan_flow_scalar and its helpers)
    def quoted(self, double: bool) -> None:
        quote = self.peek()
        self.pos += 1
        self.non_spaces(double)
        while self.peek() != quote:
            if self.peek() == "\0":
                return
            self.spaces(double)
            self.non_spaces(double)
        self.pos += 1

    def non_spaces(self, double: bool) -> None:
        while True:
            length = 0
            while self.peek(length) not in "'\"\\\0 \t" + _BREAKS:
                length += 1
            self.copy(length)
            ch = self.peek()
            if not double and ch == "'" and self.peek(1) == "'":
                self.put("'", self.pos)
                self.pos += 2
            elif (double and ch == "'") or (not double and ch in '"\\'):
                self.copy(1)
            elif double and ch == "\\":
                at = self.pos
                self.pos += 1
                ch = self.peek()
                if ch in _ESCAPES:
                    self.put(_ESCAPES[ch], at)
                    self.pos += 1
                elif ch in _HEX:
                    digits = self.src[self.pos + 1:self.pos + 1 + _HEX[ch]]
                    try:
                        self.put(chr(int(digits, 16)), at)
                    except ValueError:
                        return
                    self.pos += 1 + _HEX[ch]
                elif ch in _BREAKS:
                    self.line_break()
                    self.put("".join(self.flow_breaks()), self.pos)
                else:
                    return
            else:
                return

    def spaces(self, double: bool) -> None:
        start = self.pos
        while self.peek() in " \t":
            self.pos += 1
        if self.peek() in _BREAKS:
            line_break = self.line_break()
            breaks = self.flow_breaks()
            self.folded(" ", breaks, line_break)
        elif self.pos > start:
            self.chars.extend(self.src[start:self.pos])
            self.at.extend(range(start, self.pos))

    def flow_breaks(self) -> list[str]:
        breaks = []
        while True:
            while self.peek() in " \t":
                self.pos += 1
            if self.peek() in _BREAKS:
                breaks.append(self.line_break())
            else:
                return breaks

    # block scalars (PyYAML's scan_block_scalar), for one indentation
    def block(self, folded: bool, chomping, indent: int) -> None:
        def breaks_() -> list[str]:
            out = []
            while self.column() < indent and self.peek() == " ":
                self.pos += 1
            while self.peek() in _BREAKS:
                out.append(self.line_break())
                while self.column() < indent and self.peek() == " ":
                    self.pos += 1
            return out

        breaks = breaks_()
        line_break = ""
        end_of_line = self.pos
        while self.column() == indent and self.peek() != "\0":
            self.put("".join(breaks), self.pos)
            leading_non_space = self.peek() not in " \t"
            length = 0
            while self.peek(length) not in "\0" + _BREAKS:
                length += 1
            self.copy(length)
            end_of_line = self.pos
            line_break = self.line_break()
            breaks = breaks_()
            if self.column() == indent and self.peek() != "\0":
                if folded and line_break == "\n" and leading_non_space and self.peek() not in " \t":
                    if not breaks:
                        self.put(" ", self.pos)
                else:
                    self.put(line_break, self.pos)
            else:
                break
        if chomping is not False:
            self.put(line_break, end_of_line if line_break else self.pos)
        if chomping is True:
            self.put("".join(breaks), self.pos)


def _block_header(src: str, pos: int):
    """(chomping, increment, index of the first content line) of a block scalar at ``pos``."""
    pos += 1
    chomping = increment = None
    for _ in range(2):
        ch = src[pos:pos + 1]
        if ch in ("+", "-") and ch and chomping is None:
            chomping = ch == "+"
            pos += 1
        elif ch.isdigit() and ch and increment is None:
            increment = int(ch)
            pos += 1
    while pos < len(src) and src[pos] not in _BREAKS:
        pos += 1
    if src[pos:pos + 2] == "\r\n":
        pos += 1
    return chomping, increment, pos + 1


def scalar_offsets(src: str, start: int, end: int, style, value: str) -> list[int] | None:
    """The source index of each character of the scalar ``value`` whose node spans
    ``src[start:end]`` (its quotes or block indicator included), or None when rebuilding the
    value from the source does not give ``value`` back (then no character can be placed)."""
    if style in ("|", ">"):
        chomping, increment, first = _block_header(src, start)
        probe = _Rebuild(src, first)
        widest = 0
        while probe.peek() in " " + _BREAKS:  # PyYAML's scan_block_scalar_indentation
            if probe.peek() == " ":
                probe.pos += 1
                widest = max(widest, probe.column())
            else:
                probe.line_break()
        candidates = [max(widest, 1)] if increment is None else range(1, widest + 1)
        for indent in candidates:
            r = _Rebuild(src, first)
            r.block(style == ">", chomping, indent)
            if "".join(r.chars) == value:
                return r.at
        return None
    r = _Rebuild(src, start)
    if style in ('"', "'"):
        r.quoted(style == '"')
    else:
        r.plain(end)
    return r.at if "".join(r.chars) == value else None


def source_position(src: str, mark: tuple[int, int, int], index: int) -> tuple[int, int]:
    """1-based (line, column) of ``src[index]``, counted from ``mark`` (index, 0-based line and
    column) before it as PyYAML counts (a line break ends a line; a BOM takes no column). The
    column is at most the line's last character."""
    start, line, col = mark
    for i in range(start, min(index, len(src))):
        ch = src[i]
        if ch in "\n\x85\u2028\u2029" or (ch == "\r" and src[i + 1:i + 2] != "\n"):
            line, col = line + 1, 0
        elif ch != "\ufeff":
            col += 1
    if index >= len(src) or src[index] in _BREAKS:  # at a line's end: its last character
        col = max(col - 1, 0)
    return line + 1, col + 1
