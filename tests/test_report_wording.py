"""What the printouts, reports and exports say: integer work in TOPS, counts with their noun in
the right number, the optimum of an exhausted space, and the error a speedup was bought with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import md_table

from autotile.cli.tune import format_summary
from autotile.report import perf, search, sections
from autotile.report.data import ReportData

MM = {"m": 1024, "n": 2048, "k": 512}


def _mm(dtype: str, pct_of_peak: float) -> dict:
    return {"shape": MM, "dtype": dtype, "unit": "cube", "cycles": 9000.0, "pct_of_peak": pct_of_peak,
            "pct_of_bandwidth": 20.0, "verified": True, "chosen": True, "params": {"base_m": 128}}


def _roofline(hw, tmp_path, *dtypes) -> tuple[list, str]:
    """The roofline table's header and the ridge-point note for results of ``dtypes``."""
    data = ReportData(out_dir=tmp_path, summary={"op": "matmul", "hw": "ascend910b2",
                                                 "results": [_mm(d, 60.0) for d in dtypes]}, hw=hw)
    sec = perf.roofline(data, {})
    table = next(b for b in sec.blocks if hasattr(b, "rows"))
    return table.header, next(b.text for b in sec.blocks if getattr(b, "text", "").startswith("Ridge points"))


def test_int8_roofline_counts_operations_in_tops(hw, tmp_path):
    """int8 rows read "achieved TFLOP/s" and "cube int8 at 472 FLOP/byte": integer MACs are operations."""
    header, ridge = _roofline(hw, tmp_path, "int8")
    assert header[1:4] == ["OP/byte", "achieved TOPS", "roof TOPS"]
    assert "cube int8 at 472 OP/byte" in ridge and "FLOP" not in ridge


def test_a_roofline_of_int8_and_fp16_names_both_kinds(hw, tmp_path):
    header, ridge = _roofline(hw, tmp_path, "int8", "fp16")
    assert header[1:4] == ["(FL)OP/byte", "achieved T(FL)OP/s", "roof T(FL)OP/s"]
    assert "cube int8 at 472 OP/byte, cube fp16 at 236 FLOP/byte" in ridge
    assert _roofline(hw, tmp_path, "fp16")[0][1:4] == ["FLOP/byte", "achieved TFLOP/s", "roof TFLOP/s"]


def test_ridge_points_keep_three_significant_digits(hw, tmp_path):
    """The vector fp16 ridge, 7.58 FLOP/byte, read "8", and the scalar's 0.058 read "0"."""
    results = [_mm("fp16", 60.0) | {"unit": u, "shape": {"n": 4096}} for u in ("vector", "scalar")]
    data = ReportData(out_dir=tmp_path, summary={"op": "weighted_sum", "hw": "ascend910b2", "results": results}, hw=hw)
    ridge = next(b.text for b in perf.roofline(data, {}).blocks if getattr(b, "text", "").startswith("Ridge points"))
    assert ridge.startswith("Ridge points: vector fp16 at 7.59 FLOP/byte, scalar fp16 at 0.0576 FLOP/byte.")


def test_counts_take_their_noun_in_the_right_number():
    from autotile.words import count

    assert [count(1, "study"), count(2, "study"), count(1, "entry"), count(3, "entry"), count(1, "trace"),
            count(1200, "infeasible proposal")] == ["1 study", "2 studies", "1 entry", "3 entries", "1 trace",
                                                   "1,200 infeasible proposals"]


def _summary(**row) -> dict:
    base = {"shape": {"n": 4096}, "dtype": "fp16", "unit": "vector", "cycles": 900.0, "pct_of_peak": 1.0,
            "speedup_vs_baseline": 1.5, "verified": True, "infeasible": 0, "unique_configs": 12, "trials": 12}
    return {"op": "elementwise", "hw": "ascend910b2", "sampler": "tpe", "budget": 50, "seed": 0,
            "elapsed_s": 1.0, "objectives": ["cycles"], "results": [{**base, **row}]}


