"""The Ascend C export of matmul specs other than the bundled ones: iterate_order pinned or in
another choice order, and a vector-only spec (no TCubeTiling to fill)."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from tablekit import SMALL_SPEC, STAND_IN, ascendc_fill, default_table

from autotile.cli import run as cli
from autotile.tables.export_ascendc import TCUBE
from autotile.tables.schema import write_table

pytestmark = pytest.mark.skipif(not shutil.which("g++"), reason="needs g++")

ORDER = "iterate_order: {type: categorical, choices: [m_first, n_first]}"
CUBE_FIELDS = [f for f, _ in TCUBE]  # a cube-only spec: no unit field after TCubeTiling's
VECTOR_ONLY = """\
op: matmul
hardware: ascend910b2
dtypes: [fp16]
units: [vector]
shapes: [{m: 16, k: 16, n: 16}, {m: 64, k: 64, n: 64}]
params:
  tile_m: {type: int, low: 1, high: "min(64, shape.m)", pow2: true}
  buffer_num: {type: int, low: 1, high: 2}
  cores: {type: int, low: 1, high: "min(hw.vector_cores, ceil(shape.m / tile_m))"}
"""


def _fill(tmp_path, spec_text, fields, edit=None):
    """Export the default-tiling table of ``spec_text`` as Ascend C, compile a filler printing
    ``fields`` and run it on every entry: [(entry, blockDim, {field: value})]."""
    (tmp_path / "spec.yaml").write_text(spec_text)
    doc = default_table(tmp_path / "spec.yaml")
    for e in doc["entries"]:
        (edit or (lambda e: None))(e)
    write_table(tmp_path / "table.json", doc)
    assert cli(["export", str(tmp_path), "--format", "ascendc", "-o", str(tmp_path / "tiling.h")]) == 0
    fill = ascendc_fill(tmp_path, "Matmul", 3, fields)
    dtypes = doc["spec"]["content"]["dtypes"]  # the C enum's codes
    stdin = "".join(f"{e['shape']['m']} {e['shape']['n']} {e['shape']['k']} {dtypes.index(e['dtype'])}\n"
                    for e in doc["entries"])
    out = subprocess.run([str(fill)], input=stdin, capture_output=True, text=True, check=True).stdout
    rows = []
    for e, line in zip(doc["entries"], out.splitlines(), strict=True):
        names, block_dim, *values = line.split()
        assert names.rstrip(",").split(",") == fields
        rows.append((e, int(block_dim), dict(zip(fields, map(int, values), strict=True))))
    return rows


@pytest.mark.parametrize("order, want", [("m_first", 0), ("n_first", 1)])
def test_pinned_iterate_order(tmp_path, order, want):
    """``type: fixed`` pins iterate_order: the header compiles and iterateOrder is the pinned one."""
    text = SMALL_SPEC.read_text().replace(ORDER, f"iterate_order: {{type: fixed, value: {order}}}")
    assert text != SMALL_SPEC.read_text()
    for e, _, got in _fill(tmp_path, text, CUBE_FIELDS):
        assert e["params"]["iterate_order"] == order and got["iterateOrder"] == want


def test_iterate_order_whatever_the_choice_order(tmp_path):
    """The C enum codes follow the spec's choice order; iterateOrder stays 0 = M first, 1 = N first."""
    text = SMALL_SPEC.read_text().replace(ORDER, "iterate_order: {type: categorical, choices: [n_first, m_first]}")
    flip = iter(range(1000))

    def edit(e):
        e["params"]["iterate_order"] = ("m_first", "n_first")[next(flip) % 2]

    rows = _fill(tmp_path, text, CUBE_FIELDS, edit)
    assert {e["params"]["iterate_order"] for e, _, _ in rows} == {"m_first", "n_first"}
    for e, _, got in rows:
        assert got["iterateOrder"] == ("m_first", "n_first").index(e["params"]["iterate_order"])


def test_vector_only_matmul(tmp_path):
    """No cube unit, so no TCubeTiling: one field per dim and per param, as for other ops."""
    fields = ["m", "n", "k", "tileM", "bufferNum", "cores"]
    rows = _fill(tmp_path, VECTOR_ONLY, fields)
    header = (tmp_path / "tiling.h").read_text()
    assert "singleCoreM" not in header
    for e, block_dim, got in rows:
        p, s = e["params"], e["shape"]
        assert got == {"m": s["m"], "n": s["n"], "k": s["k"], "tileM": p["tile_m"],
                       "bufferNum": p["buffer_num"], "cores": p["cores"]}
        assert block_dim == p["cores"]


