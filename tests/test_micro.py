"""autotile micro: single operations through the engine."""

import json

import pytest

from autotile.cli import run
from autotile.errors import InputError
from autotile.sim.micro import micro


def _json(capsys, argv):
    assert run(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_mmad_back_to_back_steady_state(hw):
    r = micro("mmad", {"m": 32, "k": 16, "n": 1024, "repeat": 16}, "fp16", hw)
    # 128 fractals at one per cycle plus the issue cost; the latency is hidden
    assert r.cycles_per_op == pytest.approx(128 + hw.cube.issue_cycles, rel=1e-6)
    assert r.cycles == pytest.approx(16 * r.cycles_per_op + hw.cube.latency_cycles, rel=1e-6)


def test_mmad_isolated_includes_latency(hw):
    r = micro("mmad", {"m": 16, "k": 16, "n": 16}, "fp16", hw)
    assert r.cycles == r.cycles_per_op
    assert r.cycles == pytest.approx(hw.cube.issue_cycles + 1 + hw.cube.latency_cycles)


def test_copy_reports_bandwidth(capsys):
    out = _json(capsys, ["micro", "copy", "path=gm_ub,bytes=65536,repeat=8", "--json"])
    assert out["op"] == "copy" and out["pipe"] == "mte2"
    assert out["bytes_per_cycle"] == pytest.approx(65536 / out["cycles_per_op"], rel=1e-3)
    assert 90 < out["pct_of_plateau"] <= 100
    assert out["gb_per_s"] == pytest.approx(out["bytes_per_cycle"] * 1.8, rel=1e-3)


def test_vector_cli_with_signature(capsys):
    out = _json(capsys, ["micro", "vector", "op=vmla,elems=960,repeat=15", "--dtype", "fp16_fp16_fp32", "--json"])
    assert out["signature"] == "fp16_fp16_fp32" and out["params"]["repeat"] == 15
    assert out["cycles"] == pytest.approx(75.0, rel=0.02)


# (op, signature, elems, repeats): what the shared CSV records for each mixed-width signature
# (line: elems, repeat), and VMLA into fp32 at 64 lanes a repeat, as weighted_sum issues it.
# VMLA into fp32 once took 128 (the fp16 source's): elems=1024 in 8 repeats, 40 cycles where the
# CSV's line 582 measures 75 at repeat 15.
@pytest.mark.parametrize("op,sig,elems,repeat", [
    ("vmla", "fp16_fp16_fp32", 960, 15),
    ("vmla", "fp16_fp16_fp32", 1024, 16),
    ("vmla", "fp16_fp16_fp16", 1024, 8),
    ("vaxpy", "fp16_fp16_fp32", 1024, 8),  # line 184
    ("vconv", "fp16_fp32", 1024, 8),  # line 214
    ("vconv", "fp32_fp16", 1024, 16),  # line 252
    ("vconv", "bf16_fp32", 1024, 8),  # line 290
    ("vconv", "fp32_bf16", 512, 8),  # line 305
    ("vconv", "fp16_int8", 1024, 8),  # line 275
    ("vconv", "int8_fp16", 1024, 4),  # line 316
])
def test_mixed_width_repeats(hw, op, sig, elems, repeat):
    r = micro("vector", {"op": op, "elems": elems}, sig, hw)
    assert r.params["repeat"] == repeat
    assert r.cycles == pytest.approx(repeat * hw.vector[op][sig].per_repeat + hw.vector[op][sig].startup, rel=0.01)


def test_kernels_issue_the_lanes_micro_times(hw):
    """The kernels' (instruction, lanes) pairs are micro's: VCONV at its source's width both ways,
    roi_align's mixed VAXPY at the fp16 source's."""
    from autotile.kernels import _common as K
    from autotile.kernels import roi_align
    from autotile.sim.micro import lanes

    body, width = K.converted([("vmla", "fp32_fp32_fp32")], "bf16", "fp32", hw)
    pairs = list(zip(body, width))
    for dtype in ("fp16", "fp32"):
        ops = [("vdup", "fp32_fp32"), ("vaxpy", f"{dtype}_{dtype}_fp32"), ("vmuls", "fp32_fp32_fp32"),
               ("vconv", f"fp32_{dtype}")]
        pairs += list(zip(ops, roi_align._program(dtype, hw)[1].tolist()))
    assert ("vconv", "bf16_fp32") in [p for p, _ in pairs] and ("vaxpy", "fp16_fp16_fp32") in [p for p, _ in pairs]
    for (op, sig), n in pairs:
        assert lanes(hw, op, sig) == n, (op, sig)


def test_vector_splits_at_max_repeat(hw):
    # vadds: its scalar source leaves UB room for 300 repeats (2 x 76800 B); vadd's three tensors do not
    r = micro("vector", {"op": "vadds", "repeat": 300}, "fp16_fp16_fp16", hw)
    assert r.extra["instructions"] == 2
    assert r.extra["lanes_per_repeat"] == 128


def test_repeat_derived_from_elems(hw):
    r = micro("vector", {"op": "vadd", "elems": 1000}, "fp32_fp32_fp32", hw)
    assert r.params["repeat"] == 16  # 64 fp32 lanes per 256 B repeat


@pytest.mark.parametrize("argv", [
    ["micro", "conv", "m=1"],
    ["micro", "mmad", "m=16,k=16"],
    ["micro", "mmad", "m=16,k=16,n=0"],
    ["micro", "mmad", "m=16,k=16,n=16,x=1"],
    ["micro", "copy", "path=gm_xx,bytes=4"],
    ["micro", "copy", "path=gm_ub,bytes=-4"],
    ["micro", "vector", "op=vnope,elems=128"],
    ["micro", "vector", "op=vadd,elems=128", "--dtype", "fp64"],
    ["micro", "copy", "path=gm_ub,bytes=16384", "--dtype", "xx"],
    ["micro", "vector", "op=vadd,elems=2048,repeat=5"],
])
def test_bad_arguments_exit_2_one_line(capsys, argv):
    assert run(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("autotile: error:") and "\n" not in err


def test_api_raises_input_error(hw):
    with pytest.raises(InputError):
        micro("vector", {"op": "vadd", "repeat": 0}, "fp16", hw)


def test_consistent_elems_and_repeat_are_accepted(hw):
    r = micro("vector", {"op": "vadd", "elems": 2000, "repeat": 16}, "fp16", hw)
    assert r.params == {"op": "vadd", "elems": 2000, "repeat": 16}


def test_a_signature_is_costed_exactly_or_refused(capsys):
    """fp16_fp32_fp16 was costed as fp16_fp16_fp16, and fp16_bf16_int8 (no instruction) too."""
    for sig in ("fp16_fp32_fp16", "fp16_bf16_int8"):
        assert run(["micro", "vector", "op=vadd,elems=2048", "--dtype", sig]) == 2
        err = capsys.readouterr().err
        assert f"vector op vadd has no cost for {sig} in ascend910b2 (it has fp16_fp16_fp16," in err, err
    assert run(["micro", "vector", "op=vadd,elems=2048", "--dtype", "fp16_fp16"]) == 2
    assert "vadd takes a signature of 3 dtypes" in capsys.readouterr().err
    assert run(["micro", "vector", "op=vadd,elems=2048", "--dtype", "fp16_fp16_fp16"]) == 0
    assert "note" not in capsys.readouterr().out


@pytest.mark.parametrize("op,dtype,sig,note", [
    # the first fp16 key in the profile was taken: VMLA's fp16_fp16_fp32, "exact"
    ("vmla", "fp16", "fp16_fp16_fp16", "fp16 throughout; the profile also costs fp16_fp16_fp32: give one as --dtype"),
    ("vaxpy", "fp16", "fp16_fp16_fp16", "fp16 throughout; the profile also costs fp16_fp16_fp32: give one as --dtype"),
    ("vconv", "int8", "int8_fp16", "the profile's only vconv signature from int8"),
])
def test_a_plain_dtype_resolves_by_a_stated_rule(capsys, op, dtype, sig, note):
    out = _json(capsys, ["micro", "vector", f"op={op},elems=128", "--dtype", dtype, "--json"])
    assert out["signature"] == sig and out["signature_exact"] is False
    assert out["note"] == f"--dtype {dtype} is a dtype, not a signature: costed as {op} {sig} ({note})"


def test_a_plain_dtype_of_several_signatures_lists_them(capsys):
    assert run(["micro", "vector", "op=vconv,elems=128"]) == 2
    err = capsys.readouterr().err
    assert "--dtype fp16: ascend910b2 has several vconv signatures from fp16 (fp16_fp32, fp16_int8)" in err
    assert err.count("\n") == 1


# -- operands must fit the buffers the operation reads and writes ----------------------------------

@pytest.mark.parametrize("argv,needle", [
    (["micro", "mmad", "m=4096,k=4096,n=4096", "--json"],
     "A (4096 x 4096 fp16) needs 33554432 bytes of L0A: expected at most l0a_bytes = 65536 in ascend910b2"),
    (["micro", "mmad", "m=4096,k=4096,n=4096"], "needs 67108864 bytes of L0C: expected at most l0c_bytes = 131072"),
    (["micro", "mmad", "m=16,k=16,n=4096"], "B (16 x 4096 fp16) needs 131072 bytes of L0B: expected at most l0b_bytes"),
    # C accumulates in int32 for int8: 256 x 256 x 4 B, though the inputs are one byte each
    (["micro", "mmad", "m=256,k=32,n=256", "--dtype", "int8"], "C (256 x 256 int32) needs 262144 bytes of L0C"),
    # fp32 inputs take 4 B each: 128 x 136 overflows L0A where fp16 fits
    (["micro", "mmad", "m=128,k=136,n=16", "--dtype", "fp32"], "A (128 x 136 fp32) needs 69632 bytes of L0A"),
    # 17 rows take two whole 16-row fractals: 32 x 1920 x 2 B, not 17 x 1920 x 2 B = 65280
    (["micro", "mmad", "m=17,k=1920,n=16"], "A (17 x 1920 fp16) needs 122880 bytes of L0A"),
    (["micro", "copy", "path=gm_ub,bytes=1000000000"],
     "its destination needs 1000000000 bytes of UB: expected at most ub_bytes = 196608 in ascend910b2"),
    (["micro", "copy", "path=gm_ub,bytes=196609"], "needs 196640 bytes of UB"),  # whole 32 B granules
    (["micro", "copy", "path=gm_l1,bytes=1048576"], "its destination needs 1048576 bytes of L1: expected at most l1_bytes = 524288"),
    (["micro", "copy", "path=l1_l0a,bytes=65537"], "its destination needs 66048 bytes of L0A"),
    (["micro", "copy", "path=l0c_gm,bytes=262144"], "its source needs 262144 bytes of L0C: expected at most l0c_bytes"),
    (["micro", "copy", "path=ub_ub,bytes=100000"], "its source + its destination need 200000 bytes of UB"),
    (["micro", "vector", "op=vadd,elems=40000"],
     "src0 (40000 fp16) + src1 (40000 fp16) + dst (40000 fp16) need 240000 bytes of UB: expected at most ub_bytes = 196608"),
    (["micro", "vector", "op=vconv,elems=40000", "--dtype", "fp16_fp32"], "src0 (40000 fp16) + dst (40000 fp32) need 240000"),
    (["micro", "vector", "op=vadd,elems=20000", "--hw", "ascend910b2", "--dtype", "fp32"], "need 240000 bytes of UB"),
])
def test_operands_that_overflow_a_buffer_exit_2_one_line(capsys, argv, needle):
    assert run(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("autotile: error: micro ") and needle in err and err.count("\n") == 1, err


@pytest.mark.parametrize("kind,params,dtype", [
    ("mmad", {"m": 32, "k": 16, "n": 1024, "repeat": 32}, "fp16"),  # C fills L0C exactly (the CSV's largest row)
    ("mmad", {"m": 128, "k": 128, "n": 128}, "fp32"),  # A and B fill L0A / L0B, C is half L0C
    ("mmad", {"m": 128, "k": 256, "n": 256}, "int8"),  # C: 128 KiB of int32
    ("copy", {"path": "gm_ub", "bytes": 196608}, "fp16"),
    ("copy", {"path": "gm_l1", "bytes": 524288}, "fp16"),
    ("copy", {"path": "l0c_l1", "bytes": 131072}, "fp16"),
    ("vector", {"op": "vadd", "repeat": 255}, "fp16_fp16_fp16"),  # 3 x 65280 B of 196608
    ("vector", {"op": "vadds", "elems": 40000}, "fp16"),  # the scalar source holds no UB: 160000 B
    ("vector", {"op": "vcadd", "elems": 90000}, "fp16"),  # one result per repeat: 180000 + 1408 B
])
def test_operands_that_fit_are_timed(hw, kind, params, dtype):
    assert micro(kind, params, dtype, hw).cycles > 0


def test_the_capacity_is_the_profiles(capsys):
    """The 910 has a 256 KiB UB: what overflows the 910B2's 192 KiB fits there."""
    assert run(["micro", "copy", "path=gm_ub,bytes=262144", "--hw", "ascend910"]) == 0
    assert run(["micro", "copy", "path=gm_ub,bytes=262144", "--hw", "ascend910b2"]) == 2
    assert "ub_bytes = 196608 in ascend910b2" in capsys.readouterr().err


def test_every_calibration_row_fits_every_profile(csv_path):
    """The measurements were taken on real chips: none may be refused as too big."""
    from autotile.hardware import bundled_names, load_profile
    from autotile.sim import calibrate as C

    rows = C.read_measurements(csv_path)
    for name in bundled_names():
        C.check_fits(rows, load_profile(name), csv_path)


@pytest.mark.parametrize("hw", ["ascend910", "ascend310p3"])
@pytest.mark.parametrize("argv", [["mmad", "m=16,k=16,n=16"], ["copy", "path=gm_ub,bytes=1024"]])
def test_a_dtype_the_chip_lacks_is_refused(capsys, hw, argv):
    """bf16 on a chip without it: the Mmad divided by the cube's missing rate (ZeroDivisionError,
    exit 1) and the copy answered as if the chip had it."""
    from autotile.cli import run as cli

    assert cli(["micro", *argv, "--dtype", "bf16", "--hw", hw]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"--dtype bf16: {hw} has no bf16" in err, err
