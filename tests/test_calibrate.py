"""autotile calibrate: strict CSV reading, errors through the engine, and the fit."""

import json

import pytest

from autotile.cli import run
from autotile.hardware import load_profile
from autotile.sim import calibrate as C

HEADER = "chip,op,dtype,m,k,n,elems,repeat,cycles,series\n"


def test_bundled_profile_meets_acceptance(capsys, csv_path):
    assert run(["calibrate", "--hw", "ascend910b2", "--measurements", str(csv_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["rows"]) == 596
    assert out["median_abs_rel_error"] <= 0.10
    assert out["p90_abs_rel_error"] <= 0.25
    assert {"line", "measured", "predicted", "rel_error", "far_off"} <= set(out["rows"][0])
    assert len(out["worst"]) > 0


def test_predictions_go_through_micro(hw):
    row = C.Measurement(2, "x", "mmad", "fp16", 32, 16, 1024, None, None, 130.0, "back_to_back")
    assert C.predict(hw, row) == pytest.approx(128 + hw.cube.issue_cycles)
    iso = C.Measurement(3, "x", "mmad", "fp16", 16, 16, 16, None, None, 25.0, "isolated")
    assert C.predict(hw, iso) == pytest.approx(1 + hw.cube.issue_cycles + hw.cube.latency_cycles)


def _write(tmp_path, body, name="m.csv"):
    p = tmp_path / name
    p.write_text(body)
    return str(p)


@pytest.mark.parametrize("body,needle", [
    ("chip,op,dtype,m,k,n,elems,repeat,series\nx,mmad,fp16,16,16,16,,,isolated\n", ":1: cycles: missing column"),
    (HEADER + "x,mmad,fp16,16,16,16,,,abc,isolated\n", ":2:9: cycles: expected a number"),
    (HEADER + "x,vfrob,fp16_fp16,,,,128,1,3.0,vector\n", ":2:2: op: unknown op"),
    (HEADER + "x,conv2d,fp16,,,,128,1,3.0,vector\n", ":2:2: op: unknown op"),
    (HEADER + "x,mmad,fp16,16,16,16,,,3,sometimes\n", ":2:10: series:"),
    (HEADER + "x,vexp_typo,fp16_fp16,,,,128,1,3.0,vector\n", ":2:2: op: unknown op 'vexp_typo'"),
    (HEADER + "x,vexp,fp16_fp16_fp16,,,,128,1,3.0,vector\n", ":2:3: dtype: vexp takes a signature of 2 dtypes"),
])
def test_strict_csv_errors(tmp_path, capsys, body, needle):
    path = _write(tmp_path, body)
    assert run(["calibrate", "--measurements", path]) == 2
    err = capsys.readouterr().err
    assert path in err and needle in err and err.count("\n") == 1


def test_fit_recovers_constants_and_writes_profile(tmp_path, capsys, hw):
    # synthetic measurements from known constants: the fitter must find them again
    rows = [f"x,mmad,fp16,32,16,{n},,,{2.5 + 2 * n / 16:.4f},back_to_back" for n in (16, 64, 256, 1024)]
    rows += [f"x,mmad,fp16,16,16,{n},,,{2.5 + n / 16 + 20:.4f},isolated" for n in (16, 64, 240)]
    rows += [f"x,vadd,fp32_fp32_fp32,,,,{64 * r},{r},{max(4.0, 1.0 + 3.0 * r):.4f},vector" for r in (1, 2, 4, 8, 16, 32, 300)]
    rows += [f"x,vsqrt,fp16_fp16,,,,{128 * r},{r},{max(5.0, 0.5 + 1.5 * r):.4f},vector" for r in (1, 2, 4, 8, 16, 32)]
    csv = _write(tmp_path, HEADER + "\n".join(rows) + "\n")
    out = tmp_path / "fit.yaml"
    assert run(["calibrate", "--hw", "ascend910b2", "--measurements", csv, "-o", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["after"]["p90_abs_rel_error"] < 0.01
    fitted = load_profile(str(out))
    assert fitted.cube.issue_cycles == pytest.approx(2.5, abs=0.05)
    assert fitted.cube.latency_cycles == pytest.approx(20.0, abs=0.2)
    v = fitted.vector["vadd"]["fp32_fp32_fp32"]
    assert (v.per_repeat, v.startup, v.min_cycles) == pytest.approx((3.0, 1.0, 4.0), abs=0.05)
    assert "vsqrt" in fitted.vector  # an instruction the profile lacked is added
    assert fitted.notes["cube.issue_cycles"].startswith("calibrated: fitted to m.csv (7 rows")
    assert fitted.vector["vexp"] == hw.vector["vexp"]  # untouched constants stay


def test_far_off_rows_are_flagged(tmp_path, hw):
    rows = [f"x,vexp,fp16_fp16,,,,{128 * r},{r},{3.9 * r:.3f},vector" for r in range(1, 12)]
    rows.append("x,vexp,fp16_fp16,,,,1280,10,400.0,vector")  # a broken row
    rows = C.read_measurements(_write(tmp_path, HEADER + "\n".join(rows) + "\n"))
    fit = C.fit(hw, rows, "t.csv", "today")
    flagged = [r for r in fit.after.rows if r.far_off]
    assert [r.line for r in flagged] == [13]
    assert fit.after.median_abs_rel_error < 0.02  # the robust loss did not bend to it


@pytest.mark.parametrize("target", ["m.csv", "./m.csv", "link.csv", "p.yaml"])
def test_fit_never_writes_over_its_inputs(tmp_path, run_cli, monkeypatch, target):
    from autotile.hardware.profile import bundled_path

    monkeypatch.chdir(tmp_path)
    body = HEADER + "".join(f"x,vadd,fp16_fp16_fp16,,,,{128 * r},{r},{6.0 + 2 * r},vector\n" for r in (1, 4, 16))
    _write(tmp_path, body)
    (tmp_path / "link.csv").symlink_to("m.csv")
    (tmp_path / "p.yaml").write_text(bundled_path("ascend910b2").read_text())
    before = {p: (tmp_path / p).read_text() for p in ("m.csv", "p.yaml")}
    code, out, err = run_cli("calibrate", "--hw", "p.yaml", "--measurements", "m.csv", "-o", target)
    flag = "--hw" if target == "p.yaml" else "--measurements"
    assert code == 2 and out == "" and f"-o {target}: is the {flag} file this fit reads" in err, err
    assert {p: (tmp_path / p).read_text() for p in before} == before
