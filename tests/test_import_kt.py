"""``import-kt`` guards: never overwrite the cache it reads, never leave a spec that cannot load."""

from __future__ import annotations

import json
import os

import pytest

from autotile.cli import run as cli

DOC = {"device_name": "G", "kernel_name": "k", "problem_size": [64, 32],
       "tune_params_keys": ["bx", "t"], "tune_params": {"bx": [16, 32], "t": [1, 2]},
       "objective": "time",
       "cache": {f"{b},{t}": {"bx": b, "t": t, "time": 1.0 + b / 100 + t, "times": [1.0]}
                 for b in (16, 32) for t in (1, 2)}}


@pytest.fixture
def cache(tmp_path):
    path = tmp_path / "kt.json"
    path.write_text(json.dumps(DOC))
    return path


@pytest.mark.parametrize("how", ["same", "symlink", "hardlink"])
def test_output_that_is_the_cache_is_refused(cache, tmp_path, how, capsys):
    before = cache.read_bytes()
    out = cache
    if how == "symlink":
        out = tmp_path / "link.yaml"
        out.symlink_to(cache)
    elif how == "hardlink":
        out = tmp_path / "hard.yaml"
        os.link(cache, out)
    assert cli(["import-kt", str(cache), "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "Kernel Tuner cache being imported" in err and "Traceback" not in err
    assert cache.read_bytes() == before


def test_deeply_nested_cache_is_an_input_error(tmp_path, capsys):
    """json.loads recursed once per level: 100000 nested lists were a RecursionError traceback."""
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    assert cli(["import-kt", str(path), "-o", str(tmp_path / "s.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"autotile: error: {path}: ") and "nested too deeply" in err and err.count("\n") == 1
    assert not (tmp_path / "s.yaml").exists()


def test_other_output_still_written(cache, tmp_path):
    assert cli(["import-kt", str(cache), "-o", str(tmp_path / "s.yaml")]) == 0
    assert (tmp_path / "s.yaml").read_text().startswith("description:")


def _doc_with(name: str, values: list) -> dict:
    return {"problem_size": [8], "tune_params_keys": [name, "a"], "tune_params": {name: values, "a": [1, 2]},
            "cache": {f"{values[0]},1": {name: values[0], "a": 1, "time": 1.0, "times": [1.0]}}}


@pytest.mark.parametrize("name, values, expect", [
    ("block size x", [1, 2], "'block size x' is not a valid name"),
    ("shape", [1, 2], "shadows the shape namespace"),
    ("p", [1, 2**70], "larger than 2**62"),
])
def test_unloadable_spec_is_never_written(tmp_path, capsys, name, values, expect):
    cache = tmp_path / "kt.json"
    cache.write_text(json.dumps(_doc_with(name, values)))
    out = tmp_path / "s.yaml"
    assert cli(["import-kt", str(cache), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"autotile: error: {cache}: tune_params.{name}: ") and expect in err
    assert "\n" not in err and not out.exists()
    out.write_text("old\n")  # an existing output is kept as it was
    assert cli(["import-kt", str(cache), "-o", str(out)]) == 2
    assert out.read_text() == "old\n"


def _good_doc() -> dict:
    return {"tune_params_keys": ["bx", "t"], "tune_params": {"bx": [16, 32], "t": [1, 2]},
            "cache": {f"{b},{t}": {"bx": b, "t": t, "time": 1.0 + b / 100 + t}
                      for b in (16, 32) for t in (1, 2)}}


def _write_spec(tmp_path, cache_name: str) -> str:
    spec = tmp_path / "r.yaml"
    spec.write_text("op: replay\nshapes: [{problem: 1}]\nparams:\n"
                    "  bx: {type: int, low: 16, high: 32, pow2: true}\n"
                    "  t: {type: int, low: 1, high: 2}\n"
                    f"budget: {{trials: 4}}\nobjective: time_us\nbackend: replay\nmeasurements: {cache_name}\n")
    return str(spec)


@pytest.mark.parametrize("text, field, expect", [
    ('{"tune_params_keys": ["bx", "t"], "tune_params": {"bx": [null, [1], {"a": 1}], "t": [1, 2]}, '
     '"cache": {}}', "tune_params.bx", "expected values that are numbers, text or true/false, got null"),
    ('{"tune_params_keys": ["bx", "t"], "tune_params": {"bx": [16, {"a": 1}], "t": [1, 2]}, '
     '"cache": {}}', "tune_params.bx", "got a mapping"),
    ('{"tune_params_keys": ["bx", "t"], "tune_params": {"bx": [16, 32], "t": [1, 2]}, '
     '"cache": {"16,1": {"bx": [16], "t": 1, "time": 1.0}}}', "cache.16,1.bx", "got a list"),
    ('{"tune_params_keys": ["bx", "t"], "tune_params": {"bx": [16, 32], "t": [1, 2]}, '
     '"cache": {"16,1": {"bx": 16, "t": 1, "time": 1.0, "gflops": 1' + "0" * 400 + '}}}',
     "cache.16,1.gflops", "is an integer of 401 digits: expected a finite number"),
    ('{"tune_params_keys": ["bx", "t"], "tune_params": {"bx": [16, 32], "t": [1, 2]}, '
     '"cache": {"16,1": {"bx": 16, "t": 1, "time": 1.0, "gflops": Infinity}}}',
     "cache.16,1.gflops", "is inf: expected a finite number"),
    ('{"tune_params_keys": ["a"], "tune_params": {"a": [1]}, "cache": ' + "[" * 100_000,
     None, "nested too deeply"),
    ('{"tune_params_keys": ["a"], "tune_params": {"a": [1' + "0" * 5000 + ']}, "cache": {}}',
     None, "cannot read the Kernel Tuner cache"),
])
def test_odd_cache_is_a_located_error(tmp_path, capsys, text, field, expect):
    cache = tmp_path / "kt.json"
    cache.write_text(text)
    where = f"{cache}: {field}: " if field else f"{cache}: "
    assert cli(["import-kt", str(cache), "-o", str(tmp_path / "s.yaml")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"autotile: error: {where}") and expect in err, err
    assert "\n" not in err and not (tmp_path / "s.yaml").exists()
    if "tune_params_keys\": [\"bx\"" in text:  # a replay spec on the cache: the same error from tune
        code = cli(["tune", _write_spec(tmp_path, "kt.json"), "--quiet", "--out", str(tmp_path / "o")])
        err = capsys.readouterr().err.strip()
        assert code == 2 and err.startswith(f"autotile: error: {where}") and expect in err, err


def test_huge_time_is_a_failure_and_failed_entries_metrics_are_not_read(tmp_path, capsys):
    doc = _good_doc()
    doc["cache"]["16,1"]["time"] = 10**400  # as the old 1e20 failure marker
    doc["cache"]["16,2"].update(time="RuntimeFailedConfig", gflops=float("inf"))
    cache = tmp_path / "kt.json"
    cache.write_text(json.dumps(doc))
    assert cli(["import-kt", str(cache), "-o", str(tmp_path / "s.yaml")]) == 0
    assert "4 configurations, 2 failed" in capsys.readouterr().out
    from autotile.tune import ktcache
    by_key = {e.key: e for e in ktcache.entries(ktcache.read_cache(cache), str(cache))}
    assert by_key["16,1"].time_ms is None and "1e20" in by_key["16,1"].failure
    assert by_key["16,2"].failure == "RuntimeFailedConfig" and by_key["16,2"].metrics == {}
