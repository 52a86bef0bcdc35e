"""Small command-line consistency rules: dtypes as units, one --shape, plain numbers, suggestions
from valid names only, and a quiet progress log when stderr is not a terminal."""

from __future__ import annotations

import io
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
WS = str(ROOT / "studies" / "weighted_sum.yaml")


@pytest.fixture
def fp16_spec(tmp_path):
    import re

    text = re.sub(r"(?m)^dtypes:.*$", "dtypes: [fp16]", (ROOT / "studies" / "weighted_sum.yaml").read_text(), count=1)
    path = tmp_path / "ws16.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("command", [["simulate", "--shape", "n=4096"], ["space", "--shape", "n=4096"]])
def test_a_dtype_the_spec_does_not_list_is_refused_like_a_unit(run_cli, fp16_spec, command):
    code, out, err = run_cli(command[0], fp16_spec, *command[1:], "--dtype", "fp32")
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert "dtype: 'fp32' is not a dtype of this spec, expected one of fp16" in err
    code, out, err = run_cli(command[0], fp16_spec, *command[1:], "--dtype", "fp16")
    assert code == 0, err


@pytest.mark.parametrize("command", ["simulate", "space"])
def test_a_repeated_shape_is_refused(run_cli, command):
    code, out, err = run_cli(command, WS, "--shape", "n=4096", "--shape", "n=8192")
    assert (code, out) == (2, "") and err.count("\n") == 1 and "--shape" in err and "given twice" in err, err


def test_repeated_sets_merge(run_cli):
    """``--set tile_len=16 --set cores=2`` ran tile_len's default: the last --set silently won."""
    import json

    code, out, err = run_cli("simulate", WS, "--shape", "n=4096", "--set", "tile_len=16", "--set", "cores=2",
                             "--set", "tile_len=16", "--json")
    assert code == 0, err
    params = json.loads(out)["params"]
    assert (params["tile_len"], params["cores"]) == (16, 2)


@pytest.mark.parametrize("args, message", [
    (["simulate", WS, "--shape", "n=4096", "--set", "tile_len=16", "--set", "tile_len=32"],
     "--set: tile_len given twice (16 and 32)"),
    (["simulate", WS, "--shape", "n=4096", "--set", "tile_len=16,cores=2,tile_len=32"],
     "--set: tile_len given twice (16 and 32)"),
    (["decide", "elementwise", "--shape", "n=300", "--inputs", "kind=relu", "--inputs", "kind=add"],
     "--inputs: kind given twice ('relu' and 'add')"),
    (["crossover", "elementwise", "--inputs", "kind=relu", "--inputs", "kind=add"],
     "--inputs: kind given twice ('relu' and 'add')")])
def test_a_name_given_twice_with_two_values_is_refused(run_cli, args, message):
    code, out, err = run_cli(*args)
    assert (code, out) == (2, "") and err == f"autotile: error: {message}\n", err


@pytest.mark.parametrize("value", ["1_000", "1_0.5", "\u0661\u0662\u0668"])
def test_set_values_are_plain_decimal_numbers(run_cli, value):
    code, out, err = run_cli("simulate", WS, "--shape", "n=4096", "--set", f"tile_len={value}")
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert "--set tile_len: expected a plain decimal number" in err
    code, _, err = run_cli("simulate", WS, "--shape", "n=4_096")
    assert code == 2 and "--shape n: expected a plain decimal number" in err


def test_text_values_with_underscores_are_still_text():
    from autotile.cli.common import parse_kv

    assert parse_kv("kind=a_b,n=12,x=1.5,y=-3", what="--set") == {"kind": "a_b", "n": 12, "x": 1.5, "y": -3}


def test_calibrate_suggests_only_instructions_the_profile_has(run_cli, tmp_path):
    from autotile.hardware import load_profile

    csv = tmp_path / "m.csv"
    csv.write_text("chip,op,dtype,m,k,n,elems,repeat,cycles,series\n910b1,vector,fp16_fp16_fp16,,,,128,1,8,vector\n")
    code, _, err = run_cli("calibrate", "--measurements", str(csv))
    assert code == 2 and "unknown op 'vector'" in err and "vor" not in err, err
    hw = load_profile("ascend910b2")
    if "did you mean" in err:
        assert err.split("did you mean ")[1].split("?")[0] in ["mmad", *hw.vector]


def _study(name, best):
    return SimpleNamespace(study_name=name, directions=[1], best_trial=SimpleNamespace(values=[best]))


