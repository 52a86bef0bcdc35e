"""The replay backend: Kernel Tuner caches and CSVs bound to specs, tuning and datasets."""

from __future__ import annotations

import gzip
import itertools
import json
from pathlib import Path

import pytest

from autotile.cli import run as cli
from autotile.errors import InputError
from autotile.space import load_spec
from autotile.tune import importkt, ktcache, replay
from autotile.tune.evaluate import make_evaluator

TUNE = {
    "block_size_x": [16, 32, 64, 128],  # powers of two -> pow2
    "tile": [1, 2, 3, 4],  # progression -> int low/high
    "unroll": [0.5, 1.0, 2.0],  # floats (1.0 normalized to 1) -> categorical
    "ws": [1, 3, 4],  # irregular ints -> categorical
    "variant": ["plain", "vec"],  # text -> categorical
}


def kt_doc() -> dict:
    """A Kernel Tuner cache of 276 configurations: 24 absent, some failed, the rest timed."""
    keys = list(TUNE)
    cache = {}
    for n, cfg in enumerate(itertools.product(*TUNE.values())):
        p = dict(zip(keys, cfg))
        if p["block_size_x"] == 128 and p["ws"] == 4 and p["variant"] == "vec":
            continue  # a restriction: never measured
        if p["block_size_x"] * p["tile"] > 256:
            t = "CompilationFailedConfig"
        elif n % 37 == 5:
            t = "RuntimeFailedConfig"
        else:
            t = (1.0 + abs(p["block_size_x"] - 64) / 64 + abs(p["tile"] - 3) / 4 + p["unroll"] / 10
                 + p["ws"] / 20 + (0.05 if p["variant"] == "plain" else 0.0))
        cache[",".join(str(v) for v in cfg)] = {**p, "time": t, "times": [t], "GFLOP/s": 3.5}
    return {"device_name": "TestGPU", "kernel_name": "stencil", "problem_size": [1024, 512],
            "tune_params_keys": keys, "tune_params": TUNE, "objective": "time", "cache": cache}


def best_valid(doc) -> tuple[dict, float]:
    entries = [e for e in ktcache.entries(doc) if e.time_ms is not None]
    e = min(entries, key=lambda e: e.time_ms)
    return {k: importkt.norm(v) for k, v in e.params.items()}, e.time_ms


@pytest.fixture(params=["json", "json.gz"])
def cache_file(tmp_path, request):
    data = json.dumps(kt_doc()).encode()
    path = tmp_path / f"stencil.{request.param}"
    path.write_bytes(gzip.compress(data) if request.param.endswith("gz") else data)
    return path


@pytest.fixture
def kt_spec(tmp_path):
    cache = tmp_path / "data" / "stencil.json"
    cache.parent.mkdir()
    cache.write_text(json.dumps(kt_doc()))
    assert cli(["import-kt", str(cache), "-o", str(tmp_path / "stencil.yaml")]) == 0
    return load_spec(tmp_path / "stencil.yaml")


def test_param_kinds_from_value_lists():
    assert importkt.param_def([16, 32, 64]) == {"type": "int", "low": 16, "high": 64, "pow2": True}
    assert importkt.param_def([1, 2, 3, 4]) == {"type": "int", "low": 1, "high": 4}
    assert importkt.param_def([8.0, 16.0, 24.0]) == {"type": "int", "low": 8, "high": 24, "step": 8}
    assert importkt.param_def([1, 4, 16]) == {"type": "categorical", "choices": [1, 4, 16]}
    assert importkt.param_def([0.5, 1.0]) == {"type": "categorical", "choices": [0.5, 1]}
    assert importkt.param_def([7]) == {"type": "fixed", "value": 7}
    assert importkt.param_def([True, False]) == {"type": "bool"}
    assert importkt.param_def(["a", 1]) == {"type": "categorical", "choices": ["a", "1"]}


def test_import_writes_a_loadable_replay_spec(cache_file, tmp_path, capsys):
    out = tmp_path / "specs" / "stencil.yaml"
    assert cli(["import-kt", str(cache_file), "-o", str(out)]) == 0
    spec = load_spec(out)
    assert spec.op.name == "replay" and spec.op.dims == ("x", "y")
    assert spec.shapes == ({"x": 1024, "y": 512},)
    assert spec.backend == "replay" and spec.measurements.resolve() == cache_file.resolve()
    kinds = {p.name: (p.kind, getattr(p, "pow2", False)) for p in spec.params}
    assert kinds == {"block_size_x": ("int", True), "tile": ("int", False), "unroll": ("categorical", False),
                     "ws": ("categorical", False), "variant": ("categorical", False)}
    assert spec.objectives == ("time_us",)
    assert "tune it with" in capsys.readouterr().out


def test_replay_scores_measured_failed_and_absent(cache_file, tmp_path):
    importkt.import_cache(cache_file, tmp_path / "s.yaml")
    spec = load_spec(tmp_path / "s.yaml")
    ev = make_evaluator(spec.space(spec.shapes[0]), spec.objectives)
    ok = ev.score({"block_size_x": 64, "tile": 3, "unroll": 1, "ws": 1, "variant": "vec"})
    assert ok.feasible and ok.values["time_us"] == pytest.approx(1e3 * (1 + 0.1 + 0.05))
    assert ok.values["GFLOP/s"] == 3.5 and ok.values["cycles"] > 0
    failed = ev.score({"block_size_x": 128, "tile": 3, "unroll": 1, "ws": 1, "variant": "vec"})
    assert not failed.feasible and "CompilationFailedConfig" in failed.reason
    absent = ev.score({"block_size_x": 128, "tile": 1, "unroll": 0.5, "ws": 4, "variant": "vec"})
    assert not absent.feasible and absent.reason.startswith("not measured")
    again = ev.score({"block_size_x": 64, "tile": 3, "unroll": 1.0, "ws": 1, "variant": "vec"})
    assert again.cached and again.values == ok.values


