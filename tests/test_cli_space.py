"""``autotile space``, run in-process through autotile.cli.run."""

from __future__ import annotations

import json
import time

from tests.conftest import DATA, ROOT

MATMUL = str(ROOT / "studies" / "matmul.yaml")


def test_matmul_json_sizes_and_time(run_cli):
    start = time.perf_counter()
    code, out, err = run_cli("space", MATMUL, "--json")
    elapsed = time.perf_counter() - start
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
    assert elapsed < 5.0


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
    assert (code, err) == (2, f"autotile: error: {missing}: file not found\n")