def test_tune_printout_says_one_proposal_and_one_config():
    """It printed "(+1 infeasible proposals skipped)"."""
    text = format_summary(_summary(infeasible=1, unique_configs=1), Path("out"))
    assert "1 config measured (+1 infeasible proposal skipped)" in text


def test_report_highlights_one_exhausted_study_in_the_singular(tmp_path):
    """The report read "1 study(ies) tried every configuration their spec allows"."""
    r = _summary(space_exhausted=True, feasible_configs=12)["results"][0]
    data = ReportData(out_dir=tmp_path, summary={"op": "elementwise", "budget": 50, "results": [r]}, hw=None)
    text = " ".join(sections.highlights(data))
    assert "1 study tried every configuration its spec allows" in text and "(ies)" not in text
    assert "Its best measured configuration is the space's optimum" in text
    assert dict(sections.facts(data))["operator"].startswith("elementwise: 1 shape x fp16 x vector = 1 study")


def test_c_header_counts_one_entry(tmp_path):
    """The exported header's comment read "1 entries"."""
    from tablekit import default_table

    from autotile.tables import export_c
    from autotile.tables.schema import load_table, write_table

    doc = default_table()
    doc["entries"] = doc["entries"][:1]
    write_table(tmp_path / "table.json", doc)
    banner = export_c.render(load_table(tmp_path / "table.json")).split("*/", 1)[0]
    assert ", 1 entry" in banner and "entries" not in banner


def test_an_old_summary_of_an_exhausted_study_shows_its_optimum(tmp_path):
    """An exhausted space's best is its optimum, even where the summary does not carry it."""
    r = _summary(space_exhausted=True, history=[1200.0, 950.0, 904.0, 990.0])["results"][0]
    assert search.optimum(r, "cycles") == 904.0 and search.optimum({**r, "space_exhausted": False}, "cycles") is None


def test_an_exhausted_space_reports_its_optimum_and_no_gap(run_cli, write_spec, tmp_path):
    """12 configurations, budget 50: the report said "Their best measured configuration is the
    space's optimum" and showed "-" as the optimum and the gap to it."""
    from tinyspecs import EW

    text = EW.replace('''  tile_len: {type: int, low: 16, high: "shape.n", pow2: true}
  buffer_num: {type: int, low: 1, high: 4, step: 1}
  cores: {type: int, low: 1, high: "min(hw.vector_cores, shape.n // 16)", pow2: true}''', '''  tile_len: {type: int, low: 256, high: 1024, pow2: true}
  buffer_num: {type: int, low: 1, high: 2}
  cores: {type: int, low: 1, high: 2, pow2: true}''').replace("trials: 10", "trials: 50")
    out = tmp_path / "out"
    code, _, err = run_cli("tune", write_spec(text), "--out", str(out), "--quiet", "--no-verify")
    assert code == 0, err
    r = json.loads((out / "summary.json").read_text())["results"][0]
    assert r["space_exhausted"] and r["feasible_configs"] == 12
    assert r["optimum"] == pytest.approx(min(r["history"])) and r["optimum_cycles"] == pytest.approx(r["cycles"])
    row = md_table((out / "report.md").read_text(), "gap to optimum")[0]
    assert row["gap to optimum"] == "0.00%" and row["optimum"] == f"{r['optimum']:,.0f}"


def _traded(**kw) -> dict:
    """sigmoid n=65536 fp16: lut_nearest against the exact default, 49.49x faster at 32x the error."""
    return _summary(shape={"n": 65536}, unit="scalar", cycles=8619.0, speedup_vs_baseline=49.49,
                    baseline_cycles=426602.0, values={"cycles": 8619.0, "max_abs_error": 0.0078125},
                    baseline_values={"cycles": 426602.0, "max_abs_error": 0.000244140625}, **kw)


def test_a_speedup_with_an_error_objective_says_the_error_it_costs():
    """The printout read "49.49x vs baseline" for a pick 32x less precise than the baseline."""
    s = _traded()
    s["objectives"] = ["cycles", "max_abs_error"]
    assert "49.49x vs baseline at max_abs_error 0.00781 (baseline 0.000244)," in format_summary(s, Path("out"))
    s["objectives"] = ["cycles"]  # an error that is no objective is not traded for
    assert "49.49x vs baseline, " in format_summary(s, Path("out"))


