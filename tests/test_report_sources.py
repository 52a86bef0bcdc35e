"""Where `autotile report` takes each figure from: summary.json, the study storage, or neither."""

import json

from tinyspecs import EW

from tests.conftest import md_table


def test_report_of_an_older_summary_reads_the_search_from_the_storage(run_cli, write_spec, tmp_path):
    """A summary written before a resumed run added trials: the history showed its 4 trials while
    importance read the storage's; now every search section reads the storage and the report
    says summary.json is behind it (its best and table.json are not silently replaced)."""
    out = tmp_path / "out"
    spec = write_spec(EW)
    assert run_cli("tune", spec, "--out", str(out), "--quiet", "--no-verify", "--trials", "4")[0] == 0
    old = (out / "summary.json").read_text()
    assert run_cli("tune", spec, "--out", str(out), "--quiet", "--no-verify", "--trials", "10")[0] == 0
    new = json.loads((out / "summary.json").read_text())["results"][0]
    assert run_cli("report", str(out))[0] == 0
    md = (out / "report.md").read_text()
    assert "does not match the study storage" not in md  # a fresh summary agrees with the storage
    fresh = md_table(md, "distinct configs")

    (out / "summary.json").write_text(old)
    before = json.loads(old)["results"][0]
    assert before["trials"] < new["trials"]
    assert run_cli("report", str(out))[0] == 0
    md = (out / "report.md").read_text()
    assert md_table(md, "distinct configs") == fresh
    assert fresh[0]["trials"] == str(new["trials"])
    assert (f"{before['trials']} trials in summary.json, {new['trials']} in the storage") in md
    assert "Reproduce section's autotile tune command" in md


def test_an_exhaustive_run_keeps_no_storage_and_its_report_knows(run_cli, write_spec, tmp_path):
    """The exhaustive sampler writes no journal: summary.json recorded one anyway, and the report
    warned that it was not found, offered it to optuna-dashboard and gave a budget of 10
    configurations for a run that measured every one."""
    from tinyspecs import SMALL

    out = tmp_path / "out"
    spec = write_spec(SMALL.replace("objective: cycles", "objective: cycles\nsampler: exhaustive"))
    code, printed, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--no-verify")
    assert code == 0, err
    assert "budget none: every feasible configuration" in printed and "budget 10" not in printed
    s = json.loads((out / "summary.json").read_text())
    assert s["storage"] is None and not (out / "studies.journal").exists()
    n = s["results"][0]["trials"]
    md = (out / "report.md").read_text()
    assert "not found" not in md and "optuna-dashboard" not in md and "--storage" not in md
    assert f"all {n:,} feasible configurations" in md and "budget 10" not in md
    assert "keeps no Optuna study" in md
    code, _, err = run_cli("report", str(out), "--storage", str(tmp_path / "other.journal"))
    assert code == 2 and err.count("\n") == 1 and "exhaustive sampler" in err
