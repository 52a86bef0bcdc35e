"""The trial cap (CAP_FACTOR x budget trials in all): a study that reaches it short of its budget
says so, and a resume never adds a trial past it."""

from __future__ import annotations

import json

from tinyspecs import SMALL

from autotile.report import markdown
from autotile.tune.runner import CAP_FACTOR


def _run(run_cli, spec, out) -> tuple[dict, str]:
    code, stdout, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--no-verify")
    assert code == 0, err
    return json.loads((out / "summary.json").read_text()), stdout


def test_a_resume_adds_no_trial_past_the_cap(run_cli, write_spec, tmp_path):
    out, spec = tmp_path / "out", write_spec(SMALL)
    trials = [_run(run_cli, spec, out)[0]["results"][0]["trials"] for _ in range(2)]
    assert trials == [CAP_FACTOR * 10] * 2


def test_a_study_that_reaches_the_cap_says_so(run_cli, write_spec, tmp_path):
    out = tmp_path / "out"
    summary, stdout = _run(run_cli, write_spec(SMALL), out)
    r = summary["results"][0]
    assert r["unique_configs"] == 6 and r["cap_reached"] is True
    assert r["interrupted"] is False and summary["interrupted"] is False
    assert f"trial cap reached ({CAP_FACTOR * 10} trials) short of the budget 10" in stdout
    assert "1 study(ies) reached the trial cap" in (out / "report.md").read_text()


def test_a_study_that_meets_its_budget_is_not_flagged(run_cli, write_spec, tmp_path):
    out = tmp_path / "out"
    code, stdout, _ = run_cli("tune", write_spec(SMALL.replace("trials: 10", "trials: 4")), "--out", str(out),
                              "--quiet", "--no-verify", "--json")
    r = json.loads(stdout)["results"][0]
    assert code == 0 and r["unique_configs"] == 4 and r["cap_reached"] is False


def test_infeasible_reasons_group_wordings_that_differ_in_numbers():
    from autotile.tune.runner import infeasible_reasons

    got = infeasible_reasons(["UB overflow: need 300 bytes", "L1 overflows", "UB overflow: need 200 bytes",
                              "UB overflow: need 300 bytes", None])
    assert got == [{"reason": "UB overflow: need 300 bytes", "count": 3, "wordings": 2},
                   {"reason": "L1 overflows", "count": 1, "wordings": 1}]


def test_a_study_of_infeasible_trials_says_why(run_cli, write_spec, tmp_path):
    """Every trial fails a kernel check: the summary, CLI line and report give that check (they
    said only "no feasible configuration found"), and the cap note says the trials were infeasible
    (it blamed the sampler for repeating measured configurations)."""
    out = tmp_path / "out"
    spec = write_spec(SMALL.replace("objective: cycles", "derived:\n  ub: tile_len * buffer_num * 100000\n"
                                    "constraints:\n  - {expr: \"ub <= hw.ub_bytes\", message: \"UB overflow\"}\n"
                                    "objective: cycles"))
    summary, stdout = _run(run_cli, spec, out)
    r = summary["results"][0]
    assert r["cycles"] is None and r["cap_reached"] is True and r["infeasible"] == r["trials"] == CAP_FACTOR * 10
    assert r["reason"].startswith(f"no feasible configuration found: all {r['trials']} trials were infeasible; "
                                  f"the most frequent reason ({r['trials']} of them, numbers varying): UB overflow")
    assert r["reason"] in stdout
    md = (out / "report.md").read_text()
    assert markdown.esc(r["reason"]) in md and "kept proposing" not in md
    assert f"(0 distinct, {r['trials']} of {r['trials']} trials infeasible)" in md
