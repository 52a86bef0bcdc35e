"""``Spec.units_for``: the units of a spec that compute a dtype on its chip. The tune plans and
the lookup's default step walk these; walking ``spec.units`` built a space on a unit without the
dtype, and ``Space.of`` refused it (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from autotile.space import load_spec
from autotile.tables.lookup import Lookup
from autotile.tune import driver

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "autotile" / "hardware" / "ascend910b2.yaml"


def _no_cube_bf16(tmp_path) -> Path:
    """weighted_sum bf16 on vector, cube and scalar, on a 910B2 copy whose cube has no bf16 rate."""
    text = PROFILE.read_text()
    head, rates = text.split("  macs_per_cycle:\n", 1)
    rates = "\n".join(s for s in rates.split("\n") if not s.startswith("    bf16:"))
    hw = tmp_path / "no_cube_bf16.yaml"
    hw.write_text(head + "  macs_per_cycle:\n" + rates)
    spec = (ROOT / "studies" / "weighted_sum.yaml").read_text()
    spec = spec.replace("hardware: ascend910b2", f"hardware: {hw}").replace(
        "dtypes: [fp16, fp32, bf16]", "dtypes: [fp16, bf16]").replace(
        "n: [64, 512, 4096, 65536, 1048576]", "n: [4096]")
    path = tmp_path / "ws.yaml"
    path.write_text(spec)
    return path


def test_a_unit_without_the_chips_rate_is_left_out(tmp_path):
    spec = load_spec(str(_no_cube_bf16(tmp_path)))
    assert spec.hardware.dtype_problem("cube", "bf16") is not None
    assert spec.units_for("bf16") == ("vector", "scalar")
    assert spec.units_for("fp16") == ("vector", "cube", "scalar")


def test_tune_plans_skip_a_unit_without_the_chips_rate(tmp_path):
    """It said "dtype: the cube of ascend910b2 has no bf16 rate" and tuned nothing."""
    spec = load_spec(str(_no_cube_bf16(tmp_path)))
    pairs = [(p.space.dtype, p.space.unit) for p in driver.plans(spec, driver.Options())]
    assert pairs == [("fp16", "vector"), ("fp16", "cube"), ("fp16", "scalar"), ("bf16", "vector"),
                     ("bf16", "scalar")]


def test_lookup_default_skips_a_unit_without_the_chips_rate(tmp_path):
    from tablekit import default_table

    doc = default_table(_no_cube_bf16(tmp_path), lambda shape, dtype: "vector")
    got = Lookup(doc).find({"n": 5000}, "bf16")
    assert got.match == "default" and got.unit in ("vector", "scalar")
    assert got.how.startswith("the fastest default of vector/scalar on the simulator")


def test_space_counts_only_the_units_that_compute_the_dtype(tmp_path, run_cli):
    """``autotile space`` exited 2 on the cube's missing bf16 rate instead of counting the others."""
    code, out, err = run_cli("space", str(_no_cube_bf16(tmp_path)), "--json")
    assert code == 0, err
    got = json.loads(out)
    rows = got["spaces"]
    assert sorted((r["dtype"], r["unit"]) for r in rows) == [
        ("bf16", "scalar"), ("bf16", "vector"), ("fp16", "cube"), ("fp16", "scalar"), ("fp16", "vector")]
