"""Tables whose entries run on different units (matmul on cube and vector): regions per unit,
lookup, and both header exports."""

from __future__ import annotations

import math
import random
import re
import shutil
import subprocess

import numpy as np
import pytest
from tablekit import (
    C_MAIN,
    UNITS_SPEC,
    ascendc_fill,
    compile_ok,
    default_table,
    inside,
    region_edges,
)

from autotile.cli import run as cli
from autotile.tables.export import region_mismatches
from autotile.tables.export_ascendc import SHAPE_FIELDS, TCUBE
from autotile.tables.lookup import Lookup
from autotile.tables.schema import write_table

needs_gcc = pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("g++")), reason="needs gcc and g++")
FP16 = 0  # matmul's dtype enum: fp16 first


def _vector_below_64(shape, dtype):
    return "vector" if shape["m"] < 64 else "cube"


@pytest.fixture(scope="module")
def mixed():
    """matmul on vector for m=4 and m=16 (n, k as tuned), on cube for m=n=k=64."""
    doc = default_table(UNITS_SPEC, _vector_below_64)
    assert [e["unit"] for e in doc["entries"]] == ["vector", "vector", "cube"]
    return doc, Lookup(doc)


def _queries(doc, count, seed):
    rng = random.Random(seed)
    tuned = [tuple(e["shape"].values()) for e in doc["entries"]]
    out = []
    for i in range(count):
        if i % 10 == 0:
            out.append(rng.choice(tuned))
        elif i % 2:  # near a tuned shape
            out.append(tuple(max(1, int(v * math.exp(rng.gauss(0, 0.7)))) for v in rng.choice(tuned)))
        else:  # anywhere, log-uniform up to 2**12
            out.append(tuple(int(math.exp(rng.uniform(0, 12 * math.log(2)))) for _ in range(3)))
    return out


def test_lookup_serves_vector_entries(mixed):
    doc, look = mixed
    for i, e in enumerate(doc["entries"]):
        got = look.find(dict(e["shape"]))
        assert (got.match, got.entry, got.unit, got.params) == ("exact", i, e["unit"], e["params"])
    got = look.find({"m": 4, "n": 5, "k": 17})  # beside m=4, n=4, k=16
    assert (got.match, got.unit, got.matched_shape) == ("nearest", "vector", {"m": 4, "n": 4, "k": 16})
    assert set(got.params) == {"tile_m", "buffer_num", "cores"}
    assert look.reason(got.shape, got.params, got.dtype, got.unit) is None


def test_vector_regions_imply_the_spec_and_kernel_checks(mixed):
    """What C checks (the region) never admits a shape Python refuses, and is more than one shape."""
    doc, look = mixed
    admitted = [0] * len(doc["entries"])
    for x in _queries(doc, 400, 1) + [x for x, _ in inside(look, random.Random(1), 200)]:
        shape = dict(zip(look.table.dims, x))
        for i, (e, r) in enumerate(zip(look.table.entries, look.regions)):
            if r.contains(x):
                admitted[i] += 1
                assert look.reason(shape, e.params, e.dtype, e.unit) is None, (e.shape, e.unit, shape)
    for e, r in zip(look.table.entries, look.regions):
        assert r.contains(tuple(e.shape.values()))
        if e.unit == "vector":  # UB bounds n and k: the box grows until B no longer fits
            n, k = e.shape["n"], e.shape["k"]
            assert r.hi[1] > n and r.hi[2] > k and r.hi[1] * r.hi[2] * 6 <= look.table.hardware.ub_bytes
    assert min(admitted) > 20, admitted
    assert region_mismatches(doc) == []


