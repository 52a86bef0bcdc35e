"""autotile calibrate: strict CSV reading, errors through the engine, and the fit."""

import json

import pytest

from autotile.cli import run
from autotile.hardware import load_profile
from autotile.sim import calibrate as C
from autotile.sim import fitting as F

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
    ("chip,op,dtype,m,k,n,elems,repeat,series\n910b1,mmad,fp16,16,16,16,,,isolated\n", ":1: cycles: missing column"),
    (HEADER + "910b1,mmad,fp16,16,16,16,,,abc,isolated\n", ":2:9: cycles: expected a number"),
    (HEADER + "910b1,vfrob,fp16_fp16,,,,128,1,3.0,vector\n", ":2:2: op: unknown op"),
    (HEADER + "910b1,conv2d,fp16,,,,128,1,3.0,vector\n", ":2:2: op: unknown op"),
    (HEADER + "910b1,mmad,fp16,16,16,16,,,3,sometimes\n", ":2:10: series:"),
    (HEADER + "910b1,vexp_typo,fp16_fp16,,,,128,1,3.0,vector\n", ":2:2: op: unknown op 'vexp_typo'"),
    (HEADER + "910b1,vexp,fp16_fp16_fp16,,,,128,1,3.0,vector\n", ":2:3: dtype: vexp takes a signature of 2 dtypes"),
])
def test_strict_csv_errors(tmp_path, capsys, body, needle):
    path = _write(tmp_path, body)
    assert run(["calibrate", "--measurements", path]) == 2
    err = capsys.readouterr().err
    assert path in err and needle in err and err.count("\n") == 1


