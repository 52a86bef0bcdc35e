"""Study reports: a small real tune run, synthetic summaries for the optional sections, escaping."""

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from autotile.cli import run as cli
from autotile.report import data as data_mod
from autotile.report import markdown
from autotile.report.render import write_report
from tests.conftest import md_table

ROOT = Path(__file__).resolve().parents[1]
FAILED = "could not be rendered"


def _small_spec(tmp: Path, src: str, shapes: str, dtypes: str = "[fp16]") -> Path:
    text = (ROOT / "studies" / src).read_text()
    text = re.sub(r"(?ms)^shapes:.*?(?=^\w)", f"shapes: {shapes}\n", text, count=1)
    text = re.sub(r"(?m)^dtypes:.*$", f"dtypes: {dtypes}", text, count=1)
    path = tmp / src
    path.write_text(text)
    return path


@pytest.fixture(scope="module")
def matmul_run(tmp_path_factory):
    """`autotile tune` on one matmul shape with a small budget: writes the report itself."""
    tmp = tmp_path_factory.mktemp("mm")
    spec = _small_spec(tmp, "matmul.yaml", "[{m: 256, k: 256, n: 512}]")
    out = tmp / "out"
    assert cli(["tune", str(spec), "--trials", "12", "--quiet", "--out", str(out)]) == 0
    return out


def test_tune_writes_report(matmul_run):
    html = (matmul_run / "report.html").read_text()
    md = (matmul_run / "report.md").read_text()
    for title in ("Best configurations", "Unit choice", "Optimization history", "Parameter importance",
                  "Roofline", "Pipe utilization and traces", "Verification", "Reproduce"):
        assert f"<h2>{title}</h2>" in html
        assert f"## {title}" in md
    assert FAILED not in html
    assert "matmul on ascend910b2" in html and "seed 0" in html and "budget 12" in html
    assert html.count("<svg") >= 4 and "<script" not in html.lower()
    for png in re.findall(r"\]\((report_files/[^)]+\.png)\)", md):
        assert (matmul_run / png).read_bytes()[:4] == b"\x89PNG"
    traces = list((matmul_run / "traces").glob("*.json"))
    assert len(traces) == 1 and json.loads(traces[0].read_text())["traceEvents"]
    assert f"traces/{traces[0].name}" in html


