"""Bundled hardware profiles: all four load strictly and carry a note per constant."""

import json
import re
from dataclasses import astuple

import pytest

from autotile.cli import run
from autotile.hardware import bundled_names, load_profile
from autotile.hardware.ops import KERNEL_SCALAR_OPS, KERNEL_VECTOR_OPS
from autotile.hardware.profile import COPY_PATHS, bundled_path

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
        drop = set() if "bf16" in p.dtypes else {"bf16"}  # the 910A and 310P have no bf16
        cube_drop = drop | (set() if "bf16" in p.dtypes else {"fp32"})  # nor an fp32 cube
        assert p.cube.macs_per_cycle == {d: v for d, v in b2.cube.macs_per_cycle.items() if d not in cube_drop}
        assert (p.cube.issue_cycles, p.cube.latency_cycles) == (b2.cube.issue_cycles, b2.cube.latency_cycles)
        assert p.vector == {op: {s: c for s, c in t.items() if not drop & set(s.split("_"))}
                            for op, t in b2.vector.items()}
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


# -- the operation catalogue: typos and gaps fail at load, located -------------------------------

B2 = bundled_path("ascend910b2").read_text()


def _profile(tmp_path, text, name="p.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def _drop_op(text, op):
    return re.sub(rf"\n    {op}:\n(      .*\n)+", "\n", text, count=1)


@pytest.mark.parametrize("edit,needle", [
    (lambda t: t.replace("\n  exp: {value: 6.0", "\n  exp_: {value: 6.0"), ":177:3: scalar.exp_: unknown key, did you mean exp?"),
    (lambda t: re.sub(r"\n  exp: \{value: 6.0.*", "", t), ":171:3: scalar: missing key 'exp' (the kernels use it)"),
    (lambda t: _drop_op(t, "vexp"), ":80:5: vector.ops: missing key 'vexp' (the kernels use it)"),
    (lambda t: t.replace("\n    vexp:\n", "\n    vexp_typo:\n"), ":93:5: vector.ops.vexp_typo: unknown key, did you mean vexp?"),
    (lambda t: t.replace("      fp16_fp16: {startup: 0.0729", "      fp16_xx: {startup: 0.0729"),
     ":94:7: vector.ops.vexp.fp16_xx: unknown dtype 'xx'"),
    (lambda t: t.replace("      fp16_fp16: {startup: 0.0729", "      fp16_fp16_fp16: {startup: 0.0729"),
     ":94:7: vector.ops.vexp.fp16_fp16_fp16: vexp takes a signature of 2 dtypes"),
])
def test_profile_ops_are_checked_at_load(tmp_path, run_cli, edit, needle):
    path = _profile(tmp_path, edit(B2))
    code, _, err = run_cli("hw", "show", path)
    assert code == 2 and err.count("\n") == 1 and f"{path}{needle}" in err, err


def test_a_profile_without_a_cost_a_kernel_needs_fails_before_simulating(tmp_path, run_cli):
    prof = _profile(tmp_path, re.sub(r"\n  exp: \{value: 6.0.*", "", B2))
    spec = (bundled_path("ascend910b2").parents[2] / "studies" / "sigmoid.yaml").read_text()
    spec = re.sub(r"(?m)^hardware:.*$", "hardware: p.yaml", spec)
    code, _, err = run_cli("simulate", _profile(tmp_path, spec, "s.yaml"), "--shape", "n=4096", "--unit", "scalar")
    assert code == 2 and err.count("\n") == 1 and f"{prof}:171:3: scalar: missing key 'exp'" in err, err


def test_optional_ops_may_be_left_out(tmp_path):
    hw = load_profile(_profile(tmp_path, _drop_op(re.sub(r"\n  ln: \{value.*", "", B2), "vln")))
    assert "vln" not in hw.vector and "ln" not in hw.scalar
    assert {"vln"}.isdisjoint(KERNEL_VECTOR_OPS) and "ln" not in KERNEL_SCALAR_OPS


def test_calibrate_blames_the_profile_for_an_op_it_lacks(tmp_path, run_cli):
    prof = _profile(tmp_path, _drop_op(B2, "vln"))
    csv = tmp_path / "m.csv"
    csv.write_text("chip,op,dtype,m,k,n,elems,repeat,cycles,series\n910b1,vadd,fp16_fp16_fp16,,,,128,1,6.0,vector\n"
                   "910b1,vln,fp16_fp16,,,,128,1,4.0,vector\n")
    code, _, err = run_cli("calibrate", "--hw", prof, "--measurements", str(csv))
    assert code == 2 and err.count("\n") == 1, err
    assert f"{prof}:80:5: vector.ops: vector op 'vln' is not in hardware profile" in err and "m.csv line 3" in err


def test_profiles_read_exponent_floats_as_numbers(tmp_path):
    text = B2.replace("clock_ghz: {value: 1.8,", "clock_ghz: {value: 18e-1,").replace(
        "fp16_fp16: {startup: 0.0729,", "fp16_fp16: {startup: 7.29e-2,")
    hw = load_profile(_profile(tmp_path, text))
    assert hw.clock_ghz == 1.8 and hw.vector["vexp"]["fp16_fp16"].startup == 0.0729
    assert hw.content_hash() == load_profile("ascend910b2").content_hash()


def test_a_fitted_profile_reads_back_what_it_wrote(tmp_path):
    from autotile.hardware import emit

    path = _profile(tmp_path, B2.replace("fp16_fp16: {startup: 0.0729,", "fp16_fp16: {startup: 1e-5,"))
    doc = emit.load_document(path)
    assert doc["vector"]["ops"]["vexp"]["fp16_fp16"]["startup"] == 1e-5
    again = _profile(tmp_path, emit.render(doc), "again.yaml")  # 1e-05 written, a number read
    assert load_profile(again).vector["vexp"]["fp16_fp16"].startup == 1e-5


# -- every constant is bounded: a typo never reaches the simulator -------------------------------

def _set(text, key, value):
    new, n = re.subn(rf"(\b{re.escape(key)}: \{{value: )[^,]+", rf"\g<1>{value}", text, count=1)
    assert n == 1, key
    return new


@pytest.mark.parametrize("key,value,needle", [
    # 3 or 1 bytes per repeat made 0 lanes (ZeroDivisionError); 10**20 a Numba TypingError
    ("bytes_per_repeat", "3", ":77:29: vector.bytes_per_repeat.value: expected an integer multiple of 32 from 32 to 4096, got 3"),
    ("bytes_per_repeat", "1", "expected an integer multiple of 32 from 32 to 4096, got 1"),
    ("bytes_per_repeat", "99999999999999999999", "multiple of 32 from 32 to 4096, got 99999999999999999999"),
    ("bytes_per_repeat", "8192", "multiple of 32 from 32 to 4096, got 8192"),
    # 10**20 repeats made the instruction split loop run for ever
    ("max_repeat", "99999999999999999999", ":78:23: vector.max_repeat.value: expected an integer from 1 to 65535, got 99999999999999999999"),
    ("max_repeat", "0", "expected an integer from 1 to 65535, got 0"),
    ("cube_cores", "1000000000", ":8:23: chip.cube_cores.value: expected an integer from 1 to 4096, got 1000000000"),
    ("vector_cores", "99999999999999999999", "chip.vector_cores.value: expected an integer from 1 to 4096"),
    ("clock_ghz", "1e-300", ":10:22: chip.clock_ghz.value: expected a number from 0.01 to 100, got 1e-300"),
    ("clock_ghz", "0", "chip.clock_ghz.value: expected a number from 0.01 to 100, got 0"),
    ("ub_bytes", "99999999999999999999", ":16:21: memory.ub_bytes.value: expected an integer from 1 to 2**40"),
    ("hbm_bytes_per_cycle", "1e-300", "memory.hbm_bytes_per_cycle.value: expected a number from 0.001 to 2**20, got 1e-300"),
    ("ub", "99999999999999999999", ":22:15: align.ub.value: expected an integer from 1 to 2**20"),
    ("issue_cycles", "1e300", "copy.gm_ub.issue_cycles.value: expected a number from 0 to 1e9, got 1e+300"),
    ("fp16", "0", "cube.macs_per_cycle.fp16.value: expected an integer from 1 to 2**24, got 0"),
    ("add", "0", "scalar.add.value: expected a number above 0 and at most 1e9, got 0"),
])
def test_profile_constants_are_bounded(tmp_path, run_cli, key, value, needle):
    path = _profile(tmp_path, _set(B2, key, value))
    code, _, err = run_cli("hw", "show", path)
    assert code == 2 and err.count("\n") == 1 and f"{path}:" in err and needle in err, err


def test_a_spec_on_an_out_of_bounds_profile_fails_before_simulating(tmp_path, run_cli):
    """simulate and tune raised ZeroDivisionError on a 3-byte vector repeat."""
    prof = _profile(tmp_path, _set(B2, "bytes_per_repeat", "3"))
    spec = _profile(tmp_path, "op: global_sum\nhardware: p.yaml\ndtypes: [fp16]\nunits: [vector]\n"
                    "shapes: [{n: 4096}]\nparams:\n  tile_len: {type: int, low: 16, high: 4096, pow2: true}\n"
                    "budget: {trials: 2}\n", "s.yaml")
    for argv in (("simulate", spec, "--shape", "n=4096"),
                 ("tune", spec, "--quiet", "--out", str(tmp_path / "out"))):
        code, _, err = run_cli(*argv)
        assert code == 2 and err == (f"autotile: error: {prof}:77:29: vector.bytes_per_repeat.value: "
                                     "expected an integer multiple of 32 from 32 to 4096, got 3\n"), err


def test_every_bundled_profile_is_inside_the_bounds_with_room():
    """The bounds are not tight on any shipped chip (a calibrated fit stays loadable)."""
    from autotile.hardware.profile import CORES, MAX_REPEAT, REPEAT_BYTES

    for name in bundled_names():
        hw = load_profile(name)
        assert CORES.hi >= 8 * hw.vector_cores and REPEAT_BYTES.hi >= 8 * hw.vector_bytes_per_repeat
        assert MAX_REPEAT.hi >= 64 * hw.vector_max_repeat


@pytest.mark.parametrize("text, says", [
    ("op: copy\nhardware: ascend910b2\n", "1:1: schema: expected 'autotile.hardware/1', got none: not a hardware "
                                          "profile (a study spec, by its op: key)"),
    ("schema: autotile.table/1\n", "1:9: schema: expected 'autotile.hardware/1', got 'autotile.table/1': not a "
                                   "hardware profile"),
    ("name: x\n", "1:1: schema: expected 'autotile.hardware/1', got none: not a hardware profile"),
])
def test_a_file_that_is_not_a_profile_is_named_so(tmp_path, run_cli, text, says):
    """``hw show`` given a study spec said ``tiny.yaml:1:1: op: unknown key, did you mean copy?``."""
    path = tmp_path / "tiny.yaml"
    path.write_text(text)
    code, _, err = run_cli("hw", "show", str(path))
    assert code == 2 and err == f"autotile: error: {path}:{says}\n"


# -- dtypes a chip lacks ----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["ascend910", "ascend310p3"])
def test_chips_without_bf16_refuse_it_located(tmp_path, run_cli, name):
    """The 910A and 310P compute fp16 and int8 only: their profiles gave the cube bf16 at 4096
    MACs a cycle, so a bf16 matmul on them simulated as if it existed. A spec asking for bf16
    there is now a located error, a direct simulation an infeasible reason."""
    from autotile.kernels import elementwise, matmul

    hw = load_profile(name)
    assert "bf16" not in hw.dtypes and "bf16" not in hw.cube.macs_per_cycle
    spec = (bundled_path("ascend910b2").parents[2] / "studies" / "matmul.yaml").read_text()
    spec = re.sub(r"(?m)^hardware:.*$", f"hardware: {name}", spec)
    spec = re.sub(r"(?m)^dtypes:.*$", "dtypes: [fp16, bf16]", spec)
    path = _profile(tmp_path, spec, "s.yaml")
    code, _, err = run_cli("space", path)
    assert code == 2 and err.count("\n") == 1, err
    assert f"{path}:" in err and f"dtypes[1]: {name} has no bf16" in err, err
    shape = {"m": 64, "n": 64, "k": 64}
    r = matmul.simulate(shape, matmul.default_params(shape, "fp16", hw), "bf16", hw)
    assert not r.feasible and "no bf16" in r.reason
    r = elementwise.simulate({"n": 4096}, {"tile_len": 512, "buffer_num": 2, "cores": 2}, "bf16", hw)
    assert not r.feasible and "no bf16" in r.reason


def test_cube_dtypes_other_than_fp16_are_optional(tmp_path):
    hw = load_profile(_profile(tmp_path, re.sub(r"\n    int8: \{value: 8192.*", "", B2)))
    assert "int8" not in hw.cube.macs_per_cycle and hw.dtype_problem("cube", "int8")
    assert hw.dtype_problem("cube", "fp16") is None


@pytest.mark.parametrize("cmd", [("crossover", "weighted_sum"), ("decide", "weighted_sum", "--shape", "n=300")])
def test_crossover_and_decide_refuse_a_dtype_the_chip_lacks(run_cli, cmd):
    """crossover weighted_sum --hw ascend910 --dtype bf16 answered with null crossovers (every
    simulation infeasible) instead of saying the chip has no bf16."""
    code, _, err = run_cli(*cmd, "--hw", "ascend910", "--dtype", "bf16")
    assert code == 2 and err.count("\n") == 1 and "--dtype: ascend910 has no bf16" in err, err


@pytest.mark.parametrize("old,new,needle", [
    ('derived: {from: "cube.macs_per_cycle.fp16", scale: 0.5}', 'derived: {from: "cube.macs_per_cycle.fp64"}',
     "cube.macs_per_cycle.fp32.derived.from: expected another constant of this profile, got 'cube.macs_per_cycle.fp64'"),
    ('derived: {from: "cube.macs_per_cycle.fp16", scale: 0.5}', 'derived: {from: "vector.ops.vadd.fp16_fp16_fp16"}',
     "cube.macs_per_cycle.fp32.derived.from: expected the dotted path of a constant like this one (cube.macs_per_cycle.<...>)"),
    ('derived: {from: "cube.macs_per_cycle.fp16", scale: 0.5}', 'derived: {from: "cube.macs_per_cycle.bf16"}',
     "cube.macs_per_cycle.fp32.derived.from: cube.macs_per_cycle.bf16 is itself derived"),
    ('derived: {from: "cube.macs_per_cycle.fp16", scale: 0.5}', 'derived: {from: "cube.macs_per_cycle.fp16", scale: 0}',
     "cube.macs_per_cycle.fp32.derived.scale: expected a number above 0"),
])
def test_declared_relations_are_checked_at_load(tmp_path, run_cli, old, new, needle):
    """``derived: {from, scale}`` (what calibrate -o moves with a refit) names a constant the
    profile has, of the same kind, itself not derived."""
    assert old in B2
    path = _profile(tmp_path, B2.replace(old, new, 1))
    code, _, err = run_cli("hw", "show", path)
    assert code == 2 and err.count("\n") == 1 and f"{path}:72:" in err and f": {needle}" in err, err


def test_hw_show_gives_the_gb_per_s_a_clock_implies(tmp_path, run_cli):
    """Rates are bytes per cycle, so a profile's clock_ghz scales every bandwidth: hw show prints
    the GB/s (HBM, L2, each copy path) and says so, rather than a 2x clock silently doubling HBM."""
    fast = _profile(tmp_path, B2.replace("clock_ghz: {value: 1.8,", "clock_ghz: {value: 3.6,", 1))
    base, quick = (json.loads(run_cli("hw", "show", p, "--json")[1]) for p in ("ascend910b2", fast))
    assert quick["hbm_gb_per_s"] == pytest.approx(2 * base["hbm_gb_per_s"], abs=0.1)
    assert base["copy_gb_per_s_per_core"]["gm_ub"] == pytest.approx(42.2 * 1.8, abs=0.1)
    assert quick["copy_gb_per_s_per_core"]["gm_ub"] == pytest.approx(2 * base["copy_gb_per_s_per_core"]["gm_ub"], abs=0.1)
    assert quick["l2_gb_per_s_per_core"]["read"] == pytest.approx(2 * base["l2_gb_per_s_per_core"]["read"], abs=0.1)
    code, out, _ = run_cli("hw", "show", fast)
    assert code == 0 and "bytes per cycle" in out and "clock_ghz" in out.splitlines()[-1]


def _line_of(text, needle):
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


@pytest.mark.parametrize("old,new,at,needle", [
    # fp16 halved, bf16 ("same rate as fp16") left at 4096: bf16 simulated 1.6x faster than fp16
    ("fp16: {value: 4096,", "fp16: {value: 2048,", "bf16: {value: 4096",
     "cube.macs_per_cycle.bf16.value: expected 2048 (cube.macs_per_cycle.fp16 = 2048, its derived: rule), got 4096"),
    ("fp32: {value: 2048,", "fp32: {value: 4096,", "fp32: {value: 4096",
     "cube.macs_per_cycle.fp32.value: expected 2048 (cube.macs_per_cycle.fp16 = 4096 x 0.5, its derived: rule), got 4096"),
    ("fp16_fp16_fp16: {startup: 0.0667, per_repeat: 1.9999, min_cycles: 6.06, source",
     "fp16_fp16_fp16: {startup: 0.0667, per_repeat: 3.0, min_cycles: 6.06, source", "per_repeat: 3.0,",
     "vector.ops.vsub.fp16_fp16_fp16.per_repeat: expected 1.9999 (vector.ops.vadd.fp16_fp16_fp16's "
     "per_repeat = 1.9999, its derived: rule), got 3"),
])
def test_a_derived_constant_off_its_rule_is_refused(tmp_path, run_cli, old, new, at, needle):
    """A constant declaring ``derived:`` is its rule's value: one that disagrees by more than
    rounding (1%) is an error at that constant, naming the one it follows and the rule's value,
    not a profile whose bf16 runs faster than the fp16 it says it equals."""
    assert B2.count(old) == 1
    text = B2.replace(old, new, 1)
    path = _profile(tmp_path, text)
    code, _, err = run_cli("hw", "show", path)
    assert code == 2 and err.count("\n") == 1 and f": {needle}" in err, err
    assert f"{path}:{_line_of(text, at)}:" in err, err


def test_a_derived_constant_within_rounding_takes_its_rules_value(tmp_path):
    """Rounding a copied figure is not a disagreement: vsub's 2.0 per repeat beside vadd's fitted
    1.9999 loads, as 1.9999 (the value the rule gives, so it cannot drift from it)."""
    old = "fp16_fp16_fp16: {startup: 0.0667, per_repeat: 1.9999, min_cycles: 6.06, source: \"estimate: same"
    assert B2.count(old) == 1
    hw = load_profile(_profile(tmp_path, B2.replace(old, old.replace("1.9999", "2.0"), 1)))
    assert hw.vector["vsub"]["fp16_fp16_fp16"] == hw.vector["vadd"]["fp16_fp16_fp16"]


@pytest.mark.parametrize("name", bundled_names())
def test_bundled_derived_constants_are_their_rules(name):
    """Every bundled ``derived:`` constant is written as its rule gives it (vcadd fp32 read 7.0
    per repeat, floor 7.0, beside the fp16 7.0004 and 7.096 it says it follows; 24 like it in
    each profile), so the file a reader sees is what the simulator uses."""
    from autotile.hardware.profile import follow_value
    from autotile.yamlsrc import load_file

    doc = load_file(bundled_path(name)).value
    hw = load_profile(name)
    assert hw.derived
    for path, (src, scale) in hw.derived.items():
        node = doc
        for p in path:
            node = node[p]
        written = node["value"] if "value" in node else tuple(node[k] for k in ("startup", "per_repeat", "min_cycles"))
        get = (lambda p: hw.cube.macs_per_cycle[p[2]]) if path[0] == "cube" else (lambda p: hw.vector[p[2]][p[3]])
        rule = follow_value(get(src), scale)
        assert written == (rule if path[0] == "cube" else astuple(rule)), path


# -- a time a note states is this chip's --------------------------------------------------------

NUM = r"(\d+(?:\.\d+)?)"
GM_PATHS = [p for p in COPY_PATHS if "gm" in p.split("_")]


def test_gm_latency_is_one_round_trip_in_ns_on_every_chip():
    """The GM (L2/HBM) round trip is a time of the memory system, ~110 ns: its cycles follow each
    chip's clock. The 910B4, 910 and 310P3 kept the 910B2's 200 cycles, 133, 200 and 185 ns there."""
    b2 = load_profile("ascend910b2")
    ns = b2.copy["gm_ub"].latency_cycles / b2.clock_ghz
    for name in bundled_names():
        hw = load_profile(name)
        for p in GM_PATHS:
            assert hw.copy[p].latency_cycles / hw.clock_ghz == pytest.approx(ns, rel=0.02), (name, p)


def _precision(figure: str) -> float:
    """How closely a figure as written states a number: 2%, or half its last digit ("~1.0 TB/s"
    for 1024 B/cycle at 1.0 GHz is 1.02)."""
    last = 10.0 ** -len(figure.partition(".")[2])
    return max(0.02, last / 2 / float(figure))


@pytest.mark.parametrize("name", bundled_names())
def test_notes_naming_a_clock_agree_with_the_value(name):
    """A note giving a constant in cycles at a clock names this chip's clock and the constant's
    value (the 910B2's "~110 ns = 200 cycles at 1.8 GHz", copied onto the 1.5 GHz 910B4, was 133
    ns there), and its ns times the clock are those cycles; a rate in GB/s or TB/s at a clock is
    the value times that clock (a measurement on another chip names that chip's clock)."""
    from autotile.yamlsrc import load_file

    doc = load_file(bundled_path(name)).value
    hw = load_profile(name)
    checked = 0
    for path, note in hw.notes.items():
        node = doc
        for p in path.split("."):
            node = node[p]
        value = node.get("value")
        for cycles, ghz in re.findall(rf"{NUM} cycles at {NUM} GHz", note):
            assert float(ghz) == hw.clock_ghz and float(cycles) == pytest.approx(value, rel=0.01), (path, note)
            for ns in re.findall(rf"{NUM} ns\b", note):
                assert float(ns) * hw.clock_ghz == pytest.approx(value, rel=0.02), (path, note)
            checked += 1
        for rate, unit, ghz in re.findall(rf"{NUM} ([GT])B/s[^;()]*? (?:at|/) {NUM} GHz", note):
            per_s = float(rate) * (1000 if unit == "T" else 1)
            assert per_s / float(ghz) == pytest.approx(value, rel=_precision(rate)), (path, note)
            checked += 1
    assert checked >= len(GM_PATHS) + 1  # every GM latency, and the HBM rate
