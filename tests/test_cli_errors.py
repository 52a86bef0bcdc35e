"""Bad command-line input is one line on stderr with exit code 2, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotile.cli import run as cli
from tests.conftest import CSV

ROOT = Path(__file__).resolve().parents[1]


def _fails(capsys, argv, needle):
    assert cli(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("autotile: error:") and "\n" not in err, err
    assert needle in err, err
    return err


def test_simulate_on_a_replay_spec(tmp_path, capsys):
    cache = tmp_path / "kt.json"
    cache.write_text(json.dumps({"problem_size": [64], "tune_params_keys": ["a"], "tune_params": {"a": [1, 2]},
                                 "cache": {"1": {"a": 1, "time": 1.0, "times": [1.0]}}}))
    spec = tmp_path / "s.yaml"
    assert cli(["import-kt", str(cache), "-o", str(spec)]) == 0
    capsys.readouterr()
    err = _fails(capsys, ["simulate", str(spec), "--shape", "x=64"], "has no kernel to simulate")
    assert f"{spec}: op:" in err


@pytest.mark.parametrize("value", ["nan", "inf", "-inf", "1e999"])
def test_simulate_set_non_finite(capsys, value):
    _fails(capsys, ["simulate", "studies/matmul_small.yaml", "--shape", "m=64,n=64,k=64",
                    "--set", f"base_m={value}"], "--set base_m: expected a finite number")


@pytest.mark.parametrize("argv, needle", [
    (["micro", "mmad", "m=99999999999999999999999,k=16,n=16"], "m=99999999999999999999999: expected a positive"),
    (["micro", "vector", "op=vadd,elems=99999999999999999999999"], "elems="),
    (["micro", "copy", "path=gm_ub,bytes=4294967296"], "bytes="),
    (["micro", "mmad", "m=16,k=16,n=16,repeat=99999999"], "repeat=99999999: expected a positive integer up to"),
])
def test_micro_huge_values(capsys, argv, needle):
    _fails(capsys, argv, needle)


@pytest.mark.parametrize("data, line", [(b"\xff\xfe bin", 1), (b"chip,op\n\xff\n", 2)])
def test_calibrate_non_utf8(tmp_path, capsys, data, line):
    path = tmp_path / "m.csv"
    path.write_bytes(data)
    _fails(capsys, ["calibrate", "--measurements", str(path)], f"{path}:{line}: not UTF-8 text")


@pytest.mark.parametrize("argv", [
    ["simulate", "studies/elementwise.yaml", "--shape", "n={v}"],
    ["space", "studies/elementwise.yaml", "--shape", "n={v}"],
    ["decide", "elementwise", "--shape", "n={v}"],
])
@pytest.mark.parametrize("value, needle", [
    ("99999999999999999999", "--shape n: expected at most 2147483647, got 99999999999999999999"),
    ("2147483648", "--shape n: expected at most 2147483647"),
    ("-3", "--shape n: expected a positive integer, got -3"),
])
def test_shape_has_the_spec_bounds(capsys, argv, value, needle):
    _fails(capsys, [a.format(v=value) for a in argv], needle)


def test_names_on_the_command_line_read_as_in_a_spec():
    from autotile.cli.common import parse_kv
    from autotile.errors import InputError

    with pytest.raises(InputError, match="--set: 'ｍ' is not a valid name"):
        parse_kv("ｍ=1", what="--set")
    assert parse_kv("m_1=1,größe=2", what="--shape") == {"m_1": 1, "größe": 2}  # a replay spec's dim


def test_parse_shape_accepts_the_largest_dimension():
    from autotile.cli.common import parse_shape

    assert parse_shape("m=2147483647,n=1") == {"m": 2**31 - 1, "n": 1}


@pytest.mark.parametrize("assign, needle", [
    ("base_m=abc", "--set base_m: expected an integer, got 'abc'"),
    ("base_m=", "--set base_m: expected an integer, got ''"),
    ("base_m=1.5", "--set base_m: expected an integer, got 1.5"),
    ("base_m=true", "--set base_m: expected an integer, got True"),
    ("iterate_order=foo", "--set iterate_order: expected one of m_first, n_first, got 'foo'"),
    ("iterate_order=1", "--set iterate_order: expected one of m_first, n_first, got 1"),
])
def test_simulate_set_value_of_the_wrong_kind(capsys, assign, needle):
    _fails(capsys, ["simulate", "studies/matmul_small.yaml", "--shape", "m=64,n=64,k=64", "--set", assign], needle)


@pytest.mark.parametrize("assign, feasible", [("base_m=-16", False), ("base_m=17", False), ("base_m=16", True),
                                              ("base_m=16.0", True), ("iterate_order=n_first", True)])
def test_simulate_set_integers_outside_the_domain_are_infeasible_answers(capsys, assign, feasible):
    assert cli(["simulate", "studies/matmul_small.yaml", "--shape", "m=64,n=64,k=64", "--set", assign, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["feasible"] == feasible
    if not feasible:
        assert "base_m=" in out["reason"] and "outside its domain" in out["reason"]


@pytest.mark.parametrize("argv, message", [
    (["simulate", "studies/matmul_small.yaml", "--shape", "m=64,n=64,k=64", "--trace", ""],
     "--trace: expected a file name, got an empty one"),
    (["bench-search", "studies/matmul_small.yaml", "-o", ""], "-o: expected a file name, got an empty one"),
    (["bench-search", "studies/matmul_small.yaml", "-o", "  "], "-o: expected a file name, got an empty one"),
    (["export", "nowhere", "-o", ""], "-o: expected a file name, got an empty one"),
    (["import-kt", "nowhere.json", "-o", ""], "-o: expected a file name, got an empty one"),
    (["calibrate", "--measurements", "nowhere.csv", "-o", ""], "-o: expected a file name, got an empty one"),
    (["train", "-o", ""], "-o: expected a folder name, got an empty one"),
    (["tune", "studies/matmul_small.yaml", "--quiet", "--out", ""], "--out: expected a folder name, got an empty one"),
    (["tune", "studies/matmul_small.yaml", "--quiet", "--storage", ""],
     "--storage: expected a storage URL, got an empty one"),
    (["report", "nowhere", "--storage", ""], "--storage: expected a storage URL, got an empty one"),
    (["decide", "weighted_sum", "--shape", "n=1024", "--models", ""],
     "--models: expected a folder name, got an empty one"),
])
def test_an_empty_path_flag_is_an_error(capsys, argv, message):
    """-o "" / --trace "" wrote nothing with exit 0 (as if not given), while export -o "" was an error."""
    assert cli(argv) == 2
    assert capsys.readouterr().err == f"autotile: error: {message}\n"


@pytest.mark.parametrize("assign, needle", [
    ("base_m=1e300", "--set base_m: expected an integer of at most 2**62 in magnitude, got 1e+300"),
    ("base_m=4.7e18", "--set base_m: expected an integer of at most 2**62 in magnitude, got 4.7e+18"),
    ("base_m=-4611686018427387905", "at most 2**62 in magnitude, got -4611686018427387905"),
    ("base_m=" + "9" * 300, "at most 2**62 in magnitude, got an integer of 300 digits"),
])
def test_simulate_set_integers_beyond_2_62_are_refused(capsys, assign, needle):
    err = _fails(capsys, ["simulate", "studies/matmul_small.yaml", "--shape", "m=64,n=64,k=64", "--set", assign],
                 needle)
    assert len(err) < 200


def test_resize_nearest_with_align_corners_is_a_located_spec_error(tmp_path, capsys):
    """PyTorch refuses align_corners with mode nearest (not an interpolating mode); autotile
    accepted the spec and ignored it. Refused at the YAML value, exit 2; false stays accepted."""
    text = (open("studies/resize.yaml").read()
            .replace("inputs: {mode: bilinear, layout: NCHW, align_corners: false}",
                     "inputs: {mode: nearest, layout: NCHW,\n         align_corners: true}"))
    spec = tmp_path / "resize.yaml"
    spec.write_text(text)
    err = _fails(capsys, ["space", str(spec)], "inputs.align_corners: expected false with mode nearest")
    assert f"{spec}:13:25:" in err
    spec.write_text(text.replace("align_corners: true", "align_corners: false"))
    assert cli(["space", str(spec)]) == 0


@pytest.mark.parametrize("argv", [["micro", "mmad", "m=16,k=16,n=16", "--hw="], ["crossover", "weighted_sum", "--hw="],
                                  ["calibrate", "--hw=", "--measurements", str(CSV)]])
def test_an_empty_hw_is_refused_not_the_default(capsys, argv):
    """``--hw ''`` was taken as the default profile (``name or DEFAULT``)."""
    _fails(capsys, argv, "expected a hardware profile name")


def test_a_shape_whose_rois_count_mode_cannot_hold_is_refused_before_any_is_made(capsys, monkeypatch):
    """2**31-1 ROIs made make_rois ask for 206 GB: a MemoryError traceback (under ulimit) or the OOM
    killer. The limit is lowered here so the refusal is tested without a real huge allocation."""
    from autotile.kernels import roi_align
    from autotile.kernels.roi_align_ub import ROI_BYTES

    monkeypatch.setattr(roi_align, "MAX_ROI_BYTES", 1000 * ROI_BYTES)
    shape = "n=1,c=16,h=50,w=50,rois={},pooled_h=7,pooled_w=7"
    assert cli(["simulate", "roi_align", "--shape", shape.format(1000), "--json"]) == 0
    capsys.readouterr()

    def made(*a, **k):
        raise AssertionError("ROIs generated for a shape over the limit")

    monkeypatch.setattr(roi_align, "make_rois", made)
    _fails(capsys, ["simulate", "roi_align", "--shape", shape.format(1001)],
           "shape.rois: shape n=1,c=16,h=50,w=50,rois=1001,pooled_h=7,pooled_w=7 is too large to simulate: count "
           "mode generates every ROI, 96,096 bytes for 1,001 (96 each), over its limit of 96,000 bytes (at most 1,000 ROIs)")


def test_a_spec_shape_of_too_many_rois_is_located_and_simulate_announces_no_wait(capsys, tmp_path):
    """tune gave the ROI limit's refusal with no file, line or column, and space called the shape
    feasible; simulate first said the run "may take about 7 minutes", then refused it at once."""
    from autotile.kernels.roi_align_ub import MAX_ROI_BYTES, ROI_BYTES

    top = MAX_ROI_BYTES // ROI_BYTES
    spec = (ROOT / "studies" / "roi_align.yaml").read_text()
    start = spec.index("shapes:")
    end = spec.index("\n", spec.index("\n", start) + 1)
    bad = tmp_path / "rb.yaml"
    bad.write_text(spec[:start] + f"shapes:\n  - {{n: 1, c: 8, h: 64, w: 64, rois: {top + 1}, pooled_h: 7, pooled_w: 7}}"
                   + spec[end:])
    for cmd in (["tune", str(bad), "--out", str(tmp_path / "out")], ["space", str(bad)]):
        err = _fails(capsys, cmd, f"shapes[0].rois: shape n=1,c=8,h=64,w=64,rois={top + 1},")
        assert err.startswith(f"autotile: error: {bad}:") and f"(at most {top:,} ROIs)" in err
    assert not (tmp_path / "out").exists()
    shape = f"n=1,c=8,h=64,w=64,rois={top + 1},pooled_h=7,pooled_w=7"
    err = _fails(capsys, ["simulate", "roi_align", "--shape", shape], "shape.rois: shape " + shape)
    assert "note" not in err


def test_out_of_memory_is_one_line(capsys, monkeypatch):
    """A MemoryError anywhere in a command (simulate, tune, verification) ends in one line, exit 1."""
    from autotile.kernels import resize

    def oom(*a, **k):
        raise MemoryError("Unable to allocate 16.0 GiB for an array with shape (2147483647,) and data type float64")

    monkeypatch.setattr(resize, "simulate", oom)
    assert cli(["simulate", "resize", "--shape", "n=1,c=1,h_in=4,w_in=4,h_out=8,w_out=8"]) == 1
    err = capsys.readouterr().err.strip()
    assert err == ("autotile: error: out of memory: Unable to allocate 16.0 GiB for an array with shape (2147483647,) "
                   "and data type float64 (a smaller shape, or a machine with more memory, may run)")