def test_report_command_rerenders_and_reports_time(matmul_run, capsys):
    (matmul_run / "report.html").unlink()
    assert cli(["report", str(matmul_run), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert Path(out["html"]).exists() and out["seconds"] > 0  # how long it took is bench's business


def test_report_without_storage_degrades(matmul_run, tmp_path):
    (tmp_path / "summary.json").write_text((matmul_run / "summary.json").read_text())
    (tmp_path / "summary.json").write_text(
        json.dumps(json.loads((matmul_run / "summary.json").read_text()) | {"storage": str(tmp_path / "gone")}))
    write_report(tmp_path)
    html = (tmp_path / "report.html").read_text()
    assert "study storage was not found" in html and FAILED not in html
    assert not (tmp_path / "studies.journal").exists()  # nothing created


def test_bad_dir_is_input_error(tmp_path, capsys):
    assert cli(["report", str(tmp_path)]) == 2
    assert "no summary.json" in capsys.readouterr().err


@pytest.mark.parametrize("edit,field", [
    (lambda s: s["results"][0].update(shape=None), "results[0].shape"),
    (lambda s: s["results"][0].update(cycles="n/a"), "results[0].cycles"),
    (lambda s: s["results"][0].update(unit="npu"), "results[0].unit"),
    (lambda s: s["results"][0].update(shape={"m": "x"}), "results[0].shape"),
    (lambda s: s.update(results=[5]), "results[0]"),
    (lambda s: s.update(op="conv9"), "op"),
    (lambda s: s.pop("op"), "op"),
    (lambda s: s.update(objectives=5), "objectives"),
    (lambda s: s.update(hw=None), None),  # a missing profile is allowed: the report says so
])
def test_summary_fields_of_the_wrong_type_are_input_errors(matmul_run, tmp_path, capsys, edit, field):
    s = json.loads((matmul_run / "summary.json").read_text())
    edit(s)
    (tmp_path / "summary.json").write_text(json.dumps(s))
    code = cli(["report", str(tmp_path)])
    err = capsys.readouterr().err
    if field is None:
        assert code == 0
    else:
        assert code == 2 and f": {field}: expected" in err and err.count("\n") == 1


def test_unreadable_summary_is_input_error(tmp_path, capsys):
    (tmp_path / "summary.json").write_bytes(b'\xff\xfe{"results": []}')
    assert cli(["report", str(tmp_path)]) == 2 and "not UTF-8" in capsys.readouterr().err
    (tmp_path / "summary.json").unlink()
    (tmp_path / "summary.json").mkdir()
    assert cli(["report", str(tmp_path)]) == 2 and "cannot read" in capsys.readouterr().err
    (tmp_path / "summary.json").rmdir()
    (tmp_path / "summary.json").write_text("[" * 100_000 + "]" * 100_000)  # was a RecursionError traceback
    assert cli(["report", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"autotile: error: {tmp_path / 'summary.json'}: not valid JSON (nesting too deep)\n"


def test_a_storage_the_user_names_must_open(matmul_run, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text((matmul_run / "summary.json").read_text())
    assert cli(["report", str(run), "--storage", "foo://x"]) == 2 and "--storage" in capsys.readouterr().err
    assert cli(["report", str(run), "--storage", f"sqlite:///{tmp_path / 'none.db'}"]) == 2
    assert "no such SQLite file" in capsys.readouterr().err and not (tmp_path / "none.db").exists()
    assert not (run / "report.html").exists()


def _synthetic(matmul_run, tmp_path) -> Path:
    """A two-objective summary with an exhaustive optimum and hostile text, no storage."""
    s = json.loads((matmul_run / "summary.json").read_text())
    r = s["results"][0]
    s["objectives"] = ["cycles", "l1_bytes"]
    s["spec"] = "<script>alert(1)</script>.yaml"
    s["storage"] = str(tmp_path / "none.journal")
    r["optimum_cycles"] = min(r["history"]) * 0.97
    r["pareto"] = [{"params": r["params"], "values": {"cycles": r["cycles"], "l1_bytes": 4096.0}, "trial": 3},
                   {"params": {"base_m": "<b>x</b>"}, "values": {"cycles": r["cycles"] * 1.5, "l1_bytes": 1024.0},
                    "trial": 7}]
    second = copy.deepcopy(r) | {"verified": False, "verification": None}
    second["shape"] = {"m": 512, "k": 256, "n": 512}
    s["results"].append(second)
    (tmp_path / "summary.json").write_text(json.dumps(s))
    return tmp_path


def test_optional_sections_and_escaping(matmul_run, tmp_path):
    write_report(_synthetic(matmul_run, tmp_path))
    html = (tmp_path / "report.html").read_text()
    md = (tmp_path / "report.md").read_text()
    assert "<h2>Pareto front</h2>" in html and "optimum of the space" in html and "gap to optimum" in html
    assert "<script>" not in html and "&lt;script&gt;" in html and "&lt;b&gt;" in html
    prose = re.sub(r"(?ms)^```.*?^```", "", md)  # code blocks show text literally
    assert "<script>" not in prose and "\\<script\\>" in prose
    assert "NOT verified" in html and FAILED not in html


def test_best_trial_is_the_optuna_trial_number_everywhere(matmul_run):
    """The history table, summary.json and table.json name the best trial by its Optuna number."""
    import optuna

    from autotile.tune.storage import make_storage

    r = json.loads((matmul_run / "summary.json").read_text())["results"][0]
    study = optuna.load_study(study_name=r["study"], storage=make_storage(None, matmul_run))
    complete = [t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert r["history_trials"] == [t.number for t in complete]
    best = min(complete, key=lambda t: (t.values[0], t.number))
    assert r["verified"] and not r["rejected"] and r["trial"] == best.number
    assert json.loads((matmul_run / "table.json").read_text())["entries"][0]["trial"] == best.number
    row = md_table((matmul_run / "report.md").read_text(), "best at trial no.")[0]
    assert row["best at trial no."] == str(best.number)
    assert "Trial numbers are Optuna's" in (matmul_run / "report.md").read_text()


def test_history_table_maps_completed_trials_to_their_numbers(matmul_run, tmp_path):
    """Pruned trials leave gaps in the numbers; a summary without them shows no number at all."""
    s = json.loads((matmul_run / "summary.json").read_text())
    s["storage"] = str(tmp_path / "none.journal")
    r = s["results"][0]
    r.update(history=[5.0, 3.0, 4.0, 2.0, 2.5, 1.99], history_trials=[0, 2, 3, 5, 8, 9])
    (tmp_path / "summary.json").write_text(json.dumps(s))
    write_report(tmp_path)
    row = md_table((tmp_path / "report.md").read_text(), "best at trial no.")[0]
    assert row["best at trial no."] == "9" and row["within 5% at trial no."] == "5"
    del r["history_trials"]
    (tmp_path / "summary.json").write_text(json.dumps(s))
    write_report(tmp_path)
    row = md_table((tmp_path / "report.md").read_text(), "best at trial no.")[0]
    assert row["best at trial no."] == "-" and row["within 5% at trial no."] == "-"
    assert FAILED not in (tmp_path / "report.html").read_text()


def test_markdown_escape():
    assert markdown.esc("base_m a|b <i>") == "base_m a\\|b \\<i\\>"
    assert data_mod.band(90.5) == "excellent" and data_mod.band(90.0) == "good"
    assert data_mod.band(70.0) == "acceptable" and data_mod.band(69.9) == "room left"


@pytest.mark.parametrize("pct,band", [(95, "excellent"), (85, "good"), (75, "acceptable"), (30, "room left")])
def test_bands(pct, band):
    assert data_mod.band(pct) == band


def test_multi_unit_crossover(tmp_path):
    spec = _small_spec(tmp_path, "weighted_sum.yaml", "[{grid: {n: [256, 4096]}}]")
    out = tmp_path / "out"
    assert cli(["tune", str(spec), "--trials", "5", "--quiet", "--out", str(out)]) == 0
    html = (out / "report.html").read_text()
    assert "<h2>Cycles against size per unit</h2>" in html and "scalar cycles" in html
    assert "what decides" in html and "grows more slowly" in html
    assert FAILED not in html


def test_crossover_grid_stops_at_its_size_cap(tmp_path, monkeypatch):
    """Past CROSSOVER_MAX_N the simulated lines stop (their grid search grows with n) and the
    section says so; the tuned shapes beyond it still appear."""
    from autotile.models import crossover as cx
    from autotile.report import perf

    spec = _small_spec(tmp_path, "weighted_sum.yaml", "[{grid: {n: [256, 4096]}}]")
    out = tmp_path / "out"
    assert cli(["tune", str(spec), "--trials", "3", "--quiet", "--out", str(out)]) == 0
    seen = []
    real = cx.best
    monkeypatch.setattr(perf, "CROSSOVER_MAX_N", 1024)
    monkeypatch.setattr(cx, "best", lambda op, unit, n, *a: seen.append(n) or real(op, unit, n, *a))
    write_report(out)
    html = (out / "report.html").read_text()
    assert "The lines stop at n = 1,024" in html and FAILED not in html
    assert seen and max(seen) <= 1024


def test_report_of_a_run_where_nothing_was_feasible(tmp_path):
    """Several units, none feasible for any shape: every section renders, none fails."""
    spec = _small_spec(tmp_path, "weighted_sum.yaml", "[{n: 256}]")
    spec.write_text(spec.read_text().replace(
        "constraints:\n", "constraints:\n  - {expr: \"tile_len > shape.n\", message: \"never\"}\n", 1))
    out = tmp_path / "out"
    assert cli(["tune", str(spec), "--trials", "3", "--quiet", "--out", str(out)]) == 0
    html = (out / "report.html").read_text()
    assert "<h2>Unit choice</h2>" in html and "no feasible configuration" in html
    assert FAILED not in html


# -- headless Chromium: the page renders and makes no network request ------------------------------

class _Refs(HTMLParser):
    def __init__(self):
        super().__init__()
        self.refs, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.refs += [v for k, v in attrs if k in ("src", "href", "xlink:href", "srcset", "action", "data") and v]


def external_refs(html: str) -> list[str]:
    """Every reference in the page that would leave the file: URLs, protocol-relative, @import."""
    p = _Refs()
    p.feed(html)
    refs = p.refs + re.findall(r"url\(\s*['\"]?([^)'\"]+)", html) + re.findall(r"@import\s+['\"]?([^'\";]+)", html)
    return [r for r in refs if re.match(r"^\s*(?:[a-z][a-z0-9+.-]*:|//)", r, re.I) and not r.startswith("data:")]


def test_html_has_no_external_references(matmul_run):
    html = (matmul_run / "report.html").read_text()
    assert external_refs(html) == []
    assert external_refs('<img src="https://x.org/a.png"><a href="//cdn/x">') == ["https://x.org/a.png", "//cdn/x"]


def _chromium():
    import shutil

    for name in ("chromium", "chromium-browser", "google-chrome"):
        if shutil.which(name):
            return shutil.which(name)
    pytest.skip("headless Chromium not installed (apt-get install chromium); CI installs it")


def _page_requests(netlog: Path) -> list[str]:
    """URLs the page itself requested (Chromium's own background requests have no origin)."""
    doc = json.loads(netlog.read_text())
    start = doc["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    reqs = [e.get("params") or {} for e in doc["events"] if e["type"] == start]
    return [p["url"] for p in reqs if "url" in p and p.get("initiator") != "not an origin"
            and not p["url"].startswith(("file:", "data:"))]


def _shoot(browser, page: Path, tmp: Path, tag: str):
    import subprocess

    shot, netlog = tmp / f"{tag}.png", tmp / f"{tag}.netlog.json"
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           f"--user-data-dir={tmp / (tag + '-profile')}", "--proxy-server=127.0.0.1:9",
           f"--log-net-log={netlog}", "--window-size=1200,2400", f"--screenshot={shot}", page.as_uri()]
    subprocess.run(cmd, capture_output=True, timeout=120, check=False)
    return shot, netlog


def test_chromium_renders_report_offline(matmul_run, tmp_path):
    import matplotlib.image as mpimg

    browser = _chromium()
    shot, netlog = _shoot(browser, matmul_run / "report.html", tmp_path, "report")
    assert shot.exists(), "Chromium wrote no screenshot"
    px = mpimg.imread(shot)[..., :3]
    assert px.std() > 0.05  # text, tables and plots, not a blank page
    assert (px.reshape(-1, 3).std(axis=1) > 0.1).mean() > 0.001  # some coloured plot pixels
    assert _page_requests(netlog) == []
    # the detector sees a request when a page makes one
    ctl = tmp_path / "ctl.html"
    ctl.write_text('<p>x</p><img src="http://example.invalid/x.png">')
    _, netlog = _shoot(browser, ctl, tmp_path, "ctl")
    assert _page_requests(netlog) == ["http://example.invalid/x.png"]


def test_reproduce_names_the_storage_a_run_kept_its_trials_in(tmp_path):
    """A run on SQLite or PostgreSQL resumes only with its --storage: the printed command had
    none, so running it started a fresh journal in the output folder."""
    from autotile.report import sections
    from autotile.report.data import ReportData

    base = {"op": "matmul", "spec": "studies/matmul.yaml", "budget": 10, "seed": 0, "sampler": "tpe", "results": []}

    def command(storage):
        data = ReportData(out_dir=tmp_path, summary={**base, "storage": storage}, hw=None)
        return sections.reproduce(data).blocks[-1].text.splitlines()[0]

    assert "--storage" not in command(str(tmp_path / "studies.journal"))
    assert command("sqlite:////data/runs/mm.db").endswith(" --storage sqlite:////data/runs/mm.db")
    assert command("postgresql://tuner:***@db/autotile").endswith(" --storage 'postgresql://tuner:***@db/autotile'")


def test_roofline_says_which_bytes_it_counts(matmul_run):
    """256 x 256 x 512 fits L2 with its output: the output stays there during the kernel, so its
    must-move bytes (and intensity) are A and B read once; the text and the row say so."""
    md = (matmul_run / "report.md").read_text()
    sec = md.split("## Roofline\n", 1)[1].split("\n## ", 1)[0]
    assert "the output written once" not in sec and "stays in L2 until the kernel ends" in sec
    row = md_table(md, "FLOP/byte")[0]
    flops, reads = 2 * 256 * 256 * 512, (256 * 256 + 256 * 512) * 2
    assert float(row["FLOP/byte"].replace(",", "")) == pytest.approx(flops / reads, abs=0.05)
    assert row["output write"] == "not counted: stays in L2 during the kernel"


def test_gap_to_optimum_is_in_the_objectives_unit(run_cli, write_spec, tmp_path):
    """An exhaustive time_us run: the optimum is in us like the history, so the gap is 0%
    (it showed the optimum's cycles against a best in us: -99.9%)."""
    from tinyspecs import SMALL

    out = tmp_path / "out"
    spec = write_spec(SMALL.replace("objective: cycles", "objective: time_us\nsampler: exhaustive"))
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--no-verify")
    assert code == 0, err
    r = json.loads((out / "summary.json").read_text())["results"][0]
    assert r["optimum"] == pytest.approx(min(r["history"])) and r["optimum"] < r["optimum_cycles"]
    row = md_table((out / "report.md").read_text(), "gap to optimum")[0]
    assert row["gap to optimum"] == "0.00%" and row["optimum"] == f"{r['optimum']:,.4g} us"


def test_an_older_summary_has_no_optimum_for_other_objectives(matmul_run, tmp_path):
    """Without ``optimum``, ``optimum_cycles`` stands for a cycles objective only; else "-"."""
    s = json.loads((matmul_run / "summary.json").read_text())
    s["storage"] = str(tmp_path / "none.journal")
    s["objectives"] = ["time_us"]
    s["results"][0].update(optimum_cycles=332.0, history=[0.31, 0.3075])
    (tmp_path / "summary.json").write_text(json.dumps(s))
    write_report(tmp_path)
    row = md_table((tmp_path / "report.md").read_text(), "gap to optimum")[0]
    assert row["optimum"] == "-" and row["gap to optimum"] == "-"
    s["objectives"] = ["cycles"]
    s["results"][0].update(history=[400.0, 340.0])
    (tmp_path / "summary.json").write_text(json.dumps(s))
    write_report(tmp_path)
    row = md_table((tmp_path / "report.md").read_text(), "gap to optimum")[0]
    assert row["optimum"] == "332" and row["gap to optimum"] == "2.41%"
    assert FAILED not in (tmp_path / "report.html").read_text()


def test_unit_choice_says_why_the_other_unit_has_no_cycles(tmp_path):
    """int8 matmul has no vector study (the vector kernel does not compute int8): the row said
    "the only unit with a feasible configuration" as if vector had been tuned and failed."""
    from autotile.report import sections
    from autotile.report.data import ReportData

    def res(dtype, unit, cycles):
        return {"shape": {"m": 64, "n": 256, "k": 128}, "dtype": dtype, "unit": unit, "cycles": cycles,
                "chosen": cycles is not None, "verified": True}

    results = [res("fp16", "cube", 752.0), res("fp16", "vector", None), res("int8", "cube", 654.0)]
    data = ReportData(out_dir=tmp_path, summary={"op": "matmul", "results": results}, hw=None)
    rows = sections.units(data).blocks[1].rows
    assert [row[-1] for row in rows] == ["vector found no feasible configuration", "vector does not compute int8"]


def test_unit_choice_names_a_chip_without_the_units_rate(tmp_path):
    """The 910A's cube has no fp32 rate, so fp32 matmul tunes only the vector: the row said the cube
    "did not run", as if the run had been cut short."""
    from autotile.hardware import load_profile
    from autotile.report import sections
    from autotile.report.data import ReportData

    def res(dtype, unit, cycles):
        return {"shape": {"m": 64, "n": 256, "k": 128}, "dtype": dtype, "unit": unit, "cycles": cycles,
                "chosen": cycles is not None, "verified": True}

    results = [res("fp16", "cube", 752.0), res("fp16", "vector", 4100.0), res("fp32", "vector", 8200.0)]
    data = ReportData(out_dir=tmp_path, summary={"op": "matmul", "results": results},
                      hw=load_profile("ascend910"))
    rows = sections.units(data).blocks[1].rows
    assert rows[-1][-1] == "cube does not compute fp32 on ascend910"
