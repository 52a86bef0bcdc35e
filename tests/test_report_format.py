"""Report formatting: one number style per quantity, readable unit ratios, integer count axes,
one colour per unit in every plot, no Markdown markup in HTML text."""

import re

import pytest

from autotile.report import html, plots, search, sections
from autotile.report.data import ReportData
from autotile.report.doc import Report


def _res(unit, cycles, **kw):
    return {"shape": {"n": 4096}, "dtype": "fp16", "unit": unit, "cycles": cycles, "verified": True,
            "chosen": False} | kw


def test_pareto_table_prints_cycles_as_the_other_tables_do(tmp_path):
    """The Pareto table printed "1.464e+04" where every other table prints "14,642"."""
    r = _res("vector", 14642.0, chosen=True, study="s", pareto=[
        {"trial": 3, "values": {"cycles": 14642.0, "time_us": 8.1344}, "params": {"a": 1}},
        {"trial": 5, "values": {"cycles": 15210.0, "time_us": 8.05}, "params": {"a": 2}}])
    data = ReportData(out_dir=tmp_path, summary={"op": "global_sum", "objectives": ["cycles", "time_us"],
                                                 "results": [r]}, hw=None)
    rows = search.pareto(data).blocks[2].rows
    assert [row[2] for row in rows] == ["14,642", "15,210"]
    assert [row[3] for row in rows] == ["8.134 us", "8.05 us"]


def test_pareto_table_shows_configurations_with_equal_values_once(tmp_path):
    """Tiles clamped to the whole input simulate alike: a sigmoid n=1024 front listed one
    lut_linear point seven times. The earliest trial stands for its ties."""
    point = {"cycles": 3000.0, "max_abs_error": 1e-3}
    front = [{"trial": t, "values": dict(point), "params": {"tile_len": 1024 * 2 ** i}} for i, t in enumerate((9, 4, 7))]
    front.append({"trial": 2, "values": {"cycles": 9000.0, "max_abs_error": 1e-4}, "params": {"tile_len": 64}})
    r = _res("scalar", 3000.0, chosen=True, study="s", pareto=front)
    data = ReportData(out_dir=tmp_path, summary={"op": "sigmoid", "objectives": ["cycles", "max_abs_error"],
                                                 "results": [r]}, hw=None)
    rows = search.pareto(data).blocks[2].rows
    assert [row[1] for row in rows] == ["4", "2"]
    assert rows[0][4].endswith("(and 2 other configurations with these values)")
    assert "other" not in rows[1][4]


def test_the_report_spells_microseconds_as_the_printouts_do():
    """simulate and tune print "8.41 us"; the report wrote "8.41 µs" for the same quantity."""
    from autotile.report import fmt

    assert (fmt.us(8.413), fmt.us(1234.5), fmt.us(None)) == ("8.41 us", "1,234.5 us", "-")


def test_unit_choice_shows_a_small_win_with_its_size(tmp_path):
    """1213 against 1217 cycles read "1.00x faster than the next unit"."""
    results = [_res("vector", 1213.0, chosen=True), _res("cube", 1217.0), _res("scalar", 90000.0)]
    data = ReportData(out_dir=tmp_path, summary={"op": "global_sum", "results": results}, hw=None)
    table = next(b for b in sections.units(data).blocks if hasattr(b, "rows"))
    assert table.rows[0][-1] == "1.0033x faster than the next unit"


def test_unit_choice_gives_every_lead_in_one_format(tmp_path):
    """The why column mixed "9.0% faster than the next unit" (below 1.1x) with "1.18x faster"."""
    results = [_res("vector", 1000.0, chosen=True), _res("cube", 1090.0),
               {**_res("vector", 1000.0, chosen=True), "shape": {"n": 8192}}, {**_res("cube", 1180.0), "shape": {"n": 8192}}]
    data = ReportData(out_dir=tmp_path, summary={"op": "global_sum", "results": results}, hw=None)
    table = next(b for b in sections.units(data).blocks if hasattr(b, "rows"))
    assert [row[-1] for row in table.rows] == ["1.090x faster than the next unit", "1.18x faster than the next unit"]


def test_portfolio_trials_axis_has_integer_ticks():
    svg = plots.portfolio_members(["n=64"], ["tpe", "mutation"], [[3, 1]], [[1, 0]]).svg
    ticks = re.findall(r">\s*(-?\d+(?:\.\d+)?)\s*<", svg)
    assert ticks and all("." not in t for t in ticks), ticks


def _fills(svg: str) -> set:
    return set(re.findall(r"(?:fill|stroke): ?(#[0-9a-f]{6})", svg))


