"""CSV measurements of a known op over several shapes and dtypes, and the CSV's errors."""

from __future__ import annotations

import json

import pytest

from autotile.cli import run as cli
from autotile.errors import InputError
from autotile.space import load_spec
from autotile.tune import replay
from autotile.tune.evaluate import make_evaluator

SPEC = """\
op: elementwise
dtypes: [fp32, fp16]
units: [vector]
shapes: [{grid: {n: [256, 4096]}}]
params:
  tile_len: {type: int, low: 16, high: "min(shape.n, 1024)", pow2: true}
  buffer_num: {type: int, low: 1, high: 2}
  cores: {type: int, low: 1, high: 4, pow2: true}
constraints:
  - {expr: "tile_len * cores <= shape.n", message: "every core gets a tile"}
objective: cycles
backend: replay
measurements: %s
budget: {trials: 12}
"""


def fake_time_us(n, dtype, tile, buf, cores) -> float:
    return n / 64 / cores + 2000 / tile + (3 if buf == 1 else 0) + (0 if dtype == "fp16" else 1)


def write_csv(tmp_path, *, extra="", skip_fail=False) -> tuple:
    lines = ["n,dtype,tile_len,buffer_num,cores,time_us,cycles,max_abs_error" + extra]
    count = 0
    for n in (256, 4096):
        for dtype in ("fp32", "fp16"):
            for tile in (16, 32, 64, 128, 256, 512, 1024):
                for buf in (1, 2):
                    for cores in (1, 2, 4):
                        if tile > n:
                            continue
                        t = fake_time_us(n, dtype, tile, buf, cores)
                        cell = "failed" if tile == 1024 and not skip_fail else f"{t:.4f}"
                        # floats written as 64.0 must still match the int params
                        lines.append(f"{n},{dtype},{float(tile)},{buf},{cores},{cell},{t * 1800:.1f},0.001"
                                     + ("," + str(count) if extra else ""))
                        count += 1
    path = tmp_path / "m.csv"
    path.write_text("\n".join(lines) + "\n")
    spec = tmp_path / "s.yaml"
    spec.write_text(SPEC % path.name)
    return path, spec


def test_csv_rows_match_spaces_by_shape_and_dtype(tmp_path):
    _, spec_path = write_csv(tmp_path)
    spec = load_spec(spec_path)
    space = spec.space({"n": 4096}, "fp16", "vector")
    ev = make_evaluator(space, ("cycles", "max_abs_error"))
    out = ev.score({"tile_len": 256, "buffer_num": 2, "cores": 4})
    t = fake_time_us(4096, "fp16", 256, 2, 4)
    assert out.feasible and out.values["time_us"] == pytest.approx(t, abs=1e-3)
    assert out.values["cycles"] == pytest.approx(t * 1800, abs=0.1)  # the cycles column wins
    assert out.values["max_abs_error"] == 0.001
    failed = ev.score({"tile_len": 1024, "buffer_num": 2, "cores": 4})
    assert not failed.feasible and failed.reason.startswith("measured as failed: failed")
    infeasible = make_evaluator(spec.space({"n": 256}, "fp32"), ("cycles",)).score(
        {"tile_len": 256, "buffer_num": 1, "cores": 4})
    assert not infeasible.feasible and "every core gets a tile" in infeasible.reason


def test_rows_cover_every_space(tmp_path):
    _, spec_path = write_csv(tmp_path)
    spec = load_spec(spec_path)
    rows = list(replay.rows(spec))
    assert {(r.shape["n"], r.dtype) for r in rows} == {(256, "fp32"), (256, "fp16"), (4096, "fp32"), (4096, "fp16")}
    assert all(r.params["tile_len"] * r.params["cores"] <= r.shape["n"] for r in rows)
    assert all(r.value("max_abs_error") == 0.001 for r in rows)


