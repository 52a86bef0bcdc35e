"""Where `autotile report` takes each figure from: summary.json, the study storage, or neither."""

import html
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


def test_a_study_another_spec_tuned_since_is_not_this_runs_search(run_cli, write_spec, tmp_path):
    """Spec B, tuned into A's storage with --restart (which deleted A's study of the same name):
    A's re-rendered report showed B's trials as its search and advised rerunning a tune command
    that is refused there. Now the study is told by its recorded identity, the search sections
    fall back to summary.json, and the report says what happened and what to do."""
    from tinyspecs import SMALL

    a, b = tmp_path / "a", tmp_path / "b"
    spec_a = write_spec(SMALL, "a.yaml")
    spec_b = write_spec(SMALL.replace("high: 64, pow2", "high: 128, pow2"), "b.yaml")
    assert run_cli("tune", spec_a, "--out", str(a), "--quiet", "--no-verify", "--trials", "3")[0] == 0
    mine = json.loads((a / "summary.json").read_text())
    assert run_cli("tune", spec_b, "--out", str(b), "--quiet", "--no-verify", "--trials", "8", "--storage",
                   f"journal:{a / 'studies.journal'}", "--restart")[0] == 0
    for older in (False, True):  # a summary before it recorded the identity: the recorded spec's
        if older:
            (a / "summary.json").write_text(json.dumps(
                mine | {"results": [{k: v for k, v in r.items() if k != "identity"} for r in mine["results"]]}))
        assert run_cli("report", str(a))[0] == 0
        md = (a / "report.md").read_text()
        assert md_table(md, "distinct configs")[0]["trials"] == str(mine["results"][0]["trials"])
        assert "does not match the study storage" not in md
        assert "now holds another spec's study under the name of this run's" in md
        assert "params.tile_len changed" in md
        assert "or add --restart, which deletes that study" in md
        assert "another spec's study under its name" in html.unescape((a / "report.html").read_text())


def test_reproduce_after_the_storage_moved_resumes_as_printed(run_cli, write_spec, tmp_path):
    """`report DIR --storage NEW` after the SQLite file moved: the printed tune command named NEW
    but tune refused it (summary.json records the old file). It now adds --restart, and running
    it as printed resumes the stored trials."""
    import shlex

    import optuna
    from tinyspecs import SMALL

    out, old, new = tmp_path / "out", tmp_path / "old", tmp_path / "new"
    old.mkdir()
    new.mkdir()
    spec = write_spec(SMALL)
    assert run_cli("tune", spec, "--out", str(out), "--quiet", "--no-verify", "--trials", "3",
                   "--storage", f"sqlite:///{old}/s.db")[0] == 0
    name = json.loads((out / "summary.json").read_text())["results"][0]["study"]
    (old / "s.db").rename(new / "s.db")
    url = f"sqlite:///{new}/s.db"
    before = [t.datetime_start for t in optuna.load_study(study_name=name, storage=url).trials]
    assert run_cli("report", str(out), "--storage", url)[0] == 0
    md = (out / "report.md").read_text()
    command = next(line for line in md.splitlines() if line.startswith("autotile tune "))
    assert command.endswith(f" --storage {url} --restart")
    assert "It resumes the trials" in md and "records the study storage" in (out / "report.html").read_text()
    code, _, err = run_cli(*shlex.split(command)[1:], "--quiet")
    assert code == 0, err
    assert [t.datetime_start for t in optuna.load_study(study_name=name, storage=url).trials] == before
    assert json.loads((out / "summary.json").read_text())["storage"] == url


def test_a_spec_edited_or_gone_since_the_run_is_noted(run_cli, write_spec, tmp_path):
    """The Reproduce command passes the spec file: edited or deleted since the run, it tunes
    something else or fails, and the report said nothing (the profile got a note)."""
    from pathlib import Path

    from tinyspecs import SMALL

    out = tmp_path / "out"
    spec = write_spec(SMALL)
    assert run_cli("tune", spec, "--out", str(out), "--quiet", "--no-verify", "--trials", "3")[0] == 0
    then = json.loads((out / "summary.json").read_text())["spec_hash"]
    assert "spec file" not in (out / "report.md").read_text()
    write_spec(SMALL.replace("trials: 10", "trials: 12"))
    assert run_cli("report", str(out))[0] == 0
    for page in ("report.md", "report.html"):
        text = (out / page).read_text()
        assert f"passes the spec file {spec}, edited since this run" in text and f"{then} then" in text
    Path(spec).unlink()
    assert run_cli("report", str(out))[0] == 0
    for page in ("report.md", "report.html"):
        assert f"passes the spec file {spec}, which no longer exists" in (out / page).read_text()
