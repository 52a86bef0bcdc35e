"""The report's headline sentences and section texts agree with its tables (synthetic summaries)."""

from autotile.report import sections
from autotile.report.data import ReportData


def _row(shape, unit, pp, pb, **kw):
    return {"shape": shape, "dtype": "fp16", "unit": unit, "cycles": 1000.0, "chosen": True, "verified": True,
            "pct_of_peak": pp, "pct_of_bandwidth": pb} | kw


def _util_line(data):
    return next(x for x in sections.highlights(data) if x.startswith("Best utilization"))


def test_best_utilization_is_taken_on_each_rows_roof(tmp_path, hw):
    """global_sum said "5.4% of peak (room left)" for a row the table bands "good (of bandwidth)"
    at 80.4% of HBM bandwidth: the headline used % of peak for every row."""
    res = [_row({"n": 4096}, "vector", 0.2, 2.4), _row({"n": 1048576}, "vector", 5.4, 80.4)]
    data = ReportData(out_dir=tmp_path, summary={"op": "global_sum", "results": res}, hw=hw)
    assert _util_line(data) == ("Best utilization: 80.4% of HBM bandwidth for n=1048576 fp16 vector "
                                "(good, its roofline is HBM bandwidth).")
    table = sections.best(data).blocks[1].rows
    assert table[1][7] == "good (of bandwidth)"


def test_best_utilization_names_the_best_of_each_roof(tmp_path, hw):
    """matmul said "79.0% of peak (acceptable)" while a memory-bound row was 88.7% "good (of bandwidth)"."""
    res = [_row({"m": 4096, "n": 4096, "k": 4096}, "cube", 79.0, 20.0),
           _row({"m": 16, "n": 11008, "k": 4096}, "cube", 6.0, 88.7)]
    data = ReportData(out_dir=tmp_path, summary={"op": "matmul", "results": res}, hw=hw)
    assert _util_line(data) == (
        "Best utilization: 88.7% of HBM bandwidth for m=16, n=11008, k=4096 fp16 cube (good, its roofline is "
        "HBM bandwidth); 79.0% of peak for m=4096, n=4096, k=4096 fp16 cube (acceptable).")


REPLAY_SPEC = """op: replay
shapes: [{x: 4096, y: 4096}]
params:
  bx: {type: int, low: 16, high: 64, pow2: true}
  tx: {type: int, low: 1, high: 3}
objective: time_us
backend: replay
measurements: m.csv
budget: {trials: 6}
"""


def test_replay_report_says_verification_was_skipped_and_claims_no_baseline(tmp_path, run_cli):
    """A replay run's Verification row said FAILED under text claiming execute mode; the pipes
    section was a heading with no content; the texts called trial 0 the default heuristic."""
    (tmp_path / "m.csv").write_text("bx,tx,time\n" + "".join(
        f"{bx},{tx},{0.05 + 0.01 * tx + bx / 1e4}\n" for bx in (16, 32, 64) for tx in (1, 2, 3)))
    (tmp_path / "spec.yaml").write_text(REPLAY_SPEC)
    out = tmp_path / "out"
    code, _, err = run_cli("tune", str(tmp_path / "spec.yaml"), "--trials", "6", "--quiet", "--out", str(out))
    assert code == 0, err
    md = (out / "report.md").read_text()
    verification = md.split("## Verification")[1].split("## ")[0]
    assert "FAILED" not in verification and "execute mode" not in verification
    assert "| skipped (replay backend) |" in verification
    assert "NOT verified" not in md and "Verification skipped for 1 exported configuration" in md
    assert "## Pipe utilization" not in md and "## Roofline" not in md
    assert "trial 0 is the default heuristic" not in md and "trial 0 of every study" not in md
    assert "dashed: the default heuristic" not in md
    assert "no default heuristic" in md


def test_heading_counts_the_planned_studies_after_an_interruption(tmp_path):
    """An interrupted weighted_sum run said "4 shape(s) x ... = 33 studies": the count left out
    the studies that never ran (5 shapes x 3 dtypes x 3 units = 45 planned, 33 run)."""
    def study(n, dtype, unit):
        return {"shape": {"n": n}, "dtype": dtype, "unit": unit}

    dtypes, units = ("bf16", "fp16", "fp32"), ("vector", "cube", "scalar")
    plan = [study(n, d, u) for n in (64, 512, 4096, 65536, 1048576) for d in dtypes for u in units]
    ran, never = plan[:33], plan[33:]
    summary = {"op": "weighted_sum", "interrupted": True, "not_run": never,
               "results": [r | {"cycles": 100.0, "chosen": r["unit"] == "vector", "verified": True} for r in ran]}
    facts = dict(sections.facts(ReportData(out_dir=tmp_path, summary=summary, hw=None)))
    assert facts["operator"] == "weighted_sum: 5 shapes x bf16, fp16, fp32 x cube, scalar, vector = 45 studies, 33 run"
    summary |= {"not_run": [], "interrupted": False, "results": summary["results"][:9]}
    facts = dict(sections.facts(ReportData(out_dir=tmp_path, summary=summary, hw=None)))
    assert facts["operator"] == "weighted_sum: 1 shape x bf16, fp16, fp32 x cube, scalar, vector = 9 studies"


def test_a_row_banded_on_bandwidth_but_bound_by_a_pipe_says_so(tmp_path, hw):
    """resize upsampling read "room left (of bandwidth)" beside bound compute:vector: the reader was
    sent to HBM where the vector pipe is what holds the kernel."""
    res = [_row({"n": 1048576}, "vector", 5.4, 35.0, bound="compute:vector"),
           _row({"n": 4096}, "vector", 0.2, 84.8, bound="memory:gm_ub")]
    data = ReportData(out_dir=tmp_path, summary={"op": "global_sum", "results": res}, hw=hw)
    best = sections.best(data)
    assert [row[7] for row in best.blocks[1].rows] == ["room left (of bandwidth; vector pipe bound)",
                                                      "good (of bandwidth)"]
    assert "the room left is in the pipe's work, not in bandwidth" in best.blocks[0].text
    assert _util_line(data) == ("Best utilization: 84.8% of HBM bandwidth for n=4096 fp16 vector "
                                "(good, its roofline is HBM bandwidth).")
    data.summary["results"] = res[:1]
    assert _util_line(data).endswith("(room left, its roofline is HBM bandwidth, but the vector pipe bounds it).")
    res[0]["bound"] = "memory:gm_ub"
    assert sections.best(data).blocks[1].rows[0][7] == "room left (of bandwidth)"
    assert "pipe's work" not in sections.best(data).blocks[0].text
