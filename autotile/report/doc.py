"""The report as data: sections of paragraphs, tables, plots and code blocks.

Section builders produce these plain objects; ``html`` and ``markdown`` render them. Text is
plain (renderers escape it); a ``Table`` cell is plain text too.

>>> s = Section("Best configurations", [Para("One row per study."), Table(["shape"], [["m=16"]])])
>>> s.title
'Best configurations'
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Para:
    """A paragraph of plain text; ``note`` renders it as a muted remark."""

    text: str
    note: bool = False


@dataclass(frozen=True)
class Table:
    """A table; ``align`` per column: "l" or "r" (numbers)."""

    header: list[str]
    rows: list[list[str]]
    align: str = ""
    caption: str = ""

    def col_align(self, i: int) -> str:
        return self.align[i] if i < len(self.align) else "l"


@dataclass(frozen=True)
class Plot:
    """A rendered figure: inline SVG text for HTML and PNG bytes for Markdown."""

    name: str  # file stem under report_files/
    svg: str
    png: bytes
    alt: str
    caption: str = ""


@dataclass(frozen=True)
class Code:
    """A preformatted block (a command line, a file path)."""

    text: str


@dataclass(frozen=True)
class Section:
    """A titled part of the report."""

    title: str
    blocks: list = field(default_factory=list)
    anchor: str = ""


@dataclass(frozen=True)
class Report:
    """The whole report: a title, the heading facts (label, value) and the sections."""

    title: str
    facts: list[tuple[str, str]]
    summary: list[str]
    sections: list[Section]
