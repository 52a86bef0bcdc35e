"""C and Ascend C names of a spec whose names collide once mangled, or are keywords: a param ``n``
like the dim, ``int`` and ``new``, ``tileLen`` beside ``tile_len``, choices -0.5 / 0.5 and
a-b / a_b. Both headers compile and hold each value under its own, predictable name."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from tablekit import ascendc_fill, compile_ok

from autotile.cli import run as cli
from autotile.space import load_spec
from autotile.tables.cnames import Scope, ident, reserved
from autotile.tables.export_ascendc import camel
from autotile.tables.schema import build_table, write_table

ODD = """\
op: elementwise
hardware: ascend910b2
dtypes: [fp16]
units: [vector, scalar]
shapes: [{n: 4096}, {n: 1024}, {n: 2048}]
params:
  tile_len: {type: int, low: 16, high: "max(16, shape.n)", pow2: true}
  buffer_num: {type: int, low: 1, high: 4}
  cores: {type: int, low: 1, high: "min(hw.vector_cores, max(1, shape.n // 16))", pow2: true}
  n: {type: fixed, value: 3, units: [scalar]}
  int: {type: fixed, value: 1, units: [scalar]}
  tileLen: {type: fixed, value: 2, units: [scalar]}
  new: {type: categorical, choices: [5, 6], units: [scalar]}
  "NULL": {type: fixed, value: 7, units: [scalar]}
  scale: {type: categorical, choices: [-0.5, 0.5], units: [scalar]}
  mode: {type: categorical, choices: [a-b, a_b, "x*/y"], units: [scalar]}
"""
# (scale, mode) of the scalar entries n=1024 and n=2048
ODD_VALUES = {1024: (-0.5, "a_b"), 2048: (0.5, "x*/y")}

C_MAIN = r"""
#include <stdio.h>
#include "odd.h"

