"""Bundled hardware profiles: all four load strictly and carry a note per constant."""

import json

from autotile.cli import run
from autotile.hardware import bundled_names, load_profile

EXPECTED = {"ascend910b2": (24, 48, 1.8), "ascend910b4": (20, 40, 1.5), "ascend910": (32, 32, 1.0),
            "ascend310p3": (8, 15, None)}


def test_hw_list_shows_all_four(capsys):
    assert run(["hw", "list", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(EXPECTED) <= set(rows)
    for name, (cube, vec, clock) in EXPECTED.items():
        assert (rows[name]["cube_cores"], rows[name]["vector_cores"]) == (cube, vec)
        if clock:
            assert rows[name]["clock_ghz"] == clock


def test_chip_table_figures():
    assert load_profile("ascend910b4").l2_bytes == 96 << 20
    a = load_profile("ascend910")
    assert (a.l1_bytes, a.l0c_bytes, a.ub_bytes, a.l2_bytes) == (1 << 20, 256 << 10, 256 << 10, 32 << 20)
    p = load_profile("ascend310p3")
    assert (p.l1_bytes, p.ub_bytes, p.l2_bytes) == (1 << 20, 248 << 10, 16 << 20)


def test_derived_profiles_label_borrowed_costs():
    b2 = load_profile("ascend910b2")
    for name in ("ascend910b4", "ascend910", "ascend310p3"):
        p = load_profile(name)
        assert p.cube == b2.cube and p.vector == b2.vector
        note = p.notes["cube.issue_cycles"]
        assert "910B" in note and ("ASSUMPTION" in note or "same AI Core" in note)


def test_default_profile_is_fitted_and_covers_library_ops():
    hw = load_profile("ascend910b2")
    assert hw.notes["cube.latency_cycles"].startswith("calibrated: fitted to ascend910b_microops.csv")
    for op in ("vcmp", "vsel", "vgather", "vreduce", "vcmax", "vcmin", "vcopy", "vbrcb", "vdup", "vmuls",
               "vadds", "vexp", "vln", "vrec", "vdiv", "vconv", "vrelu", "vmax"):
        assert op in hw.vector, op
    for op in ("add", "mul", "div", "exp", "ln", "cmp", "load", "store"):
        assert op in hw.scalar, op
    assert hw.notes["vector.ops.vgather.fp16_fp16"].startswith("source: estimate")


def test_every_bundled_profile_loads():
    for name in bundled_names():
        assert load_profile(name).content_hash()
