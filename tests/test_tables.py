"""Tiling tables: schema validation, the lookup rule, the CLI commands and kernels reading tables."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tablekit import default_table

from autotile.cli import run as cli
from autotile.errors import InfeasibleConfig, InputError
from autotile.kernels import matmul
from autotile.tables.lookup import Lookup, NoFeasibleTiling, lookup
from autotile.tables.schema import SCHEMA, load_table, write_table


@pytest.fixture(scope="module")
def doc():
    return default_table()


@pytest.fixture(scope="module")
def table_file(doc, tmp_path_factory):
    return write_table(tmp_path_factory.mktemp("tbl") / "table.json", doc)


@pytest.fixture(scope="module")
def look(doc):
    return Lookup(doc)


# -- schema -------------------------------------------------------------------------------

def test_table_records_what_lookup_needs(doc, table_file):
    t = load_table(table_file.parent)  # a tune output folder works too
    assert doc["schema"] == SCHEMA and t.op == "matmul" and t.dims == ("m", "n", "k")
    assert doc["spec"]["content"]["op"] == "matmul" and doc["spec"]["hash"] == doc["spec_hash"]
    assert t.hardware.content_hash() == doc["hardware"]["hash"]
    assert t.spec.content_hash() == doc["spec"]["hash"]
    e = doc["entries"][0]
    assert set(e) == {"shape", "dtype", "unit", "params", "cycles", "time_us", "pct_of_peak",
                      "verified", "study", "trial"}
    assert len(t.entries) == 26


def _bad(tmp_path, doc, edit=None, text=None):
    p = tmp_path / "table.json"
    if text is None:
        d = copy.deepcopy(doc)
        edit(d)
        text = json.dumps(d)
    p.write_text(text)
    return p


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["entries"][0]["params"].__setitem__("base_m", "128"),
     "entries[0].params.base_m: expected an integer, got \"128\""),
    (lambda d: d["entries"][1]["shape"].__setitem__("m", -4), "entries[1].shape.m: expected a positive integer"),
    # past int32: the Ascend C TilingFromTable wrapped it, gcc refused the C header's literal
    (lambda d: d["entries"][1]["shape"].__setitem__("n", 2147487744),
     "entries[1].shape.n: expected at most 2147483647, got 2147487744"),
    (lambda d: d["entries"][0]["shape"].__setitem__("k", 10**20),
     "entries[0].shape.k: expected at most 2147483647, got 100000000000000000000"),
    (lambda d: d["entries"][0].__setitem__("verified", "yes"), "entries[0].verified: expected true or false"),
    # predictions the header comments print: "-1 cycles", "100000...0.0% of peak"
    (lambda d: d["entries"][0].__setitem__("cycles", -1), "entries[0].cycles: expected a number above 0, got -1"),
    (lambda d: d["entries"][2].__setitem__("cycles", 0), "entries[2].cycles: expected a number above 0, got 0"),
    (lambda d: d["entries"][0].__setitem__("cycles", float("inf")),
     "entries[0].cycles: expected a number above 0, got Infinity"),
    (lambda d: d["entries"][0].__setitem__("cycles", 10**400), "entries[0].cycles: expected a number above 0, got 1000"),
    (lambda d: d["entries"][1].__setitem__("time_us", float("nan")), "entries[1].time_us: expected a number above 0, got NaN"),
    (lambda d: d["entries"][1].__setitem__("time_us", -0.5), "entries[1].time_us: expected a number above 0, got -0.5"),
    (lambda d: d["entries"][0].__setitem__("pct_of_peak", 1e308),
     "entries[0].pct_of_peak: expected a number from 0 to 100, got 1e+308"),
    (lambda d: d["entries"][0].__setitem__("pct_of_peak", -3), "entries[0].pct_of_peak: expected a number from 0 to 100, got -3"),
    (lambda d: d["entries"][0].__setitem__("pct_of_peak", "50"),
     "entries[0].pct_of_peak: expected a number from 0 to 100, got \"50\""),
    (lambda d: d.__setitem__("entries", {}), "entries: expected a list of entries, got a mapping"),
    (lambda d: d["entries"][0]["params"].__setitem__("iterate_order", "k_first"),
     "entries[0].params.iterate_order: expected one of \"m_first\", \"n_first\""),
    (lambda d: d["entries"][0]["params"].pop("step_m"), "entries[0].params: missing param 'step_m'"),
    (lambda d: d["hardware"]["profile"].__setitem__("cube_cores", 12), "hardware.profile: the profile's values do not match"),
    (lambda d: d.__setitem__("schema", "autotile.table/2"),
     "schema: table schema autotile.table/2 is newer than this autotile 0.1.0 reads (autotile.table/1)"),
    (lambda d: d.__setitem__("schema", "kernel_tuner/1"), "schema: expected 'autotile.table/1'"),
    (lambda d: d.__setitem__("schema", "autotile.table/0"),
     "schema: expected 'autotile.table/1', got 'autotile.table/0'"),
    # str.isdigit() takes "¹" (int() does not: a traceback, exit 1); int() refuses 5000 digits
    (lambda d: d.__setitem__("schema", "autotile.table/\u00b9"),
     "schema: expected 'autotile.table/1', got 'autotile.table/\u00b9'"),
    (lambda d: d.__setitem__("schema", "autotile.table/\u0661"),
     "schema: expected 'autotile.table/1', got 'autotile.table/\u0661'"),
    (lambda d: d.__setitem__("schema", "autotile.table/" + "9" * 5000),
     "schema: table schema autotile.table/999"),
    (lambda d: d.__setitem__("schema", "autotile.table/0001"),
     "schema: expected 'autotile.table/1', got 'autotile.table/0001'"),
    # hand edits outside the spec's domains (entries[0] is m=64, n=128, k=256 fp16)
    (lambda d: d["entries"][0]["params"].__setitem__("single_core_m", 0),
     "entries[0].params.single_core_m: expected a value in its domain [64] for m=64,n=128,k=256 fp16 cube, got 0"),
    (lambda d: d["entries"][0]["params"].__setitem__("base_m", -16),
     "entries[0].params.base_m: expected a value in its domain [16, 32, 48, 64] for m=64,n=128,k=256 fp16 cube, "
     "got -16"),
    (lambda d: d["entries"][0]["params"].__setitem__("base_m", 512),  # a multiple of 16, but above align_up(m, 16)
     "entries[0].params.base_m: expected a value in its domain [16, 32, 48, 64]"),
    (lambda d: d["entries"][0]["params"].__setitem__("db_l0a", 3),
     "entries[0].params.db_l0a: expected a value in its domain [1, 2]"),
])
def test_bad_tables_are_input_errors(tmp_path, doc, edit, expected, capsys):
    p = _bad(tmp_path, doc, edit)
    with pytest.raises(InputError) as exc:
        load_table(p)
    assert expected in str(exc.value) and str(exc.value).startswith(str(p))
    assert cli(["lookup", str(p), "--shape", "m=64,n=128,k=256"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected in err


@pytest.mark.parametrize("fmt", ["json", "c", "ascendc"])
@pytest.mark.parametrize("n", [2**31, 10**20])
def test_exports_refuse_entry_shapes_past_int32(tmp_path, doc, fmt, n, capsys):
    """export wrote them: ascendc exited 0 with a TilingFromTable that wraps n to int32 and the
    C header held a literal gcc rejects ("integer constant is too large")."""
    p = _bad(tmp_path, doc, lambda d: d["entries"][0]["shape"].__setitem__("n", n))
    assert cli(["export", str(p), "--format", fmt, "-o", str(tmp_path / "out.h")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"entries[0].shape.n: expected at most 2147483647, got {n}" in err
    assert not (tmp_path / "out.h").exists()


def test_predictions_tune_writes_load(doc):
    """null where there is none (replay has no % of peak), 0 % and a hair above 100 % (the
    simulator's shares round: tests/test_peak.py allows 100 + 1e-9)."""
    d = copy.deepcopy(doc)
    d["entries"][0].update(cycles=None, time_us=None, pct_of_peak=None)
    d["entries"][1].update(cycles=1, time_us=1e-9, pct_of_peak=0)
    d["entries"][2].update(pct_of_peak=100.0 + 1e-9)
    e = load_table(d).entries
    assert (e[0].cycles, e[0].time_us, e[0].pct_of_peak, e[1].pct_of_peak) == (None, None, None, 0)


@pytest.mark.parametrize("fmt", ["json", "c"])
@pytest.mark.parametrize("how", ["folder", "file", "spelled", "symlink", "hardlink"])
def test_export_refuses_to_write_over_its_table(tmp_path, doc, fmt, how, capsys):
    """export DIR --format c -o DIR/table.json exited 0 and replaced the table with the header."""
    run = tmp_path / "run"
    run.mkdir()
    table = write_table(run / "table.json", doc)
    before = table.read_bytes()
    source, out = {"folder": (run, table), "file": (table, table),
                   "spelled": (run, tmp_path / "run" / ".." / "run" / "table.json"),
                   "symlink": (table, tmp_path / "link.json"), "hardlink": (run, tmp_path / "hard.json")}[how]
    if how == "symlink":
        out.symlink_to(table)
    if how == "hardlink":
        out.hardlink_to(table)
    assert cli(["export", str(source), "--format", fmt, "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"-o {out}: is the table this export reads" in err
    assert table.read_bytes() == before
    assert cli(["export", str(source), "--format", fmt, "-o", str(tmp_path / "other.h")]) == 0


OWNED = ["studies.journal", "summary.json", "report.html", "report.md", "studies.journal.lock",
         "report_files/extra.png", "traces/extra.json", "report_files/../summary.json"]


@pytest.mark.parametrize("name", OWNED)
def test_export_refuses_to_write_over_what_the_tune_run_owns(tmp_path, doc, name, capsys):
    """export DIR -o DIR/studies.journal exited 0 and replaced the journal, every trial of the run,
    with the table (so did -o summary.json or report.html); only table.json was guarded."""
    run = tmp_path / "run"
    for sub in ("report_files", "traces"):
        (run / sub).mkdir(parents=True)
    write_table(run / "table.json", doc)
    files = {f: run / f for f in ("studies.journal", "summary.json", "report.html", "report.md")}
    for f, path in files.items():
        path.write_text(f"{f}\n")
    out = run / name
    assert cli(["export", str(run), "--format", "json", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"-o {out}: is " in err and "of the tune run in" in err, err
    assert all(path.read_text() == f"{f}\n" for f, path in files.items())
    assert not (run / "report_files" / "extra.png").exists() and not (run / "traces" / "extra.json").exists()


def test_export_refuses_a_link_to_the_journal_and_the_storage_summary_records(tmp_path, doc, capsys):
    run, elsewhere = tmp_path / "run", tmp_path / "db"
    run.mkdir()
    elsewhere.mkdir()
    write_table(run / "table.json", doc)
    (run / "studies.journal").write_text("trials\n")
    link = tmp_path / "link.json"
    link.symlink_to(run / "studies.journal")
    assert cli(["export", str(run / "table.json"), "--format", "c", "-o", str(link)]) == 2
    assert "is the study journal of the tune run in" in capsys.readouterr().err
    for url, store in ((f"journal:{elsewhere / 'j.log'}", elsewhere / "j.log"),
                       (f"sqlite:///{elsewhere / 'o.db'}", elsewhere / "o.db")):
        (run / "summary.json").write_text(json.dumps({"storage": url}))
        assert cli(["export", str(run), "--format", "json", "-o", str(store)]) == 2
        assert "is the study storage of the tune run in" in capsys.readouterr().err
        assert not store.exists()
    assert cli(["export", str(run), "--format", "json", "-o", str(run / "export.json")]) == 0
    assert (run / "studies.journal").read_text() == "trials\n"


def test_a_table_not_named_table_json_has_no_tune_run_to_guard(tmp_path, doc):
    """Only a table.json (what tune writes) makes its folder a tune output folder."""
    table = write_table(tmp_path / "mine.json", doc)
    assert cli(["export", str(table), "--format", "json", "-o", str(tmp_path / "summary.json")]) == 0


def _rehash(d):
    """Recompute the table's hashes as a careful hand edit would (content_hash without a profile)."""
    import hashlib

    def digest(data):
        return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]

    d["hardware"]["hash"] = digest({k: v for k, v in d["hardware"]["profile"].items() if k != "description"})
    spec = {k: v for k, v in d["spec"]["content"].items() if k != "description"}
    d["spec"]["hash"] = d["spec_hash"] = digest(dict(spec, hardware=d["hardware"]["hash"]))


def _edit_profile(key, value):
    def edit(d):
        node, *path = [d["hardware"]["profile"], *key.split(".")]
        for k in path[:-1]:
            node = node[k]
        if value is KeyError:
            del node[path[-1]]
        else:
            node[path[-1]] = value
        _rehash(d)
    return edit


@pytest.mark.parametrize("key,value,expected", [
    # were a TypeError traceback in lookup
    ("name", None, "hardware.profile.name: expected a profile name"),
    ("vector_cores", None, "hardware.profile.vector_cores: expected a whole number, got None"),
    # were accepted by lookup and export
    ("clock_ghz", "x", "hardware.profile.clock_ghz: expected a number, got 'x'"),
    ("clock_ghz", 0, "hardware.profile.clock_ghz: expected a number from 0.01 to 100, got 0"),
    ("clock_ghz", -1, "hardware.profile.clock_ghz: expected a number from 0.01 to 100, got -1"),
    ("vector_cores", 1.5, "hardware.profile.vector_cores: expected a whole number, got 1.5"),
    ("vector_cores", 4, "hardware.profile.vector_cores: expected at least as many vector cores as cube cores"),
    ("hbm_bytes_per_cycle", 0, "hardware.profile.hbm_bytes_per_cycle: expected a number from 0.001 to 2**20, got 0"),
    ("vector", {}, "hardware.profile.vector: missing key 'vadd' (the kernels use it)"),
    ("vector_bytes_per_repeat", 3,
     "hardware.profile.vector_bytes_per_repeat: expected an integer multiple of 32 from 32 to 4096, got 3"),
    ("vector_max_repeat", KeyError, "hardware.profile: missing key 'vector_max_repeat'"),
    ("align", None, "hardware.profile.align: expected a mapping"),
    ("copy.gm_ub", KeyError, "hardware.profile.copy: missing key 'gm_ub'"),
    ("copy.gm_ub.bytes_per_cycle", 0,
     "hardware.profile.copy.gm_ub.bytes_per_cycle: expected a number from 0.001 to 2**20, got 0"),
    ("cube.macs_per_cycle.fp16", None, "hardware.profile.cube.macs_per_cycle.fp16: expected a whole number, got None"),
    ("vector.vadd.fp16_fp16_fp16.per_repeat", 0,
     "hardware.profile.vector.vadd.fp16_fp16_fp16.per_repeat: expected a number above 0 and at most 1e9, got 0"),
    ("vector.vadd.fp16_fp16_fp16.source", "x", "hardware.profile.vector.vadd.fp16_fp16_fp16.source: unknown key"),
    ("vector.vfoo", {}, "hardware.profile.vector.vfoo: unknown key"),
    ("scalar.add", KeyError, "hardware.profile.scalar: missing key 'add' (the kernels use it)"),
    ("notes", {}, "hardware.profile.notes: unknown key"),
])
def test_the_embedded_profile_gets_a_profile_files_checks(tmp_path, doc, capsys, key, value, expected):
    p = _bad(tmp_path, doc, _edit_profile(key, value))
    with pytest.raises(InputError) as exc:
        load_table(p)
    where = f"{p}:{exc.value.line}:{exc.value.col}"  # the field's place in the JSON text
    assert exc.value.line is not None and str(exc.value) == f"{where}: {expected}"
    for argv in (["lookup", str(p), "--shape", "m=64,n=128,k=256"],
                 ["export", str(p), "--format", "c", "-o", str(tmp_path / "t.h")]):
        assert cli(argv) == 2
        assert capsys.readouterr().err == f"autotile: error: {where}: {expected}\n"
    assert not (tmp_path / "t.h").exists()


def test_the_embedded_profile_round_trips_every_bundled_profile(tmp_path, doc):
    from autotile.hardware import bundled_names, load_profile
    from autotile.tables.embedded import profile_dict, profile_from_dict

    for name in bundled_names():
        hw = load_profile(name)
        again = profile_from_dict(json.loads(json.dumps(profile_dict(hw))))
        assert again == hw and again.content_hash() == hw.content_hash() and again.path is None
    d = copy.deepcopy(doc)
    _rehash(d)  # the helper above agrees with the hashes autotile writes
    assert (d["hardware"]["hash"], d["spec_hash"]) == (doc["hardware"]["hash"], doc["spec_hash"])


def test_invalid_json_names_line_and_column(tmp_path, doc, capsys):
    text = json.dumps(doc, indent=2)
    p = _bad(tmp_path, doc, text=text.replace('"dims"', '"dims',  1))
    assert cli(["export", str(p), "--format", "c", "-o", str(tmp_path / "t.h")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"autotile: error: {p}:") and "invalid JSON" in err and "\n" not in err
    assert not (tmp_path / "t.h").exists()


def test_deeply_nested_json_is_an_input_error(tmp_path, doc, capsys):
    """json.loads recursed once per level: 100000 nested lists were a RecursionError traceback."""
    p = _bad(tmp_path, doc, text="[" * 100_000 + "]" * 100_000)
    assert cli(["lookup", str(p), "--shape", "m=64,n=128,k=256"]) == 2
    assert capsys.readouterr().err == f"autotile: error: {p}: invalid JSON: nesting too deep\n"


def test_missing_table_file(tmp_path, capsys):
    assert cli(["lookup", str(tmp_path / "nope.json"), "--shape", "m=1,n=1,k=1"]) == 2
    assert "file not found" in capsys.readouterr().err


# -- lookup -------------------------------------------------------------------------------

def test_exact(look):
    m = look.find({"m": 512, "n": 2048, "k": 4096}, "fp32")
    assert m.match == "exact" and m.matched_shape == m.shape and m.dtype == "fp32"
    assert m.params == look.table.entries[m.entry].params and look.table.entries[m.entry].dtype == "fp32"


def test_beside_a_tuned_shape_is_nearest_and_feasible(look):
    shape = {"m": 1010, "n": 1020, "k": 1200}
    m = look.find(shape)
    assert m.match == "nearest" and m.matched_shape == {"m": 1000, "n": 1000, "k": 1000}
    assert look.reason(shape, m.params, m.dtype, m.unit) is None
    # n=1100 would split the 1000^3 tiling into 3 x 9 = 27 blocks > 24 cores: not that entry
    shape["n"] = 1100
    m = look.find(shape)
    assert m.matched_shape != {"m": 1000, "n": 1000, "k": 1000}
    assert look.reason(shape, m.params, m.dtype, m.unit) is None


def test_nearest_skips_infeasible_and_falls_back(look):
    # m=40000 splits every tuned tiling into more blocks than cores: no entry fits
    m = look.find({"m": 40000, "n": 2048, "k": 4096})
    assert m.match == "default" and m.matched_shape is None
    assert look.reason(m.shape, m.params, m.dtype, m.unit) is None
    # bf16, a dtype of matmul but not of the table's spec, is refused: it used to answer "default"
    with pytest.raises(InputError, match="dtype: expected one of the table's dtypes fp16, fp32, got 'bf16'"):
        look.find({"m": 512, "n": 2048, "k": 4096}, "bf16")


def test_model_hook_is_used_and_checked(doc):
    """No entry fits m=3,n=5,k=7 (every tuned base block is wider): the model is asked next."""
    calls = []
    entry0 = doc["entries"][0]["params"]  # tuned for m=64: base_m=64 cannot serve m=3

    def wrong(op, shape, dtype):
        calls.append((op, shape, dtype))
        return dict(entry0)

    look = Lookup(doc, wrong)
    got = look.find({"m": 3, "n": 5, "k": 7})
    assert calls == [("matmul", {"m": 3, "n": 5, "k": 7}, "fp16")]
    assert got.match == "default" and any(s.startswith("model (cube): base_m=64") for s in got.skipped)
    assert look.reason(got.shape, got.params, got.dtype, got.unit) is None

    def right(op, shape, dtype):
        return {"unit": "cube", "params": matmul.default_params(shape, dtype, look.table.hardware)}

    got = Lookup(doc, right).find({"m": 3, "n": 5, "k": 7})
    assert got.match == "model" and got.params["base_m"] == 16
    assert Lookup(doc, lambda *a: None).find({"m": 3, "n": 5, "k": 7}).skipped == ("model: no answer",)
    # a table entry that fits wins over the model
    assert Lookup(doc, right).find({"m": 64, "n": 128, "k": 256}).match == "exact"


def test_no_feasible_tiling_says_so(doc, monkeypatch):
    look = Lookup(doc)
    def none_fits(*a, **k):
        raise InfeasibleConfig("L0A overflow at every base_m")

    monkeypatch.setattr(look.kernel, "default_params", none_fits)
    with pytest.raises(NoFeasibleTiling, match="no feasible tiling for matmul m=40000,n=2048,k=4096 fp16.*L0A overflow"):
        look.find({"m": 40000, "n": 2048, "k": 4096})


def test_bad_queries(look):
    with pytest.raises(InputError, match="shape: expected positive integers"):
        look.find({"m": 0, "n": 1, "k": 1})
    with pytest.raises(InputError, match="dtype: expected one of the table's dtypes fp16, fp32, got 'fp8'"):
        look.find({"m": 1, "n": 1, "k": 1}, "fp8")


dim = st.integers(1, 300_000)


@settings(max_examples=150, deadline=None)
@given(m=dim, n=dim, k=dim, dtype=st.sampled_from(["fp16", "fp32"]))
def test_lookup_never_returns_an_infeasible_tiling(look, m, n, k, dtype):
    shape = {"m": m, "n": n, "k": k}
    try:
        got = look.find(shape, dtype)
    except NoFeasibleTiling:
        return
    assert got.match in ("exact", "nearest", "default")
    assert look.reason(shape, got.params, dtype, got.unit) is None
    if got.match == "nearest":
        e = look.table.entries[got.entry]
        assert e.dtype == dtype and got.distance == pytest.approx(
            sum((math.log(a) - math.log(b)) ** 2 for a, b in zip(shape.values(), e.shape.values())))


@settings(max_examples=100, deadline=None)
@given(m=st.integers(1, 20000), n=st.integers(1, 20000), k=st.integers(1, 20000))
def test_region_is_the_spec_and_kernel_checks_where_the_tiling_does_not_get_slower(look, m, n, k):
    """What the C header checks (the region) equals what Python checks, for this spec, cut to the
    shapes where the tiling keeps its per-core work (see autotile.tables.region)."""
    shape = {"m": m, "n": n, "k": k}
    for e, r in zip(look.table.entries, look.regions):
        p, t = e.params, e.shape
        panel = p["base_k"] * max(p["step_ka"], p["step_kb"])
        keeps = all(shape[d] >= t[d] or t[d] <= p[f"single_core_{d}"] for d in "mnk") and (
            k >= t["k"] if t["k"] > panel else k <= panel)
        feasible = look.reason(shape, look.served(e, shape), e.dtype, e.unit) is None
        assert r.contains((m, n, k)) == (feasible and keeps), e.shape


# -- commands and kernels -------------------------------------------------------------------

def test_lookup_command_json(table_file, capsys):
    assert cli(["lookup", str(table_file), "--shape", "m=1010,n=1020,k=1200", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"shape", "matched_shape", "match", "unit", "params"}
    assert out["match"] == "nearest" and out["matched_shape"] == {"m": 1000, "n": 1000, "k": 1000}
    assert cli(["lookup", str(table_file), "--shape", "m=900,n=1100"]) == 2


def test_export_json_round_trips(table_file, tmp_path):
    out = tmp_path / "copy.json"
    assert cli(["export", str(table_file), "--format", "json", "-o", str(out)]) == 0
    assert load_table(out).to_json() == load_table(table_file).to_json()


def test_matmul_run_reads_the_table(table_file):
    a, b = matmul.make_inputs({"m": 70, "n": 150, "k": 250}, "fp16", seed=1)
    c = matmul.run(a, b, table=table_file, dtype="fp16")
    ref = matmul.reference((a, b), "fp16")
    rtol, atol = matmul.tolerance("fp16", {"m": 70, "n": 150, "k": 250}, inputs=(a, b))
    np.testing.assert_allclose(c, ref, rtol=rtol, atol=atol)
    assert lookup(table_file, {"m": 70, "n": 150, "k": 250}).match == "nearest"


def test_region_probe_finds_no_mismatch_for_the_bundled_rules(doc):
    from autotile.tables.export import region_mismatches

    assert region_mismatches(doc) == []


def test_region_functions_apply_to_the_bundled_rules_only(tmp_path):
    """A region function is derived from the bundled specs' rules: another spec's entries (even
    with a change that does not read the shape, such as base_m's multiple) serve their own shapes."""
    from tablekit import SMALL_SPEC, UNITS_SPEC

    from autotile.space import load_spec
    from autotile.tables.region_rules import custom_rule

    root = Path(__file__).resolve().parents[1]
    for path, units in ((root / "studies" / "matmul.yaml", ["cube"]), (UNITS_SPEC, ["cube", "vector"]),
                        (SMALL_SPEC, ["cube"]), (root / "studies" / "weighted_sum.yaml", ["vector", "cube"])):
        assert [custom_rule(load_spec(path), u) for u in units] == [None] * len(units), path
    text = SMALL_SPEC.read_text()
    edits = {  # spacing and parentheses do not count
        "align_up(shape.m, base_m)": ("((align_up(shape.m,  base_m)))", None),
        "multiple_of: 16\n  base_n": ("multiple_of: 8\n  base_n", "params.base_m.multiple_of is 8, not 16"),
        "  - {expr: l0a_used": ("  - {expr: base_m >= 16, message: small}\n  - {expr: l0a_used",
                                'the constraint "base_m >= 16" is not one of the bundled rules'),
    }
    for i, (old, (new, why)) in enumerate(edits.items()):
        assert text.count(old) == 1, old
        (tmp_path / f"{i}.yaml").write_text(text.replace(old, new))
        assert custom_rule(load_spec(tmp_path / f"{i}.yaml"), "cube") == why
        look = Lookup(default_table(tmp_path / f"{i}.yaml"))
        assert look.custom == ({"cube": why} if why else {})
        if why:  # exact still, but nothing else: 1010x1020x1200 was 'nearest' 1000^3
            e = look.table.entries[-1]
            assert all(r.lo == r.hi == tuple(e.shape.values()) for e, r in zip(look.table.entries, look.regions))
            assert look.find(dict(e.shape), e.dtype).match == "exact"
            assert look.find({"m": 1010, "n": 1020, "k": 1200}).match == "default"


def test_an_entry_python_refuses_at_its_own_shape_has_an_empty_region(doc, monkeypatch):
    import autotile.tables.lookup as lookup_mod

    first = doc["entries"][0]
    monkeypatch.setattr(lookup_mod, "kernel_check", lambda kernel, shape, params, *a: (
        "refused" if params == first["params"] else None))
    look = Lookup(doc)
    assert all(lo > hi for lo, hi in zip(look.regions[0].lo, look.regions[0].hi))
    try:
        got = look.find(dict(first["shape"]), first["dtype"])
    except NoFeasibleTiling:  # the default is that very tiling, refused too
        got = None
    assert got is None or got.entry != 0


def test_embedded_spec_without_dtypes_is_an_input_error(tmp_path, capsys):
    """A spec whose dtypes are the op's default hashes the same without its ``dtypes`` field."""
    from autotile.tables.embedded import spec_from_dict

    d = copy.deepcopy(default_table())
    d["entries"] = [e for e in d["entries"] if e["dtype"] == "fp16"]
    content = d["spec"]["content"]
    content["dtypes"] = ["fp16"]
    d["spec"]["hash"] = d["spec_hash"] = spec_from_dict(content, load_table(d, check_hashes=False).hardware).content_hash()
    del content["dtypes"]
    p = _bad(tmp_path, d, lambda _: None)
    assert cli(["lookup", str(p), "--shape", "m=64,n=128,k=256"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "spec.content: missing field 'dtypes'" in err
    content["dtypes"] = []
    with pytest.raises(InputError, match="spec.content.dtypes: expected a non-empty list of dtype names"):
        load_table(d)


@pytest.mark.parametrize("name", sorted(p.stem for p in (Path(__file__).resolve().parents[1] / "studies").glob("*.yaml")))
def test_every_bundled_study_table_answers_its_own_shapes_exactly(tmp_path, name, capsys):
    """A table of each bundled study's default tilings answers each tuned shape with its entry,
    through Python and the export check alike; resize and roi_align tables answered nothing
    (their kernels' check needs the spec's inputs, which the lookup did not pass)."""
    spec = Path(__file__).resolve().parents[1] / "studies" / f"{name}.yaml"
    path = tmp_path / "table.json"
    path.write_text(json.dumps(default_table(spec)))
    table = json.loads(path.read_text())
    for i, e in enumerate(table["entries"]):
        m = lookup(path, e["shape"], e["dtype"])
        assert (m.match, m.entry, m.unit) == ("exact", i, e["unit"]), (e["shape"], m.skipped)
    capsys.readouterr()
    assert cli(["export", str(path), "--format", "c", "-o", str(tmp_path / "t.h")]) == 0
    assert "warning" not in capsys.readouterr().err


def test_an_entry_breaking_a_constraint_is_an_input_error(tmp_path, capsys):
    """Domains alone do not keep a hand edit honest: tile_len 65536 with 4 buffers lies in the tiny
    elementwise spec's domains but overflows UB (its constraint), and a header would hand it out."""
    from tinyspecs import EW

    spec_file = tmp_path / "ew.yaml"
    spec_file.write_text(EW.replace("shapes: [{n: 4096}]", "shapes: [{n: 65536}]"))
    d = default_table(spec_file)
    ok = write_table(tmp_path / "ok.json", d)
    assert load_table(ok).entries[0].params["tile_len"] <= 8192
    d["entries"][0]["params"].update(tile_len=65536, buffer_num=4)
    bad = write_table(tmp_path / "table.json", d)
    with pytest.raises(InputError) as exc:
        load_table(bad)
    assert "entries[0].params: expected a configuration the spec allows for n=65536 fp16 vector, but fit UB" in \
        str(exc.value)
    assert cli(["export", str(bad), "--format", "c", "-o", str(tmp_path / "t.h")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "fit UB (3 * buffer_num * tile_len * dtype.bytes <= hw.ub_bytes" in err
    assert not (tmp_path / "t.h").exists()


@pytest.mark.parametrize("indent", [None, 1, "\t"])  # a tab: YAML refuses it as indentation
@pytest.mark.parametrize("edit, field, at", [
    (lambda d: d["entries"][1].__setitem__("cycles", "fast"), "entries[1].cycles", '"fast"'),
    (lambda d: d["entries"][0]["params"].__setitem__("base_m", [1]), "entries[0].params.base_m", "["),
    (lambda d: d["entries"][0]["params"].__setitem__("db_l0a", 3), "entries[0].params.db_l0a", "3"),
])
def test_bad_table_fields_are_located(tmp_path, doc, edit, field, at, indent):
    """Table errors named the field but not its line and column (json keeps no positions)."""
    d = copy.deepcopy(doc)
    edit(d)
    p = _bad(tmp_path, doc, text=json.dumps(d, indent=indent))
    with pytest.raises(InputError) as exc:
        load_table(p)
    e = exc.value
    assert e.field == field and e.line is not None and str(e).startswith(f"{p}:{e.line}:{e.col}: {field}: ")
    assert p.read_text().splitlines()[e.line - 1][e.col - 1:].startswith(at)
