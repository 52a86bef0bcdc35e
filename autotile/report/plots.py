"""The report's figures (matplotlib, Agg): each function returns a ``Plot`` (inline SVG + PNG).

>>> import numpy as np
>>> p = history_grid([("a", [3.0, 2.0, 2.5], [0, 1, 3], None, None)], "cycles")
>>> p.svg.startswith("<svg") and p.png[:4] == b"\\x89PNG"
True
"""

from __future__ import annotations

import io
import math
import re
import textwrap
import warnings

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import MaxNLocator  # noqa: E402

from autotile.report import fmt  # noqa: E402
from autotile.report.doc import Plot  # noqa: E402
from autotile.tune.outputs import REPORT_PLOTS  # noqa: E402

plt.rcParams.update({
    "svg.fonttype": "none",  # text stays text: smaller SVG, selectable, no embedded glyphs
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "legend.fontsize": 8,
    "legend.frameon": False,
    # clip-path ids are a hash of the clip box salted by this: fixed, so a re-render gives the same
    # SVG (and report.html) byte for byte instead of new random ids each time
    "svg.hashsalt": "autotile",
})
COLORS = ["#0969da", "#cf222e", "#1a7f37", "#8250df", "#bf8700", "#57606a", "#e16f24", "#1b7c83"]
# one colour per compute unit in every plot (units.png drew vector blue, crossover.png drew cube blue)
UNIT_COLORS = {"vector": COLORS[0], "cube": COLORS[1], "scalar": COLORS[2], "default": COLORS[3]}
PNG_DPI = 110
_ID = re.compile(r'\bid="([^"]+)"')
_REF = re.compile(r'(url\(|href=")#([^)"]+)')


def _svg(fig, prefix: str) -> str:
    """Inline SVG: no XML prolog, DOCTYPE or metadata; ids made unique to this figure."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None, "Creator": None})
    text = buf.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<metadata>.*?</metadata>\s*", "", text, flags=re.S)
    text = _ID.sub(lambda m: f'id="{prefix}-{m.group(1)}"', text)
    text = _REF.sub(lambda m: f"{m.group(1)}#{prefix}-{m.group(2)}", text)
    return text.strip()


def tight(fig, rect=None) -> None:
    """``fig.tight_layout`` without matplotlib's warning when a label is too long for it: the figure
    keeps the layout it was drawn with (the PNG is cropped to its contents anyway), and a Python
    warning with a path inside autotile is noise in a tune's output."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Tight layout not applied", category=UserWarning)
        fig.tight_layout(rect=rect)


def finish(fig, name: str, alt: str, caption: str = "") -> Plot:
    """Render ``fig`` to SVG and PNG, close it and wrap it as a ``Plot``; ``name`` is one of
    ``REPORT_PLOTS`` (the only PNG names a render prunes, so none is left stale)."""
    if name not in REPORT_PLOTS:
        plt.close(fig)
        raise ValueError(f"plot name {name!r}: expected one of REPORT_PLOTS (autotile/tune/outputs.py)")
    svg = _svg(fig, re.sub(r"[^A-Za-z0-9_-]", "_", name))
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=PNG_DPI, bbox_inches="tight")
    plt.close(fig)
    return Plot(name=name, svg=svg, png=buf.getvalue(), alt=alt, caption=caption)


def unit_color(unit: str) -> str:
    """The colour of ``unit`` in every plot; a unit outside UNIT_COLORS gets one by its name."""
    if unit in UNIT_COLORS:
        return UNIT_COLORS[unit]
    spare = COLORS[len(UNIT_COLORS):]
    return spare[sum(map(ord, unit)) % len(spare)]


def _grid(n: int, w: float = 3.4, h: float = 2.5, cols: int = 3):
    cols = max(1, min(cols, n))
    rows = math.ceil(n / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(w * cols, h * rows), squeeze=False)
    for ax in axes.flat[n:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:n])


BARS_PER_ROW = 18  # a grouped bar chart wraps into rows of at most this many bars


