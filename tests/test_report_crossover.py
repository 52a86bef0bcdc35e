"""The report's crossover section: marks that can be read, slopes told apart, and the close-call
warning `autotile crossover` prints for the crossover it states."""

from __future__ import annotations

import matplotlib.pyplot as plt

from autotile.models.what_decides import pair
from autotile.report import perf, plots


def test_crossover_labels_stand_one_below_the_other():
    """"cube->vector at n=16,129" and "vector->cube at n=25,569" were both annotated at the top of
    the axes and printed over each other (and over the legend inside the axes)."""
    fig, ax = plt.subplots()
    ax.plot([64, 2 ** 20], [300, 6000])
    ax.set_xscale("log", base=2)
    plots._mark(ax, [(321, "vector→cube at n=321"), (16129, "cube→vector at n=16,129"),
                     (25569, "vector→cube at n=25,569")])
    assert len({t.xy[1] for t in ax.texts}) == 3
    plt.close(fig)
    svg = plots.crossover([("fp16", {"cube": ([64, 1024], [400.0, 900.0]), "vector": ([64, 1024], [300.0, 1000.0])},
                            {}, [(500, "vector→cube at n=500")])], "size n").svg
    assert svg.count("vector→cube at n=500") == 1


def test_slopes_are_shown_with_the_digits_that_tell_them_apart():
    """"grows more slowly (0.005 against 0.005 cycles per element)"."""
    assert pair(0.0051, 0.0055) == "0.0051 against 0.0055"
    assert pair(0.028, 0.176) == "0.028 against 0.176"


def test_the_crossover_that_stays_carries_the_close_call_warning():
    """weighted_sum fp16 in GM: vector -> cube at n = 89,857, the cube only 0.02% ahead at 98,304;
    `autotile crossover` warns, the report did not."""
    known = {("vector", 65536): 700.0, ("cube", 65536): 720.0, ("vector", 89857): 846.0, ("cube", 89857): 845.0,
             ("vector", 98304): 900.0, ("cube", 98304): 899.82, ("vector", 131072): 1100.0, ("cube", 131072): 1000.0}
    said = perf._close_call(known, 89857, "vector", "cube")
    assert said.startswith("; close call: cube leads by only 0.020% at n=98,304")
    known["cube", 98304] = 850.0  # a clear lead everywhere past the crossover's own size
    known["cube", 89857] = 830.0
    assert perf._close_call(known, 89857, "vector", "cube") == ""


def test_a_lead_far_under_a_hundredth_of_a_percent_is_not_printed_as_zero():
    """weighted_sum fp32 in GM: the Cube 0.0027% ahead at n = 7,806 read "leads by only 0.00%", a tie."""
    known = {("vector", 193): 500.0, ("cube", 193): 499.0, ("vector", 7806): 10000.0, ("cube", 7806): 9999.74}
    said = perf._close_call(known, 193, "vector", "cube")
    assert said.startswith("; close call: cube leads by only 0.0026% at n=7,806")
    known["cube", 7806] = 10000.26
    assert perf._close_call(known, 193, "vector", "cube").startswith("; close call: vector is 0.0026% faster again")


def test_on_chip_lines_are_labelled_as_one_core_beside_multi_core_circles():
    """On chip the per-size search tries one core (crossover.core_counts), the tuned studies up to
    48: an n=65536 cube line near 25,000 cycles stood over a tuned circle at 612, unexplained."""
    panel = [("fp16", {"cube": ([512, 65536], [50.0, 25000.0])}, {"cube": ([512, 65536], [50.0, 612.0])}, [])]
    plot = plots.crossover(panel, "size n", one_core=True, tuned_cores=48)
    assert "cube (simulated grid, 1 core)" in plot.svg and "cube (tuned, up to 48 cores)" in plot.svg
    assert "one core" in plot.caption and "up to 48 cores" in plot.caption
    plain = plots.crossover(panel, "size n")
    assert "1 core" not in plain.svg and "core" not in plain.caption


