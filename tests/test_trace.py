"""Chrome trace export of simulated matmul schedules."""

import json
import os

import pytest

from autotile.kernels import matmul as mm
from autotile.sim import engine as E
from autotile.sim.trace import pipe_overlap, write_chrome_trace

SHAPE = {"m": 1024, "n": 2048, "k": 512}


@pytest.fixture(scope="module")
def runs(hw):
    d = mm.default_params(SHAPE, "fp16", hw)
    no_db = {**d, "db_l0a": 1, "db_l0b": 1, "db_l0c": 1, "step_ka": 1, "step_kb": 1, "depth_a1": 1, "depth_b1": 1}
    return {name: mm.simulate(SHAPE, p, "fp16", hw, trace_capacity=100_000, want_traces=True)
            for name, p in (("db", d), ("no_db", no_db))}


def test_chrome_trace_structure(tmp_path, hw, runs):
    res, traces = runs["db"]
    path = write_chrome_trace(tmp_path / "t.json", traces, hw, {"op": "matmul", "cycles": res.cycles})
    doc = json.loads(path.read_text())
    ev = doc["traceEvents"]
    procs = [e for e in ev if e["ph"] == "M" and e["name"] == "process_name"]
    assert len(procs) == len(traces)
    assert procs[0]["args"]["name"].startswith("core class 0 (x ")
    threads = {e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "thread_name"}
    assert {"MTE2", "MTE1", "M", "FIX"} <= threads
    xs = [e for e in ev if e["ph"] == "X"]
    assert len(xs) == sum(len(t[-1]) for t in traces)
    for e in xs:
        assert {"name", "ph", "ts", "dur", "pid", "tid", "args"} <= set(e) and e["dur"] >= 0
    names = {e["name"] for e in xs}
    assert {"gm_l1", "l1_l0a", "l1_l0b", "mmad", "l0c_gm"} <= names
    mm_ev = next(e for e in xs if e["name"] == "mmad")
    assert mm_ev["args"]["macs"] > 0
    assert mm_ev["dur"] == pytest.approx(mm_ev["args"]["cycles"] / (hw.clock_ghz * 1e3))
    last = max(e["ts"] + e["dur"] for e in xs)
    assert last <= res.time_us * 1.0001
    assert doc["otherData"]["hw"] == hw.name


def test_double_buffering_overlaps_copies_with_the_cube(runs):
    _, db = runs["db"]
    _, single = runs["no_db"]
    db_rows, one_rows = db[0][-1], single[0][-1]
    mte2_db, busy_db = pipe_overlap(db_rows, E.MTE2, E.M)
    mte2_one, busy_one = pipe_overlap(one_rows, E.MTE2, E.M)
    mte1_db, _ = pipe_overlap(db_rows, E.MTE1, E.M)
    mte1_one, _ = pipe_overlap(one_rows, E.MTE1, E.M)
    # with L0 double buffering MTE1 feeds the next Mmad while the cube runs; without it never
    assert mte1_db > 0 and mte1_one == 0
    # one L1 slot still lets the next GM load start once MTE1 has read the panel, so MTE2/M
    # overlap shrinks rather than vanishing
    assert mte2_db / busy_db > 1.5 * (mte2_one / busy_one)
    assert runs["db"][0].cycles < 0.6 * runs["no_db"][0].cycles


def test_simulate_writes_a_trace_only_for_a_feasible_configuration(tmp_path, run_cli):
    """`simulate --trace`: a schedule to open for a feasible tiling; none for one the spec refuses
    (the file used to be written although the answer said infeasible)."""
    from pathlib import Path

    spec = str(Path(__file__).resolve().parents[1] / "studies" / "matmul.yaml")
    good = tmp_path / "good.json"
    code, out, _ = run_cli("simulate", spec, "--shape", "m=256,n=256,k=256", "--trace", str(good))
    assert code == 0 and f"trace: {good}" in out
    events = json.loads(good.read_text())["traceEvents"]
    assert any(e.get("ph") == "X" for e in events)
    bad = tmp_path / "bad.json"
    code, out, _ = run_cli("simulate", spec, "--shape", "m=256,n=256,k=256", "--set", "db_l0a=3",
                           "--trace", str(bad))
    assert code == 0 and out.startswith("infeasible: db_l0a=3 outside its domain") and "no trace written" in out
    assert not bad.exists()
    code, out, _ = run_cli("simulate", spec, "--shape", "m=256,n=256,k=256", "--set", "db_l0a=3",
                           "--trace", str(bad), "--json")
    got = json.loads(out)
    assert code == 0 and got["feasible"] is False and "trace" not in got and not bad.exists()
    # outside the spec is not simulated: no figures beside "infeasible", as for the kernel's own refusals
    assert got["cycles"] is None and got["time_us"] is None