int main(void)
{
    long long n;
    while (scanf("%lld", &n) == 1) {
        const int64_t x[1] = {n};
        const autotile_elementwise_params *p = &autotile_elementwise_lookup(x, AUTOTILE_ELEMENTWISE_FP16, NULL)->params;
        printf("%d %d %d %d %d %d %d %d %d %d\n", (int)p->n, (int)p->int_, (int)p->tileLen, (int)p->new_,
               (int)p->NULL_, p->scale == AUTOTILE_ELEMENTWISE_SCALE_NEG_0_5,
               p->scale == AUTOTILE_ELEMENTWISE_SCALE_0_5, p->mode == AUTOTILE_ELEMENTWISE_MODE_A_B,
               p->mode == AUTOTILE_ELEMENTWISE_MODE_A_B_2, p->mode == AUTOTILE_ELEMENTWISE_MODE_X_Y);
    }
    return 0;
}
"""


@pytest.fixture
def odd(tmp_path):
    """The odd spec's table (n=4096 on vector, the others on scalar) as tmp_path/table.json."""
    (tmp_path / "spec.yaml").write_text(ODD)
    spec = load_spec(tmp_path / "spec.yaml")
    results = []
    for shape in spec.shapes:
        unit = "scalar" if shape["n"] in ODD_VALUES else "vector"
        params = {"tile_len": 256, "buffer_num": 2, "cores": 4}
        if unit == "scalar":
            scale, mode = ODD_VALUES[shape["n"]]
            params.update({"n": 3, "int": 1, "tileLen": 2, "new": 6, "NULL": 7, "scale": scale, "mode": mode})
        assert spec.check(params, shape, "fp16", unit) is None
        results.append({"shape": shape, "dtype": "fp16", "unit": unit, "params": params, "chosen": True})
    write_table(tmp_path / "table.json", build_table(spec, {"results": results}, created="2026-01-01T00:00:00+00:00"))
    return tmp_path


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
def test_c_names_are_legal_and_distinct(odd):
    assert cli(["export", str(odd), "--format", "c", "-o", str(odd / "odd.h")]) == 0
    (odd / "main.c").write_text(C_MAIN)
    compile_ok(["gcc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "main.c", "-o", "main", "-lm"], odd)
    out = subprocess.run([str(odd / "main")], input="1024\n2048\n", capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == ["3 1 2 6 7 1 0 0 1 0", "3 1 2 6 7 0 1 0 0 1"]
    header = (odd / "odd.h").read_text()
    assert cli(["export", str(odd), "--format", "c", "-o", str(odd / "again.h")]) == 0
    assert (odd / "again.h").read_text() == header  # deterministic


@pytest.mark.skipif(not shutil.which("g++"), reason="needs g++")
def test_ascendc_fields_are_legal_and_distinct(odd):
    assert cli(["export", str(odd), "--format", "ascendc", "-o", str(odd / "tiling.h")]) == 0
    fields = ["n", "unit", "tileLen", "bufferNum", "cores", "n_2", "int_", "tileLen_2", "new_", "NULL_",
              "scale", "mode"]
    fill = ascendc_fill(odd, "Elementwise", 1, fields)
    out = subprocess.run([str(fill)], input="1024 0\n2048 0\n", capture_output=True, text=True, check=True).stdout
    for line, n, codes in zip(out.splitlines(), (1024, 2048), ((0, 1), (1, 2)), strict=True):
        names, _, *values = line.split()
        assert names.rstrip(",").split(",") == fields
        got = dict(zip(fields, map(int, values), strict=True))
        assert got == {"n": n, "unit": 1, "tileLen": 256, "bufferNum": 2, "cores": 4, "n_2": 3, "int_": 1,
                       "tileLen_2": 2, "new_": 6, "NULL_": 7, "scale": codes[0], "mode": codes[1]}


def test_mangling_rule():
    assert (ident("x*/y"), ident(0.5), ident(-0.5), ident(-3), ident("")) == ("x_y", "_0_5", "NEG_0_5", "NEG_3", "X")
    s = Scope(["taken"], members=True)
    assert [s.take(x) for x in ("taken", "int", "int", "int_", "M_PI", "M", "M", "INT32_MAX", "uint8_t", "and")] == [
        "taken_2", "int_", "int_2", "int_3", "M_PI_", "M", "M_2", "INT32_MAX_", "uint8_t_",
        "and_"]


# params named like macros gcc predefines in GNU modes (unix, linux; i386 on 32-bit x86), that
# <stdint.h> defines under -std=c2x (INT8_WIDTH and the other _WIDTH), <math.h> (SNAN, HUGE_VAL_F32,
# FP_INT_UPWARD, older glibc's DOMAIN) and, in C++, <stdlib.h> through <math.h> (EXIT_SUCCESS)
MACRO_NAMES = ["unix", "linux", "i386", "INT8_WIDTH", "UINT_LEAST16_WIDTH", "INTMAX_WIDTH", "SIZE_WIDTH",
               "WCHAR_WIDTH", "SNAN", "SNANF", "SNANF64X", "HUGE_VAL_F32", "FP_INT_UPWARD", "FP_FAST_FMA",
               "MATH_ERRNO", "DOMAIN", "EXIT_SUCCESS", "RAND_MAX", "BYTE_ORDER", "WNOHANG"]


@pytest.fixture
def macros(tmp_path):
    """A table whose params carry MACRO_NAMES (value i + 1 each) as tmp_path/table.json."""
    fixed = "".join(f"  {name}: {{type: fixed, value: {i + 1}}}\n" for i, name in enumerate(MACRO_NAMES))
    (tmp_path / "spec.yaml").write_text(ODD.split("  n: {type: fixed")[0].replace("units: [vector, scalar]", "units: [vector]")
                                        .replace("shapes: [{n: 4096}, {n: 1024}, {n: 2048}]", "shapes: [{n: 4096}]") + fixed)
    spec = load_spec(tmp_path / "spec.yaml")
    params = {"tile_len": 256, "buffer_num": 2, "cores": 4, **{name: i + 1 for i, name in enumerate(MACRO_NAMES)}}
    assert spec.check(params, spec.shapes[0], "fp16", "vector") is None
    results = [{"shape": spec.shapes[0], "dtype": "fp16", "unit": "vector", "params": params, "chosen": True}]
    write_table(tmp_path / "table.json", build_table(spec, {"results": results}, created="2026-01-01T00:00:00+00:00"))
    return tmp_path


def _gcc_knows(std: str) -> bool:
    return subprocess.run(["gcc", f"-std={std}", "-x", "c", "-fsyntax-only", "-"], input="int x;\n",
                          capture_output=True, text=True).returncode == 0


@pytest.mark.skipif(not shutil.which("gcc"), reason="needs gcc")
@pytest.mark.parametrize("std", ["gnu99", "c99", "gnu11", "c2x", "gnu2x"])
def test_c_members_named_like_macros_compile(macros, std):
    """unix, linux, INT8_WIDTH, SNAN became int32_t members as they were: gcc -std=gnu99 expands
    unix and linux to 1, and -std=c2x's <stdint.h> defines INT8_WIDTH."""
    if not _gcc_knows(std):
        pytest.skip(f"gcc without -std={std}")
    assert cli(["export", str(macros), "--format", "c", "-o", str(macros / "m.h")]) == 0
    reads = " ".join(f"(int)p->{name}_," for name in MACRO_NAMES).rstrip(",")
    (macros / "main.c").write_text(f"""
#include <stdio.h>
#include "m.h"

int main(void)
{{
    const int64_t x[1] = {{4096}};
    const autotile_elementwise_params *p = &autotile_elementwise_lookup(x, AUTOTILE_ELEMENTWISE_FP16, NULL)->params;
    const int v[] = {{{reads}}};
    size_t i;
    for (i = 0; i < sizeof v / sizeof v[0]; ++i)
        printf("%d ", v[i]);
    return 0;
}}
""")
    compile_ok(["gcc", f"-std={std}", "-pedantic", "-Wall", "-Wextra", "-Werror", "-D_GNU_SOURCE", "main.c", "-o", "main",
                "-lm"], macros)
    out = subprocess.run([str(macros / "main")], capture_output=True, text=True, check=True).stdout
    assert out.split() == [str(i + 1) for i in range(len(MACRO_NAMES))]


@pytest.mark.skipif(not shutil.which("g++"), reason="needs g++")
def test_ascendc_fields_named_like_macros_compile(macros):
    assert cli(["export", str(macros), "--format", "ascendc", "-o", str(macros / "tiling.h")]) == 0
    fields = ["n", "tileLen", "bufferNum", "cores"] + [f"{camel(name)}_" if reserved(camel(name)) else camel(name)
                                                         for name in MACRO_NAMES]
    assert "unix_" in fields and "EXITSUCCESS" in fields
    fill = ascendc_fill(macros, "Elementwise", 1, fields)
    out = subprocess.run([str(fill)], input="4096 0\n", capture_output=True, text=True, check=True).stdout
    names, _, *values = out.split()
    assert names.rstrip(",").split(",") == fields
    assert values[4:] == [str(i + 1) for i in range(len(MACRO_NAMES))]


def test_mangled_forms_of_reserved_families_are_found():
    """FP_INT_\\w+ matched its own mangled forms too: a param FP_INT_UPWARD hung the export."""
    s = Scope(members=True)
    assert [s.take(x) for x in ("FP_INT_UPWARD", "FP_INT_UPWARD", "HUGE_VAL_F32", "INT8_WIDTH", "unix", "M_PI", "M_PI")] == [
        "FP_INT_UPWARD_", "FP_INT_UPWARD_2", "HUGE_VAL_F32_", "INT8_WIDTH_", "unix_", "M_PI_", "M_PI_3"]


# a replay spec (any dim names, any choices) whose names held ``__`` once mangled: dims _1a,
# größe, __x__y and _B, a float list with 1 in it, text choices a--b / a_b / _C
REPLAY_ODD = """\
op: replay
shapes: [{_1a: 4, größe: 8, __x__y: 2, _B: 3}]
params:
  scale: {type: categorical, choices: [0.5, 1, -0.5, 2.5]}
  mode: {type: categorical, choices: [a--b, a_b, _C, "0.5"]}
objective: time_us
backend: replay
measurements: meas.csv
"""


def _code_names(header: str) -> set[str]:
    """The identifiers of a header's code (comments and string literals left out)."""
    code = re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\])*"', " ", header, flags=re.S)
    return set(re.findall(r"\b[A-Za-z_]\w*", code))


@pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("g++")), reason="needs gcc and g++")
def test_no_name_is_reserved_in_cpp(tmp_path):
    """No generated name holds ``__`` or starts with ``_`` and an upper-case letter (reserved in
    C++): a choice 0.5 was AUTOTILE_REPLAY_SCALE__0_5, 1 in a float list ..._SCALE__1, a dim
    __x__y AUTOTILE_REPLAY_DIM_X__Y, and a dim _1a the Ascend C field 1a (not a C name). Clashes
    still get _2. Both headers compile and hold the entry's values under those names."""
    (tmp_path / "spec.yaml").write_text(REPLAY_ODD)
    (tmp_path / "meas.csv").write_text("_1a,größe,__x__y,_B,scale,mode,time_us\n4,8,2,3,1,_C,1.0\n")
    spec = load_spec(tmp_path / "spec.yaml")
    results = [{"shape": spec.shapes[0], "dtype": "fp32", "unit": "default", "params": {"scale": 1, "mode": "_C"},
                "chosen": True}]
    write_table(tmp_path / "table.json", build_table(spec, {"results": results}, created="2026-01-01T00:00:00+00:00"))
    names = set()
    for fmt, out in (("c", "odd.h"), ("ascendc", "tiling.h")):
        assert cli(["export", str(tmp_path), "--format", fmt, "-o", str(tmp_path / out)]) == 0
        names |= _code_names((tmp_path / out).read_text())
    bad = sorted(n for n in names if "__" in n or re.match(r"_[A-Z]", n))
    assert bad == []
    (tmp_path / "main.c").write_text("""
#include <stdio.h>
#include "odd.h"
int main(void)
{
    const autotile_replay_shape s = {._1a = 4, .gr_e = 8, .x_y = 2, .B = 3};
    const autotile_replay_params *p = &autotile_replay_lookup_shape(&s, AUTOTILE_REPLAY_FP32, NULL)->params;
    printf("%d %d %d %d %d %d %d %d %d\\n", AUTOTILE_REPLAY_DIM_1A, AUTOTILE_REPLAY_DIM_GR_E, AUTOTILE_REPLAY_DIM_X_Y,
           AUTOTILE_REPLAY_DIM_B, p->scale == AUTOTILE_REPLAY_SCALE_1, AUTOTILE_REPLAY_SCALE_0_5,
           AUTOTILE_REPLAY_SCALE_NEG_0_5, p->mode == AUTOTILE_REPLAY_MODE_C, AUTOTILE_REPLAY_MODE_A_B_2);
    return 0;
}
""")
    compile_ok(["gcc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "main.c", "-o", "main", "-lm"], tmp_path)
    out = subprocess.run([str(tmp_path / "main")], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", "1", "2", "3", "1", "0", "2", "1", "1"]
    fields = ["x1a", "grE", "xY", "B", "scale", "mode"]
    fill = ascendc_fill(tmp_path, "Replay", 4, fields)
    out = subprocess.run([str(fill)], input="4 8 2 3 0\n", capture_output=True, text=True, check=True).stdout
    names, _, *values = out.split()
    assert names.rstrip(",").split(",") == fields and values == ["4", "8", "2", "3", "1", "2"]
