"""The selector's on-chip sizes are those every unit holds, and decide --data on_chip leaves out
a unit whose buffers cannot hold the shape (none left: refused)."""

from __future__ import annotations

import json

from autotile.hardware import load_profile
from autotile.kernels import registry
from autotile.models import crossover as X
from autotile.models import dataset as D

HW = load_profile()


def test_on_chip_limits_and_the_selector_range():
    """Up to 2**16 on chip, fp16 weighted_sum's trace form needed 128 KiB an operand in L0A."""
    assert X.on_chip_limit("weighted_sum", "vector", "fp16", HW) == 49136
    assert X.on_chip_limit("elementwise", "vector", "fp32", HW) == 16384
    top = D.PLACEMENTS["on_chip"][1]
    for name in ("ascend910b2", "ascend910", "ascend310p3"):
        hw = load_profile(name)
        for op in ("weighted_sum", "sigmoid", "elementwise"):
            info = registry.get(op)
            assert "on_chip" in info.placements
            for dtype in info.dtypes:
                for u in (u for u in info.units if info.supports(u, dtype) and not hw.dtype_problem(u, dtype)):
                    assert X.on_chip_limit(op, u, dtype, hw) >= top, (name, op, dtype, u)


def test_decide_on_chip_leaves_out_units_that_cannot_hold_the_data(run_cli, tmp_path, hw):
    from tests.test_selector_cli import _save

    _save("weighted_sum", ("vector", "cube", "scalar"), hw, tmp_path)
    args = ("decide", "weighted_sum", "--data", "on_chip", "--models", str(tmp_path))
    code, out, err = run_cli(*args, "--dtype", "fp32", "--shape", "n=30000", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["unit"] == "cube" and set(got["predicted_cycles"]) == {"cube"}
    assert "up to n=24,560 only" in got["excluded"]["vector"]
    code, out, err = run_cli(*args, "--dtype", "fp16", "--shape", "n=200000")
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "does not fit on chip" in err and "use --data gm" in err
    code, out, _ = run_cli(*args[:3], "gm", *args[4:], "--dtype", "fp16", "--shape", "n=200000", "--json")
    assert code == 0 and json.loads(out)["excluded"] == {}


def test_selector_unfit_is_empty_in_gm_and_without_a_profile():
    from autotile.models.selector import UnitSelector

    sel = UnitSelector("weighted_sum")
    sel.units = ["vector", "cube"]
    assert sel.unfit({"n": 1 << 20}, "fp16", "gm", HW) == {}
    assert sel.unfit({"n": 1 << 20}, "fp16", "on_chip", None) == {}
    assert set(sel.unfit({"n": 1 << 20}, "fp16", "on_chip", HW)) == {"vector", "cube"}
    assert sel.unfit({"n": 16384}, "fp16", "on_chip", HW) == {}