def test_a_full_trace_counts_what_it_leaves_out(hw):
    """A trace past its capacity keeps its first operations and counts the others, with the
    earliest start among them (the engine used to drop them without a word)."""
    p = mm.default_params(SHAPE, "fp16", hw)
    _, whole = mm.simulate(SHAPE, p, "fp16", hw, trace_capacity=100_000, want_traces=True)
    _, cut = mm.simulate(SHAPE, p, "fp16", hw, trace_capacity=50, want_traces=True)
    for w, c in zip(whole, cut):
        full, rows = w[-1], c[-1]
        assert full.dropped == 0 and full.dropped_from == float("inf") and len(full) > 50
        assert len(rows) == 50 and rows.dropped == len(full) - 50
        assert (rows == full[:50]).all()
        # every operation that starts before dropped_from is in the rows
        assert rows.dropped_from == full[50:, 1].min() and (full[50:, 1] >= rows.dropped_from).all()


def test_a_cut_trace_file_says_so_and_a_whole_one_says_nothing(tmp_path, hw, runs):
    from autotile.sim.trace import coverage

    _, whole = runs["db"]
    assert coverage(whole) is None
    doc = json.loads(write_chrome_trace(tmp_path / "whole.json", whole, hw, {"op": "matmul"}).read_text())
    assert not {"trace_truncated", "events_kept", "events_dropped", "complete_until_cycle"} & set(doc["otherData"])
    p = mm.default_params(SHAPE, "fp16", hw)
    _, cut = mm.simulate(SHAPE, p, "fp16", hw, trace_capacity=40, want_traces=True)
    doc = json.loads(write_chrome_trace(tmp_path / "cut.json", cut, hw, {"op": "matmul"}).read_text())
    other = doc["otherData"]
    kept = sum(len(t[-1]) for t in cut)
    assert other["trace_truncated"] is True and other["events_kept"] == kept == 40 * len(cut)
    assert other["events_kept"] == sum(e["ph"] == "X" for e in doc["traceEvents"])
    assert other["events_dropped"] == sum(len(t[-1]) for t in whole) - kept
    assert other["complete_until_cycle"] == pytest.approx(min(t[-1][40:, 1].min() for t in whole), abs=1e-3)


def test_simulate_warns_when_its_trace_is_cut(tmp_path, run_cli, monkeypatch):
    """`simulate --trace` past the trace's capacity: one warning line on stderr (events kept and
    dropped, the cycle the trace covers up to), the figures in the JSON and in the file's
    otherData; a schedule that fits gets none of them."""
    from pathlib import Path

    from autotile.cli import simulate

    spec = str(Path(__file__).resolve().parents[1] / "studies" / "matmul.yaml")
    args = ("simulate", spec, "--shape", "m=256,n=256,k=256", "--json", "--trace")
    whole = tmp_path / "whole.json"
    code, out, err = run_cli(*args, str(whole))
    assert code == 0 and err == "" and "trace_coverage" not in json.loads(out)
    assert "events_dropped" not in json.loads(whole.read_text())["otherData"]
    n_ops = sum(e["ph"] == "X" for e in json.loads(whole.read_text())["traceEvents"])
    assert n_ops > 5

    monkeypatch.setattr(simulate, "TRACE_CAPACITY", 5)
    cut = tmp_path / "cut.json"
    code, out, err = run_cli(*args, str(cut))
    got = json.loads(out)
    cov = got["trace_coverage"]
    assert code == 0 and cov["events_kept"] == 5 and cov["events_dropped"] == n_ops - 5
    assert 0 < cov["complete_until_cycle"] < got["cycles"]
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("autotile: warning: trace truncated at 5 events")
    assert f"{n_ops - 5:,} more not recorded" in lines[0]
    assert f"up to cycle {int(cov['complete_until_cycle']):,} of {got['cycles']:,.0f}" in lines[0]
    other = json.loads(cut.read_text())["otherData"]
    assert other["events_kept"] == 5 and other["events_dropped"] == n_ops - 5
    assert other["complete_until_cycle"] == cov["complete_until_cycle"]