def test_the_report_gives_the_error_beside_the_speedup(tmp_path):
    s = _traded(chosen=True)
    s["objectives"] = ["cycles", "max_abs_error"]
    data = ReportData(out_dir=tmp_path, summary=s, hw=None)
    table = next(b for b in sections.best(data).blocks if hasattr(b, "rows"))
    assert table.rows[0][table.header.index("max_abs_error (default's)")] == "0.00781 (0.000244)"
    text = " ".join(sections.highlights(data))
    assert "up to 49.49x (n=65536 fp16 scalar), at max_abs_error 0.00781 against the default's 0.000244" in text
    assert "Faster than the default at a larger error" in text


def test_report_printout_counts_one_trace(run_cli, tmp_path, monkeypatch):
    """It printed "(4 plots, 1 traces)"."""
    from autotile.report import render

    monkeypatch.setattr(render, "write_report", lambda out, storage=None: {
        "html": out / "report.html", "markdown": out / "report.md", "plots": ["a", "b", "c", "d"],
        "traces": ["t"], "seconds": 0.5})
    code, stdout, err = run_cli("report", str(tmp_path))
    assert code == 0, err
    assert "(4 plots, 1 trace) in 0.5 s" in stdout


def test_a_summary_that_does_not_record_a_default_is_not_read_as_having_none(tmp_path):
    """Failed studies of older summaries lack baseline_params: read as "no feasible default"."""
    ok = {"shape": {"n": 1}, "dtype": "fp16", "unit": "vector", "baseline_params": {"tile_len": 16}}
    failed = {"shape": {"n": 1}, "dtype": "fp16", "unit": "scalar", "cycles": None, "reason": "FAILED verification"}

    def text(*results):
        return sections.baseline_text(ReportData(out_dir=tmp_path, summary={"op": "sigmoid", "results": list(results)},
                                                 hw=None))

    assert text(failed) == ""
    assert text(ok, failed).endswith("trial 0 of 1 of 2 studies (the summary does not say whether the others had one).")
    assert text(ok, {**failed, "baseline_params": None}).endswith("(the others have no default).")


def _failed(unit: str, n: int) -> dict:
    """A study that measured configurations but whose every candidate failed verification."""
    cand = {"params": {"variant": "poly"}, "passed": False, "shape": {"n": n}, "reduced": False,
            "max_abs_error": 0.021, "max_rel_error": 60.6, "rtol": 0.00293, "atol": 6.1e-05,
            "reason": "max abs error 0.021 exceeds the tolerance", "executed": True}
    return {"shape": {"n": n}, "dtype": "fp16", "unit": unit, "cycles": None, "chosen": False, "verified": False,
            "history": [900.0, 850.0], "reason": "FAILED verification: all 2 of its candidates disagreed",
            "rejected": [cand, dict(cand, params={"variant": "lut_nearest"})]}


def test_a_run_whose_every_study_failed_verification_says_so_in_each_section(tmp_path):
    """Unit choice read "- | - | - | -", the crossover "No unit found a feasible configuration for
    any shape" (every study measured configurations), Verification was a header-only table and
    the Roofline its intro alone."""
    data = ReportData(out_dir=tmp_path, summary={"op": "sigmoid", "hw": "ascend910b2", "objectives": ["cycles"],
                                                 "results": [_failed(u, n) for n in (1024, 65536)
                                                             for u in ("vector", "scalar")]}, hw=None)
    units = next(b for b in sections.units(data).blocks if hasattr(b, "rows"))
    assert units.rows[0] == ["n=1024 fp16", "FAILED verification", "FAILED verification", "none",
                             "no table entry: vector FAILED verification; scalar FAILED verification"]
    ver = next(b for b in sections.verification(data).blocks if hasattr(b, "rows"))
    assert len(ver.rows) == 4 and ver.rows[0][1] == "FAILED: all 2 candidates (no table entry)"
    assert ver.rows[0][3:7] == ["0.021", "60.6", "0.00293", "6.1e-05"]
    for sec in (perf.crossover(data), perf.roofline(data, {})):
        text = " ".join(b.text for b in sec.blocks if hasattr(b, "text"))
        assert "4 FAILED verification" in text and "feasible" not in text


