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
    assert capsys.readouterr().err == f"autotile: error: {path}: invalid JSON: nesting too deep\n"
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