def _bar_rows(groups: int, bars: int, h: float):
    """A figure for ``groups`` groups of ``bars`` bars, wrapped into rows of at most BARS_PER_ROW bars
    (one row held 45 studies x 3 portfolio members: a 5,241 px wide PNG); returns (fig, [(axes,
    first group, end group)]). Every row has the same scale (x and y), so bars compare across rows."""
    per = max(1, BARS_PER_ROW // max(1, bars))
    rows = max(1, math.ceil(groups / per))
    used = min(max(groups, 1), per)
    fig, axes = plt.subplots(rows, 1, figsize=(max(5.0, used * (0.3 * bars + 0.35) + 2), h * rows),
                             squeeze=False, sharey=True)
    out = []
    for i in range(rows):
        ax = axes[i][0]
        ax.set_xlim(-0.5, (used if rows > 1 else max(groups, 1)) - 0.5)
        out.append((ax, i * per, min(groups, (i + 1) * per)))
    return fig, out


CHAR_IN = 0.075  # the width of a tick label's character at font size 9, in inches (a little over the mean)


def _group_ticks(ax, labels: list[str]) -> None:
    """Group labels under a row of bars, each wrapped at its spaces to the width of its group (a
    shape on one line, its dtype on the next): matmul_small's "m=4, n=4, k=16 fp16" ran into the
    next group's label. Slanted only when a line is still wider than its group."""
    lo, hi = ax.get_xlim()
    per = ax.figure.get_figwidth() * ax.get_position().width / max(1.0, hi - lo)  # inches per group
    chars = max(6, int(per / CHAR_IN))
    lines = [textwrap.wrap(t, chars, break_long_words=False, break_on_hyphens=False) or [""] for t in labels]
    slant = any(len(line) > chars for ls in lines for line in ls)
    ax.set_xticks(np.arange(len(labels)), ["\n".join(ls) for ls in lines], rotation=20 if slant else 0,
                  ha="right" if slant else "center")


def history_grid(panels: list, objective: str) -> Plot:
    """One panel per study: every completed trial, the best so far, the baseline and the optimum.

    ``panels``: ``[(title, history, trial numbers or None, baseline or None, optimum or None)]``; without
    trial numbers the x axis counts completed trials.
    """
    fig, axes = _grid(len(panels))
    for ax, (title, hist, nums, base, opt) in zip(axes, panels):
        y = np.asarray(hist, dtype=float)
        x = np.asarray(nums) if nums is not None else np.arange(1, len(y) + 1)
        ax.scatter(x, y, s=7, color="#8c959f", alpha=0.6, label="trial", linewidths=0)
        if len(y):
            ax.step(x, np.minimum.accumulate(y), where="post", color=COLORS[0], lw=1.6, label="best so far")
        if base is not None:
            ax.axhline(base, color=COLORS[4], ls="--", lw=1, label="default heuristic")
        if opt is not None:
            ax.axhline(opt, color=COLORS[2], ls=":", lw=1.4, label="optimum of the space")
        if len(y) and np.all(y > 0) and y.max() / max(y.min(), 1e-12) > 20:
            ax.set_yscale("log")
        ax.set_title(title)
        ax.set_xlabel("trial number" if nums is not None else "completed trial")
        ax.set_ylabel(objective)
    handles, labels = {}, {}
    for ax in axes:
        for hnd, lab in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(lab, hnd)
            labels[lab] = lab
    fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=len(handles),
               bbox_to_anchor=(0.5, -0.02))
    tight(fig, rect=(0, 0.05, 1, 1))
    base = any(p[3] is not None for p in panels)
    return finish(fig, "history", f"{objective} per trial and best so far, one panel per study",
                  "Grey dots: each completed trial; blue: best so far; "
                  + ("dashed: the default heuristic; " if base else "")
                  + "dotted (when known): the optimum of the space.")