def test_a_no_verify_report_does_not_claim_verification_ran(tmp_path):
    """The Verification intro said each exported configuration ran in execute mode while every row
    read "not run", and Best configurations called the pick the "best verified configuration"."""
    summary = _summary(verified=False, verification=None, chosen=True, params={"tile_len": 256}) | {"verify": False}
    data = ReportData(out_dir=tmp_path, summary=summary, hw=None)
    ver = sections.verification(data)
    assert "--no-verify" in ver.blocks[0].text and "execute mode on real data" not in ver.blocks[0].text
    assert ver.blocks[1].rows[0][1] == "not run (--no-verify)"
    best = sections.best(data)
    assert "--no-verify" in best.blocks[0].text and "best verified configuration" not in best.blocks[0].text
    assert best.blocks[1].rows[0][-1] == "not run"
    assert any("--no-verify" in h for h in sections.highlights(data))


def test_a_pick_held_to_its_own_recorded_error_is_not_reported_as_within_the_dtype_tolerance(tmp_path):
    """A study with an error objective verifies its pick against the error it recorded (sigmoid
    bf16 poly at max abs 0.0234): "Every exported configuration passed verification" read as
    within the dtype's tolerance."""
    row = {"verified": True, "chosen": True, "params": {"variant": "poly"}, "dtype": "bf16",
           "values": {"cycles": 900.0, "max_abs_error": 0.0234375},
           "verification": {"passed": True, "shape": {"n": 4096}, "max_abs_error": 0.0234375, "max_rel_error": 0.45,
                            "rtol": 0.0, "atol": 0.0234375, "executed": True}}
    summary = _summary(**row) | {"op": "sigmoid", "objectives": ["cycles", "max_abs_error"]}
    data = ReportData(out_dir=tmp_path, summary=summary, hw=None)
    said = " ".join(sections.highlights(data))
    assert "against its own recorded error or the dtype's tolerance, whichever allows more" in said
    assert "n=4096 bf16 vector at max abs 0.0234" in said
    assert sections.verification(data).blocks[1].rows[0][1] == "passed (against its recorded error)"
    assert sections.best(data).blocks[1].rows[0][-1] == "yes (to its own error)"
    summary["objectives"] = ["cycles"]  # the dtype's tolerance: nothing to add
    assert "passed verification." in " ".join(sections.highlights(data))
    assert sections.verification(data).blocks[1].rows[0][1] == "passed"


def test_an_exact_pick_within_the_dtype_tolerance_is_not_reported_as_held_to_its_error(tmp_path):
    """sigmoid fp16 n=1000 vector exact, recorded max abs 0.000488: every element was within
    atol + rtol x |ref| (beyond_tolerance false), yet the report said "passed (against its recorded
    error)" and "yes (to its own error)", as the table said "verified within its recorded max abs
    error". A pick that needed its error (beyond_tolerance true) still says so."""
    ver = {"passed": True, "shape": {"n": 1000}, "max_abs_error": 0.000488, "max_rel_error": 0.00109,
           "rtol": 0.00293, "atol": 6.1e-05, "executed": True, "claimed": 0.000488, "beyond_tolerance": False}
    row = {"verified": True, "chosen": True, "params": {"variant": "exact"}, "dtype": "fp16",
           "values": {"cycles": 310.0, "max_abs_error": 0.000488}, "verification": ver}
    summary = _summary(**row) | {"op": "sigmoid", "objectives": ["cycles", "max_abs_error"]}
    data = ReportData(out_dir=tmp_path, summary=summary, hw=None)
    assert "passed verification." in " ".join(sections.highlights(data))
    ver_sec = sections.verification(data)
    assert ver_sec.blocks[1].rows[0][1] == "passed" and ver_sec.blocks[1].rows[0][7] == "0.000488"
    assert "max(atol + rtol x |ref|, that error)" in ver_sec.blocks[0].text  # the rule the gate applied
    assert sections.best(data).blocks[1].rows[0][-1] == "yes"
    ver["beyond_tolerance"] = True
    assert sections.verification(data).blocks[1].rows[0][1] == "passed (against its recorded error)"
    assert sections.best(data).blocks[1].rows[0][-1] == "yes (to its own error)"
    # a recorded 0 admits nothing: an element the tail allowance passed needed no recorded error
    ver["claimed"], row["values"]["max_abs_error"] = 0.0, 0.0
    data = ReportData(out_dir=tmp_path, summary=_summary(**row) | {"op": "sigmoid",
                                                                  "objectives": ["cycles", "max_abs_error"]}, hw=None)
    assert sections.verification(data).blocks[1].rows[0][1] == "passed"
    assert sections.best(data).blocks[1].rows[0][-1] == "yes"
    assert "on the tail inputs by more than the tail allowance alone" in sections.verification(data).blocks[0].text

