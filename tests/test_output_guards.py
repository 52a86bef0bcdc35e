"""An output never replaces an input, bad numeric flags are one line, outputs are checked up front."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from tinyspecs import EW

from autotile.atomic import same_file

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize("how", ["same", "spelled", "symlink", "hardlink"])
def test_simulate_trace_never_replaces_its_spec(run_cli, tmp_path, monkeypatch, how):
    monkeypatch.chdir(tmp_path)
    spec = tmp_path / "v.yaml"
    shutil.copy(ROOT / "studies" / "weighted_sum.yaml", spec)
    before = spec.read_bytes()
    trace = {"same": "v.yaml", "spelled": "./sub/../v.yaml", "symlink": "l.yaml", "hardlink": "h.yaml"}[how]
    (tmp_path / "sub").mkdir()
    (tmp_path / "l.yaml").symlink_to("v.yaml")
    os.link(spec, tmp_path / "h.yaml")
    code, out, err = run_cli("simulate", "v.yaml", "--shape", "n=4096", "--trace", trace)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"--trace {trace}: is the spec v.yaml" in err and "Traceback" not in err
    assert spec.read_bytes() == before


def test_simulate_trace_never_replaces_the_profile(run_cli, tmp_path):
    from autotile.hardware.profile import bundled_path

    prof = tmp_path / "p.yaml"
    prof.write_text(bundled_path("ascend910b2").read_text())
    spec = tmp_path / "s.yaml"
    spec.write_text((ROOT / "studies" / "weighted_sum.yaml").read_text().replace(
        "hardware: ascend910b2", f"hardware: {prof}"))
    before = prof.read_bytes()
    code, _, err = run_cli("simulate", str(spec), "--shape", "n=4096", "--trace", str(prof))
    assert code == 2 and "is the hardware profile" in err and prof.read_bytes() == before


def test_same_file_sees_links_and_spellings(tmp_path):
    (tmp_path / "a").write_text("x")
    (tmp_path / "l").symlink_to("a")
    assert same_file(tmp_path / "a", tmp_path / "l") and same_file(tmp_path / "a", tmp_path / "." / "a")
    assert not same_file(tmp_path / "a", tmp_path / "b")


def test_bench_search_out_never_replaces_its_spec(run_cli, tmp_path):
    spec = tmp_path / "ew.yaml"
    spec.write_text(EW)
    code, _, err = run_cli("bench-search", str(spec), "-o", str(spec), "--seeds", "1", "--budgets", "2", "--quiet")
    assert code == 2 and "-o" in err and "is the spec" in err and spec.read_text() == EW


def test_tune_out_never_replaces_its_spec_or_storage(run_cli, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    spec = out / "summary.json"  # YAML is read whatever the name
    spec.write_text(EW)
    code, _, err = run_cli("tune", str(spec), "--out", str(out), "--quiet", "--trials", "2")
    assert code == 2 and "--out" in err and "is the spec" in err and spec.read_text() == EW
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]
    other = tmp_path / "ew.yaml"
    other.write_text(EW)
    code, _, err = run_cli("tune", str(other), "--storage", f"journal:{other}", "--out", str(tmp_path / "o2"),
                           "--quiet", "--trials", "2")
    assert code == 2 and "--storage" in err and "is the spec" in err and other.read_text() == EW
    assert not (tmp_path / "o2").exists()


@pytest.mark.parametrize("name", ["traces/n4096_fp16_vector.json", "report_files/history.png",
                                  "traces/n512_fp32_cube.json"])
def test_tune_out_never_replaces_or_prunes_a_spec_in_its_subfolders(run_cli, tmp_path, name):
    """A spec saved where the report writes (or prunes) a trace or plot was silently replaced."""
    out = tmp_path / "out"
    spec = out / name
    spec.parent.mkdir(parents=True)
    spec.write_text(EW)
    code, _, err = run_cli("tune", str(spec), "--out", str(out), "--quiet", "--trials", "2")
    assert code == 2 and err.count("\n") == 1 and f"--out {spec}: is the spec" in err, err
    assert spec.read_text() == EW and not (out / "summary.json").exists()


@pytest.mark.parametrize("flag,value,expected", [
    ("--seed", "-1", "--seed: expected an integer from 0 to 4294967295"),
    ("--seed", "99999999999", "--seed: expected an integer from 0 to 4294967295"),
    ("--trials", "99999999999999999999", "--trials: expected an integer from 1 to 1000000000"),
    ("--jobs", "99999", "--jobs: expected an integer from 1 to 1024"),
])
def test_tune_numeric_flags_out_of_range_are_one_line_and_create_nothing(run_cli, tmp_path, flag, value, expected):
    spec = tmp_path / "ew.yaml"
    spec.write_text(EW)
    out = tmp_path / "out"
    budget = [] if flag == "--trials" else ["--trials", "2"]  # a repeated --trials is an error of its own
    code, _, err = run_cli("tune", str(spec), "--out", str(out), "--quiet", *budget, f"{flag}={value}")
    assert code == 2 and err.count("\n") == 1 and expected in err and "Traceback" not in err, err
    assert not out.exists()


def test_spec_budget_beyond_the_maximum_is_refused(write_spec):
    from autotile.errors import InputError
    from autotile.space import load_spec

    with pytest.raises(InputError, match="budget.trials: expected at most 1000000000"):
        load_spec(write_spec(EW.replace("budget: {trials: 10}", "budget: {trials: 99999999999999999999}")))


def test_train_numeric_and_output_checks_come_first(run_cli, tmp_path, monkeypatch):
    from autotile.models import training

    def boom(*a, **k):
        raise AssertionError("train started before its output was checked")

    monkeypatch.setattr(training, "train", boom)
    (tmp_path / "afile").write_text("keep")
    code, _, err = run_cli("train", "-o", str(tmp_path / "afile"))
    assert code == 1 and "Not a directory" in err and err.count("\n") == 1
    assert (tmp_path / "afile").read_text() == "keep"
    code, _, err = run_cli("train", "-o", str(tmp_path / "afile" / "sub"))
    assert code == 1 and "Not a directory" in err and err.count("\n") == 1
    code, _, err = run_cli("train", "-o", str(tmp_path / "c"), "-j", "99999")
    assert code == 2 and "--jobs: expected an integer from 1 to 1024" in err


def test_bench_search_seeds_bounded(run_cli, tmp_path):
    spec = tmp_path / "ew.yaml"
    spec.write_text(EW)
    code, _, err = run_cli("bench-search", str(spec), "--seeds", "99999999999", "--budgets", "2", "--quiet")
    assert code == 2 and "--seeds: expected an integer from 1 to" in err


@pytest.mark.parametrize("blocker", ["table.json", "report.html", "report.md",
                                     "traces/n4096_fp16_vector.json", "report_files/history.png"])
def test_tune_checks_every_output_before_the_trials(run_cli, tmp_path, monkeypatch, blocker):
    from autotile.tune import runner

    spec = tmp_path / "ew.yaml"
    spec.write_text(EW)
    out = tmp_path / "out"
    (out / blocker).mkdir(parents=True)
    (out / "summary.json").write_text('{"old": 1}')

    def boom(*a, **k):
        raise AssertionError("a trial ran before the outputs were checked")

    monkeypatch.setattr(runner, "run", boom)
    code, _, err = run_cli("tune", str(spec), "--out", str(out), "--quiet", "--trials", "2")
    assert code == 1 and err.count("\n") == 1 and blocker in err, err
    assert (out / "summary.json").read_text() == '{"old": 1}'
    assert not (out / "studies.journal").exists()


@pytest.mark.parametrize("cmd", ["export", "import-kt", "simulate", "bench-search"])
def test_an_output_file_named_as_a_folder_is_bad_input(run_cli, tmp_path, cmd):
    """A folder where a file's name is expected is the user's mistake (exit 2, one line), found
    before any work; export -o DIR loaded the table and then failed on the write (exit 1)."""
    from tablekit import default_table

    from autotile.tables.schema import write_table

    out = tmp_path / "out"
    out.mkdir()
    spec = tmp_path / "ew.yaml"
    spec.write_text(EW)
    write_table(tmp_path / "table.json", default_table())
    (tmp_path / "cache.json").write_text("{}")
    argv = {"export": ["export", str(tmp_path / "table.json"), "-o", str(out)],
            "import-kt": ["import-kt", str(tmp_path / "cache.json"), "-o", str(out)],
            "simulate": ["simulate", str(spec), "--shape", "n=1024", "--trace", str(out)],
            "bench-search": ["bench-search", str(spec), "-o", str(out), "--seeds", "1", "--budgets", "2", "--quiet"]}[cmd]
    code, stdout, err = run_cli(*argv)
    assert code == 2 and err.count("\n") == 1 and "is a folder: expected a file's name" in err, err
    assert "Traceback" not in err and list(out.iterdir()) == []