def unit_bars(groups: list[str], units: list[str], cycles: list[list[float | None]],
              chosen: list[str | None] | None = None, objective: str = "cycles") -> Plot:
    """Each unit's best cycles per (shape, dtype), side by side (log scale), the ``chosen`` unit's
    bar of each group outlined. The caption says what chose it: with an error objective first, the
    chosen unit is the most precise one, often not the lowest bar."""
    chosen = chosen or [None] * len(groups)
    fig, rows = _bar_rows(len(groups), len(units), 3.2)
    width = 0.8 / max(1, len(units))
    for ax, a, b in rows:
        x = np.arange(b - a)
        for j, u in enumerate(units):
            vals = [row[j] if row[j] is not None else np.nan for row in cycles[a:b]]
            picked = [c == u for c in chosen[a:b]]
            ax.bar(x + (j - (len(units) - 1) / 2) * width, vals, width, label=u, color=unit_color(u),
                   edgecolor=["#1f2328" if p else "none" for p in picked], linewidth=[1.6 if p else 0 for p in picked])
        _group_ticks(ax, groups[a:b])
        ax.set_yscale("log")
        ax.set_ylabel("best cycles (log)")
    keys = [Patch(facecolor=unit_color(u), label=u) for u in units]
    if any(chosen):
        keys.append(Patch(facecolor="none", edgecolor="#1f2328", linewidth=1.6, label="chosen"))
    rows[0][0].legend(handles=keys, ncol=len(keys))
    tight(fig)
    lowest = all(c is None or units.index(c) == int(np.nanargmin([np.nan if v is None else v for v in row]))
                 for c, row in zip(chosen, cycles) if any(v is not None for v in row))
    if not any(chosen):
        caption = "Lower is faster."
    elif objective in ("cycles", "time_us"):
        caption = ("Lower is faster; the chosen unit's bar is outlined" + (", the lowest of its group." if lowest else
                   ": where it is not the lowest, the lower bar's configuration did not pass verification."))
    else:
        caption = (f"Lower is faster; the chosen unit's bar is outlined. It is chosen by the lowest {objective}, not "
                   "by cycles" + (" (here it is also the lowest bar)." if lowest else ", so it need not be the lowest bar."))
    return finish(fig, "units", "best cycles of each unit per shape", caption)


def importance(labels: list[str], params: list[str], values: list[list[float]], objective: str = "cycles") -> Plot:
    """Bars for one study; a heatmap (a row per study, a column per parameter) for several; the caption
    names the ``objective`` ranked (the first of two)."""
    mat = np.asarray(values, dtype=float)  # studies x params
    if len(labels) == 1:
        order = np.argsort(mat[0])
        fig, ax = plt.subplots(figsize=(6.0, 0.28 * len(params) + 0.9))
        ax.barh([params[i] for i in order], mat[0][order], color=COLORS[0])
        ax.set_xlabel("importance (share of the total)")
        ax.set_title(labels[0])
    else:  # one row per study: 30 studies side by side drew a 2,785 px wide PNG
        fig, ax = plt.subplots(figsize=(0.9 * len(params) + 3.6, 0.3 * len(labels) + 1.4))
        im = ax.imshow(mat, aspect="auto", cmap="Blues", vmin=0, vmax=max(0.01, np.nanmax(mat)))
        ax.set_yticks(range(len(labels)), labels)
        ax.set_xticks(range(len(params)), params, rotation=25, ha="right")
        ax.grid(False)
        for i in range(mat.shape[0]):
            for j in range(mat.shape[1]):
                v = mat[i, j]
                if v == v and v >= 0.005:
                    ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                            color="white" if v > 0.6 * np.nanmax(mat) else "#1f2328")
        fig.colorbar(im, ax=ax, fraction=0.04, pad=0.02)
    tight(fig)
    return finish(fig, "importance", "parameter importance per study",
                  f"Share of the variation of {objective} among good trials each parameter explains (PED-ANOVA).")


def pareto(panels: list, objectives: list[str]) -> Plot:
    """Per study: every completed trial in objective space with the Pareto front highlighted.

    ``panels``: ``[(title, all_points [(a, b)], front_points [(a, b)])]``.
    """
    fig, axes = _grid(len(panels))
    for ax, (title, pts, front) in zip(axes, panels):
        if pts:
            a = np.asarray(pts, dtype=float)
            ax.scatter(a[:, 0], a[:, 1], s=8, color="#8c959f", alpha=0.6, linewidths=0, label="trial")
        if front:
            f = np.asarray(sorted(front), dtype=float)
            ax.plot(f[:, 0], f[:, 1], "o-", color=COLORS[1], ms=4, lw=1.2, label="Pareto front")
        ax.set_title(title)
        ax.set_xlabel(objectives[0])
        ax.set_ylabel(objectives[1])
    axes[0].legend()
    tight(fig)
    return finish(fig, "pareto", "Pareto front of the two objectives per study",
                  "Grey: every completed trial; red: the configurations no other trial beats in both objectives.")


