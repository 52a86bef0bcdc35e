"""One self-contained HTML page: inline CSS and SVG, no scripts, no external resources.

>>> from autotile.report.doc import Report, Section, Para
>>> "<h1>" in render(Report("T <1>", [], [], [Section("S", [Para("a & b")])]))
True
"""

from __future__ import annotations

from html import escape

from autotile.report.doc import Code, Para, Plot, Report, Section, Table

CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --band: #f6f8fa; --accent: #0969da; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
       color: var(--fg); max-width: 1100px; margin: 0 auto; padding: 24px 28px 64px; }
h1 { font-size: 1.7em; margin: 0 0 .3em; }
h2 { font-size: 1.3em; margin: 2em 0 .5em; padding-bottom: .25em; border-bottom: 1px solid var(--line); }
p { margin: .5em 0; }
p.note { color: var(--muted); font-size: .93em; }
nav { margin: 1em 0 1.5em; font-size: .93em; }
nav a { margin-right: 1em; color: var(--accent); text-decoration: none; white-space: nowrap; }
table { border-collapse: collapse; margin: .7em 0 1.2em; font-size: .9em; }
th, td { border: 1px solid var(--line); padding: 4px 9px; vertical-align: top; }
th { background: var(--band); text-align: left; font-weight: 600; }
td.r { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
table.facts th { width: 13em; }
caption { caption-side: top; text-align: left; color: var(--muted); padding-bottom: .3em; }
ul.summary { margin: .6em 0 1em; padding-left: 1.3em; }
figure { margin: 1em 0 1.6em; }
figure svg { max-width: 100%; height: auto; }
figcaption { color: var(--muted); font-size: .9em; }
pre { background: var(--band); border: 1px solid var(--line); padding: 8px 12px; overflow-x: auto;
      font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.wrap { overflow-x: auto; }
"""


def _block(b) -> str:
    if isinstance(b, Para):
        return f'<p class="note">{escape(b.text)}</p>' if b.note else f"<p>{escape(b.text)}</p>"
    if isinstance(b, Table):
        head = "".join(f"<th>{escape(h)}</th>" for h in b.header)
        rows = []
        for row in b.rows:
            cells = "".join(f'<td class="{b.col_align(i)}">{escape(str(c))}</td>' for i, c in enumerate(row))
            rows.append(f"<tr>{cells}</tr>")
        cap = f"<caption>{escape(b.caption)}</caption>" if b.caption else ""
        return f'<div class="wrap"><table>{cap}<thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table></div>'
    if isinstance(b, Plot):
        cap = f"<figcaption>{escape(b.caption)}</figcaption>" if b.caption else ""
        return f'<figure role="img" aria-label="{escape(b.alt)}">{b.svg}{cap}</figure>'
    if isinstance(b, Code):
        return f"<pre>{escape(b.text)}</pre>"
    raise TypeError(f"unknown block {type(b).__name__}")


def _section(s: Section) -> str:
    body = "\n".join(_block(b) for b in s.blocks)
    return f'<section id="{escape(s.anchor)}">\n<h2>{escape(s.title)}</h2>\n{body}\n</section>'


def render(rep: Report) -> str:
    """The page as text (UTF-8); every piece of text from data is escaped."""
    facts = "".join(f"<tr><th>{escape(k)}</th><td>{escape(v)}</td></tr>" for k, v in rep.facts)
    summary = "".join(f"<li>{escape(x)}</li>" for x in rep.summary)
    nav = " ".join(f'<a href="#{escape(s.anchor)}">{escape(s.title)}</a>' for s in rep.sections if s.anchor)
    sections = "\n".join(_section(s) for s in rep.sections)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{escape(rep.title)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>{escape(rep.title)}</h1>
<table class="facts"><tbody>{facts}</tbody></table>
<ul class="summary">{summary}</ul>
<nav>{nav}</nav>
{sections}
</body>
</html>
"""
