"""What a table tells the kernel that reads it: unverified entries (flag, count, warning), an empty
table, the simulator it was tuned with, the hardware it is for, the dims' order, and names of the
integrator's choosing (--prefix, --op-type) that let two tables share a translation unit."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from tablekit import C_MAIN, ascendc_fill, compile_ok, default_table

from autotile.cli import run as cli
from autotile.sim.fingerprint import simulator_fingerprint
from autotile.tables.lookup import Lookup
from autotile.tables.schema import load_table, write_table

needs_gcc = pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("g++")), reason="needs gcc and g++")
C99 = ["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic"]


@pytest.fixture
def unverified(tmp_path):
    """A table whose first two entries are not verified (as `tune --no-verify` leaves them)."""
    doc = default_table()
    for e in doc["entries"][:2]:
        e["verified"] = False
    write_table(tmp_path / "table.json", doc)
    return tmp_path, doc


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("autotile: warning: ")]


@needs_gcc
def test_unverified_entries_are_flagged_counted_and_can_be_skipped(unverified, capsys):
    d, doc = unverified
    e0, e2 = doc["entries"][0], doc["entries"][2]
    capsys.readouterr()
    assert cli(["export", str(d), "--format", "c", "-o", str(d / "table.h")]) == 0
    warned = _warnings(capsys.readouterr().err)
    assert warned == [f"autotile: warning: 2 of {len(doc['entries'])} entries not verified (tuned with --no-verify); "
                      "they carry verified: false (the C entry's verified = 0)"]
    header = (d / "table.h").read_text()
    assert "#define AUTOTILE_MATMUL_NUNVERIFIED 2" in header and "(2 NOT verified)" in header
    # the C entry's field, and the opt-in macro that makes the lookup skip unverified entries
    (d / "main.c").write_text(C_MAIN.replace('printf("%d %d\\n"', 'printf("%d %d %d\\n"').replace(
        "e ? exact : 0);", "e ? exact : 0, e ? (int)e->verified : -1);"))
    query = "".join(f"{e['shape']['m']} {e['shape']['n']} {e['shape']['k']} {('fp16', 'fp32').index(e['dtype'])}\n"
                    for e in (e0, e2))
    # "index exact verified": skipping entry 0, the lookup answers what the table of the verified
    # entries alone answers (a verified neighbour whose region holds the shape, or none)
    kept = [i for i, e in enumerate(doc["entries"]) if e["verified"]]
    alone = Lookup(doc | {"entries": [doc["entries"][i] for i in kept]}).find(dict(e0["shape"]), e0["dtype"])
    skip = f"{kept[alone.entry]} 0 1" if alone.match == "nearest" else "-1 0 -1"
    for flag, want in (([], ["0 1 0", "2 1 1"]), (["-DAUTOTILE_MATMUL_VERIFIED_ONLY"], [skip, "2 1 1"])):
        compile_ok(C99 + flag + ["main.c", "-o", "lookup", "-lm"], d)
        out = subprocess.run([str(d / "lookup")], input=query, capture_output=True, text=True, check=True).stdout
        assert out.splitlines() == want, flag
    # lookup says it, in text and JSON
    shape = ",".join(f"{k}={v}" for k, v in e0["shape"].items())
    assert cli(["lookup", str(d), "--shape", shape, "--dtype", e0["dtype"]]) == 0
    assert ", unit cube, NOT verified\n" in capsys.readouterr().out
    assert cli(["lookup", str(d), "--shape", shape, "--dtype", e0["dtype"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verified"] is False
    shape = ",".join(f"{k}={v}" for k, v in e2["shape"].items())
    assert cli(["lookup", str(d), "--shape", shape, "--dtype", e2["dtype"], "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["verified"] is True


@needs_gcc
@pytest.mark.parametrize("fmt", ["json", "c", "ascendc"])
def test_an_empty_table_exports_with_a_warning(tmp_path, capsys, fmt):
    """Valid (the header compiles, its lookup returns NULL), so exit 0; but never silent."""
    doc = default_table()
    doc["entries"] = []
    write_table(tmp_path / "table.json", doc)
    capsys.readouterr()
    assert cli(["export", str(tmp_path), "--format", fmt, "-o", str(tmp_path / "t.h")]) == 0
    warned = _warnings(capsys.readouterr().err)
    assert len(warned) == 1 and "the table has no entries" in warned[0]


def test_lookup_refuses_a_dtype_the_table_was_not_tuned_for(tmp_path, capsys):
    """matmul computes int8 and bf16, this table's spec has fp16 and fp32: `default` with exit 0 before."""
    write_table(tmp_path / "table.json", default_table())
    capsys.readouterr()
    assert cli(["lookup", str(tmp_path), "--shape", "m=64,n=128,k=256", "--dtype", "int8"]) == 2
    err = capsys.readouterr().err
    assert err == "autotile: error: dtype: expected one of the table's dtypes fp16, fp32, got 'int8'\n"