def _vector_event_names(doc: dict) -> list[str]:
    """Names of the V-pipe operations of a Chrome trace document, in file order."""
    v = E.PIPE_NAMES.index("v")
    return [e["name"] for e in doc["traceEvents"] if e["ph"] == "X" and e["tid"] == v]


@pytest.mark.parametrize("spec, args, expected", [
    # bf16 exact sigmoid: widen, x * -1, exp, + 1, reciprocal, narrow
    ("sigmoid.yaml", ("--shape", "n=4096", "--dtype", "bf16", "--set", "variant=exact,cores=1,tile_len=4096"),
     ["vconv", "vmuls", "vexp", "vadds", "vrec", "vconv"]),
    # two cores: products, add tree, in-core VCADD, then core 0's combine, a VCADD from a second
    # cost table whose row 0 (the code a row index gave) is the first table's vmul; then the
    # other core, which does not combine
    ("weighted_sum.yaml", ("--shape", "n=512", "--dtype", "fp32", "--unit", "vector",
                           "--set", "cores=2,tile_len=256,reduction=tree,acc_dtype=fp32"),
     ["vmul", "vadd", "vadd", "vcadd", "vcadd", "vmul", "vadd", "vadd", "vcadd"]),
    # fp16 roi_align: fp32 sums zeroed, 2 x 2 points of 4 mixed-precision VAXPYs (fp16 in, fp32
    # sum), / count, one VCONV to fp16 (the sums were fp16: no VCONV)
    ("roi_align.yaml", ("--shape", "n=1,c=16,h=8,w=8,rois=1,pooled_h=1,pooled_w=1", "--dtype", "fp16",
                        "--set", "tile_rois=1,tile_bins=1,tile_c=16,buffer_num=1,cores=1"),
     ["vdup"] + ["vaxpy"] * 16 + ["vmuls", "vconv"]),
])
def test_simulate_trace_names_vector_instructions(tmp_path, run_cli, spec, args, expected):
    """`simulate --trace` names each vector event by its instruction (it said vector[0]..vector[5])."""
    from pathlib import Path

    from autotile.hardware.ops import KERNEL_VECTOR_OPS

    path = tmp_path / "t.json"
    code, _, _ = run_cli("simulate", str(Path(__file__).resolve().parents[1] / "studies" / spec), *args,
                         "--trace", str(path))
    names = _vector_event_names(json.loads(path.read_text()))
    assert code == 0 and set(names) <= set(KERNEL_VECTOR_OPS)
    assert names == expected


def test_trace_rows_keep_what_they_left_out_through_pickle(hw):
    """A cut trace's counters survive pickling, as a slow `simulate --trace` hands its traces
    from the child process back (they came back 0 and inf: the cut was silent)."""
    import pickle

    p = mm.default_params(SHAPE, "fp16", hw)
    _, cut = mm.simulate(SHAPE, p, "fp16", hw, trace_capacity=50, want_traces=True)
    for proto in (2, pickle.HIGHEST_PROTOCOL):
        back = pickle.loads(pickle.dumps(cut, protocol=proto))
        for a, b in zip(cut, back):
            assert b[-1].dropped == a[-1].dropped > 0 and b[-1].dropped_from == a[-1].dropped_from
            assert (b[-1] == a[-1]).all()
    plain = pickle.loads(pickle.dumps(cut[0][-1][:10]))  # a slice claims nothing dropped
    assert plain.dropped == 0 and plain.dropped_from == float("inf")