def test_the_verification_of_a_study_that_trades_accuracy_states_the_rule_the_gate_applies(tmp_path):
    """The intro said such a pick is held to its recorded error "instead (rtol 0, atol that error)",
    "rather than the dtype's tolerance", but verify_one passes an element within the larger of the
    two (plus sigmoid's tail allowance on its tails); the recorded error was shown nowhere."""
    ver = {"passed": True, "shape": {"n": 1024}, "max_abs_error": 0.000488, "max_rel_error": 0.00109,
           "rtol": 0.00293, "atol": 6.1e-05, "executed": True, "claimed": 0.000412}
    row = {"verified": True, "chosen": True, "params": {"variant": "poly"}, "dtype": "fp16",
           "values": {"cycles": 900.0, "max_abs_error": 0.000412}, "verification": ver}
    summary = _summary(**row) | {"op": "sigmoid", "objectives": ["cycles", "max_abs_error"]}
    sec = sections.verification(ReportData(out_dir=tmp_path, summary=summary, hw=None))
    intro, table = sec.blocks[0].text, sec.blocks[1]
    assert "rtol 0" not in intro and "rather than the dtype's tolerance" not in intro
    assert "max(atol + rtol x |ref|, that error)" in intro and "that error plus 0.000337" in intro
    assert table.header[7] == "recorded error" and table.rows[0][7] == "0.000412"
    summary["objectives"] = ["cycles"]  # a study that does not trade accuracy: no rule, no column
    del ver["claimed"]
    sec = sections.verification(ReportData(out_dir=tmp_path, summary=summary, hw=None))
    assert "recorded error" not in sec.blocks[1].header and "that error" not in sec.blocks[0].text


def test_an_interrupted_study_is_marked_in_best_configurations(tmp_path):
    """Its exported row read like any other, though the study stopped short of its budget."""
    data = ReportData(out_dir=tmp_path, summary=_summary(interrupted=True, chosen=True, params={"tile_len": 256})
                      | {"interrupted": True}, hw=None)
    best = sections.best(data)
    assert best.blocks[1].rows[0][0] == "n=4096 (interrupted)" and "(interrupted)" in best.blocks[0].text
    data.summary["results"][0]["interrupted"] = False
    assert sections.best(data).blocks[1].rows[0][0] == "n=4096"


def test_a_resumed_run_says_its_tuning_time_is_this_runs(tmp_path):
    """A rerun that resumed finished studies showed 9.7 s of tuning where the first run took 28.2 s."""
    summary = _summary(chosen=True, params={"tile_len": 256}, elapsed_s=0.0) | {"elapsed_s": 9.72}
    data = ReportData(out_dir=tmp_path, summary=summary, hw=None)
    assert dict(sections.facts(data))["tuning time"].startswith("9.7 s this run (its studies also hold trials of other runs")
    summary["results"][0]["elapsed_s"] = 8.1  # the study's trials were all this run's
    assert dict(sections.facts(data))["tuning time"] == "9.7 s"