def test_tables_carry_the_simulator_and_warn_when_it_changed(tmp_path, capsys):
    doc = default_table()
    assert doc["simulator"] == simulator_fingerprint()
    write_table(tmp_path / "table.json", doc)
    capsys.readouterr()
    assert cli(["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "t.h")]) == 0
    assert _warnings(capsys.readouterr().err) == []
    assert f"simulator: {simulator_fingerprint()}" in (tmp_path / "t.h").read_text().split("*/")[0]
    for old, says in (("0123456789abcdef", "was tuned with simulator 0123456789abcdef"),
                      (None, "does not record its simulator")):
        if old is None:
            del doc["simulator"]  # a table from before tables recorded it
        else:
            doc["simulator"] = old
        write_table(tmp_path / "table.json", doc)
        assert load_table(tmp_path).simulator == old
        for args in (["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "t.h")],
                     ["lookup", str(tmp_path), "--shape", "m=64,n=128,k=256"]):
            assert cli(args) == 0
            warned = _warnings(capsys.readouterr().err)
            assert len(warned) == 1 and says in warned[0] and simulator_fingerprint() in warned[0], args
    doc["simulator"] = 5
    write_table(tmp_path / "table.json", doc)
    assert cli(["lookup", str(tmp_path), "--shape", "m=64,n=128,k=256"]) == 2
    assert "simulator: expected a simulator fingerprint or null, got 5" in capsys.readouterr().err


@needs_gcc
def test_two_tables_of_one_op_in_one_translation_unit_with_prefixes(tmp_path, capsys):
    """Two SoCs' tables of one op: with the same names the second is an #error; --prefix tells them
    apart, and each says the hardware it is for."""
    doc = default_table()
    write_table(tmp_path / "table.json", doc)
    for prefix in ("soc_a", "soc_b"):
        assert cli(["export", str(tmp_path), "--format", "c", "--prefix", prefix, "-o", str(tmp_path / f"{prefix}.h")]) == 0
    (tmp_path / "main.c").write_text("""
#include <stdio.h>
#include <string.h>
#include "soc_a.h"
#include "soc_b.h"

int main(void)
{
    const int64_t x[3] = {64, 128, 256};
    const soc_a_matmul_entry *a = soc_a_matmul_lookup(x, SOC_A_MATMUL_FP16, NULL);
    const soc_b_matmul_entry *b = soc_b_matmul_lookup(x, SOC_B_MATMUL_FP16, NULL);
    printf("%d %d %s\\n", a != NULL, b != NULL, strcmp(SOC_A_MATMUL_HARDWARE, "ascend910b2") == 0 ? "910b2" : "?");
    return 0;
}
""")
    compile_ok(C99 + ["main.c", "-o", "main", "-lm"], tmp_path)
    assert subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout == "1 1 910b2\n"
    assert f'#define SOC_A_MATMUL_HARDWARE_HASH "{doc["hardware"]["hash"]}"' in (tmp_path / "soc_a.h").read_text()


@pytest.mark.parametrize("args, says", [
    (["--format", "ascendc", "--op-type", "Matmul-Custom"], "--op-type: expected a C identifier"),
    (["--format", "ascendc", "--op-type", "class"], "--op-type: expected a name that is not a C / C++ keyword"),
    (["--format", "c", "--prefix", "_x"], "--prefix: expected a C identifier"),
    (["--format", "c", "--prefix", "a__b"], "--prefix: expected a C identifier"),
    (["--format", "c", "--op-type", "MatmulCustom"], "--op-type: applies to --format ascendc only, not c"),
    (["--format", "json", "--prefix", "x"], "--prefix: applies to --format c or ascendc only, not json"),
])
def test_bad_names_are_one_line_exit_2(tmp_path, capsys, args, says):
    write_table(tmp_path / "table.json", default_table())
    capsys.readouterr()
    assert cli(["export", str(tmp_path), "-o", str(tmp_path / "t.h"), *args]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err, err
    assert not (tmp_path / "t.h").exists()


@needs_gcc
def test_op_type_names_the_registered_class_and_functions(tmp_path):
    write_table(tmp_path / "table.json", default_table())
    assert cli(["export", str(tmp_path), "--format", "ascendc", "--op-type", "MatmulCustom", "-o",
                str(tmp_path / "tiling.h")]) == 0
    header = (tmp_path / "tiling.h").read_text()
    assert "REGISTER_TILING_DATA_CLASS(MatmulCustom, MatmulCustomTilingData)" in header
    assert "Matmul," not in header and "MatmulTiling" not in header
    fill = ascendc_fill(tmp_path, "MatmulCustom", 3, ["M", "N", "Ka"])
    out = subprocess.run([str(fill)], input="64 128 256 0\n", capture_output=True, text=True, check=True).stdout
    assert out.split()[-3:] == ["64", "128", "256"]


@needs_gcc
def test_ascendc_header_in_two_translation_units_has_no_external_symbols(tmp_path):
    """TilingFromTable was ``inline`` with external linkage, calling the static lookup over a static
    array: one definition per translation unit, each using its own statics (an ODR violation). Now
    it is static inline like the rest: no object file exports or shares a symbol of the header."""
    write_table(tmp_path / "table.json", default_table())
    assert cli(["export", str(tmp_path), "--format", "ascendc", "-o", str(tmp_path / "tiling.h")]) == 0
    ascendc_fill(tmp_path, "Matmul", 3, ["M"])  # writes the CANN stand-in, checks the header compiles
    (tmp_path / "two.cc").write_text("""
#include "tiling.h"
int second(const int64_t *x)
{
    optiling::MatmulTilingData t;
    uint32_t blockDim = 0;
    return optiling::MatmulTilingFromTable(x, 0, t, &blockDim);
}
""")
    compile_ok(["g++", "-std=c++17", "-O0", "-Wall", "-Wextra", "-Werror", "-I.", "-c", "two.cc", "main.cc"], tmp_path)
    compile_ok(["g++", "two.o", "main.o", "-o", "both"], tmp_path)
    for obj in ("two.o", "main.o"):
        syms = subprocess.run(["nm", "-C", obj], cwd=tmp_path, capture_output=True, text=True, check=True).stdout
        shared = [s for s in syms.splitlines() if "TilingFromTable" in s or "DtypeBytes" in s]
        assert shared and all(s.split()[1] in "tb" for s in shared), shared  # local text only


@needs_gcc
def test_named_dims_cannot_be_passed_in_the_wrong_order(tmp_path):
    """Specs write shapes as {m, k, n}; x[] is {m, n, k}. The shape struct takes the dims by name."""
    doc = default_table()
    write_table(tmp_path / "table.json", doc)
    assert cli(["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "table.h")]) == 0
    header = (tmp_path / "table.h").read_text()
    assert "dims: x[] = {m, n, k} in this order" in header.split("*/")[0]
    assert "#define AUTOTILE_MATMUL_DIM_K 2" in header
    e = doc["entries"][3]
    m, n, k = e["shape"]["m"], e["shape"]["n"], e["shape"]["k"]
    (tmp_path / "main.c").write_text(f"""
#include <stdio.h>
#include "table.h"

int main(void)
{{
    autotile_matmul_shape s = {{.k = {k}, .m = {m}, .n = {n}}};
    int64_t x[AUTOTILE_MATMUL_NDIMS];
    const autotile_matmul_entry *a, *b;
    int exact = 0;
    x[AUTOTILE_MATMUL_DIM_M] = {m};
    x[AUTOTILE_MATMUL_DIM_K] = {k};
    x[AUTOTILE_MATMUL_DIM_N] = {n};
    a = autotile_matmul_lookup_shape(&s, AUTOTILE_MATMUL_{e['dtype'].upper()}, &exact);
    b = autotile_matmul_lookup(x, AUTOTILE_MATMUL_{e['dtype'].upper()}, NULL);
    printf("%d %d %d\\n", (int)(a - AUTOTILE_MATMUL_ENTRIES), a == b, exact);
    return 0;
}}
""")
    compile_ok(C99 + ["main.c", "-o", "main", "-lm"], tmp_path)
    assert subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout == "3 1 1\n"


def test_an_entry_the_gate_could_not_execute_is_not_blamed_on_no_verify(unverified, capsys):
    """An entry too large to execute in verification carries why; the notice said "tuned with
    --no-verify" for every unverified entry. ``unverified`` beside ``verified: true`` is refused."""
    from autotile.errors import InputError

    d, doc = unverified
    doc["entries"][1]["unverified"] = "too large to execute in verification: inputs and output hold ..."
    write_table(d / "table.json", doc)
    capsys.readouterr()
    assert cli(["export", str(d), "--format", "json", "-o", str(d / "t.json")]) == 0
    assert _warnings(capsys.readouterr().err) == [
        f"autotile: warning: 2 of {len(doc['entries'])} entries not verified (tuned with --no-verify; 1 too large "
        "to execute in verification); they carry verified: false (the C entry's verified = 0)"]
    doc["entries"][1]["verified"] = True
    write_table(d / "table.json", doc)
    with pytest.raises(InputError, match=r"entries\[1\]\.unverified: expected null for a verified entry"):
        load_table(d / "table.json")
