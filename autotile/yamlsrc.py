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


class SafeLoader(yaml.SafeLoader):
    """PyYAML's safe loader that also reads YAML 1.2 exponent floats as numbers.

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


for _cls in (SafeLoader, SafeDumper):
    _cls.add_implicit_resolver("tag:yaml.org,2002:float", FLOAT_12, list("-+0123456789."))


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
        counter = [0]
        open_nodes: set[int] = set()  # ids of the collection nodes being built (path's nodes)

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
            return construct(n, path, "value")

        def build_collection(n, path):
            value_pos[path] = (n.start_mark.line + 1, n.start_mark.column + 1)
            if isinstance(n, yaml.MappingNode):
                out = {}
                try:
                    loader.flatten_mapping(n)  # merge keys (<<)
                except yaml.MarkedYAMLError as exc:
                    mark = exc.problem_mark or n.start_mark
                    raise InputError(f"invalid YAML: {exc.problem or exc.context}", file=file,
                                     line=mark.line + 1, col=mark.column + 1,
                                     field=dotted(path)) from None
                for knode, vnode in n.value:
                    if not isinstance(knode, yaml.ScalarNode):
                        raise InputError(
                            "mapping keys must be plain scalars",
                            file=file,
                            line=knode.start_mark.line + 1,
                            col=knode.start_mark.column + 1,
                            field=dotted(path),
                        )
                    key = construct(knode, path, "key")
                    if not isinstance(key, (str, int)) or isinstance(key, bool):
                        key = str(key)
                    kpath = path + (key,)
                    if key in out:
                        raise InputError(
                            "duplicate key",
                            file=file,
                            line=knode.start_mark.line + 1,
                            col=knode.start_mark.column + 1,
                            field=dotted(kpath),
                        )
                    key_pos[kpath] = (knode.start_mark.line + 1, knode.start_mark.column + 1)
                    out[key] = build(vnode, kpath)
                return out
            return [build(v, path + (i,)) for i, v in enumerate(n.value)]

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
        return Located(value, file, value_pos, key_pos, style)
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
