"""``autotile space``, run in-process through autotile.cli.run."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import DATA, ROOT

MATMUL = str(ROOT / "studies" / "matmul.yaml")


def test_matmul_json_sizes(run_cli):
    """Its time (issue #2: under 5 s) is measured by bench/space_time.py, not here."""
    code, out, err = run_cli("space", MATMUL, "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["op"] == "matmul"
    assert 0 < data["feasible_size"] < data["raw_size"]
    first = data["spaces"][0]
    assert first["shape"] == {"m": 1024, "n": 2048, "k": 512}
    assert (first["dtype"], first["unit"]) == ("fp16", "cube")
    for key in ("raw_size", "feasible_size", "method", "top_constraint"):
        assert data[key] == first[key]
    assert data["params"][:3] == ["db_l0a", "db_l0b", "db_l0c"] and "iterate_order" in data["params"]
    assert len(data["spaces"]) == 5
    for space in data["spaces"]:
        assert 0 < space["feasible_size"] < space["raw_size"]
        assert space["feasible_size"] / space["raw_size"] > 0.8  # feasible by construction, mostly
        if space["method"] == "sampled":
            lo, hi = space["ci95"]
            assert lo <= space["feasible_size"] <= hi and space["samples"] > 0


def test_small_spec_text_output(run_cli):
    code, out, err = run_cli("space", str(DATA / "small.yaml"), "--dtype", "fp16", "--unit", "cube")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("matmul on ascend910b2: 7 params (base_m, base_n, base_k,")
    assert lines[1] == ("m=64,n=48,k=32 fp16 cube: raw 576, feasible 236 (41.0%, exact); "
                        "top constraint: split must divide base_n/16 (fails on 240)")
    assert len(lines) == 3  # the two shapes of the spec


def test_shape_override(run_cli):
    code, out, _ = run_cli("space", str(DATA / "small.yaml"), "--shape", "m=16,n=48,k=32",
                           "--dtype", "fp32", "--unit", "vector", "--json")
    data = json.loads(out)
    assert code == 0 and len(data["spaces"]) == 1
    assert data["spaces"][0]["shape"] == {"m": 16, "n": 48, "k": 32}
    assert data["params"] == ["base_m", "base_n", "split", "order", "db", "lanes"]
    assert data["method"] == "exact"


def test_parms_typo_names_the_line_and_suggests(run_cli, write_spec):
    path = write_spec("op: matmul\nshapes:\n  - {m: 64, n: 64, k: 64}\nparams:\n"
                      "  a: {type: bool}\ndescription: typo below\nparms:\n  b: {type: bool}\n")
    code, out, err = run_cli("space", path)
    assert (code, out) == (2, "")
    assert err == f"autotile: error: {path}:7:1: parms: unknown key, did you mean params?\n"


def test_bad_command_line_values(run_cli):
    small = str(DATA / "small.yaml")
    cases = [
        (("--shape", "m=16,n=48"), "autotile: error: --shape: missing dimension 'k', expected m, n, k\n"),
        (("--shape", "m=16,n=48,k=32,q=1"), "autotile: error: --shape: unknown dimension 'q' of matmul, expected m, n, k\n"),
        (("--shape", "m=0,n=48,k=32"), "autotile: error: --shape m: expected a positive integer, got 0\n"),
        (("--shape", "m=16,n=48,k=99999999999999999999"),
         "autotile: error: --shape k: expected at most 2147483647, got 99999999999999999999\n"),
        (("--dtype", "fp64"), "autotile: error: dtype: unknown dtype 'fp64' for matmul, expected one of fp16, bf16, fp32, int8, did you mean fp16?\n"),
        (("--unit", "scalar"), "autotile: error: unit: 'scalar' is not a unit of this spec, expected one of cube, vector\n"),
    ]
    for args, message in cases:
        code, out, err = run_cli("space", small, *args)
        assert (code, out, err) == (2, "", message)


def test_missing_spec_file(run_cli, tmp_path):
    missing = str(tmp_path / "nope.yaml")
    code, _, err = run_cli("space", missing)
    assert (code, err) == (2, f"autotile: error: {missing}: file not found; bundled studies, by name: elementwise, "
                              "global_sum, matmul, matmul_small, resize, roi_align, sigmoid, weighted_sum\n")


_ROI = ("op: roi_align\nshapes: [{n: 1, c: 16, h: 16, w: 16, rois: 8, pooled_h: 2, pooled_w: 2}]\nparams:\n"
        "  tile_rois: {type: int, low: 1, high: \"%s\"}\n  tile_bins: {type: int, low: 1, high: 4}\n"
        "  tile_c: {type: int, low: 1, high: \"shape.c\"}\n  buffer_num: {type: int, low: 1, high: 2}\n"
        "  cores: {type: int, low: 1, high: 4}\n%s")


@pytest.mark.parametrize("command", [("space",), ("space", "--json"),
                                     ("simulate", "--shape", "n=1,c=16,h=16,w=16,rois=8,pooled_h=2,pooled_w=2"),
                                     ("tune", "--trials", "2", "--quiet")])
@pytest.mark.parametrize("high,tail,field,at,reason", [
    ("min(16, shape.rois) / 0", "", "params.tile_rois.high", (4, 40), "division by zero"),
    ("min(16, shape.rois ** 1000)", "", "params.tile_rois.high", (4, 40), "exponent 1000 is larger than 64"),
    ("16", "derived: {per: \"shape.c // (shape.rois - 8)\"}\n", "derived.per", (9, 16), "division by zero"),
    ("16", "derived: {per: \"tile_c if shape.c % (shape.h - 16) else 1\"}\n", "derived.per", (9, 16),
     "division by zero"),
    ("16", "constraints:\n  - {expr: \"tile_c <= shape.c % (shape.h - 16)\", message: m}\n",
     "constraints[0].expr", (10, 12), "division by zero"),
])
def test_an_expression_failing_for_the_whole_space_is_a_located_error(
        run_cli, write_spec, tmp_path, command, high, tail, field, at, reason):
    """An expression that reads no param (shape, dtype, hw, unit only) and cannot be evaluated
    makes the whole space empty: a spec error for that shape, reported as one located line with
    exit 2 by space, simulate and tune alike (space printed an empty space with exit 0)."""
    path = write_spec(_ROI % (high, tail))
    extra = ("--out", str(tmp_path / "out")) if command[0] == "tune" else ()
    code, out, err = run_cli(command[0], path, *command[1:], *extra)
    assert (code, out) == (2, "")
    assert err.startswith(f"autotile: error: {path}:{at[0]}:{at[1]}: {field}: cannot evaluate for n=1,c=16,")
    assert err.rstrip().endswith(reason) and len(err.splitlines()) == 1


def test_an_expression_failing_for_some_configurations_only_leaves_them_infeasible(run_cli, write_spec):
    """A failure that depends on a param's value is that configuration's infeasibility, not an
    error: the space counts the others."""
    path = write_spec(_ROI % ("16", "constraints:\n  - {expr: \"shape.c // (tile_c - 1) > 0\", message: m}\n"))
    code, out, err = run_cli("space", path, "--json")
    assert (code, err) == (0, "") and json.loads(out)["feasible_size"] > 0


def test_a_domain_that_cannot_be_built_for_the_shape_is_a_located_error(run_cli, write_spec):
    """A step that reads no param and is 0 for this shape empties the param's domain everywhere."""
    path = write_spec(_ROI.replace('tile_c: {type: int, low: 1, high: "shape.c"}',
                                   'tile_c: {type: int, low: 1, high: "shape.c", step: "shape.c // 32"}') % ("16", ""))
    code, out, err = run_cli("space", path)
    assert (code, out) == (2, "")
    assert err.startswith(f"autotile: error: {path}:6:54: params.tile_c.step: cannot evaluate for n=1,c=16,")
    assert err.rstrip().endswith("fp32 vector: step 0 is not positive")


@pytest.mark.parametrize("high, message", [
    ("4.7e18", ":4:40: params.tile_rois.high: number 4.7e+18 larger than 2**62"),
    ("1e300", ":4:40: params.tile_rois.high: number 1e+300 larger than 2**62"),
    ("2**61 * 4.0", ":4:40: params.tile_rois.high: number 9.22337e+18 larger than 2**62"),
    ("4700000000000000000", ":4:41: params.tile_rois.high: integer literal larger than 2**62"),
    ("shape.rois * 1e300", ":4:40: params.tile_rois.high: cannot evaluate for n=1,c=16,h=16,w=16,rois=8,"
                           "pooled_h=2,pooled_w=2 fp32 vector: high bound 8e+300 exceeds 2**62"),
])
def test_a_bound_beyond_2_62_is_a_located_error(run_cli, write_spec, high, message):
    """A float bound beyond 2**62 emptied the param's domain silently (space: raw 0, exit 0), while
    the same integer was a load error."""
    path = write_spec(_ROI % (high, ""))
    code, out, err = run_cli("space", path)
    assert (code, out, err) == (2, "", f"autotile: error: {path}{message}\n")


@pytest.mark.parametrize("high, got", [(".inf", "inf"), ("1e400", "inf"), (".nan", "nan"), ("-.inf", "-inf")])
def test_a_non_finite_yaml_number_bound_is_refused_as_such(run_cli, write_spec, high, got):
    """It was read as the name inf: "unknown name 'inf', did you mean min?"."""
    path = write_spec(f"op: global_sum\nshapes: [{{n: 4096}}]\nparams:\n  t: {{type: int, low: 1, high: {high}}}\n")
    code, out, err = run_cli("space", path)
    assert (code, out, err) == (2, "", f"autotile: error: {path}:4:32: params.t.high: expected a finite number, got {got}\n")


@pytest.mark.parametrize("high", ["4.7e18", "4.7e+18", "1e300", "-1.0e+19"])
def test_a_yaml_number_bound_beyond_2_62_is_a_located_error(run_cli, write_spec, high):
    path = write_spec(f"op: global_sum\nshapes: [{{n: 4096}}]\nparams:\n  t: {{type: int, low: 1, high: {high}}}\n")
    code, out, err = run_cli("space", path)
    assert (code, out) == (2, "")
    assert err.startswith(f"autotile: error: {path}:4:32: params.t.high: number ") and "larger than 2**62" in err


def test_an_evaluated_bound_beyond_2_62_leaves_only_that_configuration_infeasible():
    from autotile.space.expr import EvalError, Scope, compile_expr
    from autotile.space.params import IntParam

    s = Scope({}, ("a",))
    p = IntParam("x", compile_expr(1, s), compile_expr("a * 1e18", s))
    assert len(p.domain({"a": 4})) == 4 * 10**18
    with pytest.raises(EvalError, match="high bound 5e.18 exceeds 2..62"):
        p.domain({"a": 5})
    grid = p.grid({"a": np.array([4, 5])}, 2)
    assert grid.count.tolist() == [4 * 10**18, 0]


def test_a_where_over_too_many_candidates_says_how_to_narrow_it(run_cli, write_spec):
    """``where`` tests at most 100,000 values; the error said only that, not what to do."""
    text = ("op: sigmoid\nunits: [vector]\nshapes: [{n: 1048576}]\nparams:\n"
            "  tile_len: {type: int, low: 1, high: shape.n%s, where: \"divides(tile_len, shape.n)\"}\n"
            "  cores: {type: fixed, value: 1}\n  buffer_num: {type: fixed, value: 1}\n")
    path = write_spec(text % "")
    code, out, err = run_cli("space", path)
    assert (code, out) == (2, "")
    assert err == (f"autotile: error: {path}:5:30: params.tile_len: cannot evaluate for n=1048576 fp32 vector: "
                   "1048576 candidates to filter with where (at most 100000): narrow the domain first with "
                   "pow2, multiple_of, step or a tighter high\n")
    code, out, err = run_cli("space", write_spec(text % ", pow2: true"), "--json")
    assert (code, err) == (0, "") and json.loads(out)["raw_size"] == 21


def test_an_empty_space_names_the_param_with_no_value(run_cli, write_spec):
    """raw 0 said nothing of why; simulate's explanation of an empty domain is reused."""
    path = write_spec("op: matmul\nunits: [cube]\nshapes: [{m: 64, n: 64, k: 64}]\nparams:\n"
                      "  a: {type: int, low: 1, high: 4}\n"
                      "  base_n: {type: int, low: 16, high: \"hw.l0c_bytes // 2**20 - a\"}\n")
    why = ("base_n: no value fits the profile's buffers (its domain is empty: low 16, high -1, "
           "with hw.l0c_bytes=131072, a=1)")
    code, out, err = run_cli("space", path)
    assert (code, err) == (0, "") and out.splitlines()[1].endswith(f"raw 0, feasible 0 (0.0%, exact); {why}")
    code, out, err = run_cli("space", path, "--json")
    assert json.loads(out)["spaces"][0]["why_empty"] == why
    code, out, err = run_cli("space", MATMUL, "--json")
    assert "why_empty" not in json.loads(out)["spaces"][0]


def test_no_feasible_sample_is_worded_as_a_bound_not_a_count(run_cli, write_spec):
    """It printed "feasible ~0 (0.0%, sampled, 50000 samples, 95% CI 0..0)" for a space with
    millions of feasible points (~1e-5 of it)."""
    from tests.test_space_enum import SPARSE

    code, out, err = run_cli("space", write_spec(SPARSE.format(high='"shape.n"')), "--json")
    assert (code, err) == (0, "")
    space = json.loads(out)["spaces"][0]
    assert (space["feasible_size"], space["feasible_samples"], space["samples"]) == (0, 0, 50_000)
    bound = space["ci95"][1]
    assert space["ci95"][0] == 0 and bound > 0
    code, out, err = run_cli("space", write_spec(SPARSE.format(high='"shape.n"')))
    line = out.splitlines()[1]
    assert f"none of 50,000 samples feasible (95% CI 0..{bound:,})" in line and "~0" not in line
    assert "(fails on ~" in line  # an estimate too
