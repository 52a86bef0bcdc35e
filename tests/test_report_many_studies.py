"""A report of many studies: every table lists every study, a plot that draws fewer says so, and
no plot grows unreadably wide (a 30-study sigmoid spec lost every n=65536 Pareto trade-off and
half its importances without a word; 45 studies drew a 5,241 px wide portfolio plot)."""

from __future__ import annotations

import struct
import warnings

import optuna

from autotile.report import plots, search
from autotile.report.data import ReportData
from autotile.report.doc import Para, Plot, Table

SIZES = [256 * 4 ** i for i in range(5)]
DTYPES = ["fp32", "fp16", "bf16"]


def _results(objectives: list[str]) -> list[dict]:
    """30 sigmoid studies, vector chosen: the 15 exported ones come first in no particular order."""
    out = []
    for n in SIZES:
        for dtype in DTYPES:
            for unit in ("vector", "scalar"):
                i = len(out)
                out.append({"shape": {"n": n}, "dtype": dtype, "unit": unit, "study": f"s{i}",
                            "cycles": 100.0 + i, "chosen": unit == "vector", "verified": True,
                            "history": [300.0 + i, 200.0 + i], "history_trials": [0, 1],
                            "members": [{"member": "tpe", "trials": 5, "feasible": 5, "improvements": 2,
                                         "best": 200.0 + i},
                                        {"member": "mutation", "trials": 3, "feasible": 2, "improvements": 1,
                                         "best": 210.0 + i}],
                            "pareto": [{"trial": 1, "values": {objectives[0]: 200.0 + i, objectives[1]: 1e-3},
                                        "params": {"tile_len": n}}]})
    return out


def _data(tmp_path, storage=None) -> ReportData:
    objectives = ["cycles", "max_abs_error"]
    return ReportData(out_dir=tmp_path, summary={"op": "sigmoid", "objectives": objectives, "sampler": "portfolio",
                                                 "results": _results(objectives)}, hw=None, storage=storage)


def _width(plot: Plot) -> int:
    return struct.unpack(">II", plot.png[16:24])[0]


def _notes(blocks) -> list[str]:
    return [b.text for b in blocks if isinstance(b, Para) and b.note]


def test_the_pareto_table_lists_every_study_and_the_plot_says_what_it_leaves_out(tmp_path):
    sec = search.pareto(_data(tmp_path))
    (table,) = [b for b in sec.blocks if isinstance(b, Table)]
    assert len(table.rows) == 30
    assert sum(row[0].startswith("n=65536 ") for row in table.rows) == 6  # the 25th study on were dropped
    assert "30 studies: the plot shows the 15 exported ones; the table lists every study." in _notes(sec.blocks)


def test_the_portfolio_lists_every_study_and_wraps_its_plot(tmp_path):
    blocks = search.portfolio_members(_data(tmp_path))
    (table,) = [b for b in blocks if isinstance(b, Table)]
    assert len({row[0] for row in table.rows}) == 30
    assert "30 studies: the plot shows the 15 exported ones; the table lists every study." in _notes(blocks)
    (plot,) = [b for b in blocks if isinstance(b, Plot)]
    assert _width(plot) < 1400  # 15 groups of 2 bars in one row drew it ~3,600 px wide


def test_wide_bar_plots_wrap_into_rows():
    labels = [f"n={n} {d}" for n in SIZES * 9 for d in DTYPES][:45]
    wide = plots.portfolio_members(labels, ["tpe", "mutation", "enqueued"], [[5, 3, 1]] * 45, [[1, 1, 0]] * 45)
    assert _width(wide) < 1400
    bars = plots.unit_bars(labels[:15], ["vector", "cube", "scalar"], [[100.0, 300.0, 900.0]] * 15)
    assert _width(bars) < 1400


def test_importance_lists_every_study(tmp_path):
    storage = optuna.storages.InMemoryStorage()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        for i in range(30):
            study = optuna.create_study(study_name=f"s{i}", storage=storage, directions=["minimize", "minimize"],
                                        sampler=optuna.samplers.RandomSampler(seed=i))
            study.optimize(lambda t: (t.suggest_int("tile_len", 1, 64) + t.suggest_int("cores", 1, 8) * 0.1,
                                      1.0), n_trials=8)
    sec = search.importance(_data(tmp_path, storage))
    tables = [b for b in sec.blocks if isinstance(b, Table)]
    assert sum(len(t.rows) for t in tables) == 30
    assert "30 studies: the plot shows the 15 exported ones; the table lists every study." in _notes(sec.blocks)
    (plot,) = [b for b in sec.blocks if isinstance(b, Plot)]
    assert _width(plot) < 1400