def test_tune_a_csv_spec_over_shapes(tmp_path):
    _, spec_path = write_csv(tmp_path)
    out = tmp_path / "out"
    assert cli(["tune", str(spec_path), "--out", str(out), "--quiet"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert len(summary["results"]) == 4
    for r in summary["results"]:
        assert r["params"] is not None and r["verified"] is False


def test_missing_column_is_named_with_suggestion(tmp_path):
    path, spec_path = write_csv(tmp_path)
    path.write_text(path.read_text().replace("buffer_num", "buffers", 1))
    with pytest.raises(InputError) as exc:
        make_evaluator(load_spec(spec_path).space({"n": 256}), ("cycles",))
    msg = str(exc.value)
    assert msg.startswith(f"{path}:1: buffer_num:") and "did you mean buffers?" in msg


def test_extra_parameter_column_makes_duplicates_an_error(tmp_path):
    path, spec_path = write_csv(tmp_path)
    text = path.read_text().splitlines()
    # a column the spec does not declare, which splits configurations in two
    text = [text[0] + ",block"] + [row + f",{b}" for row in text[1:] for b in (1, 2)]
    path.write_text("\n".join(text) + "\n")
    with pytest.raises(InputError, match="record the same configuration"):
        make_evaluator(load_spec(spec_path).space({"n": 256}), ("cycles",))


def test_text_in_a_metric_column_is_located(tmp_path):
    path, spec_path = write_csv(tmp_path)
    lines = path.read_text().splitlines()
    lines[1] = lines[1].rsplit(",", 1)[0] + ",oops"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as exc:
        make_evaluator(load_spec(spec_path).space({"n": 256}), ("cycles",))
    assert str(exc.value).startswith(f"{path}:2:8: max_abs_error:")


def test_times_of_0_are_failures_and_cycles_of_0_errors(tmp_path):
    """A table's time_us and cycles are above 0: a recorded time of 0 (or one that rounds to 0
    in microseconds) is no measurement, and a cycles column of 0 is bad input, located."""
    path, spec_path = write_csv(tmp_path)
    lines = path.read_text().splitlines()
    cells = lines[1].split(",")  # n=256 fp32 tile 16 buffer 1 cores 1
    lines[1] = ",".join(cells[:5] + ["0"] + cells[6:])
    path.write_text("\n".join(lines) + "\n")
    ev = make_evaluator(load_spec(spec_path).space({"n": 256}, "fp32"), ("cycles",))
    got = ev.score({"tile_len": 16, "buffer_num": 1, "cores": 1})
    assert not got.feasible and got.reason.startswith("measured as failed: invalid time 0")
    lines[1] = ",".join(cells[:6] + ["-1800"] + cells[7:])
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as exc:
        make_evaluator(load_spec(spec_path).space({"n": 256}), ("cycles",))
    assert str(exc.value) == f"{path}:2:7: cycles: expected a positive number of cycles, got '-1800'"


def test_no_time_column(tmp_path):
    path, spec_path = write_csv(tmp_path)
    path.write_text(path.read_text().replace("time_us", "tme_us", 1))
    assert cli(["tune", str(spec_path), "--out", str(tmp_path / "o"), "--quiet"]) == 2


def test_objective_without_a_column(tmp_path):
    _, spec_path = write_csv(tmp_path)
    spec = load_spec(spec_path)
    with pytest.raises(InputError, match="no column 'max_rel_error'"):
        make_evaluator(spec.space({"n": 256}), ("cycles", "max_rel_error"))


def _capped(tmp_path, limit: str) -> tuple:
    """The CSV with max_abs_error 0.004 on every 4-core row (the fastest), and a spec capping it."""
    path, spec_path = write_csv(tmp_path)
    lines = path.read_text().splitlines()
    lines = lines[:1] + [ln[: -len("0.001")] + "0.004" if ln.split(",")[4] == "4" else ln for ln in lines[1:]]
    path.write_text("\n".join(lines) + "\n")
    spec_path.write_text(spec_path.read_text().replace("objective: cycles\n", f"objective: time_us\n{limit}\n"))
    return path, spec_path


def test_replay_limits_prune_recorded_configurations_over_a_cap(tmp_path, capsys):
    """A replayed configuration over a limit is infeasible with the simulator backend's reason;
    the optimum (replay's and bench-search's), the feasible count and tune's pick respect it."""
    from autotile.tune import benchsearch

    _, spec_path = _capped(tmp_path, "limits: {max_abs_error: 0.002}")
    spec = load_spec(spec_path)
    space = spec.space({"n": 4096}, "fp16", "vector")
    out = make_evaluator(space, ("time_us",)).score({"tile_len": 256, "buffer_num": 2, "cores": 4})
    assert not out.feasible and out.reason == "max_abs_error 0.004 exceeds the limit 0.002"
    ok = make_evaluator(space, ("time_us",)).score({"tile_len": 256, "buffer_num": 2, "cores": 2})
    assert ok.feasible
    allowed = [(t, b, c) for t in (16, 32, 64, 128, 256, 512) for b in (1, 2) for c in (1, 2)]
    best = min(allowed, key=lambda tbc: fake_time_us(4096, "fp16", *tbc))
    params, value, count = replay.optimum(space, "time_us")
    assert params == dict(zip(("tile_len", "buffer_num", "cores"), best)) and count == len(allowed)
    assert value == pytest.approx(fake_time_us(4096, "fp16", *best), abs=1e-3)
    opt = benchsearch.optimum(space, "time_us")
    assert opt.params == params and opt.feasible == len(allowed)
    assert all(r.metrics["max_abs_error"] <= 0.002 for r in replay.rows(spec))
    assert cli(["tune", str(spec_path), "--out", str(tmp_path / "o"), "--quiet", "--json"]) == 0
    results = json.loads(capsys.readouterr().out)["results"]
    assert results and all(r["values"]["max_abs_error"] <= 0.002 and r["params"]["cores"] < 4 for r in results)


def test_replay_limit_on_a_metric_without_a_column_is_a_located_spec_error(tmp_path, capsys):
    """It would cap nothing; the error points at the spec's limit, and tune exits 2 on it."""
    _, spec_path = _capped(tmp_path, "limits: {max_rel_error: 0.002}")
    spec = load_spec(spec_path)
    with pytest.raises(InputError) as exc:
        make_evaluator(spec.space({"n": 256}, "fp16", "vector"), ("time_us",))
    line = spec_path.read_text().splitlines().index("limits: {max_rel_error: 0.002}") + 1
    assert str(exc.value).startswith(f"{spec_path}:{line}:10: limits.max_rel_error:")
    assert "no column 'max_rel_error'" in str(exc.value)
    assert cli(["tune", str(spec_path), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert capsys.readouterr().err.count("\n") == 1



def test_replay_spec_errors_come_before_any_output(tmp_path):
    """A missing objective column or a limit without a column refuses the run before the output
    folder (and its study journal) is made."""
    _, spec_path = write_csv(tmp_path)
    spec_path.write_text(spec_path.read_text().replace("objective: cycles", "objective: max_rel_error"))
    assert cli(["tune", str(spec_path), "--out", str(tmp_path / "o"), "--quiet"]) == 2
    assert not (tmp_path / "o").exists()
    _, spec_path = _capped(tmp_path, "limits: {max_rel_error: 0.002}")
    assert cli(["tune", str(spec_path), "--out", str(tmp_path / "o2"), "--quiet"]) == 2
    assert not (tmp_path / "o2").exists()