def test_vector_only_spec_with_cube_params_has_neither_cube_fields_nor_unit(tmp_path):
    """A vector-only spec that still declares the cube's params (units: [cube]), as one copied
    from the bundled matmul spec does: its TilingData had every cube field (always INT32_MIN) and a
    unit field (matmul has two units, the spec one); the C params struct had the cube params too."""
    cube = "".join(f"  {name}: {{type: fixed, value: 1, units: [cube]}}\n" for name in ("base_m", "base_n", "db_l0c"))
    cube += "  iterate_order: {type: categorical, choices: [m_first, n_first], units: [cube]}\n"
    rows = _fill(tmp_path, VECTOR_ONLY + cube, ["m", "n", "k", "tileM", "bufferNum", "cores"])
    assert len(rows) == 2
    tiling = (tmp_path / "tiling.h").read_text()
    assert "baseM" not in tiling and "iterateOrder" not in tiling and "set_unit" not in tiling
    assert cli(["export", str(tmp_path), "--format", "c", "-o", str(tmp_path / "t.h")]) == 0
    header = (tmp_path / "t.h").read_text()
    assert "base_m" not in header and "ITERATE_ORDER" not in header and "UNIT_CUBE" not in header
    assert "AUTOTILE_MATMUL_UNIT_VECTOR = 0," in header and "AUTOTILE_MATMUL_BF16" not in header


SIGMOID = """\
op: sigmoid
hardware: ascend910b2
dtypes: [fp16]
units: {units}
shapes: [{{n: 1000}}]
params:
  tile_len: {{type: int, low: 16, high: "max(16, shape.n)", pow2: true}}
  variant: {{type: categorical, choices: {{vector: {vector}, scalar: [exact, poly, lut_nearest]}}}}
"""


def test_tiling_data_shared_only_where_codes_mean_the_same(tmp_path):
    """Two SoCs' sigmoid tables whose specs list the units, or the vector's variants, in another
    order have the same TilingData fields, but code 0 means vector in one and scalar in the other:
    both headers in one translation unit compiled, and the device kernel, reading one TilingData
    layout without the host enums, would run the wrong path. Now the second include is an #error
    naming the field; the same order still shares the class, and the header says the codes."""
    (tmp_path / "register").mkdir()
    (tmp_path / "register" / "tilingdata_base.h").write_text(STAND_IN)
    specs = {"soc_a": ("[vector, scalar]", "[exact, poly]"), "soc_b": ("[scalar, vector]", "[exact, poly]"),
             "soc_c": ("[vector, scalar]", "[poly, exact]"), "soc_d": ("[vector, scalar]", "[exact, poly]")}
    for prefix, (units, vector) in specs.items():
        (tmp_path / f"{prefix}.yaml").write_text(SIGMOID.format(units=units, vector=vector))
        write_table(tmp_path / f"{prefix}.json", default_table(tmp_path / f"{prefix}.yaml", lambda s, d: "vector"))
        assert cli(["export", str(tmp_path / f"{prefix}.json"), "--format", "ascendc", "--prefix", prefix,
                    "-o", str(tmp_path / f"{prefix}.h")]) == 0
    text = (tmp_path / "soc_b.h").read_text()
    assert " *   unit: 0 scalar, 1 vector (enum soc_b_sigmoid_unit)" in text
    assert " *   variant: 0 exact, 1 poly, 2 lut_nearest (enum soc_b_sigmoid_variant)" in text

    def compile_both(second):
        (tmp_path / "main.cc").write_text(f'#include "soc_a.h"\n#include "{second}.h"\n'
                                          "int main() { return 0; }\n")
        return subprocess.run(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I.", "-fsyntax-only",
                               "main.cc"], cwd=tmp_path, capture_output=True, text=True)

    for second, field, codes in (("soc_b", "unit", "0 scalar, 1 vector"),
                                 ("soc_c", "variant", "0 poly, 1 exact, 2 lut_nearest")):
        r = compile_both(second)
        assert r.returncode != 0, r.stderr
        assert f"SigmoidTilingData is already defined with other {field} codes by another header (here {codes};" \
            in r.stderr, r.stderr
        assert "other fields" not in r.stderr, r.stderr
    r = compile_both("soc_d")
    assert r.returncode == 0, r.stderr
