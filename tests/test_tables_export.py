"""Exported headers: the C99 header compiles cleanly and its lookup agrees with Python's on random
shapes; the Ascend C header compiles against stand-in tiling macros and fills TCubeTiling with the
table's params."""

from __future__ import annotations

import math
import random
import shutil
import subprocess

import pytest
from tablekit import (
    C_MAIN,
    STAND_IN,
    UNITS_SPEC,
    ascendc_fill,
    compile_ok,
    default_table,
    inside,
    region_edges,
)

from autotile.cli import run as cli
from autotile.space import load_spec
from autotile.tables.export_ascendc import TCUBE
from autotile.tables.lookup import Lookup
from autotile.tables.schema import build_table, write_table

pytestmark = pytest.mark.skipif(not (shutil.which("gcc") and shutil.which("g++")), reason="needs gcc and g++")

DTYPES = ("fp16", "fp32")  # the spec's dtype order = the C enum's codes (matmul's bf16 and int8 are not the spec's)
SHAPES = 1000

BIG = (2**31 - 2, 2**31 - 1, 2**31, 2**32 + 1, 2**62, 2**63 - 1)  # int64 all; 2**31-1 is a spec's largest dim
# in a cube region's box (m, n up to 2**31 - 1) with a core block product past int64: the C fits()
# multiplied ceil(2**31-1 / single_core_m) * ... and wrapped negative, so C answered an entry
EXTREME = [(2**31 - 1, 2**31 - 1, 3993600), (2**31 - 1, 2**31 - 1, 2**31 - 1), (2**63 - 1,) * 3]


def extremes(shape: dict, rng) -> list[tuple[int, ...]]:
    """``shape`` with every non-empty set of its dims replaced by huge values (drawn from BIG)."""
    base = tuple(shape.values())
    return [tuple(rng.choice(BIG) if mask >> d & 1 else v for d, v in enumerate(base))
            for mask in range(1, 2 ** len(base))]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """(folder, table doc, Lookup) with the table written as folder/table.json."""
    d = tmp_path_factory.mktemp("export")
    doc = default_table()
    write_table(d / "table.json", doc)
    return d, doc, Lookup(doc)


def test_c_header_agrees_with_python_on_random_shapes(built):
    d, doc, look = built
    assert cli(["export", str(d), "--format", "c", "-o", str(d / "table.h")]) == 0
    (d / "main.c").write_text(C_MAIN)
    compile_ok(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "main.c", "-o", "lookup", "-lm"], d)
    rng = random.Random(6)
    tuned = [tuple(e["shape"].values()) for e in doc["entries"]]
    queries = []
    for i in range(SHAPES):
        if i % 10 == 0:  # some exact hits
            shape = rng.choice(tuned)
        elif i % 2:  # near a tuned shape
            shape = tuple(max(1, int(v * math.exp(rng.gauss(0, 0.3)))) for v in rng.choice(tuned))
        else:  # anywhere, log-uniform up to 2**17
            shape = tuple(int(math.exp(rng.uniform(0, 17 * math.log(2)))) for _ in range(3))
        queries.append((shape, rng.choice(("fp16", "fp16", "fp32", "bf16"))))
    queries += region_edges(look) + inside(look, rng, 500) + [(x, "fp16") for x in EXTREME]
    queries += [(shape, e["dtype"]) for e in doc["entries"] for shape in extremes(e["shape"], rng)]
    # bf16 is no dtype of the table: the C lookup is given codes outside its enum and finds nothing
    stdin = "".join(f"{m} {n} {k} {DTYPES.index(dt) if dt in DTYPES else rng.choice((2, -1, 99))}\n"
                    for (m, n, k), dt in queries)
    out = subprocess.run([str(d / "lookup")], input=stdin, capture_output=True, text=True, check=True).stdout
    kinds = {}
    for ((m, n, k), dt), line in zip(queries, out.splitlines(), strict=True):
        index, exact = map(int, line.split())
        if dt not in DTYPES:
            assert (index, exact) == (-1, 0), ((m, n, k), dt)
            kinds["no dtype"] = kinds.get("no dtype", 0) + 1
            continue
        py = look.from_table({"m": m, "n": n, "k": k}, dt)  # steps 1-2, which C implements
        kinds[py.match if py else "none"] = kinds.get(py.match if py else "none", 0) + 1
        if py is not None:
            assert (index, exact) == (py.entry, int(py.match == "exact")), ((m, n, k), dt, py)
        else:
            assert (index, exact) == (-1, 0), ((m, n, k), dt)
    # the sample exercises every branch of the rule
    print(f"C vs Python on {len(queries)} shapes: {kinds}, all agree")
    assert kinds.get("exact", 0) >= 50 and kinds.get("nearest", 0) >= 200 and kinds.get("none", 0) >= 100, kinds
    assert kinds["no dtype"] >= 100, kinds


