"""What `autotile report DIR` reads and leaves: the run's recorded spec, traces, storage."""

import json
import re
import shlex
import shutil
from pathlib import Path

import pytest
from tinyspecs import EW

from autotile.cli import run as cli

ROOT = Path(__file__).resolve().parents[1]


def _spec_text(inputs: str = "{data: on_chip}") -> str:
    text = (ROOT / "studies" / "weighted_sum.yaml").read_text()
    text = re.sub(r"(?m)^shapes:.*$", "shapes: [{grid: {n: [512, 4096]}}]", text, count=1)
    text = re.sub(r"(?m)^dtypes:.*$", "dtypes: [fp16, fp32]", text, count=1)
    text = re.sub(r"(?m)^units:.*$", "units: [vector, cube]", text, count=1)
    return re.sub(r"(?m)^inputs:.*$", f"inputs: {inputs}", text, count=1)


@pytest.fixture(scope="module")
def ws_run(tmp_path_factory):
    """A weighted_sum run with its inputs on chip (not the kernel's default framing)."""
    tmp = tmp_path_factory.mktemp("ws")
    spec = tmp / "ws.yaml"
    spec.write_text(_spec_text())
    out = tmp / "out"
    assert cli(["tune", str(spec), "--trials", "4", "--quiet", "--out", str(out)]) == 0
    return out


@pytest.fixture
def run_copy(ws_run, tmp_path):
    """A private copy of the run (with its spec file beside it) that a test may edit."""
    shutil.copy(ws_run.parent / "ws.yaml", tmp_path / "ws.yaml")
    out = tmp_path / "out"
    shutil.copytree(ws_run, out)
    summary = json.loads((out / "summary.json").read_text())
    summary["spec"] = str(tmp_path / "ws.yaml")  # as if the run had been made here
    (out / "summary.json").write_text(json.dumps(summary))
    return out


def _trace_cycles(out: Path) -> dict:
    return {p.stem: json.loads(p.read_text())["otherData"]["cycles"] for p in (out / "traces").glob("*.json")}


def _table_cycles(out: Path) -> dict:
    from autotile.report.data import slug

    return {slug(e): e["cycles"] for e in json.loads((out / "table.json").read_text())["entries"]}


@pytest.mark.parametrize("change", ["edit", "move"])
def test_report_uses_the_spec_the_run_recorded(run_copy, change):
    """An edited or moved spec file changes nothing: the report, its crossover framing and the
    re-simulated traces follow the spec table.json embeds (whose hash summary.json records)."""
    spec = run_copy.parent / "ws.yaml"
    if change == "edit":
        spec.write_text(_spec_text("{data: gm}"))
    else:
        spec.rename(spec.with_suffix(".moved"))
    assert cli(["report", str(run_copy)]) == 0
    md = (run_copy / "report.md").read_text()
    assert "inputs already on chip" in md and "streamed from GM" not in md
    table = _table_cycles(run_copy)
    assert _trace_cycles(run_copy).keys() == table.keys()
    for name, cycles in _trace_cycles(run_copy).items():
        assert cycles == pytest.approx(table[name], rel=1e-9), name


def test_without_the_recorded_spec_nothing_is_simulated_under_a_guessed_framing(run_copy):
    (run_copy / "table.json").unlink()
    assert cli(["report", str(run_copy)]) == 0
    md = (run_copy / "report.md").read_text()
    assert "streamed from GM" not in md and "inputs already on chip" not in md
    assert "data framing of the run is unknown" in md and "not simulated: table.json" in md


def _section(md: str, title: str) -> str:
    return md.split(f"## {title}\n", 1)[1].split("\n## ", 1)[0]


