"""calibrate and micro defects a QA pass reproduced: a fit that silently switches a dtype's vector
arithmetic, lenient CSV numbers, fits pinned at a bound, a cube note that claims a move it did
not make, and an empty --measurements."""

import json

import pytest

from autotile.cli import run
from autotile.hardware import load_profile

HEADER = "chip,op,dtype,m,k,n,elems,repeat,cycles,series\n"
BF16_VADD = "".join(f"910b2,vadd,bf16_bf16_bf16,,,,,{r},{c},vector\n" for r, c in ((1, 6.1), (10, 20.1), (20, 40.1)))


def _write(tmp_path, body, name="m.csv"):
    p = tmp_path / name
    p.write_text(body)
    return str(p)


def test_a_fit_that_makes_bf16_native_warns_with_the_costs_kernels_lack(tmp_path, capsys):
    csv, out = _write(tmp_path, HEADER + BF16_VADD), tmp_path / "g1.yaml"
    assert run(["calibrate", "--hw", "ascend910b2", "--measurements", csv, "-o", str(out), "--json"]) == 0
    cap = capsys.readouterr()
    (warning,) = json.loads(cap.out)["warnings"]
    assert "compute bf16 in bf16, not in fp32" in warning
    # the costs the bundled weighted_sum and sigmoid ask for in bf16 and the fit did not add
    for need in ("vmul bf16_bf16_bf16", "vmla bf16_bf16_fp32", "vexp bf16_bf16", "vmuls bf16_bf16_bf16"):
        assert need in warning
    assert "sigmoid" in warning and "weighted_sum" in warning and "vadd bf16" not in warning.split("no cost")[1]
    assert f"autotile: warning: {warning}" in cap.err
    assert load_profile(str(out)).vector_compute_dtype("bf16") == "bf16"