SERVED_MAIN = r"""
#include <stdio.h>
#include "table.h"

/* stdin: "m n k dtype" lines; stdout: "index" then the served params (-1 when no entry fits) */
int main(void)
{
    long long m, n, k;
    int dtype;
    while (scanf("%lld %lld %lld %d", &m, &n, &k, &dtype) == 4) {
        int64_t x[3];
        const autotile_matmul_entry *e;
        autotile_matmul_params p;
        x[0] = m; x[1] = n; x[2] = k;
        e = autotile_matmul_lookup(x, dtype, NULL);
        if (e == NULL) {
            printf("-1\n");
            continue;
        }
        p = autotile_matmul_served(e, x);
        printf("%d FIELDS\n", (int)(e - AUTOTILE_MATMUL_ENTRIES), ARGS);
    }
    return 0;
}
"""


def test_c_header_serves_the_params_python_serves(built):
    """The C lookup's entry run at the queried shape (``served``) has Python's params: a tiling
    that kept K whole keeps it whole at any k. C handed out the stored single_core_k, 512 at
    k = 1024 for an entry tuned at k = 512, where Python served 1024 (512 is infeasible there)."""
    from autotile.tables.cnames import Names
    from autotile.tables.export_c import encoded

    d, doc, look = built
    assert cli(["export", str(d), "--format", "c", "-o", str(d / "table.h")]) == 0
    names = Names(look.table)
    params = names.params
    main = SERVED_MAIN.replace("FIELDS", " ".join("%d" for _ in params))
    main = main.replace("ARGS", ", ".join(f"(int)p.{names.field(p.name)}" for p in params))
    (d / "served.c").write_text(main)
    compile_ok(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "served.c", "-o", "served", "-lm"], d)
    rng = random.Random(8)
    tuned = [(tuple(e["shape"].values()), e["dtype"]) for e in doc["entries"]]
    queries = list(tuned) + region_edges(look) + inside(look, rng, 300)
    for _ in range(1000):  # near a tuned shape, k from 16 times smaller to 16 times larger
        (m, n, k), dt = rng.choice(tuned)
        queries.append(((m, n, max(1, int(k * 2 ** rng.uniform(-4, 4)))), dt))
    stdin = "".join(f"{m} {n} {k} {DTYPES.index(dt)}\n" for (m, n, k), dt in queries)
    out = subprocess.run([str(d / "served")], input=stdin, capture_output=True, text=True, check=True).stdout
    grown = 0
    for ((m, n, k), dt), line in zip(queries, out.splitlines(), strict=True):
        py = look.from_table({"m": m, "n": n, "k": k}, dt)
        got = list(map(int, line.split()))
        if py is None:
            assert got == [-1], ((m, n, k), dt)
            continue
        want = [py.entry] + [encoded(p, py.params[p.name]) for p in params]
        assert got == want, ((m, n, k), dt, py)
        stored = look.table.entries[py.entry].params["single_core_k"]
        grown += py.params["single_core_k"] > stored
    # the sample has many nearest matches whose whole K grew past the stored single_core_k
    print(f"C served Python's params on {len(queries)} shapes; single_core_k grew past the stored in {grown}")
    assert grown >= 100, grown


