"""Rendering a report twice gives byte-identical HTML (matplotlib's SVG clip-path ids were random)."""

import re
import shutil
from pathlib import Path

from autotile.report import plots
from autotile.report.render import write_report

ROOT = Path(__file__).resolve().parents[1]


def test_a_plot_renders_to_the_same_svg_twice():
    def draw():
        return plots.unit_bars(["n=64", "n=512"], ["vector", "cube"], [[100.0, 300.0], [200.0, 150.0]]).svg

    a, b = draw(), draw()
    assert "clip-path" in a and a == b


def test_report_html_is_byte_identical_on_rerender(tmp_path, run_cli):
    """Two units (units, crossover plots) and the history, importance and portfolio plots."""
    text = (ROOT / "studies" / "global_sum.yaml").read_text()
    text = re.sub(r"(?m)^dtypes:.*$", "dtypes: [fp32]", text)
    text = re.sub(r"(?m)^units:.*$", "units: [vector, scalar]", text)
    text = re.sub(r"(?m)^shapes:.*$", "shapes: [{n: 4096}]", text)
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    out = tmp_path / "out"
    code, _, err = run_cli("tune", str(spec), "--trials", "6", "--quiet", "--out", str(out))
    assert code == 0, err
    first = (out / "report.html").read_bytes()
    shutil.copy(out / "report.md", tmp_path / "first.md")
    write_report(out)
    assert (out / "report.html").read_bytes() == first
    assert (out / "report.md").read_bytes() == (tmp_path / "first.md").read_bytes()