@needs_gcc
def test_c_header_agrees_with_python(mixed, tmp_path, capsys):
    doc, look = mixed
    write_table(tmp_path / "table.json", doc)
    assert cli(["lookup", str(tmp_path), "--shape", "m=4,n=5,k=17"]) == 0
    assert "vector" in capsys.readouterr().out
    assert cli(["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "table.h")]) == 0
    assert "warning" not in capsys.readouterr().err
    (tmp_path / "main.c").write_text(C_MAIN)
    compile_ok(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "main.c", "-o", "lookup", "-lm"],
               tmp_path)
    queries = _queries(doc, 500, 2) + [x for x, _ in region_edges(look) + inside(look, random.Random(2), 200)]
    stdin = "".join(f"{m} {n} {k} {FP16}\n" for m, n, k in queries)
    out = subprocess.run([str(tmp_path / "lookup")], input=stdin, capture_output=True, text=True, check=True).stdout
    units = {}
    for (m, n, k), line in zip(queries, out.splitlines(), strict=True):
        py = look.find({"m": m, "n": n, "k": k})
        want = (py.entry, int(py.match == "exact")) if py.match in ("exact", "nearest") else (-1, 0)
        assert tuple(map(int, line.split())) == want, ((m, n, k), py)
        units[(py.match, py.unit)] = units.get((py.match, py.unit), 0) + 1
    print(f"C vs Python on {len(queries)} shapes: {units}, all agree")
    assert units.get(("nearest", "vector"), 0) >= 50 and units.get(("nearest", "cube"), 0) >= 10, units


@needs_gcc
def test_ascendc_fills_vector_entries(mixed, tmp_path):
    doc, look = mixed
    write_table(tmp_path / "table.json", doc)
    assert cli(["export", str(tmp_path), "--format", "ascendc", "-o", str(tmp_path / "tiling.h")]) == 0
    fields = [f for f, _ in TCUBE] + ["unit", "tileM", "bufferNum", "cores"]
    fill = ascendc_fill(tmp_path, "Matmul", 3, fields)
    queries = [(4, 4, 16), (4, 5, 17), (16, 16, 16), (64, 64, 64), (70, 64, 64)]
    out = subprocess.run([str(fill)], input="".join(f"{m} {n} {k} {FP16}\n" for m, n, k in queries),
                         capture_output=True, text=True, check=True).stdout
    for (m, n, k), line in zip(queries, out.splitlines(), strict=True):
        py = look.find({"m": m, "n": n, "k": k})
        _, block_dim, *values = line.split()
        block_dim = int(block_dim)
        got = dict(zip(fields, map(int, values), strict=True))
        assert {f: got[f] for f in ("M", "N", "Ka", "Kb")} == {"M": m, "N": n, "Ka": k, "Kb": k}
        assert got["unit"] == ("cube", "vector").index(py.unit)  # the C header's unit enum
        p = py.params
        if py.unit == "vector":
            assert block_dim == got["usedCoreNum"] == p["cores"]
            assert (got["tileM"], got["bufferNum"], got["cores"]) == (p["tile_m"], p["buffer_num"], p["cores"])
            assert all(got[f] == NA for f, _ in TCUBE if f not in SHAPE_FIELDS), got
        else:
            assert block_dim == got["usedCoreNum"] == (-(-m // p["single_core_m"]) * -(-n // p["single_core_n"])
                                                      * -(-k // p["single_core_k"]))
            assert (got["baseM"], got["singleCoreN"]) == (p["base_m"], p["single_core_n"])
            assert (got["tileM"], got["bufferNum"], got["cores"]) == (NA, NA, NA)


WS_SPEC = UNITS_SPEC.parent / "weighted_sum.yaml"
NA = -(2**31)  # the headers' not-applicable value (INT32_MIN)


@needs_gcc
def test_headers_say_the_unit_and_mark_params_of_other_units(tmp_path):
    """weighted_sum on vector (n=64), scalar (n=512) and cube: the Ascend C tiling data carries the
    unit (the C header's enum) and a param the entry's unit lacks is NA, not a real code like 0."""
    doc = default_table(WS_SPEC, lambda shape, dtype: {64: "vector", 512: "scalar"}.get(shape["n"], "cube"))
    write_table(tmp_path / "table.json", doc)
    assert cli(["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "ws.h")]) == 0
    header = (tmp_path / "ws.h").read_text()
    assert "#define AUTOTILE_WEIGHTED_SUM_NA (-2147483647 - 1)" in header
    (tmp_path / "main.c").write_text('#include "ws.h"\nint main(void) { return AUTOTILE_WEIGHTED_SUM_NA < 0 ? 0 : 1; }\n')
    compile_ok(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-fsyntax-only", "main.c"], tmp_path)
    assert cli(["export", str(tmp_path), "--format", "ascendc", "-o", str(tmp_path / "tiling.h")]) == 0
    fields = ["n", "unit", "tileLen", "bufferNum", "cores", "reduction", "accDtype", "cubeForm"]
    fill = ascendc_fill(tmp_path, "WeightedSum", 1, fields)
    op_units, op_dtypes = ("vector", "cube", "scalar"), ("fp16", "fp32", "bf16")  # the enums' orders
    codes = {"reduction": ("tree", "vmla"), "acc_dtype": ("fp16", "fp32"), "cube_form": ("trace", "naive")}
    stdin = "".join(f"{e['shape']['n']} {op_dtypes.index(e['dtype'])}\n" for e in doc["entries"])
    out = subprocess.run([str(fill)], input=stdin, capture_output=True, text=True, check=True).stdout
    seen = set()
    for e, line in zip(doc["entries"], out.splitlines(), strict=True):
        names, block_dim, *values = line.split()
        assert names.rstrip(",").split(",") == fields
        got = dict(zip(fields, map(int, values), strict=True))
        p = e["params"]
        want = {"n": e["shape"]["n"], "unit": op_units.index(e["unit"]), "tileLen": p["tile_len"],
                "bufferNum": p["buffer_num"], "cores": p["cores"]}
        for name, field in (("reduction", "reduction"), ("acc_dtype", "accDtype"), ("cube_form", "cubeForm")):
            want[field] = codes[name].index(p[name]) if name in p else NA
        assert got == want and int(block_dim) == p["cores"], (e, got)
        seen.add(e["unit"])
    assert seen == {"vector", "cube", "scalar"}


def test_params_outside_int32_are_refused_not_confused_with_na(tmp_path, capsys):
    doc = default_table()
    doc["entries"][0]["params"]["base_m"] = NA  # would read as "not applicable"; outside base_m's domain
    write_table(tmp_path / "table.json", doc)
    assert cli(["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "t.h")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "entries[0].params.base_m: expected a value in its domain" in err
    # a domain may reach past int32 (a constant bound, no UB constraint): such a value cannot go
    # into the header
    text = (UNITS_SPEC.parent / "elementwise.yaml").read_text()
    text = text.replace('high: "max(16, shape.n)"', "high: 8589934592")
    (tmp_path / "spec.yaml").write_text(re.sub(r"constraints:\n(  - .*\n)+", "", text))
    doc = default_table(tmp_path / "spec.yaml")
    doc["entries"][0]["params"]["tile_len"] = 2**32
    write_table(tmp_path / "table.json", doc)
    assert cli(["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "t.h")]) == 2
    err = capsys.readouterr().err.splitlines()  # a warning may come first: the kernel's UB check fails
    assert "error: " in err[-1] and "entries[0].params.tile_len: expected a value that fits int32" in err[-1]
    assert not (tmp_path / "t.h").exists()


@pytest.fixture(scope="module")
def int8_table(tmp_path_factory):
    """matmul on cube and vector with fp16 and int8 (the vector kernel has no int8), int8 on the
    cube; only the fp16 entries kept, so every int8 query reaches the default step."""
    path = tmp_path_factory.mktemp("int8") / "matmul_int8.yaml"
    path.write_text(UNITS_SPEC.read_text().replace("dtypes: [fp16]", "dtypes: [fp16, int8]"))
    doc = default_table(path, lambda shape, dtype: "vector" if dtype == "fp16" else "cube")
    return dict(doc, entries=[e for e in doc["entries"] if e["dtype"] == "fp16"])


@pytest.mark.parametrize("shape", [{"m": 1000, "n": 1000, "k": 1000}, {"m": 4, "n": 4, "k": 16},
                                   {"m": 37, "n": 130, "k": 9}])
def test_int8_default_skips_the_vector_which_has_no_int8(int8_table, shape):
    """The default step built a space for every unit, and the vector's refused int8: lookup exited 2
    ("the matmul kernel on vector computes in fp16, bf16, fp32, not int8")."""
    got = Lookup(int8_table).find(shape, "int8")
    assert (got.match, got.unit) == ("default", "cube")
    assert got.how is None  # one unit computes int8: no choice to explain
    assert not any("vector" in s for s in got.skipped)


def test_run_with_table_runs_int8_on_the_cube(int8_table):
    from autotile.kernels import matmul
    from autotile.tables.run import run_with_table

    shape = {"m": 40, "n": 24, "k": 56}
    a, b = matmul.make_inputs(shape, "int8", seed=0)
    out, m = run_with_table("matmul", (a, b), int8_table, "int8")
    assert (m.match, m.unit) == ("default", "cube")
    np.testing.assert_array_equal(out, a.astype(np.int32) @ b.astype(np.int32))


def test_a_model_answering_the_vector_for_int8_is_passed_over(int8_table):
    look = Lookup(int8_table, model=lambda op, shape, dtype: {"unit": "vector", "params": {
        "tile_m": 4, "buffer_num": 1, "cores": 1}})
    got = look.find({"m": 64, "n": 64, "k": 64}, "int8")
    assert (got.match, got.unit) == ("default", "cube")
    assert "model (vector): vector does not compute int8" in got.skipped