def test_c_header_agrees_with_python_for_custom_rules(tmp_path, capsys):
    """A spec whose rules are tighter than the bundled one's (at most 4 core blocks along m): the
    cube region is derived from the bundled rules, so with these the entries serve their tuned
    shapes only, in C and Python alike, and export says so. It admitted m up to 24 blocks in C."""
    from tablekit import SMALL_SPEC

    text = SMALL_SPEC.read_text()
    assert text.count("shape.m / hw.cube_cores") == 1
    (tmp_path / "spec.yaml").write_text(text.replace("shape.m / hw.cube_cores", "shape.m / 4"))
    doc = default_table(tmp_path / "spec.yaml")
    write_table(tmp_path / "table.json", doc)
    capsys.readouterr()
    assert cli(["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "table.h")]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "custom rules: the C lookup serves tuned shapes only" in err
    assert "params.single_core_m.low" in err
    (tmp_path / "main.c").write_text(C_MAIN)
    compile_ok(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "main.c", "-o", "lookup", "-lm"],
               tmp_path)
    rng = random.Random(7)
    tuned = [(tuple(e["shape"].values()), e["dtype"]) for e in doc["entries"]]
    queries = list(tuned)
    for _ in range(1500):  # from a tuned shape up to 64 times larger or smaller along each dim
        shape, dt = rng.choice(tuned)
        queries.append((tuple(max(1, int(v * 2 ** rng.uniform(-6, 6))) for v in shape), dt))
    stdin = "".join(f"{m} {n} {k} {DTYPES.index(dt)}\n" for (m, n, k), dt in queries)
    out = subprocess.run([str(tmp_path / "lookup")], input=stdin, capture_output=True, text=True,
                         check=True).stdout
    look, kinds = Lookup(doc), {}
    for ((m, n, k), dt), line in zip(queries, out.splitlines(), strict=True):
        py = look.find({"m": m, "n": n, "k": k}, dt)
        kinds[py.match] = kinds.get(py.match, 0) + 1
        want = (py.entry, int(py.match == "exact")) if py.match in ("exact", "nearest") else (-1, 0)
        assert tuple(map(int, line.split())) == want, ((m, n, k), dt, py)
    assert kinds.get("exact", 0) >= len(tuned) and "nearest" not in kinds, kinds


def test_ascendc_header_fills_tcubetiling(built):
    d, doc, look = built
    assert cli(["export", str(d / "table.json"), "--format", "ascendc", "-o", str(d / "tiling.h")]) == 0
    fields = [f for f, _ in TCUBE]  # a cube-only spec: no unit field
    fill = ascendc_fill(d, "Matmul", 3, fields)
    queries = [tuple(e["shape"].values()) + (e["dtype"],) for e in doc["entries"]]
    # entries that split K (singleCoreK < K, usedCoreNum counting the K ranges) are among them
    assert any(e["params"]["single_core_k"] < e["shape"]["k"] for e in doc["entries"])
    queries += [(1010, 1020, 1200, "fp16"), (64, 128, 4500, "fp16"), (40000, 2048, 4096, "fp16")]
    stdin = "".join(f"{m} {n} {k} {DTYPES.index(dt)}\n" for m, n, k, dt in queries)
    out = subprocess.run([str(fill)], input=stdin, capture_output=True, text=True, check=True).stdout
    lines = out.splitlines()
    assert lines[-1] == "none"  # no entry fits: the caller uses its default tiling
    for (m, n, k, dt), line in zip(queries[:-1], lines[:-1], strict=True):
        names, *values = line.split()
        assert names.rstrip(",").split(",") == fields  # TCubeTiling's order, usedCoreNum to dbL0C
        block_dim, got = int(values[0]), dict(zip(fields, map(int, values[1:]), strict=True))
        p = look.find({"m": m, "n": n, "k": k}, dt).params
        want = {"M": m, "N": n, "Ka": k, "Kb": k, "singleCoreK": min(k, p["single_core_k"]),
                "singleCoreM": p["single_core_m"], "singleCoreN": p["single_core_n"],
                "baseM": p["base_m"], "baseN": p["base_n"], "baseK": p["base_k"],
                "depthA1": p["depth_a1"], "depthB1": p["depth_b1"], "stepM": p["step_m"], "stepN": p["step_n"],
                "stepKa": p["step_ka"], "stepKb": p["step_kb"], "dbL0A": p["db_l0a"], "dbL0B": p["db_l0b"],
                "dbL0C": p["db_l0c"], "iterateOrder": 0 if p["iterate_order"] == "m_first" else 1,
                "usedCoreNum": -(-m // p["single_core_m"]) * -(-n // p["single_core_n"]) * -(-k // p["single_core_k"]),
                "shareL0CSize": p["base_m"] * p["base_n"] * 4 * p["db_l0c"], "isBias": 0, "batchM": 1}
        assert {f: got[f] for f in want} == want
        assert block_dim == got["usedCoreNum"] <= look.table.hardware.cube_cores


def test_empty_table_still_compiles(tmp_path):
    doc = default_table()
    doc["entries"] = []
    write_table(tmp_path / "table.json", doc)
    assert cli(["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "table.h")]) == 0
    (tmp_path / "main.c").write_text(C_MAIN)
    compile_ok(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "main.c", "-o", "lookup", "-lm"], tmp_path)
    out = subprocess.run([str(tmp_path / "lookup")], input="64 128 256 0\n", capture_output=True, text=True).stdout
    assert out.split() == ["-1", "0"]


def test_user_text_cannot_break_the_headers(tmp_path):
    """Descriptions and the spec path go into comments: ``*/``, ``/*`` and newlines are defused."""
    from tablekit import SMALL_SPEC

    folder = tmp_path / "a*" / "*b\n"  # the spec path then holds */, /* and a newline
    folder.mkdir(parents=True)
    text = SMALL_SPEC.read_text().replace('"L0A double buffering"', '"depth (*/ ping-pong)\\n/* two */"')
    text = text.replace("choices: [m_first, n_first]}", 'choices: [m_first, n_first], description: "order */ x"}')
    (folder / "spec.yaml").write_text(text)
    write_table(tmp_path / "table.json", default_table(folder / "spec.yaml"))
    (tmp_path / "register").mkdir()
    (tmp_path / "register" / "tilingdata_base.h").write_text(STAND_IN)
    for fmt, name, compiler in (("c", "t.h", ["gcc", "-std=c99", "-pedantic"]), ("ascendc", "a.h", ["g++"])):
        assert cli(["export", str(tmp_path), "--format", fmt, "-o", str(tmp_path / name)]) == 0
        header = (tmp_path / name).read_text()
        assert "depth (* / ping-pong) / * two * /" in header and "order * / x" in header
        assert "a* / *b /spec.yaml" in header
        src = tmp_path / ("main.c" if fmt == "c" else "main.cc")
        src.write_text(f'#include "{name}"\nint main(void) {{ return 0; }}\n')
        compile_ok(compiler + ["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I.", src.name], tmp_path)


def test_c_and_ascendc_headers_in_one_translation_unit(built, tmp_path):
    """The Ascend C header embeds the C header's body under a guard of its own: both headers of a
    table can be included together, in either order; another table of the op is an #error."""
    d, doc, _ = built
    for fmt, name in (("c", "table.h"), ("ascendc", "tiling.h")):
        assert cli(["export", str(d), "--format", fmt, "-o", str(tmp_path / name)]) == 0
    (tmp_path / "register").mkdir()
    (tmp_path / "register" / "tilingdata_base.h").write_text(STAND_IN)
    m, n, k = doc["entries"][0]["shape"].values()
    main = """
#include <cstdio>
{includes}
int main()
{{
    const int64_t x[3] = {{{m}, {n}, {k}}};
    optiling::MatmulTilingData t;
    uint32_t blockDim = 0;
    const autotile_matmul_entry *e = autotile_matmul_lookup(x, AUTOTILE_MATMUL_FP16, NULL);
    int rc = optiling::MatmulTilingFromTable(x, AUTOTILE_MATMUL_FP16, t, &blockDim);
    std::printf("%d %d %d\\n", rc, (int)e->params.base_m, (int)t.get_baseM());
    return 0;
}}
"""
    for first, second in (("table.h", "tiling.h"), ("tiling.h", "table.h")):
        (tmp_path / "main.cc").write_text(main.format(includes=f'#include "{first}"\n#include "{second}"',
                                                      m=m, n=n, k=k))
        compile_ok(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I.", "main.cc", "-o", "both"], tmp_path)
        out = subprocess.run([str(tmp_path / "both")], capture_output=True, text=True, check=True).stdout
        base_m = doc["entries"][0]["params"]["base_m"]
        assert out.split() == ["0", str(base_m), str(base_m)]
    other = dict(doc, entries=doc["entries"][1:])
    write_table(tmp_path / "other.json", other)
    assert cli(["export", str(tmp_path / "other.json"), "--format", "c", "-o", str(tmp_path / "other.h")]) == 0
    (tmp_path / "main.cc").write_text(main.format(includes='#include "other.h"\n#include "tiling.h"', m=m, n=n, k=k))
    r = subprocess.run(["g++", "-std=c++17", "-I.", "-fsyntax-only", "main.cc"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "another autotile matmul table" in r.stderr, r.stderr


def test_two_prefixed_ascendc_headers_in_one_translation_unit(built, tmp_path):
    """Two SoCs' tables of one op, exported with --prefix soc_a / soc_b: one .cpp includes both
    (the TilingData they share is defined once; the tables and functions are prefixed) and the
    unprefixed one. It was a redefinition of optiling::MatmulTilingData. A TilingData of the same
    OpType with other fields is an #error naming --op-type."""
    d, _, _ = built
    for prefix in ("soc_a", "soc_b", None):
        flags = ["--prefix", prefix] if prefix else []
        assert cli(["export", str(d), "--format", "ascendc", "-o", str(tmp_path / f"{prefix}.h"), *flags]) == 0
    (tmp_path / "register").mkdir()
    (tmp_path / "register" / "tilingdata_base.h").write_text(STAND_IN)
    calls = " + ".join(f"optiling::{f}TilingFromTable(x, 0, t, &b)"
                       for f in ("soc_a_Matmul", "soc_b_Matmul", "Matmul"))
    (tmp_path / "main.cc").write_text('#include "soc_a.h"\n#include "soc_b.h"\n#include "None.h"\n'
                                      "int main() { const int64_t x[3] = {1, 1, 1}; optiling::MatmulTilingData t; "
                                      f"uint32_t b; return {calls}; }}\n")
    compile_ok(["g++", "-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I.", "main.cc"], tmp_path)
    write_table(tmp_path / "units.json", default_table(UNITS_SPEC))  # cube and vector: a unit field more
    assert cli(["export", str(tmp_path / "units.json"), "--format", "ascendc", "-o", str(tmp_path / "units.h"),
                "--prefix", "soc_c"]) == 0
    (tmp_path / "main.cc").write_text('#include "soc_a.h"\n#include "units.h"\n')
    r = subprocess.run(["g++", "-std=c++17", "-I.", "-fsyntax-only", "main.cc"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode != 0 and "MatmulTilingData is already defined with other fields" in r.stderr, r.stderr


def test_ascendc_header_links_into_many_translation_units(built, tmp_path):
    """Two .cpp files include the header (one of them two prefixed headers of the op) and link:
    the OpType is registered once, in the file defining AUTOTILE_REGISTER_MatmulTilingData. CANN's
    REGISTER_TILING_DATA_CLASS defines a global object, and the header registered in every file:
    ``multiple definition of optiling::g_tilingdata_MatmulMatmulTilingDatahelper``."""
    d, doc, _ = built
    for prefix in ("soc_a", "soc_b", None):
        flags = ["--prefix", prefix] if prefix else []
        assert cli(["export", str(d), "--format", "ascendc", "-o", str(tmp_path / f"{prefix}.h"), *flags]) == 0
    (tmp_path / "register").mkdir()
    (tmp_path / "register" / "tilingdata_base.h").write_text(STAND_IN)
    m, n, k = doc["entries"][0]["shape"].values()
    (tmp_path / "host.cc").write_text(f"""
#define AUTOTILE_REGISTER_MatmulTilingData
#include "soc_a.h"
#include "soc_b.h"
int host_tiling(optiling::MatmulTilingData &t)
{{
    const int64_t x[3] = {{{m}, {n}, {k}}};
    uint32_t b = 0;
    return optiling::soc_a_MatmulTilingFromTable(x, 0, t, &b) + optiling::soc_b_MatmulTilingFromTable(x, 0, t, &b);
}}
""")
    (tmp_path / "main.cc").write_text(f"""
#include <cstdio>
#include "None.h"
int host_tiling(optiling::MatmulTilingData &t);
int main()
{{
    const int64_t x[3] = {{{m}, {n}, {k}}};
    optiling::MatmulTilingData t;
    uint32_t b = 0;
    int rc = optiling::MatmulTilingFromTable(x, 0, t, &b) + host_tiling(t);
    std::printf("%d %d", rc, (int)t.get_baseM());
    for (const std::string &op : tiling_registrations())
        std::printf(" %s", op.c_str());
    return 0;
}}
""")
    compile_ok(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I.", "host.cc", "main.cc", "-o", "linked"],
               tmp_path)
    out = subprocess.run([str(tmp_path / "linked")], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["0", str(doc["entries"][0]["params"]["base_m"]), "Matmul"]


STUDIES = UNITS_SPEC.parent
# (spec, its inputs: line, the same with other options): the headers must name the latter
VARIANTS = (
    ("elementwise.yaml", "inputs: {kind: add, data: gm}", "inputs: {kind: relu}"),
    ("resize.yaml", "inputs: {mode: bilinear, layout: NCHW, align_corners: false}",
     "inputs: {layout: NHWC, align_corners: true}"),
    ("roi_align.yaml", "inputs: {spatial_scale: 0.25, sampling_ratio: 2, aligned: true, roi_seed: 0, roi_min: 0.05, roi_max: 0.5}",
     "inputs: {spatial_scale: 1, sampling_ratio: -1, aligned: false, roi_seed: 4294967295}"),
)
# what a program over both headers prints: the INPUTS string, then each option's macro
# (a choice's as whether it equals each value's constant, in #if)
OPTION_PRINTS = {
    "elementwise": ("kind=relu, data=gm", """
#if AUTOTILE_ELEMENTWISE_INPUT_KIND == AUTOTILE_ELEMENTWISE_INPUT_KIND_RELU && AUTOTILE_ELEMENTWISE_INPUT_KIND_ADD == 0
    std::printf("relu ");
#endif
    std::printf("%d", AUTOTILE_ELEMENTWISE_INPUT_DATA == AUTOTILE_ELEMENTWISE_INPUT_DATA_GM);""", ["relu", "1"]),
    "resize": ("mode=bilinear, layout=NHWC, align_corners=true", """
    std::printf("%d %d %d", AUTOTILE_RESIZE_INPUT_MODE == AUTOTILE_RESIZE_INPUT_MODE_BILINEAR,
                AUTOTILE_RESIZE_INPUT_LAYOUT == AUTOTILE_RESIZE_INPUT_LAYOUT_NHWC, AUTOTILE_RESIZE_INPUT_ALIGN_CORNERS);""",
               ["1", "1", "1"]),
    "roi_align": ("spatial_scale=1.0, sampling_ratio=-1, aligned=false, roi_seed=4294967295, roi_min=0.05, roi_max=0.5", """
    std::printf("%g %d %d %lld %g %g", AUTOTILE_ROI_ALIGN_INPUT_SPATIAL_SCALE, -AUTOTILE_ROI_ALIGN_INPUT_SAMPLING_RATIO,
                AUTOTILE_ROI_ALIGN_INPUT_ALIGNED, (long long)AUTOTILE_ROI_ALIGN_INPUT_ROI_SEED,
                AUTOTILE_ROI_ALIGN_INPUT_ROI_MIN, AUTOTILE_ROI_ALIGN_INPUT_ROI_MAX);""",
                  ["1", "1", "0", "4294967295", "0.05", "0.5"]),
}


@pytest.mark.parametrize("name, line, other", VARIANTS)
def test_headers_name_the_op_options_they_were_tuned_for(tmp_path, name, line, other):
    """Both headers say which variant of the op the table is for: an elementwise table tuned for
    relu (one input: 2 UB tiles a buffer) said nothing, and an add kernel (3 tiles) took its
    tile_len. AUTOTILE_<OP>_INPUTS is the options' canonical text (defaults filled in, the op's
    order), AUTOTILE_<OP>_INPUT_<NAME> each value, a choice's usable in #if."""
    text = (STUDIES / name).read_text()
    assert text.count(line) == 1
    (tmp_path / "spec.yaml").write_text(text.replace(line, other))
    write_table(tmp_path / "table.json", default_table(tmp_path / "spec.yaml"))
    op = name.removesuffix(".yaml")
    for fmt, out in (("c", "table.h"), ("ascendc", "tiling.h")):
        assert cli(["export", str(tmp_path), "--format", fmt, "-o", str(tmp_path / out)]) == 0
    (tmp_path / "register").mkdir()
    (tmp_path / "register" / "tilingdata_base.h").write_text(STAND_IN)
    want, prints, values = OPTION_PRINTS[op]
    for header in ("table.h", "tiling.h"):
        (tmp_path / "main.cc").write_text(f"""
#include <cstdio>
#include "{header}"
int main()
{{
    std::printf("%s\\n", AUTOTILE_{op.upper()}_INPUTS);{prints}
    return 0;
}}
""")
        compile_ok(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I.", "main.cc", "-o", "opts"], tmp_path)
        got = subprocess.run([str(tmp_path / "opts")], capture_output=True, text=True, check=True).stdout.split("\n")
        assert got[0] == want and got[1].split() == values
    assert f" *   inputs:   {want}" in (tmp_path / "table.h").read_text()


def test_headers_spell_each_option_as_the_study_identity_does(tmp_path):
    """roi_align's sampling_ratio 0 and -1 are one variant (adaptive) and one study; the headers
    said 0 for a spec written with 0, so two tables of that variant in one translation unit were an
    #error rather than one definition. They give -1, as a spec written with -1 does."""
    text = (STUDIES / "roi_align.yaml").read_text()
    line = VARIANTS[2][1]
    headers = []
    for ratio in (0, -1):
        (tmp_path / f"r{ratio}").mkdir()
        spec = tmp_path / f"r{ratio}" / "spec.yaml"
        spec.write_text(text.replace(line, f"inputs: {{sampling_ratio: {ratio}}}"))
        write_table(tmp_path / f"r{ratio}" / "table.json", default_table(spec))
        assert cli(["export", str(tmp_path / f"r{ratio}"), "--format", "c", "-o", str(tmp_path / f"r{ratio}.h")]) == 0
        headers.append((tmp_path / f"r{ratio}.h").read_text())
    for header in headers:
        assert "#define AUTOTILE_ROI_ALIGN_INPUT_SAMPLING_RATIO (-1)" in header
        assert "sampling_ratio=-1," in header
    assert [h for h in headers[0].splitlines() if "INPUT" in h] == [h for h in headers[1].splitlines() if "INPUT" in h]


def test_replay_headers_name_the_recorded_inputs(tmp_path):
    """A replay spec's inputs: is a free record: the headers give it as the INPUTS text, keys
    sorted, values as compact JSON past the scalars, and no per-option macro (no option to type it)."""
    (tmp_path / "spec.yaml").write_text("op: replay\nshapes: [{x: 8}]\nparams:\n  b: {type: int, low: 1, high: 4}\n"
                                        "objective: time_us\nbackend: replay\nmeasurements: m.csv\n"
                                        'inputs: {kind: "a\\"b", bias: [1, 2.5], at: {z: 1, y: true}}\n')
    (tmp_path / "m.csv").write_text("x,b,time_us\n8,1,1.0\n")
    spec = load_spec(tmp_path / "spec.yaml")
    results = [{"shape": {"x": 8}, "dtype": "fp32", "unit": "default", "params": {"b": 1}, "chosen": True}]
    write_table(tmp_path / "table.json", build_table(spec, {"results": results}, created="2026-01-01T00:00:00+00:00"))
    assert cli(["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "t.h")]) == 0
    header = (tmp_path / "t.h").read_text()
    assert '#define AUTOTILE_REPLAY_INPUTS "at={\\"y\\":true,\\"z\\":1}, bias=[1,2.5], kind=a\\"b"' in header
    assert "AUTOTILE_REPLAY_INPUT_" not in header
    (tmp_path / "main.c").write_text('#include "t.h"\nconst char *s = AUTOTILE_REPLAY_INPUTS;\n')
    compile_ok(["gcc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-fsyntax-only", "main.c"], tmp_path)


def test_a_spec_from_before_split_k_keeps_its_regions_and_tcubetiling(tmp_path, capsys):
    """A matmul spec written before single_core_k (no such param, cores_used without K ranges)
    still simulates, keeps the cube region in C and Python alike, and fills TCubeTiling with
    singleCoreK = K. It was refused ('missing single_core_k'), and its tables lost both."""
    from tablekit import SMALL_SPEC

    lines = SMALL_SPEC.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("  single_core_k:"))
    end = next(i for i in range(at + 1, len(lines)) if not lines[i].startswith("    "))
    text = "".join(lines[:at] + lines[end:])
    assert text.count(" * ceil(shape.k / single_core_k)") == 1
    (tmp_path / "spec.yaml").write_text(text.replace(" * ceil(shape.k / single_core_k)", ""))
    doc = default_table(tmp_path / "spec.yaml")
    assert all("single_core_k" not in e["params"] for e in doc["entries"])
    write_table(tmp_path / "table.json", doc)
    capsys.readouterr()
    for fmt, out in (("c", "table.h"), ("ascendc", "tiling.h")):
        assert cli(["export", str(tmp_path), "--format", fmt, "-o", str(tmp_path / out)]) == 0
    assert "custom rules" not in capsys.readouterr().err
    (tmp_path / "main.c").write_text(C_MAIN)
    compile_ok(["gcc", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "main.c", "-o", "lookup", "-lm"],
               tmp_path)
    look, rng = Lookup(doc), random.Random(8)
    tuned = [(tuple(e["shape"].values()), e["dtype"]) for e in doc["entries"]]
    queries = tuned + [(tuple(max(1, int(v * 2 ** rng.uniform(-3, 3))) for v in s), dt)
                       for s, dt in (rng.choice(tuned) for _ in range(800))]
    stdin = "".join(f"{m} {n} {k} {DTYPES.index(dt)}\n" for (m, n, k), dt in queries)
    out = subprocess.run([str(tmp_path / "lookup")], input=stdin, capture_output=True, text=True,
                         check=True).stdout
    kinds = {}
    for ((m, n, k), dt), line in zip(queries, out.splitlines(), strict=True):
        py = look.find({"m": m, "n": n, "k": k}, dt)
        kinds[py.match] = kinds.get(py.match, 0) + 1
        want = (py.entry, int(py.match == "exact")) if py.match in ("exact", "nearest") else (-1, 0)
        assert tuple(map(int, line.split())) == want, ((m, n, k), dt, py)
    assert kinds.get("nearest", 0) >= 20, kinds  # the region serves shapes beside the tuned ones
    fill = ascendc_fill(tmp_path, "Matmul", 3, ["singleCoreK", "usedCoreNum", "Ka"])
    served = [(s, dt) for s, dt in queries if look.find(dict(zip("mnk", s)), dt).match in ("exact", "nearest")]
    stdin = "".join(f"{m} {n} {k} {DTYPES.index(dt)}\n" for (m, n, k), dt in served[:200])
    out = subprocess.run([str(fill)], input=stdin, capture_output=True, text=True, check=True).stdout
    for ((m, n, k), dt), line in zip(served[:200], out.splitlines(), strict=True):
        _, block_dim, single_k, used, ka = line.split()
        p = look.find({"m": m, "n": n, "k": k}, dt).params
        assert int(single_k) == int(ka) == k
        assert int(used) == int(block_dim) == -(-m // p["single_core_m"]) * -(-n // p["single_core_n"])
