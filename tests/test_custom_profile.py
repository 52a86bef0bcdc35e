"""A custom hardware profile is named by its file and its content everywhere a user reads or runs
it: an edited copy that keeps the name ``ascend910b2`` is neither shown as the shipped chip nor
run as it, and a custom name (``mychip``) is never passed as ``--hw``."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from autotile.cli import run as cli
from autotile.hardware import load_profile
from autotile.hardware.profile import bundled_path

ROOT = Path(__file__).resolve().parents[1]
SHIPPED = bundled_path("ascend910b2").read_text()


def _profile(folder: Path, name: str = "ascend910b2", file: str = "half.yaml") -> Path:
    """The 910B2 profile with half its cores (12 cube / 24 vector), called ``name``."""
    text = SHIPPED.replace("cube_cores: {value: 24", "cube_cores: {value: 12")
    text = text.replace("vector_cores: {value: 48", "vector_cores: {value: 24")
    text = re.sub(r'(?m)^name: .*$', f'name: "{name}"', text, count=1)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / file).write_text(text)
    return folder / file


def _spec(folder: Path, hardware: str) -> Path:
    text = (ROOT / "studies" / "weighted_sum.yaml").read_text()
    for key, value in (("shapes", "[{n: 4096}]"), ("dtypes", "[fp16]"), ("units", "[vector, cube]"),
                       ("hardware", hardware)):
        text = re.sub(rf"(?m)^{key}:.*$", f"{key}: {value}", text, count=1)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "ws.yaml").write_text(text)
    return folder / "ws.yaml"


@pytest.fixture(scope="module")
def half_run(tmp_path_factory):
    """A weighted_sum run on an edited copy of the 910B2 that keeps its name (12 cube cores)."""
    tmp = tmp_path_factory.mktemp("half")
    _profile(tmp / "p")
    spec = _spec(tmp / "s", "../p/half.yaml")
    out = tmp / "out"
    assert cli(["tune", str(spec), "--trials", "2", "--quiet", "--no-verify", "--out", str(out)]) == 0
    return out


def _commands(md: str) -> list[str]:
    sec = md.split("## Cycles against size per unit\n", 1)[1].split("\n## ", 1)[0]
    return [c for c in sec.split("```\n", 1)[1].split("```", 1)[0].splitlines() if c]


def _hw_of(command: str) -> str | None:
    words = shlex.split(command)
    return words[words.index("--hw") + 1] if "--hw" in words else None


def _label(path: Path) -> str:
    return f"ascend910b2-{load_profile(str(path)).content_hash()[:8]}"


def test_report_crossover_commands_run_the_profile_of_the_run(half_run, tmp_path, monkeypatch, capsys):
    """They gave no --hw for the edited copy, so they ran the shipped 24-core chip."""
    profile = half_run.parent / "p" / "half.yaml"
    summary = json.loads((half_run / "summary.json").read_text())
    assert summary["hw_path"] == str(profile)
    commands = _commands((half_run / "report.md").read_text())
    assert commands and all(_hw_of(c) == str(profile) for c in commands)
    monkeypatch.chdir(tmp_path)  # the report's commands work from any folder
    capsys.readouterr()
    assert cli(shlex.split(commands[0])[1:] + ["--json"]) == 0
    got = json.loads(capsys.readouterr().out)  # an edited copy is named by its content, as headers name it
    assert (got["hw"], got["hw_hash"]) == (_label(profile), load_profile(str(profile)).content_hash())


def test_headers_say_an_edited_copy_is_not_the_shipped_profile(half_run, run_cli):
    label = _label(half_run.parent / "p" / "half.yaml")
    md = (half_run / "report.md").read_text()
    assert md.startswith(f"# autotile report: weighted_sum on {label}\n")
    assert f"| hardware profile | {label}, a modified ascend910b2, file {half_run.parent / 'p' / 'half.yaml'} (12 cube" in md
    from autotile.cli.tune import format_summary

    summary = json.loads((half_run / "summary.json").read_text())
    assert format_summary(summary, half_run).startswith(f"weighted_sum on {label} (")
    code, out, _ = run_cli("space", str(half_run.parent / "s" / "ws.yaml"))
    assert code == 0 and out.startswith(f"weighted_sum on {label}: ")
    shipped = dict(summary, hw_hash=load_profile("ascend910b2").content_hash())
    assert format_summary(shipped, half_run).startswith("weighted_sum on ascend910b2 (")


def _data(tmp_path: Path, summary: dict):
    from autotile.report.data import ReportData

    results = [{"shape": {"n": 4096}, "dtype": "fp16", "unit": u, "cycles": c, "chosen": u == "cube",
                "params": {}} for u, c in (("vector", 500.0), ("cube", 400.0))]
    return ReportData(out_dir=tmp_path, summary={"op": "weighted_sum", "results": results, **summary},
                      hw=load_profile("ascend910b2"))


def _flags(tmp_path: Path, summary: dict) -> tuple[set, str]:
    from autotile.report import perf

    data = _data(tmp_path, summary)
    commands = perf._crossover_commands(data, "weighted_sum", ["cube", "vector"], [], {})
    return {_hw_of(c) for c in commands}, data.hw_argument[1]


def test_a_custom_name_is_passed_as_its_file_never_as_a_name(tmp_path):
    """`--hw mychip` failed: unknown hardware profile 'mychip' (exit 2)."""
    mine = _profile(tmp_path / "p", "mychip", "mychip.yaml").resolve()
    h = load_profile(str(mine)).content_hash()
    assert _flags(tmp_path, {"hw": "mychip", "hw_hash": h, "hw_path": str(mine)}) == ({str(mine)}, "")
    shipped = load_profile("ascend910b2").content_hash()
    assert _flags(tmp_path, {"hw": "ascend910b2", "hw_hash": shipped, "hw_path": str(mine)}) == ({None}, "")
    b4 = load_profile("ascend910b4").content_hash()
    assert _flags(tmp_path, {"hw": "ascend910b4", "hw_hash": b4}) == ({"ascend910b4"}, "")


def test_a_changed_or_lost_profile_file_is_said(tmp_path):
    mine = _profile(tmp_path / "p", "mychip", "mychip.yaml").resolve()
    summary = {"hw": "mychip", "hw_hash": "0123456789abcdef", "hw_path": str(mine)}
    flags, note = _flags(tmp_path, summary)
    assert flags == {str(mine)} and "edited since this run" in note and "0123456789abcdef then" in note
    flags, note = _flags(tmp_path, dict(summary, hw_path=str(tmp_path / "gone.yaml")))
    assert "no longer loads" in note and "content hash 0123456789abcdef" in note


def test_an_older_summary_finds_the_file_its_spec_names(half_run, tmp_path):
    """Summaries before hw_path: the spec's hardware: read from the spec's folder when it holds the
    run's profile, else a placeholder that says which file to give (never the bare name)."""
    import shutil

    out = tmp_path / "out"
    shutil.copytree(half_run, out)
    summary = json.loads((out / "summary.json").read_text())
    del summary["hw_path"]
    (out / "summary.json").write_text(json.dumps(summary))
    assert cli(["report", str(out)]) == 0
    profile = half_run.parent / "p" / "half.yaml"
    assert {_hw_of(c) for c in _commands((out / "report.md").read_text())} == {str(profile)}
    summary["spec"] = str(tmp_path / "elsewhere" / "ws.yaml")
    (out / "summary.json").write_text(json.dumps(summary))
    assert cli(["report", str(out)]) == 0
    want = f" --hw <the file of profile ascend910b2 (content hash {summary['hw_hash']})> "
    assert all(want in c for c in _commands((out / "report.md").read_text()))