def test_a_fit_that_keeps_compute_dtypes_does_not_warn(tmp_path, capsys):
    rows = "".join(f"910b2,vadd,fp32_fp32_fp32,,,,,{r},{3 + 2 * r},vector\n" for r in (4, 10, 20))
    csv = _write(tmp_path, HEADER + rows)
    assert run(["calibrate", "--measurements", csv, "-o", str(tmp_path / "p.yaml"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == []


def test_a_missing_kernel_cost_names_an_edited_profiles_file(tmp_path, capsys):
    csv, prof = _write(tmp_path, HEADER + BF16_VADD), tmp_path / "g1.yaml"
    assert run(["calibrate", "--measurements", csv, "-o", str(prof)]) == 0
    spec = tmp_path / "ws.yaml"
    from autotile.space.studies import spec_file

    spec.write_text(spec_file("weighted_sum").read_text().replace("hardware: ascend910b2", f"hardware: {prof}"))
    capsys.readouterr()
    assert run(["simulate", str(spec), "--shape", "n=1024", "--dtype", "bf16", "--unit", "vector"]) == 2
    err = capsys.readouterr().err
    assert f"hardware profile {prof} has no cost for vector op vmul in bf16_bf16_bf16" in err
    assert "profile ascend910b2 " not in err and err.count("\n") == 1


@pytest.mark.parametrize("row,needle", [
    ("910b2,vadd,fp16_fp16_fp16,,,,,4,3_0,vector", ":2:9: cycles: expected a number in ASCII decimal"),
    ("910b2,vadd,fp16_fp16_fp16,,,,,1_28,30,vector", ":2:8: repeat: expected a whole number in ASCII digits"),
    ("910b2,mmad,fp16,1_6,16,16,,,30,back_to_back", ":2:4: m: expected a whole number in ASCII digits, got '1_6'"),
    ("910b2,mmad,fp16,\uff11\uff16,16,16,,,30,back_to_back", ":2:4: m: expected a whole number"),
    ("910b2,mmad,fp16,16,16,16,,,\uff13\uff10,back_to_back", ":2:9: cycles: expected a number"),
    ("910b2,mmad,fp16,16,16,16,,,nan,back_to_back", ":2:9: cycles: expected a number"),
    ("910b2,mmad,fp16,16.0,16,16,,,30,back_to_back", ":2:4: m: expected a whole number"),
])
def test_numbers_are_plain_ascii(tmp_path, capsys, row, needle):
    path = _write(tmp_path, HEADER + row + "\n")
    assert run(["calibrate", "--measurements", path]) == 2
    err = capsys.readouterr().err
    assert f"{path}{needle}" in err and err.count("\n") == 1, err


def test_plain_and_exponent_numbers_are_read():
    import autotile.sim.calibrate as C

    for text in ("30", "30.", "4.862", ".5", "1e3", "2.5E-1", "+7"):
        assert C.FLOAT.fullmatch(text), text
    assert C.INT.fullmatch("128") and not C.INT.fullmatch("1_28")


def test_a_vector_constant_held_at_a_limit_warns(tmp_path, capsys):
    rows = "".join(f"910b2,vadd,fp16_fp16_fp16,,,,,{r},5e11,vector\n" for r in (1, 10, 20))
    csv, out = _write(tmp_path, HEADER + rows), tmp_path / "big.yaml"
    assert run(["calibrate", "--measurements", csv, "-o", str(out), "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    (startup,) = [w for w in warnings if w.startswith("vector.ops.vadd.fp16_fp16_fp16.startup")]
    assert "held at the fit's upper limit, 1000: fitted with no limits, m.csv's rows ask for 5e+11" in startup
    note = load_profile(str(out)).notes["vector.ops.vadd.fp16_fp16_fp16"]
    assert "startup held at the fit's limit 1000 (with none, the rows ask for 5e+11)" in note


def test_cube_constants_held_at_limits_warn(tmp_path, capsys):
    rows = [f"910b2,mmad,fp16,32,16,{n},,,{n * 10**8},back_to_back" for n in (16, 64, 256, 1024)]
    rows += [f"910b2,mmad,fp16,16,16,{n},,,{n * 2 * 10**8},isolated" for n in (16, 64, 240)]
    csv, out = _write(tmp_path, HEADER + "\n".join(rows) + "\n"), tmp_path / "mm.yaml"
    assert run(["calibrate", "--measurements", csv, "-o", str(out), "--json"]) == 0
    warnings = json.loads(capsys.readouterr().out)["warnings"]
    held = {w.split(" held at ")[0]: w.split(" held at ")[1] for w in warnings if " held at " in w}
    assert held["cube.latency_cycles"].startswith("the fit's upper limit, 512:")
    assert held["cube.issue_cycles"].startswith("the fit's upper limit, 64:")
    assert held["cube.macs_per_cycle.fp16"].startswith("the fit's lower limit, 40.96:")  # 0.01 fractal per cycle
    assert "held at the fit's limit 512" in load_profile(str(out)).notes["cube.latency_cycles"]


def test_the_shared_csv_fits_within_the_limits(tmp_path, capsys, csv_path):
    assert run(["calibrate", "--measurements", str(csv_path), "-o", str(tmp_path / "p.yaml"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["warnings"] == []


def test_a_sub_threshold_move_keeps_the_shared_cube_constants_and_their_notes(tmp_path, capsys, hw):
    """9 int8 Mmads moved issue 2.1999 -> 2.2 and latency 20.8896 -> 20.8, both relabelled 'fitted
    to i8.csv ... mmad int8' with no warning, though fp16's rows had fitted them."""
    from autotile.sim import calibrate as C

    def row(m, k, n, series):
        cycles = C.predict(hw, C.Measurement(0, "x", "mmad", "int8", m, k, n, None, None, 1.0, series))
        return f"910b2,mmad,int8,{m},{k},{n},,,{cycles * 1.002:.4f},{series}\n"

    rows = [row(32, 32, n, "back_to_back") for n in (16, 64, 256, 512, 1024)]
    rows += [row(16, 32, n, "isolated") for n in (16, 64, 128, 240)]
    csv, out = _write(tmp_path, HEADER + "".join(rows), "i8.csv"), tmp_path / "p.yaml"
    assert run(["calibrate", "--measurements", csv, "-o", str(out), "--json"]) == 0
    res = json.loads(capsys.readouterr().out)
    assert res["warnings"] == [] and "cube.issue_cycles" not in res["constants"]
    p = load_profile(str(out))
    assert (p.cube.issue_cycles, p.cube.latency_cycles) == (hw.cube.issue_cycles, hw.cube.latency_cycles)
    for path in ("cube.issue_cycles", "cube.latency_cycles"):
        assert p.notes[path] == hw.notes[path] and "i8.csv" not in p.notes[path]
        kept = [n for n in res["after"]["notes"] if n.startswith(f"{path} kept at ")]
        assert len(kept) == 1 and "within 1%" in kept[0] and "fp16, bf16, fp32 Mmads" in kept[0], kept
    assert "i8.csv" in p.notes["cube.macs_per_cycle.int8"]


def test_an_empty_measurements_argument_is_named(tmp_path, monkeypatch, capsys):
    """`--measurements ""` said `.: cannot read measurements: Is a directory`."""
    monkeypatch.chdir(tmp_path)
    for value in ("", " "):
        assert run(["calibrate", "--measurements", value, "-o", "p.yaml"]) == 2
        err = capsys.readouterr().err
        assert err == "autotile: error: --measurements: expected a CSV file, got an empty one\n", err
    assert list(tmp_path.iterdir()) == []
