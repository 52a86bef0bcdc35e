"""The report as GitHub-flavoured Markdown, with plots as PNG files beside it.

>>> from autotile.report.doc import Report, Section, Para
>>> print(render(Report("T", [("op", "a|b")], [], [Section("S", [Para("x_y")])]), "report_files"))
... # doctest: +ELLIPSIS
# T
...
"""

from __future__ import annotations

import re

from autotile.report.doc import Code, Para, Plot, Report, Section, Table

# `_` inside a word (base_m) is not emphasis on GitHub: leave it readable
_SPECIAL = re.compile(r"([\\`*\[\]<>|#]|(?<!\w)_|_(?!\w))")


def esc(text: str) -> str:
    """Text safe inside Markdown (and inside a table cell): no markup, no HTML, one line."""
    return _SPECIAL.sub(r"\\\1", str(text)).replace("\n", " ")


def _table(header, rows, align="") -> list[str]:
    def sep(i):
        return "---:" if i < len(align) and align[i] == "r" else "---"

    out = ["| " + " | ".join(esc(h) for h in header) + " |",
           "|" + "|".join(sep(i) for i in range(len(header))) + "|"]
    out += ["| " + " | ".join(esc(c) for c in row) + " |" for row in rows]
    return out


def _block(b, files: str) -> list[str]:
    if isinstance(b, Para):
        return [f"_{esc(b.text)}_" if b.note else esc(b.text), ""]
    if isinstance(b, Table):
        cap = [f"**{esc(b.caption)}**", ""] if b.caption else []
        return cap + _table(b.header, b.rows, b.align) + [""]
    if isinstance(b, Plot):
        lines = [f"![{esc(b.alt)}]({files}/{b.name}.png)", ""]
        return lines + ([f"_{esc(b.caption)}_", ""] if b.caption else [])
    if isinstance(b, Code):
        fence = "````" if "```" in b.text else "```"
        return [fence, b.text, fence, ""]
    raise TypeError(f"unknown block {type(b).__name__}")


def _section(s: Section, files: str) -> list[str]:
    out = [f"## {esc(s.title)}", ""]
    for b in s.blocks:
        out += _block(b, files)
    return out


def render(rep: Report, files: str) -> str:
    """The Markdown text; images point at ``files/<plot name>.png``."""
    out = [f"# {esc(rep.title)}", ""]
    out += _table(["", ""], [[k, v] for k, v in rep.facts]) + [""]
    out += [f"- {esc(x)}" for x in rep.summary] + ([""] if rep.summary else [])
    for s in rep.sections:
        out += _section(s, files)
    return "\n".join(out).rstrip() + "\n"


def plots(rep: Report) -> list[Plot]:
    """Every plot of the report, in order (their PNGs go beside the Markdown)."""
    return [b for s in rep.sections for b in s.blocks if isinstance(b, Plot)]