def test_lookup_retrain_hint_names_the_profile_file_to_pass(half_run, tmp_path, run_cli):
    """The table holds the profile's values, not its file: the hint was `autotile train --ops
    weighted_sum -o DIR`, which trains the shipped 24-core profile."""
    from autotile.models import store
    from autotile.tables.schema import load_table

    table = load_table(half_run / "table.json")
    h = table.hardware.content_hash()
    hint = store.retrain_command("weighted_sum", table.hardware, "models")
    assert hint == f"autotile train --ops weighted_sum --hw <the file of profile ascend910b2 (content hash {h})> -o models"
    mine = _profile(tmp_path / "p", "mychip", "mychip.yaml")
    assert store.retrain_command("matmul", load_profile(str(mine))) == f"autotile train --ops matmul --hw {mine}"
    assert store.retrain_command("matmul", load_profile("ascend910b2"), "m") == "autotile train --ops matmul -o m"
    assert store.retrain_command("matmul", load_profile("ascend910b4")) == "autotile train --ops matmul --hw ascend910b4"


def test_errors_about_a_profile_name_its_file(tmp_path, run_cli):
    """`micro mmad ... --hw p/tinyl0c.yaml` said `expected at most l0c_bytes = 512 in ascend910b2`."""
    tiny = _profile(tmp_path, file="tiny.yaml")
    tiny.write_text(tiny.read_text().replace("l0c_bytes: {value: 131072", "l0c_bytes: {value: 512"))
    code, _, err = run_cli("micro", "mmad", "m=16,k=16,n=64", "--hw", str(tiny))
    assert code == 2 and err.strip().endswith(f"expected at most l0c_bytes = 512 in {tiny}")
    code, _, err = run_cli("micro", "mmad", "m=16,k=16,n=4096")
    assert code == 2 and "l0c_bytes = 131072 in ascend910b2" in err