def test_a_forked_simulate_reports_its_cut_trace(tmp_path):
    """`simulate --trace` run in a child process (a simulation estimated past SLOW_S) warns of a
    cut trace as the in-process one does. Run in a fresh interpreter (one thread, so it forks)
    with SLOW_S below any estimate and a small trace capacity; fork is counted to be sure."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = (
        "import os, sys\n"
        "from autotile import cli\n"
        "from autotile.cli import simulate\n"
        "simulate.SLOW_S, simulate.TRACE_CAPACITY = -1.0, 5\n"
        "forks, fork = [], os.fork\n"
        "def counted():\n"
        "    pid = fork()\n"
        "    if pid:\n"
        "        forks.append(pid)\n"
        "    return pid\n"
        "os.fork = counted\n"
        "code = cli.run(sys.argv[1:])\n"
        "print(f'forks={len(forks)}', file=sys.stderr)\n"
        "sys.exit(code)\n")
    out = tmp_path / "t.json"
    proc = subprocess.run([sys.executable, "-c", script, "simulate", str(root / "studies" / "matmul.yaml"),
                           "--shape", "m=256,n=256,k=256", "--json", "--trace", str(out)],
                          capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines[-1] == "forks=1" and len(lines) == 2, proc.stderr
    assert lines[0].startswith("autotile: warning: trace truncated at 5 events")
    cov = json.loads(proc.stdout)["trace_coverage"]
    assert cov["events_kept"] == 5 and cov["events_dropped"] > 0
    assert json.loads(out.read_text())["otherData"]["events_dropped"] == cov["events_dropped"]


def test_simulate_trace_records_its_configuration_as_json(run_cli, tmp_path):
    """QA: otherData held shape and params as Python repr text ("{'n': 4096}", not JSON) and no
    unit, inputs or cycles, so a Vector and a Scalar trace with the same params read alike. They
    nest as JSON now and name what was simulated, as the report's traces do."""
    from pathlib import Path

    study = str(Path(__file__).resolve().parents[1] / "studies" / "sigmoid.yaml")
    docs = {}
    for unit in ("vector", "scalar"):
        out = tmp_path / f"{unit}.json"
        code, text, _ = run_cli("simulate", study, "--shape", "n=4096", "--unit", unit, "--json", "--trace", str(out))
        assert code == 0
        res, other = json.loads(text), json.loads(out.read_text())["otherData"]
        assert other["shape"] == {"n": 4096} and other["params"] == res["params"]
        assert other["unit"] == unit and other["cycles"] == res["cycles"] and other["hw"] == res["hw"]
        assert other["inputs"]["data"] == "gm"  # the spec's inputs completed with their defaults
        docs[unit] = other
    assert docs["vector"]["unit"] != docs["scalar"]["unit"]


def test_write_chrome_trace_nests_values_json_has_no_scalar_for(tmp_path, hw, runs):
    import numpy as np

    _, traces = runs["db"]
    meta = {"shape": {"m": 1, "n": [2, 3]}, "params": {"base_m": np.int64(128)}, "opts": (1, "a")}
    other = json.loads(write_chrome_trace(tmp_path / "t.json", traces, hw, meta).read_text())["otherData"]
    assert other["shape"] == {"m": 1, "n": [2, 3]} and other["params"] == {"base_m": 128} and other["opts"] == [1, "a"]


def test_an_infeasible_json_simulate_says_no_trace_was_written(run_cli, tmp_path):
    """QA: with --json an infeasible configuration exited 0 in silence, leaving an older trace
    in place for a user to open as this one. It says so on stderr as the text answer does, and
    leaves the user's file alone."""
    from pathlib import Path

    study = str(Path(__file__).resolve().parents[1] / "studies" / "weighted_sum.yaml")
    out = tmp_path / "st.json"
    out.write_text("an older trace\n")
    code, text, err = run_cli("simulate", study, "--shape", "n=4096", "--set", "tile_len=3", "--json",
                              "--trace", str(out))
    assert code == 0 and not json.loads(text)["feasible"] and "trace" not in json.loads(text)
    assert err == f"autotile: note: no trace written to {out} (infeasible)\n"
    assert out.read_text() == "an older trace\n"