def roofline(points: list, roofs: list, bw: float) -> Plot:
    """Achieved FLOP/s (TOPS for integer dtypes) against arithmetic intensity, under the compute
    roofs and the HBM roof.

    ``points``: ``[(label, intensity (FL)OP/B, (FL)OP/s)]``; ``roofs``: ``[(label, (FL)OP/s, "FLOP" or "OP")]``.
    """
    kinds = {r[2] for r in roofs}
    kind = kinds.pop() if len(kinds) == 1 else "(FL)OP"
    fig, ax = plt.subplots(figsize=(7.2, 4.2))
    xs = [p[1] for p in points] + [r[1] / bw for r in roofs]
    lo, hi = min(xs) / 8, max(xs) * 8
    x = np.geomspace(lo, hi, 200)
    for j, (lab, peak, k) in enumerate(roofs):
        ax.plot(x, np.minimum(peak, x * bw) / 1e12, color=COLORS[5 + j % 3] if j else "#1f2328", lw=1.6,
                label=f"{lab} roof {peak / 1e12:.1f} {fmt.rate(k)}")
        ax.axvline(peak / bw, color="#8c959f", lw=0.7, ls=":")
    ax.plot(x, x * bw / 1e12, color=COLORS[4], lw=0.8, ls="--", label=f"HBM {bw / 1e12:.2f} TB/s")
    for j, (lab, ai, fl) in enumerate(points):
        ax.scatter([ai], [fl / 1e12], color=COLORS[j % len(COLORS)], s=30, zorder=3, label=lab)
    ax.set_xscale("log")
    ax.set_yscale("log")
    top = max([r[1] for r in roofs] + [p[2] for p in points]) / 1e12
    bottom = min([p[2] for p in points] + [lo * bw]) / 1e12
    ax.set_ylim(bottom / 2, top * 2)
    ax.set_xlim(lo, hi)
    ax.set_xlabel(f"arithmetic intensity (useful {kind}s / bytes that must move)")
    ax.set_ylabel(f"achieved {fmt.rate(kind)}")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    tight(fig)
    return finish(fig, "roofline", "roofline with one point per tuned shape",
                  "Solid: the roof (min of compute peak and intensity x HBM bandwidth); dotted verticals: "
                  "ridge points. A point's distance below its roof is the headroom left.")


def pipe_bars(labels: list[str], ratios: list[str], values: list[list[float]]) -> Plot:
    """msprof-style per-pipe busy ratios of each best configuration, grouped by pipe."""
    fig, ax = plt.subplots(figsize=(max(6.0, 1.1 * len(ratios) + 2), 3.3))
    width = 0.8 / max(1, len(labels))
    x = np.arange(len(ratios))
    for j, lab in enumerate(labels):
        ax.bar(x + (j - (len(labels) - 1) / 2) * width, [100 * v for v in values[j]], width, label=lab,
               color=COLORS[j % len(COLORS)])
    ax.set_xticks(x, ratios)
    ax.set_ylim(0, 105)
    ax.set_ylabel("busy % of kernel time")
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5))
    tight(fig)
    return finish(fig, "pipes", "per-pipe busy ratio of each best configuration",
                  "Busy cycles of each pipe over the kernel's cycles on its slowest core (as msprof reports).")