def test_simulate_says_no_value_of_a_param_fits_the_profiles_buffers(tmp_path, run_cli):
    """It said `infeasible: base_n=64 outside its domain (empty)`."""
    tiny = _profile(tmp_path / "p", file="tiny.yaml")
    tiny.write_text(tiny.read_text().replace("l0c_bytes: {value: 131072", "l0c_bytes: {value: 512"))
    text = (ROOT / "studies" / "matmul.yaml").read_text()
    spec = tmp_path / "mm.yaml"
    spec.write_text(re.sub(r"(?m)^hardware: .*$", "hardware: p/tiny.yaml", text, count=1))
    code, out, _ = run_cli("simulate", str(spec), "--shape", "m=64,n=64,k=64")
    assert code == 0 and out.startswith("infeasible: base_n: no value fits the profile's buffers (its domain is "
                                        "empty: low 16, high ")
    assert "hw.l0c_bytes=512" in out and "(empty)" not in out


def test_every_command_names_an_edited_copy_by_its_label(half_run, tmp_path, run_cli):
    """micro said `hw: ascend910b2`, calibrate --json and space --json the plain name (space's
    content_hash being the spec's), and simulate named no profile at all."""
    profile = half_run.parent / "p" / "half.yaml"
    spec = half_run.parent / "s" / "ws.yaml"
    label, h = _label(profile), load_profile(str(profile)).content_hash()
    code, out, _ = run_cli("micro", "mmad", "m=16,k=16,n=16", "--hw", str(profile), "--json")
    assert code == 0 and json.loads(out)["hw"] == label
    code, out, _ = run_cli("micro", "mmad", "m=16,k=16,n=16", "--hw", str(profile))
    assert code == 0 and f"hw: {label}\n" in out
    csv = tmp_path / "m.csv"
    csv.write_text("chip,op,dtype,m,k,n,elems,repeat,cycles,series\n910b1,vadd,fp16_fp16_fp16,,,,128,1,6.0,vector\n")
    code, out, _ = run_cli("calibrate", "--hw", str(profile), "--measurements", str(csv), "--json")
    assert code == 0 and json.loads(out)["hw"] == label
    code, out, _ = run_cli("calibrate", "--hw", str(profile), "--measurements", str(csv), "-o",
                           str(tmp_path / "f.yaml"), "--json")
    assert code == 0 and json.loads(out)["hw"] == label
    code, out, _ = run_cli("space", str(spec), "--json")
    res = json.loads(out)
    assert code == 0 and (res["hardware"], res["hardware_hash"], res["hardware_path"]) == (label, h, str(profile))
    assert res["content_hash"] != h  # still the spec's
    code, out, _ = run_cli("simulate", str(spec), "--shape", "n=4096")
    assert code == 0 and out.startswith(f"weighted_sum vector fp16 {{'n': 4096}} on {label}: "), out
    code, out, _ = run_cli("simulate", str(spec), "--shape", "n=4096", "--json")
    assert code == 0 and (json.loads(out)["hw"], json.loads(out)["hw_hash"]) == (label, h)
    code, out, _ = run_cli("simulate", str(spec), "--shape", "n=4096", "--set", "tile_len=3")
    assert code == 0 and out.startswith("infeasible: ") and out.rstrip().endswith(f"(on {label})"), out
    trace = tmp_path / "t.json"
    code, out, _ = run_cli("simulate", str(spec), "--shape", "n=4096", "--trace", str(trace))
    assert code == 0 and json.loads(trace.read_text())["otherData"]["hw"] == label
    code, out, _ = run_cli("micro", "mmad", "m=16,k=16,n=16", "--json")
    assert json.loads(out)["hw"] == "ascend910b2"  # the shipped profile: its plain name