def test_progress_off_a_terminal_is_a_line_per_study_not_a_frame_per_trial(monkeypatch):
    from autotile.tune import driver

    log = io.StringIO()
    bar = driver._Progress(3000, quiet=False, stream=log, studies=3)
    clock = [0.0]
    monkeypatch.setattr(driver.time, "monotonic", lambda: clock[0])
    for name in ("op/hw/fp16/n=1", "op/hw/fp16/n=2"):
        for i in range(1000):
            clock[0] += 0.001
            bar.trial(_study(name, 100 - i * 0.01), None, i + 1)
        bar.study_done(1000, name, SimpleNamespace(unique=1000, trials=1000, infeasible=0))
    lines = log.getvalue().splitlines()
    assert len(lines) == 2 and "\r" not in log.getvalue(), lines
    assert lines[0].startswith("autotile: study 1/3 done: fp16/n=1, 1,000 configs measured, best 90")
    assert lines[1].startswith("autotile: study 2/3 done: fp16/n=2")
    clock[0] += 60  # a long study still says where it is, once per LOG_EVERY_S
    bar.trial(_study("op/hw/fp16/n=3", 5.0), None, 7)
    bar.close()
    assert log.getvalue().splitlines()[-1] == "autotile: study 3/3: fp16/n=3, 7 configs measured so far, best 5"


def test_progress_does_not_count_a_study_that_measured_nothing_as_its_budget():
    """A study whose 16 trials were all infeasible printed "autotile: 10/10 configs: ... done":
    the line counted the budget, not configurations. It now says what the study measured."""
    from autotile.tune import driver

    log = io.StringIO()
    bar = driver._Progress(20, quiet=False, stream=log, studies=2)
    bar.study_done(10, "op/hw/fp32/n=4096/vector", SimpleNamespace(unique=0, trials=16, infeasible=16))
    bar.study_done(10, "op/hw/fp32/n=8192/vector", SimpleNamespace(unique=3, trials=9, infeasible=0))
    assert log.getvalue().splitlines() == [
        "autotile: study 1/2 done: fp32/n=4096/vector, no config measured (16 trials, all infeasible)",
        "autotile: study 2/2 done: fp32/n=8192/vector, 3 configs measured"]
    assert (bar.done_before, bar.total) == (3, 3)  # the bar's total: what the studies could still measure


def test_a_long_simulation_is_announced_on_stderr(capsys, monkeypatch):
    """simulate of resize 1 x 1 to 1e6 x 1e6 ran 3 minutes without a word: a run estimated past
    NOTE_S says so first. resize is estimated by its outputs (110 s of CPU for 1e12), not by the
    product of all its dims, which charged 1000^2 to 30000^2 (0.12 s) six hours."""
    from autotile.cli import run
    from autotile.cli import simulate as sim
    from autotile.models.sim_budget import estimate_seconds

    big = {"n": 1, "c": 1, "h_in": 1, "w_in": 1, "h_out": 10**6, "w_out": 10**6}
    assert estimate_seconds("resize", big, "fp16", "vector", {}, options={}) > sim.NOTE_S
    assert estimate_seconds("resize", {**big, "h_in": 1000, "w_in": 1000, "h_out": 30000, "w_out": 30000},
                            "fp16", "vector", {}, options={}) < 1
    shape = "n=1,c=1,h_in=4,w_in=4,h_out=64,w_out=64"
    assert run(["simulate", "resize", "--shape", shape]) == 0
    assert capsys.readouterr().err == ""
    est = estimate_seconds("resize", {**big, "h_out": 64, "w_out": 64}, "fp16", "vector", {}, options={})
    monkeypatch.setattr(sim, "NOTE_S", est / 2)
    assert run(["simulate", "resize", "--shape", shape]) == 0
    assert capsys.readouterr().err == ("autotile: note: simulating resize at this shape may take about 0 s (a rough "
                                       "estimate from its size); Ctrl-C stops it\n")


@pytest.mark.parametrize("args, flag", [
    (["crossover", "weighted_sum", "--dtype", "fp16", "--dtype", "fp32"], "--dtype"),
    (["tune", WS, "--trials", "3", "--trials", "4"], "--trials"),
    (["decide", "weighted_sum", "--shape", "n=300", "--hw", "ascend910b2", "--hw=ascend910b2"], "--hw")])
def test_a_single_value_option_given_twice_is_refused(run_cli, args, flag):
    """``--dtype fp16 --dtype fp32`` ran fp32: the last of a repeated option silently won."""
    code, out, err = run_cli(*args)
    assert (code, out) == (2, "") and err.count("\n") == 1, err
    assert f"argument {flag}: given twice" in err and "expected one" in err, err


def test_every_single_value_option_refuses_a_repeat():
    """Each command's value-taking options are ``Once`` (registered as the parsers' ``store``), so
    one added later cannot fall back to argparse's last-one-wins."""
    import argparse

    from autotile.cli import build_parser
    from autotile.cli.common import Merged, Once

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    checked = 0
    for name, parser in sub.choices.items():
        for action in parser._actions:
            if not action.option_strings or action.nargs == 0 or isinstance(action, Merged):
                continue  # flags, --help, and the lists that merge their repeats
            assert isinstance(action, Once), (name, action.option_strings)
            checked += 1
    assert checked > 40
