"""autotile micro: single operations through the engine."""

import json

import pytest

from autotile.cli import run
from autotile.errors import InputError
from autotile.sim.micro import micro


def _json(capsys, argv):
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_mmad_back_to_back_steady_state(hw):
    r = micro("mmad", {"m": 32, "k": 16, "n": 1024, "repeat": 16}, "fp16", hw)
    # 128 fractals at one per cycle plus the issue cost; the latency is hidden
    assert r.cycles_per_op == pytest.approx(128 + hw.cube.issue_cycles, rel=1e-6)
    assert r.cycles == pytest.approx(16 * r.cycles_per_op + hw.cube.latency_cycles, rel=1e-6)


def test_mmad_isolated_includes_latency(hw):
    r = micro("mmad", {"m": 16, "k": 16, "n": 16}, "fp16", hw)
    assert r.cycles == r.cycles_per_op
    assert r.cycles == pytest.approx(hw.cube.issue_cycles + 1 + hw.cube.latency_cycles)


def test_copy_reports_bandwidth(capsys):
    out = _json(capsys, ["micro", "copy", "path=gm_ub,bytes=65536,repeat=8", "--json"])
    assert out["op"] == "copy" and out["pipe"] == "mte2"
    assert out["bytes_per_cycle"] == pytest.approx(65536 / out["cycles_per_op"], rel=1e-3)
    assert 90 < out["pct_of_plateau"] <= 100
    assert out["gb_per_s"] == pytest.approx(out["bytes_per_cycle"] * 1.8, rel=1e-3)


def test_vector_cli_with_signature(capsys):
    out = _json(capsys, ["micro", "vector", "op=vmla,elems=1920,repeat=15", "--dtype", "fp16_fp16_fp32", "--json"])
    assert out["signature"] == "fp16_fp16_fp32" and out["params"]["repeat"] == 15
    assert out["cycles"] == pytest.approx(75.0, rel=0.02)


def test_vector_splits_at_max_repeat(hw):
    r = micro("vector", {"op": "vadd", "repeat": 300}, "fp16_fp16_fp16", hw)
    assert r.extra["instructions"] == 2
    assert r.extra["lanes_per_repeat"] == 128


def test_repeat_derived_from_elems(hw):
    r = micro("vector", {"op": "vadd", "elems": 1000}, "fp32_fp32_fp32", hw)
    assert r.params["repeat"] == 16  # 64 fp32 lanes per 256 B repeat


@pytest.mark.parametrize("argv", [
    ["micro", "conv", "m=1"],
    ["micro", "mmad", "m=16,k=16"],
    ["micro", "mmad", "m=16,k=16,n=0"],
    ["micro", "mmad", "m=16,k=16,n=16,x=1"],
    ["micro", "copy", "path=gm_xx,bytes=4"],
    ["micro", "copy", "path=gm_ub,bytes=-4"],
    ["micro", "vector", "op=vnope,elems=128"],
    ["micro", "vector", "op=vadd,elems=128", "--dtype", "fp64"],
    ["micro", "copy", "path=gm_ub,bytes=16384", "--dtype", "xx"],
    ["micro", "vector", "op=vadd,elems=2048,repeat=5"],
])
def test_bad_arguments_exit_2_one_line(capsys, argv):
    assert run(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("autotile: error:") and "\n" not in err


def test_api_raises_input_error(hw):
    with pytest.raises(InputError):
        micro("vector", {"op": "vadd", "repeat": 0}, "fp16", hw)


def test_consistent_elems_and_repeat_are_accepted(hw):
    r = micro("vector", {"op": "vadd", "elems": 2000, "repeat": 16}, "fp16", hw)
    assert r.params == {"op": "vadd", "elems": 2000, "repeat": 16}


def test_a_signature_fallback_is_said_in_text_output(capsys):
    assert run(["micro", "vector", "op=vadd,elems=2048", "--dtype", "fp16_fp32_fp16"]) == 0
    out = capsys.readouterr().out
    assert "no vadd cost for fp16_fp32_fp16: costed as fp16_fp16_fp16" in out
    assert run(["micro", "vector", "op=vadd,elems=2048", "--dtype", "fp16_fp16_fp16"]) == 0
    assert "note" not in capsys.readouterr().out