def test_crossover_commands_name_every_tuned_dtype_and_work(ws_run, capsys):
    import shlex

    sec = _section((ws_run / "report.md").read_text(), "Cycles against size per unit")
    code = sec.split("```\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert [c for c in code if c.startswith("autotile crossover")] == code
    assert {shlex.split(c)[shlex.split(c).index("--dtype") + 1] for c in code} == {"fp16", "fp32"}
    for line in code:
        assert cli(shlex.split(line)[1:]) == 0, line
    assert "best cycles per size" in capsys.readouterr().out


def test_matmul_crossover_says_what_it_plots(hw):
    """matmul: no `autotile crossover` (one-size ops only), the x axis is m x n x k, and neither
    caption nor text speaks of simulated lines or crossovers that are not drawn."""
    from autotile.report import perf
    from autotile.report.data import ReportData
    from autotile.report.doc import Code, Para, Plot

    results = [{"shape": {"m": m, "n": 256, "k": 256}, "dtype": "fp16", "unit": u, "cycles": c, "chosen": ch}
               for m, u, c, ch in [(256, "cube", 100.0, True), (256, "vector", 900.0, False),
                                   (1024, "cube", 300.0, True), (1024, "vector", 3000.0, False)]]
    data = ReportData(out_dir=Path("."), summary={"op": "matmul", "hw": hw.name, "results": results}, hw=hw)
    blocks = perf.crossover(data).blocks
    assert not [b for b in blocks if isinstance(b, Code)]
    plot = next(b for b in blocks if isinstance(b, Plot))
    assert "m x n x k" in plot.svg and "size n (elements)" not in plot.svg and "m x n x k" in plot.alt
    text = " ".join(b.text for b in blocks if isinstance(b, Para)) + plot.caption
    assert "Lines" not in text and "dashed" not in text and "simulated" not in text
    assert "no counterpart for matmul" in text


def test_crossover_caption_names_only_what_is_drawn():
    from autotile.report import plots

    tuned = {"cube": ([512, 4096], [10.0, 20.0]), "vector": ([512, 4096], [5.0, 40.0])}
    sim = {u: ([512, 1024, 4096], [1.0, 2.0, 3.0]) for u in tuned}
    assert "dashed" not in plots.crossover([("fp16", sim, tuned, [])], "size n (elements)").caption
    assert "Lines" in plots.crossover([("fp16", sim, tuned, [])], "size n (elements)").caption
    marked = plots.crossover([("fp16", sim, tuned, [(2048, "vector→cube")])], "size n (elements)")
    assert "dashed" in marked.caption and "crossovers marked" in marked.alt


def test_a_narrowed_rerun_leaves_no_trace_of_the_dropped_shape(tmp_path):
    """Rendering again removes the traces of shapes the run no longer has (like stale plots);
    files in traces/ that autotile does not name that way are left alone."""
    spec = tmp_path / "ws.yaml"
    spec.write_text(_spec_text().replace("[512, 4096]", "[512, 5000]").replace("units: [vector, cube]",
                                                                               "units: [vector]"))
    out = tmp_path / "out"
    assert cli(["tune", str(spec), "--trials", "3", "--quiet", "--out", str(out)]) == 0
    assert {p.name for p in (out / "traces").iterdir()} == {"n512_fp16_vector.json", "n5000_fp16_vector.json",
                                                            "n512_fp32_vector.json", "n5000_fp32_vector.json"}
    (out / "traces" / "mine.json").write_text("{}")
    spec.write_text(spec.read_text().replace("[512, 5000]", "[512]"))
    assert cli(["tune", str(spec), "--trials", "3", "--quiet", "--out", str(out)]) == 0
    assert {p.name for p in (out / "traces").iterdir()} == {"n512_fp16_vector.json", "n512_fp32_vector.json",
                                                            "mine.json"}
    md = (out / "report.md").read_text()
    assert "traces/n512_fp16_vector.json" in md and "n5000" not in md


def _tune_line(out: Path) -> str:
    sec = _section((out / "report.md").read_text(), "Reproduce")
    return next(line for line in sec.splitlines() if line.startswith("autotile tune"))


def test_reproduce_keeps_the_runs_no_verify_and_no_warm_start(ws_run, tmp_path):
    """The printed command dropped both: after a --no-verify run it verified, after a
    --no-warm-start run it seeded the studies from tuned shapes (other trials)."""
    assert "--no-verify" not in _tune_line(ws_run) and "--no-warm-start" not in _tune_line(ws_run)
    spec, out = tmp_path / "ew.yaml", tmp_path / "out"
    spec.write_text(EW)
    assert cli(["tune", str(spec), "--trials", "3", "--quiet", "--out", str(out), "--no-verify",
                "--no-warm-start"]) == 0
    args = shlex.split(_tune_line(out))
    assert "--no-verify" in args and "--no-warm-start" in args
    args[args.index("--trials") + 1] = "5"  # the command itself, with a larger budget: new trials
    assert cli(args[1:]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["verify"] is False and summary["warm_start"] is False
    assert [r["verification"] for r in summary["results"]] == [None]


def test_reproduce_names_the_storage_the_report_read(ws_run, run_copy):
    """A copied run folder: the report reads the copy's journal, and so does the command it
    prints (no --storage pointing back at the folder the run was made in)."""
    assert cli(["report", str(run_copy)]) == 0
    md = (run_copy / "report.md").read_text()
    assert f"| study storage | {run_copy / 'studies.journal'} |" in md
    line = _tune_line(run_copy)
    assert "--storage" not in line and str(ws_run) not in line and line.endswith(f"--out {run_copy}")
    # a storage named to `report` is the one to resume from
    assert cli(["report", str(run_copy), "--storage", f"journal:{ws_run / 'studies.journal'}"]) == 0
    assert _tune_line(run_copy).endswith(f"--out {run_copy} --storage journal:{ws_run / 'studies.journal'}")
    # no journal in the copy: the report reads the one the run recorded, and says so in both places
    (run_copy / "studies.journal").unlink()
    assert cli(["report", str(run_copy)]) == 0
    assert f"| study storage | {ws_run / 'studies.journal'} |" in (run_copy / "report.md").read_text()
    assert _tune_line(run_copy).endswith(f" --storage journal:{ws_run / 'studies.journal'}")


def test_report_uses_the_profile_the_run_recorded(tmp_path):
    """A custom profile edited after the run: the report keeps the run's copy (table.json's),
    so its peaks and traces are the run's, with no 'profile has changed' note."""
    prof = tmp_path / "chip.yaml"
    text = (ROOT / "autotile" / "hardware" / "ascend910b2.yaml").read_text()
    prof.write_text(text.replace('name: "ascend910b2"', "name: mychip", 1))
    assert "name: mychip" in prof.read_text()
    spec = tmp_path / "ws.yaml"
    spec.write_text(_spec_text().replace("hardware: ascend910b2", "hardware: chip.yaml"))
    assert "hardware: chip.yaml" in spec.read_text()
    out = tmp_path / "out"
    assert cli(["tune", str(spec), "--trials", "3", "--quiet", "--out", str(out)]) == 0
    before = (out / "report.md").read_text()
    prof.write_text(prof.read_text().replace("clock_ghz: {value: 1.8,", "clock_ghz: {value: 0.9,"))
    assert cli(["report", str(out)]) == 0
    md = (out / "report.md").read_text()
    assert "1.8 GHz" in md and "0.9 GHz" not in md and "has changed since this run" not in md
    assert _section(md, "Best configurations") == _section(before, "Best configurations")


def test_crossover_section_simulates_the_runs_op_options(tmp_path, monkeypatch, capsys):
    """elementwise kind: relu: the simulated lines, the crossover rows and the suggested command
    use relu (the recorded spec's inputs), not the kernel's default add."""
    import shlex

    from autotile.models import crossover as cx
    from autotile.report.render import write_report

    text = (ROOT / "studies" / "elementwise.yaml").read_text()
    text = re.sub(r"(?m)^shapes:.*$", "shapes: [{grid: {n: [256, 4096]}}]", text, count=1)
    text = re.sub(r"(?m)^dtypes:.*$", "dtypes: [fp16]", text, count=1)
    text = re.sub(r"(?m)^inputs:.*$", "inputs: {kind: relu, data: gm}", text, count=1)
    (tmp_path / "ew.yaml").write_text(text)
    out = tmp_path / "out"
    assert cli(["tune", str(tmp_path / "ew.yaml"), "--trials", "3", "--quiet", "--out", str(out)]) == 0
    seen = []
    real = cx.best
    monkeypatch.setattr(cx, "best", lambda *a: seen.append(a[6:]) or real(*a))
    write_report(out)
    assert seen and all(opts == ({"kind": "relu"},) for opts in seen)
    sec = _section((out / "report.md").read_text(), "Cycles against size per unit")
    assert "kind=relu, inputs streamed from GM" in sec
    code = sec.split("```\n", 1)[1].split("```", 1)[0].strip().splitlines()
    assert code and all("--inputs kind=relu" in line for line in code)
    capsys.readouterr()
    assert cli(shlex.split(code[0])[1:] + ["--json"]) == 0
    assert json.loads(capsys.readouterr().out.split("\nbest cycles")[0])["inputs"] == {"kind": "relu"}


def test_a_cut_trace_is_marked_with_the_cycle_it_covers(run_copy, monkeypatch):
    """The report's traces keep their first operations; a cut one says so with the cycle it is
    complete up to (counted by the simulation), in the report and in the file's otherData."""
    from autotile.report import traces as report_traces

    md = (run_copy / "report.md").read_text()
    assert "first operations only" not in md  # these schedules fit
    monkeypatch.setattr(report_traces, "TRACE_OPS", 1)
    assert cli(["report", str(run_copy)]) == 0
    md = (run_copy / "report.md").read_text()
    for p in (run_copy / "traces").glob("*.json"):
        other = json.loads(p.read_text())["otherData"]
        assert other["trace_truncated"] is True and other["events_dropped"] > 0
        until = other["complete_until_cycle"]
        assert 0 < until < other["cycles"]
        assert f"{p.name} (first operations only: complete up to cycle {int(until):,} of" in md


@pytest.mark.parametrize("edit,field", [
    (lambda s: s.update(schema="autotile.summary/2"), "schema: summary schema autotile.summary/2 is newer"),
    (lambda s: s.update(schema="autotile.table/1"), "schema: expected 'autotile.summary/1'"),
    (lambda s: s.pop("schema"), "schema: expected 'autotile.summary/1', got null"),
    (lambda s: s["results"][0].pop("params"), "results[0].params: expected the configuration"),
])
def test_report_checks_the_summary_schema_and_params(run_copy, run_cli, edit, field):
    summary = json.loads((run_copy / "summary.json").read_text())
    edit(summary)
    (run_copy / "summary.json").write_text(json.dumps(summary))
    before = (run_copy / "report.html").read_bytes()
    code, out, err = run_cli("report", str(run_copy))
    assert code == 2 and out == "" and err.count("\n") == 1 and field in err, err
    assert str(run_copy / "summary.json") in err and (run_copy / "report.html").read_bytes() == before


def test_report_checks_its_outputs_before_writing_any(run_copy, run_cli):
    (run_copy / "report.html").unlink()
    (run_copy / "report.html").mkdir()
    before = (run_copy / "report.md").read_bytes()
    code, _, err = run_cli("report", str(run_copy))
    assert code == 1 and err.count("\n") == 1 and "report.html" in err, err
    assert (run_copy / "report.md").read_bytes() == before


@pytest.mark.parametrize("blocker", ["trace", "report_files/units.png"])
def test_report_checks_the_files_of_its_subfolders_before_writing_any(run_copy, run_cli, monkeypatch, blocker):
    """A folder where a trace or plot goes failed the render after other traces were rewritten."""
    from autotile.report import traces

    def boom(*a, **k):
        raise AssertionError("a trace was simulated before the report's outputs were checked")

    name = f"traces/{sorted(_trace_cycles(run_copy))[-1]}.json" if blocker == "trace" else blocker
    (run_copy / name).unlink()
    (run_copy / name).mkdir()
    monkeypatch.setattr(traces, "write_traces", boom)
    code, _, err = run_cli("report", str(run_copy))
    assert code == 1 and err.count("\n") == 1 and f"{name}: cannot write: it is a folder" in err, err


def test_report_never_writes_through_a_link_to_its_inputs(run_copy, run_cli):
    before = (run_copy / "summary.json").read_bytes()
    (run_copy / "report.md").unlink()
    (run_copy / "report.md").symlink_to("summary.json")
    code, _, err = run_cli("report", str(run_copy))
    assert code == 2 and err.count("\n") == 1 and "is the summary.json this report reads" in err, err
    assert (run_copy / "summary.json").read_bytes() == before


@pytest.mark.parametrize("name", ["report_files/history.png", "trace"])
def test_report_never_writes_through_a_link_in_its_subfolders(run_copy, run_cli, name):
    """A plot or trace linked to the table was written through: table.json became a PNG."""
    name = f"traces/{sorted(_trace_cycles(run_copy))[0]}.json" if name == "trace" else name
    before = (run_copy / "table.json").read_bytes()
    (run_copy / name).unlink()
    (run_copy / name).symlink_to(run_copy / "table.json")
    code, _, err = run_cli("report", str(run_copy))
    assert code == 2 and err.count("\n") == 1 and "is the table.json this report reads" in err, err
    assert (run_copy / "table.json").read_bytes() == before


def test_report_prunes_only_the_plots_it_draws(run_copy, run_cli):
    """Every other *.png in report_files/ (the user's own) was deleted by a render."""
    (run_copy / "report_files" / "mine.png").write_bytes(b"keep")
    (run_copy / "report_files" / "pareto.png").write_bytes(b"an earlier render's")  # one objective: no Pareto plot
    assert run_cli("report", str(run_copy))[0] == 0
    assert (run_copy / "report_files" / "mine.png").read_bytes() == b"keep"
    assert not (run_copy / "report_files" / "pareto.png").exists()
    assert (run_copy / "report_files" / "history.png").is_file()


def test_report_traces_name_vector_instructions(ws_run):
    """The report's traces name each vector event by its instruction, as `simulate --trace` does."""
    from autotile.hardware.ops import KERNEL_VECTOR_OPS
    from autotile.sim import engine as E

    v = E.PIPE_NAMES.index("v")
    files = sorted((ws_run / "traces").glob("*_vector.json"))
    assert files
    for f in files:
        names = {e["name"] for e in json.loads(f.read_text())["traceEvents"] if e["ph"] == "X" and e["tid"] == v}
        assert names and names <= set(KERNEL_VECTOR_OPS), (f.name, names)


def test_report_crossovers_are_the_sizes_autotile_crossover_gives(hw):
    """The report's refined crossovers are the command's: they stopped bisecting within a 64th of the
    bracket (weighted_sum fp16 in GM: n ≈ 404 and 15,744 where the command says 401 and 15,617)."""
    from types import SimpleNamespace

    from autotile.models.crossover import crossover
    from autotile.report import perf
    from autotile.report.data import ReportData
    from autotile.report.doc import Table

    results = [{"shape": {"n": n}, "dtype": "fp16", "unit": u, "cycles": 1.0, "chosen": u == "vector"}
               for n in (64, 16384) for u in ("vector", "cube")]
    data = ReportData(out_dir=Path("."), summary={"op": "weighted_sum", "hw": hw.name, "results": results}, hw=hw)
    data.__dict__["recorded"] = (SimpleNamespace(inputs={"data": "gm"}), "")
    table = next(b for b in perf.crossover(data).blocks if isinstance(b, Table))
    said = [(r[2], r[3], r[4]) for r in table.rows if r[1] == "simulated grid"]
    [[a, b]] = crossover("weighted_sum", "fp16", hw, on_chip=False)["windows"]
    assert [(d, at) for d, at, _ in said] == [("vector → cube", f"n = {a:,}"), ("cube → vector", f"n = {b + 1:,}")]
    assert f"n≈{a:,}" in said[0][2] and f"n≈{b + 1:,}" in said[1][2]


def test_a_report_trace_of_many_core_classes_keeps_the_first_and_the_slowest(run_copy, monkeypatch):
    """A kernel whose cores all differ (roi_align: 48 classes) wrote 75 MB a report trace; the
    report keeps the first class and the slowest others, labelled with their own numbers, and says
    how many it shows, in the report and the file's otherData."""
    from autotile.report import traces as report_traces

    summary = json.loads((run_copy / "summary.json").read_text())
    for r in summary["results"]:  # two cores: the combining one and the other, two classes
        if r["shape"] == {"n": 4096} and r["unit"] == "cube":
            r["params"].update(cores=2, tile_len=2048)
    (run_copy / "summary.json").write_text(json.dumps(summary))
    monkeypatch.setattr(report_traces, "TRACE_CLASSES", 1)
    assert cli(["report", str(run_copy)]) == 0
    md = (run_copy / "report.md").read_text()
    cut = 0
    for p in (run_copy / "traces").glob("*.json"):
        doc = json.loads(p.read_text())
        names = [e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "process_name"]
        assert len(names) == 1 and names[0].startswith("core class 0 (")
        if "core_classes_shown" in doc["otherData"]:
            total = int(doc["otherData"]["core_classes_shown"].split(" of ")[1].split(":")[0])
            assert f"{p.name} (1 of {total} core classes: the first and the slowest)" in md
            cut += 1
    assert cut


def test_shown_classes_are_the_first_and_the_slowest(hw):
    from autotile.kernels import roi_align
    from autotile.report.traces import TRACE_CLASSES, shown_classes
    from autotile.sim.trace import chrome_events

    shape = {"n": 2, "c": 256, "h": 64, "w": 64, "rois": 256, "pooled_h": 7, "pooled_w": 7}
    p = roi_align.default_params(shape, "fp16", hw, "vector")
    res, traces = roi_align.simulate(shape, p, "fp16", hw, unit="vector", trace_capacity=10, want_traces=True)
    assert len(res.core_classes) == len(traces) > TRACE_CLASSES
    keep = shown_classes(res.core_classes)
    cycles = [c["cycles"] for c in res.core_classes]
    assert len(keep) == TRACE_CLASSES and keep[0] == 0 and keep == sorted(keep)
    assert min(cycles[i] for i in keep[1:]) >= max(c for i, c in enumerate(cycles[1:], 1) if i not in keep)
    names = [e["args"]["name"] for e in chrome_events([traces[i] for i in keep], hw, keep) if e["name"] == "process_name"]
    assert [int(n.split()[2]) for n in names] == keep
