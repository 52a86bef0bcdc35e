"""The 910A and 310P cubes compute fp16 and int8, not fp32 (their vectors do): fp32 there is
Vector (or Scalar) work, skipped cleanly by tune, space and lookup, and refused in one line where
a command asks for the cube itself."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotile.hardware import load_profile
from autotile.space import load_spec
from autotile.tune.driver import Options, plans

STUDIES = Path(__file__).resolve().parents[1] / "studies"
NO_FP32_CUBE = ("ascend910", "ascend310p3")


def _spec(tmp_path, study: str, hw: str, dtypes: str, shapes: str | None = None) -> str:
    """A bundled study moved onto ``hw`` with ``dtypes`` (and ``shapes``)."""
    lines = []
    for line in (STUDIES / f"{study}.yaml").read_text().splitlines():
        if line.startswith("hardware:"):
            line = f"hardware: {hw}"
        elif line.startswith("dtypes:"):
            line = f"dtypes: {dtypes}"
        elif shapes and line.startswith("shapes:"):
            line = f"shapes: {shapes}"
        lines.append(line)
    path = tmp_path / f"{study}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.parametrize("name", NO_FP32_CUBE)
def test_the_profiles_give_their_cube_no_fp32_rate(name):
    """Their own header says the core computes fp16 and int8 (fp32 on the vector), and CANN's
    aclnnMm refuses FLOAT kept as FLOAT on these products, yet both gave the cube 2048 fp32
    MACs/cycle, so fp32 cube matmul and weighted_sum were tuned and exported for them."""
    hw = load_profile(name)
    assert sorted(hw.cube.macs_per_cycle) == ["fp16", "int8"]
    assert "fp32" in hw.dtypes and hw.dtype_problem("vector", "fp32") is None
    assert hw.dtype_problem("cube", "fp32") == (f"the cube of {name} has no fp32 rate "
                                               "(cube.macs_per_cycle: fp16, int8)")


def test_tune_plans_leave_out_fp32_on_the_cube(tmp_path):
    """weighted_sum in fp16 and fp32 on all three units of the 310P: the fp32 cube study is left
    out (it stopped the whole tune with 'dtype: the cube of ascend310p3 has no fp32 rate')."""
    spec = load_spec(_spec(tmp_path, "weighted_sum", "ascend310p3", "[fp16, fp32]", "[{n: 512}]"))
    got = sorted((p.space.dtype, p.space.unit) for p in plans(spec, Options(out=tmp_path)))
    assert got == [("fp16", "cube"), ("fp16", "scalar"), ("fp16", "vector"), ("fp32", "scalar"), ("fp32", "vector")]


def test_space_lists_no_fp32_cube_space(tmp_path, run_cli):
    path = _spec(tmp_path, "global_sum", "ascend910", "[fp16, fp32]", "[{n: 4096}]")
    code, out, err = run_cli("space", path, "--dtype", "fp32", "--json")
    assert code == 0, err
    assert {r["unit"] for r in json.loads(out)["spaces"]} == {"vector", "scalar"}


@pytest.mark.parametrize("cmd", [
    ("simulate", "{mm}", "--shape", "m=256,n=256,k=256"),
    ("micro", "mmad", "m=16,k=16,n=16", "--dtype", "fp32", "--hw", "ascend310p3"),
    ("crossover", "weighted_sum", "--hw", "ascend310p3", "--dtype", "fp32"),
])
def test_asking_the_cube_for_fp32_is_one_line(tmp_path, run_cli, cmd):
    """A matmul spec in fp32 on the 310P, an fp32 Mmad, and a vector/cube crossover in fp32 (it
    reported 'cube stays faster from nowhere', as if the cube had run): each refused in one line."""
    mm = _spec(tmp_path, "matmul", "ascend310p3", "[fp32]")
    code, out, err = run_cli(*(c.format(mm=mm) for c in cmd))
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert "the cube of ascend310p3 has no fp32 rate" in err and "Traceback" not in err


def test_lookup_default_answers_fp32_off_the_cube(tmp_path, run_cli):
    """A 310P weighted_sum table asked at an untuned fp32 size: the default step tried the cube's
    default too and stopped with the cube's dtype error; it answers the fastest other default."""
    from tablekit import default_table

    spec = _spec(tmp_path, "weighted_sum", "ascend310p3", "[fp16, fp32]", "[{n: 512}]")
    table = tmp_path / "table.json"
    table.write_text(json.dumps(default_table(spec, unit_of=lambda s, d: "vector")))
    code, out, err = run_cli("lookup", str(table), "--shape", "n=3000", "--dtype", "fp32", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["match"] == "default" and got["unit"] in ("vector", "scalar"), got


def test_decide_leaves_the_cube_out_of_fp32(tmp_path, run_cli):
    """A unit selector predicts every unit it was trained with, whatever the dtype: on the 310P
    in fp32 it named the cube (fastest in its fp16 rows), a unit that cannot run it."""
    from test_model_checks import synth_rows

    from autotile.models import dataset as D
    from autotile.models import store
    from autotile.models.selector import UnitSelector

    hw = load_profile("ascend310p3")
    sel = UnitSelector("weighted_sum").fit(synth_rows("weighted_sum", ("cube", "vector", "scalar"),
                                                      dtypes=("fp16", "fp32")))
    store.save_selector(sel, hw, D.fingerprint(hw), path=store.path_for("units", "weighted_sum", tmp_path, hw))
    code, out, err = run_cli("decide", "weighted_sum", "--shape", "n=4096", "--dtype", "fp32", "--hw",
                             "ascend310p3", "--models", str(tmp_path), "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["unit"] == "vector" and "cube" not in got["predicted_cycles"], got
    code, out, _ = run_cli("decide", "weighted_sum", "--shape", "n=4096", "--dtype", "fp16", "--hw",
                           "ascend310p3", "--models", str(tmp_path), "--json")
    assert code == 0 and json.loads(out)["unit"] == "cube"


def test_simulate_without_unit_takes_the_first_unit_that_computes_the_dtype(tmp_path, run_cli):
    """matmul_small (units cube, vector) on the 310P in fp32: `simulate` without --unit took the
    cube and stopped ('no fp32 rate'); the vector kernel is the first unit that runs it."""
    spec = _spec(tmp_path, "matmul_small", "ascend310p3", "[fp32]")
    code, out, err = run_cli("simulate", spec, "--shape", "m=64,n=64,k=64", "--json")
    assert code == 0, err
    assert json.loads(out)["unit"] == "vector"
    code, _, err = run_cli("simulate", spec, "--shape", "m=64,n=64,k=64", "--unit", "cube")
    assert code == 2 and "no fp32 rate" in err  # asked for by name: still refused