def test_fit_recovers_constants_and_writes_profile(tmp_path, capsys, hw):
    # synthetic measurements from known constants: the fitter must find them again
    rows = [f"910b1,mmad,fp16,32,16,{n},,,{2.5 + 2 * n / 16:.4f},back_to_back" for n in (16, 64, 256, 1024)]
    rows += [f"910b1,mmad,fp16,16,16,{n},,,{2.5 + n / 16 + 20:.4f},isolated" for n in (16, 64, 240)]
    rows += [f"910b1,vadd,fp32_fp32_fp32,,,,{64 * r},{r},{max(5.0, 1.0 + 3.0 * r):.4f},vector" for r in (1, 2, 4, 8, 16, 32, 255)]
    rows += [f"910b1,vsqrt,fp16_fp16,,,,{128 * r},{r},{max(5.0, 0.5 + 1.5 * r):.4f},vector" for r in (1, 2, 4, 8, 16, 32)]
    csv = _write(tmp_path, HEADER + "\n".join(rows) + "\n")
    out = tmp_path / "fit.yaml"
    assert run(["calibrate", "--hw", "ascend910b2", "--measurements", csv, "-o", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["after"]["p90_abs_rel_error"] < 0.01
    fitted = load_profile(str(out))
    assert fitted.cube.issue_cycles == pytest.approx(2.5, abs=0.05)
    assert fitted.cube.latency_cycles == pytest.approx(20.0, abs=0.2)
    v = fitted.vector["vadd"]["fp32_fp32_fp32"]
    assert (v.per_repeat, v.startup, v.min_cycles) == pytest.approx((3.0, 1.0, 5.0), abs=0.05)
    assert "vsqrt" in fitted.vector  # an instruction the profile lacked is added
    assert fitted.notes["cube.issue_cycles"].startswith("calibrated: fitted to m.csv (7 rows")
    assert fitted.vector["vexp"] == hw.vector["vexp"]  # untouched constants stay


def test_far_off_rows_are_flagged(tmp_path, hw):
    rows = [f"910b1,vexp,fp16_fp16,,,,{128 * r},{r},{3.9 * r:.3f},vector" for r in range(1, 12)]
    rows.append("910b1,vexp,fp16_fp16,,,,1280,10,400.0,vector")  # a broken row
    rows = C.read_measurements(_write(tmp_path, HEADER + "\n".join(rows) + "\n"))
    fit = F.fit(hw, rows, "t.csv", "today")
    flagged = [r for r in fit.after.rows if r.far_off]
    assert [r.line for r in flagged] == [13]
    assert fit.after.median_abs_rel_error < 0.02  # the robust loss did not bend to it


@pytest.mark.parametrize("target", ["m.csv", "./m.csv", "link.csv", "p.yaml"])
def test_fit_never_writes_over_its_inputs(tmp_path, run_cli, monkeypatch, target):
    from autotile.hardware.profile import bundled_path

    monkeypatch.chdir(tmp_path)
    body = HEADER + "".join(f"910b1,vadd,fp16_fp16_fp16,,,,{128 * r},{r},{6.0 + 2 * r},vector\n" for r in (1, 4, 16))
    _write(tmp_path, body)
    (tmp_path / "link.csv").symlink_to("m.csv")
    (tmp_path / "p.yaml").write_text(bundled_path("ascend910b2").read_text())
    before = {p: (tmp_path / p).read_text() for p in ("m.csv", "p.yaml")}
    code, out, err = run_cli("calibrate", "--hw", "p.yaml", "--measurements", "m.csv", "-o", target)
    flag = "--hw" if target == "p.yaml" else "--measurements"
    assert code == 2 and out == "" and f"-o {target}: is the {flag} file this fit reads" in err, err
    assert {p: (tmp_path / p).read_text() for p in before} == before


# -- rows the profile's model cannot take, and constants the rows cannot determine --------------

@pytest.mark.parametrize("row,needle", [
    ("910b1,vadd,fp16_fp16_fp16,,,,128,99999,6.058,vector", ":2:8: repeat: expected 1..max_repeat (255 in ascend910b2)"),
    ("910b1,vadd,fp16_fp16_fp16,,,,99999,,6.058,vector", ":2:7: elems: 99999 elements take 782 repeats of 128 lanes"),
])
@pytest.mark.parametrize("fitting", [False, True])
def test_a_vector_row_is_one_instruction(tmp_path, run_cli, row, needle, fitting):
    path = _write(tmp_path, HEADER + row + "\n")
    code, _, err = run_cli("calibrate", "--measurements", path, *(["-o", str(tmp_path / "f.yaml")] if fitting else []))
    assert code == 2 and f"{path}{needle}" in err and err.count("\n") == 1, err
    assert not (tmp_path / "f.yaml").exists()


def test_one_isolated_mmad_changes_no_cube_constant(tmp_path, run_cli, hw):
    csv = _write(tmp_path, HEADER + "910b1,mmad,fp16,16,16,16,,,24.983,isolated\n")
    out = tmp_path / "fit.yaml"
    code, stdout, _ = run_cli("calibrate", "--measurements", csv, "-o", str(out), "--json")
    assert code == 0
    res = json.loads(stdout)
    assert res["constants"] == {}
    assert set(res["not_determined"]) == {"cube.issue_cycles", "cube.latency_cycles", "cube.macs_per_cycle.fp16"}
    assert res["not_determined"]["cube.issue_cycles"]["value"] == hw.cube.issue_cycles
    fitted = load_profile(str(out))
    assert fitted.cube == hw.cube and fitted.notes["cube.issue_cycles"] == hw.notes["cube.issue_cycles"]


def test_back_to_back_rows_alone_leave_the_latency(tmp_path, hw):
    rows = [f"910b1,mmad,fp16,32,16,{n},,,{2.5 + 2 * n / 16:.4f},back_to_back" for n in (16, 64, 256, 1024)]
    fit = F.fit(hw, C.read_measurements(_write(tmp_path, HEADER + "\n".join(rows) + "\n")), "m.csv", "today")
    assert fit.profile.cube.issue_cycles == pytest.approx(2.5, abs=0.05)
    assert fit.profile.cube.latency_cycles == hw.cube.latency_cycles
    assert ("cube", "issue_cycles") in fit.updates and ("cube", "latency_cycles") not in fit.updates
    assert set(fit.undetermined) == {("cube", "latency_cycles")}


def test_vector_constants_the_rows_cannot_determine_are_kept(tmp_path, hw):
    # one repeat count: nothing; a line without a short instruction on the floor: not min_cycles
    rows = ["910b1,vadd,fp16_fp16_fp16,,,,128,1,6.058,vector"]
    rows += [f"910b1,vmul,fp32_fp32_fp32,,,,{64 * r},{r},{1.0 + 3.0 * r:.4f},vector" for r in (8, 16, 32, 64)]
    fit = F.fit(hw, C.read_measurements(_write(tmp_path, HEADER + "\n".join(rows) + "\n")), "m.csv", "today")
    assert fit.profile.vector["vadd"] == hw.vector["vadd"]
    assert ("vector", "ops", "vadd", "fp16_fp16_fp16") not in fit.updates
    assert {p[-1] for p in fit.undetermined if p[2] == "vadd"} == {"startup", "per_repeat", "min_cycles"}
    vmul = fit.profile.vector["vmul"]["fp32_fp32_fp32"]
    assert (vmul.startup, vmul.per_repeat) == pytest.approx((1.0, 3.0), abs=0.05)
    assert vmul.min_cycles == hw.vector["vmul"]["fp32_fp32_fp32"].min_cycles
    assert "min_cycles not determined by them" in fit.updates[("vector", "ops", "vmul", "fp32_fp32_fp32")][1]


def test_a_new_instruction_needs_rows_that_determine_its_line(tmp_path, run_cli):
    csv = _write(tmp_path, HEADER + "910b1,vsqrt,fp16_fp16,,,,128,1,5.0,vector\n")
    code, _, err = run_cli("calibrate", "--measurements", csv, "-o", str(tmp_path / "f.yaml"))
    assert code == 2 and f"{csv}:2:8: repeat: vsqrt fp16_fp16: the profile has no cost for it" in err, err


def test_a_kept_floor_never_exceeds_the_rows(tmp_path, hw):
    # vexp fp16's floor is ~3.97: rows all on a cheaper line keep the floor at most their shortest
    rows = [f"910b1,vexp,fp16_fp16,,,,{128 * r},{r},{0.5 + 1.0 * r:.4f},vector" for r in (2, 4, 8, 16)]
    fit = F.fit(hw, C.read_measurements(_write(tmp_path, HEADER + "\n".join(rows) + "\n")), "m.csv", "today")
    v = fit.profile.vector["vexp"]["fp16_fp16"]
    assert (v.startup, v.per_repeat, v.min_cycles) == pytest.approx((0.5, 1.0, 2.5), abs=0.02)
    assert fit.after.p90_abs_rel_error < 0.01


@pytest.mark.parametrize("row,needle", [("abc,910b1,vadd,fp16_fp16_fp16,,,,128,9,vector", ":2:1: cycles: expected a number"),
                                        ("6.0,910b1,vadd,fp16_fp16_fp16,,,,128,999,vector", ":2:9: repeat: expected 1..max_repeat")])
def test_errors_name_the_files_own_column(tmp_path, run_cli, row, needle):
    path = _write(tmp_path, "cycles,chip,op,dtype,m,k,n,elems,repeat,series\n" + row + "\n")
    code, _, err = run_cli("calibrate", "--measurements", path)
    assert code == 2 and f"{path}{needle}" in err, err


@pytest.mark.parametrize("body,needle", [
    (HEADER + "910b1,mmad,fp16,99999999999999999999,16,16,,,4.8,back_to_back\n",
     ":2:4: m: expected a positive whole number up to 2147483647"),
    (HEADER + "910b1,vadd,fp16_fp16_fp16,,,,99999999999999999999,,4.8,x\n", ":2:7: elems: expected a positive whole"),
    (HEADER + "910b1,mmad,fp16,16,16,16,,99999999999999999999,4.8,isolated\n",
     ":2:8: repeat: expected a positive whole number up to 1000000"),
    (HEADER + "910b1,mmad,fp16,16,16,16,,,1e-308,back_to_back\n", ":2:9: cycles: expected 0.01 to 1e+12 cycles"),
    (HEADER + "910b1,mmad,fp16,16,16,16,,,1e308,back_to_back\n", ":2:9: cycles: expected 0.01 to 1e+12 cycles"),
    (HEADER + "910b1,mmad,fp16,16,16,16,,,1e999,back_to_back\n", ":2:9: cycles: expected a positive finite number"),
    (HEADER.strip() + "," + HEADER + "910b1,mmad,fp16,16,16,16,,,5,back_to_back" + ",a" * 10 + "\n",
     ":1:11: chip: column 'chip' appears twice"),
    (HEADER.strip() + ",note\n910b1,mmad,fp16,16,16,16,,,5,back_to_back,a\n", ":1:11: note: unknown column 'note'"),
    (HEADER.strip() + ",\n910b1,mmad,fp16,16,16,16,,,5,back_to_back,\n", ":1:11: an empty column name"),
    (HEADER + "910b1,mmad,fp16,4096,4096,4096,,,5,back_to_back\n",
     ":2:4: m: mmad fp16: A (4096 x 4096 fp16) needs 33554432 bytes of L0A: expected at most l0a_bytes = 65536"),
    (HEADER + "910b1,mmad,fp16,32,16,1040,,,5,back_to_back\n",  # one fractal past the CSV's 32 x 16 x 1024
     ":2:4: m: mmad fp16: C (32 x 1040 fp32) needs 133120 bytes of L0C: expected at most l0c_bytes = 131072"),
    (HEADER + "910b1,vadd,fp16_fp16_fp32,,,,,255,5,vector\n",  # 128 lanes a repeat, 8 B each
     ":2:8: repeat: vadd fp16_fp16_fp32: src0 (32640 fp16) + src1 (32640 fp16) + dst (32640 fp32) need 261120 "
     "bytes of UB: expected at most ub_bytes = 196608"),
    # a short row named neither column nor field: "m.csv:2: expected 10 columns, got 9"
    (HEADER + "910b1,mmad,fp16,16,16,16,,,5\n", ":2:10: series: expected 10 columns, got 9"),
    (HEADER + "910b1,mmad,fp16\n", ":2:4: m: expected 10 columns, got 3"),
    (HEADER + "910b1,mmad,fp16,16,16,16,,,5,back_to_back,a\n", ":2:11: expected 10 columns, got 11 (a value past "
     "the last one, series)"),
    # rows that contradict themselves: each column says what the row is, and they must agree
    (HEADER + "910b1,vadd,fp16_fp16_fp16,,,,128,1,4.8,back_to_back\n",
     ":2:10: series: a vector row's series 'back_to_back': expected vector (back_to_back and isolated are Mmad"),
    (HEADER + "910b1,vadd,fp16_fp16_fp16,1,2,3,128,1,4.8,vector\n", ":2:4: m: a vector row (vadd) takes no m, got '1'"),
    (HEADER + "910b1,vexp,fp16_fp16,,,16,128,1,4.8,vector\n", ":2:6: n: a vector row (vexp) takes no n, got '16'"),
    (HEADER + "910b1,mmad,fp16,16,16,16,128,,6.1,isolated\n", ":2:7: elems: an Mmad row takes no elems, got '128'"),
])
@pytest.mark.parametrize("fit", [False, True])
def test_every_row_error_is_located(tmp_path, run_cli, body, needle, fit):
    path = _write(tmp_path, body)
    out = ["-o", str(tmp_path / "fit.yaml")] if fit else []
    code, _, err = run_cli("calibrate", "--hw", "ascend910b2", "--measurements", path, *out)
    assert code == 2 and err.startswith(f"autotile: error: {path}{needle}") and err.count("\n") == 1, err
    assert not (tmp_path / "fit.yaml").exists()


def test_constants_derived_from_a_fitted_one_follow_it(tmp_path, run_cli, hw):
    """A cube 3x slower than the profile's peak refits fp16 to ~1365 MACs/cycle: bf16 ("same rate
    as fp16"), fp32 ("half") and int8 (16x32x16: twice) stayed at 4096, 2048 and 8192, so bf16 ran
    3x faster than fp16; vsub ("same datapath as vadd") kept vadd's old cost. They follow now,
    and the header names the measurements used, not the profile's own."""
    rows = [f"910b1,mmad,fp16,32,16,{n},,,{2.5 + 6 * n / 16:.4f},back_to_back" for n in (16, 64, 256, 1024)]
    rows += [f"910b1,mmad,fp16,16,16,{n},,,{2.5 + 3 * n / 16 + 20:.4f},isolated" for n in (16, 64, 240)]
    rows += [f"910b1,vadd,fp16_fp16_fp16,,,,{128 * r},{r},{max(9.0, 1.0 + 4.0 * r):.4f},vector" for r in (1, 2, 4, 8, 16, 64)]
    out = tmp_path / "fit.yaml"
    code, stdout, _ = run_cli("calibrate", "--measurements", _write(tmp_path, HEADER + "\n".join(rows) + "\n"),
                              "-o", str(out), "--json")
    assert code == 0
    fitted, res = load_profile(str(out)), json.loads(stdout)
    macs = fitted.cube.macs_per_cycle
    assert macs["fp16"] == pytest.approx(4096 / 3, rel=0.02)
    assert (macs["bf16"], macs["fp32"], macs["int8"]) == (macs["fp16"], round(macs["fp16"] / 2), 2 * macs["fp16"])
    assert fitted.vector["vsub"]["fp16_fp16_fp16"] == fitted.vector["vadd"]["fp16_fp16_fp16"]
    assert fitted.vector["vsub"]["fp32_fp32_fp32"] == hw.vector["vsub"]["fp32_fp32_fp32"]  # vadd fp32 not refitted
    assert res["derived"]["cube.macs_per_cycle.fp32"] == {"value": macs["fp32"], "from": "cube.macs_per_cycle.fp16",
                                                         "scale": 0.5}
    assert "follows cube.macs_per_cycle.fp16 x 0.5 as fitted to m.csv" in fitted.notes["cube.macs_per_cycle.fp32"]
    assert fitted.derived == hw.derived  # the relations stay data, for the next fit
    header = [line for line in out.read_text().splitlines() if line.startswith("#")]
    assert "to m.csv" in header[0] and not any("microops" in line for line in header)


# -- rows in dtypes the chip lacks ---------------------------------------------------------------

@pytest.mark.parametrize("chip", ["ascend910", "ascend310p3"])
def test_rows_in_a_dtype_the_chip_lacks_are_skipped_and_counted(capsys, csv_path, chip):
    """The shared CSV's 30 bf16 VCONV rows (lines 283-312) on a chip without bf16 were refused
    (exit 2: 'add it to the profile'), though adding them would give the chip bf16."""
    assert run(["calibrate", "--hw", chip, "--measurements", str(csv_path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["skipped_rows"] == 30 and len(out["rows"]) == 566
    assert f"30 rows not costed, skipped: {chip} has no bf16 (its dtypes: fp32, fp16, int8) (lines 283-312)" in out["notes"]
    assert run(["calibrate", "--hw", chip, "--measurements", str(csv_path)]) == 0
    assert "566 rows (30 not costed: dtypes the chip lacks)" in capsys.readouterr().out


def test_a_fit_leaves_out_rows_the_chip_cannot_run(tmp_path, capsys):
    rows = [f"910,vconv,{sig},,,,{n * r},{r},{3 + r},vector" for sig, n in (("bf16_fp32", 128), ("fp16_fp32", 128))
            for r in (4, 8, 12)]
    path = _write(tmp_path, HEADER + "\n".join(rows) + "\n")
    out = tmp_path / "p.yaml"
    assert run(["calibrate", "--hw", "ascend910", "--measurements", path, "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "3 rows not costed, skipped: ascend910 has no bf16" in text and "before: 3 rows (3 not costed" in text
    fitted = load_profile(str(out))
    assert "bf16" not in fitted.dtypes and fitted.vector["vconv"]["fp16_fp32"].per_repeat == pytest.approx(1.0, rel=0.01)


@pytest.mark.parametrize("extra", ["", "910,vconv,bf16_fp32,,,,128,1,3,vector\n"])
def test_an_op_missing_for_a_dtype_the_chip_has_is_still_refused(tmp_path, capsys, extra):
    path = _write(tmp_path, HEADER + "910,vadd,int8_int8_int8,,,,256,1,3,vector\n" + extra)
    assert run(["calibrate", "--hw", "ascend910", "--measurements", path]) == 2
    err = capsys.readouterr().err
    assert "vector op vadd has no cost for int8_int8_int8 in ascend910" in err and "add it to the profile" in err


@pytest.mark.parametrize("fit", [False, True])
def test_a_file_the_chip_can_run_none_of_is_refused(tmp_path, capsys, fit):
    path = _write(tmp_path, HEADER + "910,vconv,bf16_fp32,,,,128,1,3,vector\n")
    argv = ["calibrate", "--hw", "ascend910", "--measurements", path] + (["-o", str(tmp_path / "p.yaml")] if fit else [])
    assert run(argv) == 2
    err = capsys.readouterr().err
    assert "m.csv:2: no row ascend910 can run (ascend910 has no bf16" in err and err.count("\n") == 1


def test_a_new_signature_whose_short_row_may_be_the_floor_says_so(tmp_path, capsys):
    """Rows at repeat 1 and 10 were told to 'measure it at two or more repeat counts': they are,
    but the repeat-1 row may be the floor, leaving one repeat count on the line."""
    path = _write(tmp_path, HEADER + "910b1,vadd,bf16_bf16_bf16,,,,128,1,6,vector\n"
                  "910b1,vadd,bf16_bf16_bf16,,,,1280,10,20,vector\n")
    assert run(["calibrate", "--measurements", path, "-o", str(tmp_path / "x.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "m.csv:2:8: repeat: vadd bf16_bf16_bf16" in err
    assert ("its 2 rows (repeat 1, 10) leave one repeat count, 10, on the line startup + per_repeat x repeat: "
            "the row at repeat 1 may be the floor (min_cycles) instead") in err
    assert "two or more repeat counts above the floor (longer instructions)" in err


def test_a_new_signature_at_one_repeat_count_says_so(tmp_path, capsys):
    path = _write(tmp_path, HEADER + "910b1,vadd,bf16_bf16_bf16,,,,128,1,6,vector\n910b1,vadd,bf16_bf16_bf16,,,,1280,1,6.1,vector\n")
    assert run(["calibrate", "--measurements", path, "-o", str(tmp_path / "x.yaml")]) == 2
    assert "its 2 rows are all at repeat 1: they cannot separate startup from per_repeat" in capsys.readouterr().err


# -- a refit of a cube constant every dtype shares ---------------------------------------------

FP32_MMADS = "".join(f"910b1,mmad,fp32,32,16,{n},,,{c},back_to_back\n" for n, c in ((16, 8), (32, 12), (64, 20)))


def test_fp32_mmads_moving_the_shared_issue_cost_warn_and_say_so_in_the_notes(tmp_path, capsys):
    """Three fp32 Mmads moved cube.issue_cycles 2.2 -> 4.0 silently (the fp16 anchor then 33%
    off), the fp16 rate and the latency still 'fitted to ascend910b_microops.csv'."""
    out = tmp_path / "p.yaml"
    assert run(["calibrate", "--measurements", _write(tmp_path, HEADER + FP32_MMADS), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("autotile: warning: cube.issue_cycles 2.1999 -> 4, moved by m.csv's "
                                                   "fp32 Mmad rows only, also times fp16, bf16, int8 Mmads")
    assert "cube.latency_cycles, cube.macs_per_cycle.fp16, fitted to other rows with the old value" in err
    p = load_profile(str(out))
    assert p.cube.issue_cycles == pytest.approx(4.0, abs=0.05)
    assert "fp32 Mmad rows only: shared with fp16, bf16, int8, not measured there" in p.notes["cube.issue_cycles"]
    for path in ("cube.latency_cycles", "cube.macs_per_cycle.fp16"):
        assert p.notes[path].startswith("calibrated: fitted to ascend910b_microops.csv")
        assert "since moved (cube.issue_cycles 2.1999 -> 4) by a fit to m.csv's fp32 Mmad rows only" in p.notes[path]


def test_a_refit_to_the_same_rows_keeps_the_caveat_of_what_they_do_not_measure(tmp_path, capsys):
    """Refitting the fp32-only profile to its own rows kept the values but wrote issue_cycles'
    note afresh, without 'fp32 Mmad rows only: shared with ..., not measured there'."""
    csv, once, again = _write(tmp_path, HEADER + FP32_MMADS), tmp_path / "once.yaml", tmp_path / "again.yaml"
    assert run(["calibrate", "--measurements", csv, "-o", str(once)]) == 0
    assert run(["calibrate", "--hw", str(once), "--measurements", csv, "-o", str(again)]) == 0
    assert capsys.readouterr().err.count("warning") == 1  # the first fit's: the refit moves nothing
    a, b = load_profile(str(once)), load_profile(str(again))
    assert b.cube == a.cube
    for path in ("cube.issue_cycles", "cube.macs_per_cycle.fp16"):
        assert b.notes[path].count("not measured there" if path == "cube.issue_cycles" else "since moved") == 1
    assert "fp32 Mmad rows only: shared with fp16, bf16, int8, not measured there" in b.notes["cube.issue_cycles"]


def test_a_refit_that_keeps_the_shared_cube_constants_says_nothing(tmp_path, capsys, csv_path):
    rows = [line for line in open(csv_path).read().splitlines() if ",mmad," in line]
    out = tmp_path / "p.yaml"
    assert run(["calibrate", "--measurements", _write(tmp_path, HEADER + "\n".join(rows) + "\n"), "-o", str(out),
                "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["warnings"] == [] and "since moved" not in load_profile(str(out)).notes["cube.latency_cycles"]


# -- the cube fit: one rate per dtype, bounded by the cube's peak, not by the input profile ------

def _mmad_rows(csv_path, scale=1.0):
    """The shared CSV's Mmad rows (fp16), their cycles times ``scale``."""
    out = []
    for line in open(csv_path).read().splitlines():
        if ",mmad," in line:
            head, cycles, series = line.rsplit(",", 2)
            out.append(f"{head},{float(cycles) * scale:.4f},{series}")
    return out


def _predicted(hw, dtype, sizes):
    """Mmad rows of ``dtype`` at ``sizes`` (m, k, n, series) timed by ``hw`` itself: an exact fit."""
    return [f"910b1,mmad,{dtype},{m},{k},{n},,,{C.predict(hw, C.Measurement(0, 'x', 'mmad', dtype, m, k, n, None, None, 1.0, s)):.4f},{s}"
            for m, k, n, s in sizes]


def _int8_rows(hw):
    """int8 Mmads (16x32x16 fractals, 8192 MACs/cycle in the bundled profile) as ``hw`` times them."""
    return _predicted(hw, "int8", [(32, 32, n, "back_to_back") for n in (16, 64, 256, 512, 1024)]
                      + [(16, 32, n, "isolated") for n in (16, 64, 240)])


def _fit_rows(tmp_path, hw, rows, name="m.csv"):
    return F.fit(hw, C.read_measurements(_write(tmp_path, HEADER + "\n".join(rows) + "\n", name)), name, "today")


def test_each_mmad_dtype_gets_its_own_rate_whatever_the_row_order(tmp_path, hw, csv_path):
    """int8 rows placed first made the fit's one shared rate int8's: int8 4127 MACs/cycle (truth
    8192) and 8 rows far off; placed after the fp16 rows, int8 was never fitted at all."""
    fp16, int8 = _mmad_rows(csv_path), _int8_rows(hw)
    first, after = _fit_rows(tmp_path, hw, int8 + fp16, "a.csv"), _fit_rows(tmp_path, hw, fp16 + int8, "b.csv")
    assert first.profile.cube == after.profile.cube
    assert first.profile.cube.macs_per_cycle["int8"] == 8192 and first.profile.cube.macs_per_cycle["fp16"] == 4096
    assert {("cube", "macs_per_cycle", "int8"), ("cube", "macs_per_cycle", "fp16")} <= set(first.updates)
    assert not [r.line for r in first.after.rows if r.far_off]
    note = first.updates[("cube", "macs_per_cycle", "int8")][1]
    assert "fractal rate 1.0000 per cycle (16x32x16 = 8192 MACs)" in note and "16x16x16" not in note


def test_mmads_of_another_dtype_leave_the_fp16_fit_alone(tmp_path, hw, csv_path):
    """Two fp32 isolated Mmads placed first set the one shared rate: the fp16 rows' median error
    went 0.33% -> 3.75%."""
    fp16 = _mmad_rows(csv_path)
    alone = _fit_rows(tmp_path, hw, fp16, "a.csv")
    fp32 = ["910b1,mmad,fp32,16,8,16,,,30,isolated", "910b1,mmad,fp32,16,8,32,,,31,isolated"]
    mixed = _fit_rows(tmp_path, hw, fp32 + fp16, "b.csv")
    assert mixed.profile.cube.macs_per_cycle["fp16"] == alone.profile.cube.macs_per_cycle["fp16"]
    errs = [abs(r.rel_error) for r in mixed.after.rows if r.dtype == "fp16"]
    assert sorted(errs)[len(errs) // 2] < 2 * alone.after.median_abs_rel_error


def test_a_refit_from_a_slower_profile_recovers_the_rates(tmp_path, hw, csv_path):
    """A profile with fp16 at 2048 (a guess, or an earlier fit to slower rows) refitted to the
    shared CSV stayed at 2048: its own rate was the upper bound, so issue_cycles went to 0 and
    rows ~47% off, the note saying 'bounded above by the documented peak 2048'."""
    from autotile.hardware.profile import bundled_path

    text = bundled_path("ascend910b2").read_text()
    for dtype, was in (("fp16", 4096), ("bf16", 4096), ("fp32", 2048), ("int8", 8192)):
        text = text.replace(f"    {dtype}: {{value: {was},", f"    {dtype}: {{value: {was // 2},", 1)
    path = tmp_path / "half.yaml"
    path.write_text(text)
    half = load_profile(str(path))
    assert half.cube.macs_per_cycle["fp16"] == 2048
    fit = _fit_rows(tmp_path, half, _mmad_rows(csv_path))
    ref = _fit_rows(tmp_path, hw, _mmad_rows(csv_path), "ref.csv")
    assert fit.profile.cube.macs_per_cycle == pytest.approx(hw.cube.macs_per_cycle, rel=0.01)
    assert fit.profile.cube.issue_cycles == pytest.approx(hw.cube.issue_cycles, abs=0.05)
    assert fit.profile.cube.latency_cycles == pytest.approx(hw.cube.latency_cycles, abs=0.2)
    assert fit.after.p90_abs_rel_error < ref.after.p90_abs_rel_error + 0.005
    note = fit.updates[("cube", "macs_per_cycle", "fp16")][1]
    assert "bounded above by one fractal per cycle" in note and "2048" not in note


def test_a_profile_that_claims_a_faster_cube_bounds_its_fit_there(tmp_path, hw, csv_path):
    """The ceiling is one fractal per cycle, or the profile's rate if it claims more."""
    from autotile.hardware.profile import bundled_path

    text = bundled_path("ascend910b2").read_text()
    for dtype, was in (("fp16", 4096), ("bf16", 4096), ("fp32", 2048), ("int8", 8192)):
        text = text.replace(f"    {dtype}: {{value: {was},", f"    {dtype}: {{value: {was * 2},", 1)
    (tmp_path / "wide.yaml").write_text(text)
    wide = load_profile(str(tmp_path / "wide.yaml"))
    rows = _predicted(wide, "fp16", [(*map(int, line.split(",")[3:6]), line.rsplit(",", 1)[1]) for line in _mmad_rows(csv_path)])
    fit = _fit_rows(tmp_path, wide, rows)
    assert fit.profile.cube.macs_per_cycle["fp16"] == 8192 and fit.after.p90_abs_rel_error < 1e-3
    assert "bounded above by the profile's 8192 MACs per cycle" in fit.updates[("cube", "macs_per_cycle", "fp16")][1]
    assert _fit_rows(tmp_path, hw, rows, "b.csv").profile.cube.macs_per_cycle["fp16"] == 4096  # the peak


def test_a_refit_of_a_fitted_profile_changes_nothing(tmp_path, hw, csv_path):
    """Mmads 1.5x slower fitted fp16 2744 MACs/cycle, issue 3.425; a refit of that profile to the
    same rows moved issue to 3.4237 (fitted with the rate before it was rounded to whole MACs)."""
    rows = _mmad_rows(csv_path, 1.5)
    once = _fit_rows(tmp_path, hw, rows).profile
    assert once.cube.macs_per_cycle["fp16"] < 0.7 * hw.cube.macs_per_cycle["fp16"]
    assert _fit_rows(tmp_path, once, rows, "again.csv").profile.cube == once.cube


def test_the_bundled_profile_is_a_fixed_point_of_its_fit(tmp_path, hw, csv_path):
    fit = F.fit(hw, C.read_measurements(str(csv_path)), csv_path.name, "today")
    assert fit.profile.content_hash() == hw.content_hash()


# -- the chip a row was measured on --------------------------------------------------------------

@pytest.mark.parametrize("chip,got", [("banana", "'banana'"), ("", "nothing"), ("910c", "'910c'")])
@pytest.mark.parametrize("fit", [False, True])
def test_an_unknown_chip_is_refused_at_its_cell(tmp_path, run_cli, chip, got, fit):
    """`chip=banana` or an empty chip was read and never used."""
    path = _write(tmp_path, HEADER + f"{chip},vadd,fp16_fp16_fp16,,,,128,1,6.0,vector\n")
    out = ["-o", str(tmp_path / "f.yaml")] if fit else []
    code, _, err = run_cli("calibrate", "--measurements", path, *out)
    assert code == 2 and err.count("\n") == 1, err
    assert f"{path}:2:1: chip: expected the chip the row was measured on, one of 910b1, 910b2" in err
    assert err.strip().endswith(f"got {got}") or "did you mean" in err
    assert not (tmp_path / "f.yaml").exists()


@pytest.mark.parametrize("hw,core", [("ascend310p3", "310P"), ("ascend910", "910A")])
def test_a_fit_to_another_ai_core_is_refused_without_other_chip(tmp_path, run_cli, csv_path, hw, core):
    """`calibrate --hw ascend310p3` on the 910B CSV relabelled the 310P3's assumed costs 'calibrated:
    fitted to ascend910b_microops.csv'."""
    out = tmp_path / "f.yaml"
    code, stdout, err = run_cli("calibrate", "--hw", hw, "--measurements", str(csv_path), "-o", str(out))
    assert code == 2 and stdout == "" and err.count("\n") == 1 and not out.exists(), err
    assert f"{csv_path}:2:1: chip: 910b1: a 910B AI Core, not the {core} of {hw} (only 910B1..910B4 share one)" in err
    assert err.strip().endswith("or --other-chip to fit them anyway")
    code, stdout, err = run_cli("calibrate", "--hw", hw, "--measurements", str(csv_path), "--json")
    assert code == 0  # a comparison relabels nothing: it says what it compares
    assert f"566 rows measured on 910b1, 910b3, not the {core} AI Core of {hw} (lines 2-282, 313-597): these errors " \
           "compare the profile with another core" in json.loads(stdout)["notes"]
    code, _, _ = run_cli("calibrate", "--hw", hw, "--measurements", str(csv_path), "-o", str(out), "--other-chip")
    fitted = load_profile(str(out))
    assert code == 0 and fitted.notes["cube.issue_cycles"].endswith(
        f"rows measured on 910b1, 910b3, not a {core}'s AI Core (--other-chip)")
    assert fitted.notes["vector.ops.vadd.fp16_fp16_fp16"].endswith(f"rows measured on 910b1, not a {core}'s AI Core "
                                                                   "(--other-chip)")
    assert "fitted with --other-chip" in out.read_text().split("\nschema:")[0]


def test_a_910b_variant_fits_another_910b_variants_rows(tmp_path, run_cli):
    rows = [f"910b{i},vadd,fp16_fp16_fp16,,,,{128 * r},{r},{6.0 + 2 * r},vector" for i, r in ((1, 4), (3, 8), (4, 16))]
    out = tmp_path / "f.yaml"
    code, _, err = run_cli("calibrate", "--hw", "ascend910b4", "--measurements",
                           _write(tmp_path, HEADER + "\n".join(rows) + "\n"), "-o", str(out))
    assert code == 0 and "--other-chip" not in load_profile(str(out)).notes["vector.ops.vadd.fp16_fp16_fp16"], err


def test_a_profile_of_your_own_takes_rows_of_its_own_name(tmp_path, run_cli):
    """A chip calibrate does not know: its rows name the profile; another chip's need --other-chip."""
    from autotile.hardware.profile import bundled_path

    prof = tmp_path / "mine.yaml"
    prof.write_text(bundled_path("ascend910b2").read_text().replace('name: "ascend910b2"', 'name: "MyChip"'))
    body = "".join(f"CHIP,vadd,fp16_fp16_fp16,,,,{128 * r},{r},{6.0 + 2 * r},vector\n" for r in (4, 8, 16))
    out = str(tmp_path / "f.yaml")
    assert run_cli("calibrate", "--hw", str(prof), "--measurements", _write(tmp_path, HEADER + body.replace("CHIP", "mychip")),
                   "-o", out)[0] == 0
    code, _, err = run_cli("calibrate", "--hw", str(prof), "--measurements",
                           _write(tmp_path, HEADER + body.replace("CHIP", "910b1"), "b.csv"), "-o", out)
    assert code == 2 and (f"b.csv:2:1: chip: 910b1: {prof} is named for no chip calibrate knows" in err), err
    code, _, err = run_cli("calibrate", "--hw", str(prof), "--measurements",
                           _write(tmp_path, HEADER + body.replace("CHIP", "yourchip"), "c.csv"))
    assert code == 2 and "one of 910b1, 910b2, 910b3, 910b4, 910, 910a, 310p3, MyChip, got 'yourchip'" in err, err


@pytest.mark.parametrize("target", ["folder", "file/x.yaml"])
def test_an_output_that_cannot_be_a_file_is_refused_before_the_fit(tmp_path, run_cli, csv_path, target):
    """`-o DIR` printed the whole fit, then failed to write (exit 1)."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("")
    code, out, err = run_cli("calibrate", "--measurements", str(csv_path), "-o", str(tmp_path / target))
    why = "is a folder: expected a file's name" if target == "folder" else f"{tmp_path / 'file'} is a file, not a folder"
    assert code == 2 and out == "" and err.count("\n") == 1 and why in err, err


def test_an_output_in_folders_not_made_yet_makes_them(tmp_path, run_cli):
    """As export -o and tune --out do."""
    body = HEADER + "".join(f"910b1,vadd,fp16_fp16_fp16,,,,{128 * r},{r},{6.0 + 2 * r},vector\n" for r in (4, 8, 16))
    out = tmp_path / "new" / "sub" / "f.yaml"
    assert run_cli("calibrate", "--measurements", _write(tmp_path, body), "-o", str(out))[0] == 0
    assert load_profile(str(out)).vector["vadd"]["fp16_fp16_fp16"].per_repeat == pytest.approx(2.0, abs=0.01)