def test_tune_on_the_imported_spec(kt_spec, tmp_path, capsys):
    out = tmp_path / "out"
    code = cli(["tune", kt_spec.file, "--trials", "30", "--out", str(out), "--quiet", "--sampler", "random"])
    assert code == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    (r,) = summary["results"]
    assert r["verified"] is False and r["verification"] == {"skipped": "replay backend: no kernel to execute"}
    assert r["baseline_params"] is None and r["unique_configs"] == 30
    params, ms = best_valid(kt_doc())
    assert r["time_us"] >= ms * 1e3
    assert (out / "table.json").exists()
    assert "not verified (replay)" in capsys.readouterr().out


def test_rows_are_the_valid_measurements(kt_spec):
    doc = kt_doc()
    valid = [e for e in ktcache.entries(doc) if e.time_ms is not None]
    rows = list(replay.rows(kt_spec))
    assert len(rows) == len(valid)
    assert all(r.failure is None and r.time_us > 0 for r in rows)
    with_failed = list(replay.rows(kt_spec, include_failed=True))
    assert len(with_failed) == len(doc["cache"])
    params, ms = best_valid(doc)
    assert replay.optimum(kt_spec.space(kt_spec.shapes[0]), "time_us")[:2] == (params, pytest.approx(ms * 1e3))


def test_parameter_mismatch_names_file_and_parameter(kt_spec, tmp_path, capsys):
    text = Path(kt_spec.file).read_text().replace("block_size_x:", "block_size:")
    bad = tmp_path / "bad.yaml"
    bad.write_text(text)
    spec = load_spec(bad)
    with pytest.raises(InputError) as exc:
        make_evaluator(spec.space(spec.shapes[0]), spec.objectives)
    msg = str(exc.value)
    assert "stencil.json" in msg and "'block_size'" in msg and "did you mean block_size_x?" in msg
    assert cli(["tune", str(bad), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_unterminated_cache_and_old_failure_marker(tmp_path):
    doc = kt_doc()
    first = next(iter(doc["cache"]))
    doc["cache"][first]["time"] = 1e20
    text = json.dumps(doc, indent=1)
    assert text.endswith("}\n}")
    path = tmp_path / "partial.json"
    path.write_text(text[: -len("}\n}")] + ",\n")  # as Kernel Tuner leaves an interrupted run
    entries = ktcache.entries(ktcache.read_cache(path))
    assert len(entries) == len(doc["cache"])
    assert entries[0].time_ms is None and "1e20" in entries[0].failure


def test_times_of_0_are_failures_and_cycles_of_0_errors(tmp_path):
    """A table's time_us and cycles are above 0: a cached time of 0 is no measurement, and a
    cycles metric of 0 or less is bad input naming the entry."""
    doc = kt_doc()
    first, second = list(doc["cache"])[:2]
    doc["cache"][first]["time"] = 0
    entries = ktcache.entries(doc, "c.json")
    assert entries[0].time_ms is None and entries[0].failure == "invalid time 0"
    doc["cache"][second]["cycles"] = -5
    with pytest.raises(InputError) as exc:
        ktcache.entries(doc, "c.json")
    assert str(exc.value) == f"c.json: cache.{second}.cycles: metric 'cycles' is -5: expected a positive number"


def test_bad_cache_files_are_input_errors(tmp_path):
    path = tmp_path / "x.json"
    path.write_text('{"cache": {}}')
    with pytest.raises(InputError, match="missing key 'tune_params_keys'"):
        ktcache.read_cache(path)
    path.write_text("{not json")
    with pytest.raises(InputError, match="invalid JSON"):
        ktcache.read_cache(path)
    gz = tmp_path / "x.json.gz"
    gz.write_bytes(b"not gzip")
    assert cli(["import-kt", str(gz), "-o", str(tmp_path / "s.yaml")]) == 2


def test_generic_op_needs_the_replay_backend(tmp_path):
    spec = tmp_path / "s.yaml"
    spec.write_text("op: replay\nshapes: [{problem: 1}]\nparams: {a: {type: int, low: 1, high: 4}}\n")
    with pytest.raises(InputError, match="needs backend: replay"):
        load_spec(spec)


def test_replay_report_has_no_utilization_placeholders(kt_spec, tmp_path, capsys):
    """Recorded measurements have no % of peak or bound: the report says so instead of printing
    "Best utilization: - of peak (-)", "Utilization bands: 1 -." and a bound of "None"."""
    from autotile.report.render import write_report

    out = tmp_path / "out"
    assert cli(["tune", kt_spec.file, "--trials", "10", "--out", str(out), "--quiet"]) == 0, capsys.readouterr().err
    summary = json.loads((out / "summary.json").read_text())
    assert summary["backend"] == "replay"
    for _ in range(2):  # as tuned, then as an older summary without "backend"
        md = (out / "report.md").read_text()
        assert "Best utilization" not in md and "Utilization bands" not in md and "None" not in md
        assert "Utilization: not applicable (recorded measurements)." in md
        summary.pop("backend", None)
        (out / "summary.json").write_text(json.dumps(summary))
        write_report(out)