def test_one_tuned_size_gets_simulated_lines_and_says_it_was_one_size(hw):
    """weighted_sum tuned at n = 4,096 only: the grid was that one size, so each unit's "line" was one
    invisible point beside its circle, and the note said the fastest unit "does not change over the
    sizes tuned or on the simulated grid" of one point (and the caption read "tiling on on a")."""
    from pathlib import Path
    from types import SimpleNamespace

    from autotile.report.data import ReportData
    from autotile.report.doc import Para, Plot, Table

    assert perf._grid(4096, 4096) == [512, 1024, 2048, 4096, 8192, 16384, 32768]
    assert perf._grid(16, 16)[0] == 16 and len(perf._grid(1 << 24, 1 << 24)) == perf.CROSSOVER_MIN_SPAN + 1
    results = [{"shape": {"n": 4096}, "dtype": "fp16", "unit": u, "cycles": c, "chosen": u == "cube"}
               for u, c in (("cube", 520.0), ("vector", 860.0))]
    summary = {"op": "weighted_sum", "hw": hw.name, "results": results}
    data = ReportData(out_dir=Path("."), summary=summary, hw=hw)
    data.__dict__["recorded"] = (SimpleNamespace(inputs={"data": "gm"}), "")
    blocks = perf.crossover(data).blocks
    plot = next(b for b in blocks if isinstance(b, Plot))
    assert "on on" not in plot.caption and plot.caption.startswith("Lines: each unit at its best tiling on a size grid")
    table = next(b for b in blocks if isinstance(b, Table))  # the grid now reaches the cube -> vector change
    assert [r[2:4] for r in table.rows] == [["cube → vector", "n = 15,702"]]
    unsimulated = ReportData(out_dir=Path("."), summary=summary, hw=None)
    note = [b.text for b in perf.crossover(unsimulated).blocks if isinstance(b, Para) and b.note]
    assert note == ["One size was tuned (4,096 elements), so the tuned shapes show no crossover and none can be "
                    "read here: tune several sizes to compare the units across them."]


def test_a_grid_of_huge_sizes_says_on_stderr_that_it_takes_a_while(hw, monkeypatch, capsys):
    """weighted_sum tuned at n = 1,024 and 2**31-1 spent 100 s after the tune in this section with
    nothing printed; a grid that stays small says nothing."""
    from pathlib import Path
    from types import SimpleNamespace

    from autotile.models import crossover as cx
    from autotile.report.data import ReportData

    monkeypatch.setattr(cx, "best", lambda op, u, n, *a, **k: (float(n if u == "vector" else 2 * n), {}))
    monkeypatch.setattr(perf, "_refine", lambda *a, **k: 1)

    def run(n: int) -> str:
        results = [{"shape": {"n": m}, "dtype": "fp16", "unit": u, "cycles": 1.0, "chosen": u == "vector"}
                   for m in (1024, n) for u in ("cube", "vector")]
        data = ReportData(out_dir=Path("."), summary={"op": "weighted_sum", "hw": hw.name, "results": results}, hw=hw)
        data.__dict__["recorded"] = (SimpleNamespace(inputs={"data": "gm"}), "")
        perf.crossover(data)
        return capsys.readouterr().err

    assert run(2**31 - 1) == ("autotile: note: report: simulating 2 units' best tilings at 8 sizes up to "
                              "n = 16,777,216 (fp16) for the crossover section; at sizes this large that can "
                              "take a few minutes\n")
    assert run(4096) == ""


def test_a_window_that_ends_carries_the_close_call_warning_too(hw, monkeypatch):
    """weighted_sum fp32 in GM: the Cube faster from n = 217 to 7,680, by 0.11% at 217; only the last
    change (the one that stays) was checked, so the window's own close call went unsaid."""
    from pathlib import Path
    from types import SimpleNamespace

    from autotile.models import crossover as cx
    from autotile.report.data import ReportData
    from autotile.report.doc import Table

    def fake(op, unit, n, *a, **k):
        cycles = 1000.0 + n
        return (cycles * (0.999 if 100 <= n <= 1500 else 1.05) if unit == "cube" else cycles), {}

    monkeypatch.setattr(cx, "best", fake)
    results = [{"shape": {"n": m}, "dtype": "fp16", "unit": u, "cycles": 1.0, "chosen": u == "vector"}
               for m in (64, 1024) for u in ("cube", "vector")]
    data = ReportData(out_dir=Path("."), summary={"op": "weighted_sum", "hw": hw.name, "results": results}, hw=hw)
    data.__dict__["recorded"] = (SimpleNamespace(inputs={"data": "gm"}), "")
    table = next(b for b in perf.crossover(data).blocks if isinstance(b, Table))
    rows = {r[2]: r for r in table.rows if r[1] == "simulated grid"}
    assert rows["vector → cube"][3] == "n = 100" and rows["cube → vector"][3] == "n = 1,501"
    assert rows["vector → cube"][4].endswith("; close call: cube leads by only 0.10% at n=100; it is faster at every "
                                             "probed size from n=100 to the next change (n=1,501), but sizes between "
                                             "probes can go the other way")
    assert "close call" not in rows["cube → vector"][4]