def test_each_unit_has_one_colour_in_every_plot():
    """units.png drew vector blue and cube red, crossover.png cube blue and vector green."""
    bars = plots.unit_bars(["n=64"], ["vector", "cube"], [[100.0, 300.0]]).svg
    cross = plots.crossover([("fp16", {}, {"cube": ([64, 512], [300.0, 500.0]),
                                           "vector": ([64, 512], [100.0, 900.0])}, [])], "size n").svg
    lone = plots.unit_bars(["n=64"], ["cube"], [[300.0]]).svg
    for svg in (bars, cross, lone):
        assert plots.unit_color("cube") in _fills(svg)
    for svg in (bars, cross):
        assert plots.unit_color("vector") in _fills(svg)
    assert plots.unit_color("vector") not in _fills(lone)
    assert len({plots.unit_color(u) for u in ("vector", "cube", "scalar", "default")}) == 4


def test_html_text_has_no_markdown_code_spans(tmp_path):
    """HTML showed "spec's `units:`" with literal backticks."""
    data = ReportData(out_dir=tmp_path, summary={"op": "resize", "results": [_res("vector", 10.0, chosen=True)]},
                      hw=None)
    page = html.render(Report("t", [], [], [sections.units(data)]))
    assert "`" not in page and "units:" in page


def test_the_unit_plot_caption_follows_the_objective_that_chose_the_unit(tmp_path):
    """With objective [max_abs_error, cycles] the chosen unit is the most precise one, the tallest
    bar here; the caption said "the chosen unit is the lowest bar"."""
    results = [_res("vector", 310.0), _res("scalar", 712.0, chosen=True)]
    data = ReportData(out_dir=tmp_path, summary={"op": "sigmoid", "objectives": ["max_abs_error", "cycles"],
                                                 "results": results}, hw=None)
    (plot,) = [b for b in sections.units(data).blocks if hasattr(b, "png")]
    assert "lowest bar" not in plot.caption.replace("need not be the lowest bar", "")
    assert "lowest max_abs_error" in plot.caption and "outlined" in plot.caption
    data.summary["objectives"] = ["cycles"]
    results[0]["chosen"], results[1]["chosen"] = True, False
    (plot,) = [b for b in sections.units(data).blocks if hasattr(b, "png")]
    assert plot.caption == "Lower is faster; the chosen unit's bar is outlined, the lowest of its group."


def test_portfolio_best_found_is_formatted_as_the_objective(tmp_path):
    """The column mixed "2.37405e+06" and "38,956.7" for cycles."""
    members = [{"member": "tpe", "trials": 5, "feasible": 5, "improvements": 2, "best": 2374050.4},
               {"member": "mutation", "trials": 3, "feasible": 3, "improvements": 1, "best": 38956.7},
               {"member": "random", "trials": 1, "feasible": 0, "improvements": 0, "best": None}]
    data = ReportData(out_dir=tmp_path, summary={"op": "global_sum", "objectives": ["cycles"],
                                                 "results": [_res("vector", 9.0, chosen=True, members=members)]}, hw=None)
    (table,) = [b for b in search.portfolio_members(data) if hasattr(b, "rows")]
    assert [row[-1] for row in table.rows] == ["2,374,050", "38,957", "-"]


@pytest.mark.parametrize("labels", [["one study"], ["study a", "study b"]])
def test_a_param_name_too_long_for_the_layout_draws_without_a_python_warning(labels):
    """A 170-character param name printed matplotlib's "Tight layout not applied" UserWarning,
    with a path inside autotile, in the middle of a tune's output."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plot = plots.importance(labels, ["p" * 170, "b"], [[0.5, 0.5]] * len(labels))
    assert plot.png and "<svg" in plot.svg


def test_long_group_labels_under_the_unit_bars_do_not_run_into_each_other():
    """matmul_small's units.png: "m=4, n=4, k=16 fp16m=16, n=16, k=16 fp16..." could not be read."""
    import matplotlib.pyplot as plt

    labels = ["m=4, n=4, k=16 fp16", "m=16, n=16, k=16 fp16", "m=64, n=64, k=64 fp16"]
    fig, rows = plots._bar_rows(len(labels), 2, 3.2)
    ax = rows[0][0]
    ax.bar(range(3), [10.0, 20.0, 30.0])
    plots._group_ticks(ax, labels)
    plots.tight(fig)
    fig.canvas.draw()
    boxes = [t.get_window_extent() for t in ax.get_xticklabels()]
    assert all(a.x1 < b.x0 for a, b in zip(boxes, boxes[1:]))
    assert [t.get_text() for t in ax.get_xticklabels()][0] == "m=4, n=4, k=16\nfp16"
    plt.close(fig)