def crossover(panels: list, xlabel: str, one_core: bool = False, tuned_cores: int = 1) -> Plot:
    """Per dtype: cycles against size (``xlabel`` names it) for each unit, crossovers marked.

    ``panels``: ``[(title, {unit: ([n], [cycles])} simulated, {unit: ([n], [cycles])} tuned, [(n, text)])]``.
    ``one_core``: the simulated lines are single-core (the on-chip framing's per-size search), while
    the tuned circles use up to ``tuned_cores``: legend and caption say so, or the plot would
    compare a one-core line with a 48-core circle. The caption names only what some panel draws.
    """
    sim_label = "simulated grid, 1 core" if one_core else "simulated grid"
    tuned_label = f"tuned, up to {tuned_cores} cores" if one_core and tuned_cores > 1 else "tuned"
    fig, axes = _grid(len(panels), w=4.4, h=3.0, cols=2)
    for ax, (title, sim, tuned, marks) in zip(axes, panels):
        for u, (ns, cyc) in sorted(sim.items()):
            ax.plot(ns, cyc, "-", color=unit_color(u), lw=1.4, label=f"{u} ({sim_label})")
        for u, (ns, cyc) in sorted(tuned.items()):
            ax.plot(ns, cyc, "o", color=unit_color(u), mfc="none", ms=6, label=f"{u} ({tuned_label})")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        _mark(ax, marks)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("best cycles")
        ax.set_title(title)
    keys: dict = {}  # one legend for the figure, under the panels: inside one it covered the marks
    for ax in axes:
        for hnd, lab in zip(*ax.get_legend_handles_labels()):
            keys.setdefault(lab, hnd)
    labels = sorted(keys)  # a column per unit: its line above its circles
    ncol = max(1, len({lab.split(" (")[0] for lab in labels}))
    lines = math.ceil(len(labels) / ncol)
    fig.legend([keys[lab] for lab in labels], labels, loc="lower center", ncol=ncol, fontsize=7,
               bbox_to_anchor=(0.5, 0))
    tight(fig, rect=(0, min(0.4, 0.2 * lines / fig.get_figheight()), 1, 1))
    marked = any(p[3] for p in panels)
    lines = any(p[1] for p in panels)
    unlike = lines and one_core and tuned_cores > 1
    parts = ([f"Lines: each unit at its best tiling{' on one core,' if one_core else ''} on a size grid (simulated)"]
             if lines else []) \
        + ["circles: each unit's tuned best per shape"
           + (f", on up to {tuned_cores} cores (a circle below its line shows what the other cores add)"
              if unlike else "")] \
        + ([f"dashed: where the fastest unit {'on one core ' if one_core else ''}changes on the grid"] if marked else [])
    caption = "; ".join(parts) + "."
    return finish(fig, "crossover", f"best cycles against {xlabel} per unit" + (", crossovers marked" if marked else ""),
                  caption[0].upper() + caption[1:])


def _mark(ax, marks: list) -> None:
    """Dashed verticals at each ``(n, text)``, their labels one below the other (all at one height
    "cube->vector at n=16,129" and "vector->cube at n=25,569" printed over each other), each on the
    side of its line with room for it."""
    if not marks:
        return
    x0, x1 = ax.get_xlim()
    span = math.log(x1 / x0) if x1 > x0 > 0 else 1.0
    for i, (n, text) in enumerate(sorted(marks)):
        ax.axvline(n, color="#57606a", ls="--", lw=1)
        right = x0 > 0 and n > 0 and math.log(n / x0) / span > 0.55
        ax.annotate(text, (n, 1 - 0.09 * (i % 4)), xycoords=("data", "axes fraction"), xytext=(-3 if right else 3, -4),
                    textcoords="offset points", fontsize=7, va="top", ha="right" if right else "left",
                    bbox={"boxstyle": "square,pad=0.1", "fc": "white", "ec": "none", "alpha": 0.8})


def portfolio_members(labels: list[str], members: list[str], trials: list[list[int]],
                      improvements: list[list[int]]) -> Plot:
    """Portfolio sampler: trials (bar) and new bests (hatched part) per member, one group per study."""
    fig, rows = _bar_rows(len(labels), len(members), 3.0)
    width = 0.8 / max(1, len(members))
    for ax, a, b in rows:
        x = np.arange(b - a)
        for j, m in enumerate(members):
            off = x + (j - (len(members) - 1) / 2) * width
            ax.bar(off, [row[j] for row in trials[a:b]], width, label=m, color=COLORS[j % len(COLORS)], alpha=0.45)
            ax.bar(off, [row[j] for row in improvements[a:b]], width, color=COLORS[j % len(COLORS)], hatch="//",
                   edgecolor="white")
        _group_ticks(ax, labels[a:b])
        ax.set_ylabel("trials")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts: no 2.5-trial ticks
    rows[0][0].legend(ncol=len(members))
    tight(fig)
    return finish(fig, "portfolio", "trials and new bests per portfolio member, per study",
                  "Light bar: trials the bandit gave the member; solid part: those that set a new best.")
