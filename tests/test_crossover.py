"""The Vector-to-Cube crossover of weighted_sum comes out of simulation."""

import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from autotile.cli import run
from autotile.errors import InputError
from autotile.hardware import load_profile
from autotile.models.crossover import best, crossover, locate, windows
from autotile.models.dataset import unit_rows

HW = load_profile()


def test_on_chip_crossover_is_where_cube_starts_winning():
    res = crossover("weighted_sum", "fp16", HW, on_chip=True)
    n = res["n"]
    assert n is not None and 256 <= n <= 2048
    assert res["windows"][-1] == [n, 16384]
    assert best("weighted_sum", "cube", n, "fp16", HW, True)[0] < best("weighted_sum", "vector", n, "fp16", HW, True)[0]
    assert best("weighted_sum", "cube", 256, "fp16", HW, True)[0] > best("weighted_sum", "vector", 256, "fp16", HW, True)[0]


def test_cli_prints_both_framings(capsys):
    assert run(["crossover", "weighted_sum", "--dtype", "fp16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["simulated_n"] and out["simulated_windows"][-1][0] == out["simulated_n"]
    assert "end_to_end_n" in out and out["end_to_end_windows"]
    first = out["what_decides"]["on_chip"][0]
    assert (first["n"], first["from"], first["to"]) == (out["simulated_n"], "vector", "cube")
    assert first["cube"]["fixed_cycles"] > first["vector"]["fixed_cycles"]
    assert first["cube"]["cycles_per_element"] < first["vector"]["cycles_per_element"]


def test_sizes_past_a_whole_fractal_move_the_crossover_little():
    """The grid's powers of two are whole 16 x 16 fractals; the unaligned search probes one row past
    each and lands within a few rows of the plain one (a partial last fractal is padded by the load
    that brings it, so it costs the Cube no more than a whole one)."""
    aligned = crossover("weighted_sum", "fp16", HW, on_chip=True)["n"]
    res = crossover("weighted_sum", "fp16", HW, on_chip=True, aligned=False)
    n = res["n"]
    assert n is not None and aligned is not None and abs(n - aligned) <= 64
    assert all(r["n"] % 256 for r in res["grid"])
    for m in (n, n + 16, 2 * n + 16):
        assert best("weighted_sum", "cube", m, "fp16", HW, True)[0] < best("weighted_sum", "vector", m, "fp16", HW, True)[0]
    assert best("weighted_sum", "cube", n - 16, "fp16", HW, True)[0] > best("weighted_sum", "vector", n - 16, "fp16", HW, True)[0]


def test_cli_reports_the_unaligned_crossover(capsys):
    assert run(["crossover", "weighted_sum", "--dtype", "fp16", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["simulated_n_unaligned"] - out["simulated_n"]) <= 64
    assert out["simulated_windows_unaligned"][-1][0] == out["simulated_n_unaligned"]
    for line in out["alignment"]:
        assert "zero-fills" not in line


def test_end_to_end_cube_wins_only_a_middle_range():
    """Inputs in GM: the Cube's fixed costs lose at small n; at large n every core count is latency-
    and copy-bound and the Vector's 48 cores against the Cube's 24 win again."""
    spans = crossover("weighted_sum", "fp16", HW, on_chip=False)["windows"]
    assert spans and 256 <= spans[0][0] <= 1024 and spans[0][1] >= 4096
    for a, _ in spans:
        assert best("weighted_sum", "cube", a, "fp16", HW, False)[0] < best("weighted_sum", "vector", a, "fp16", HW, False)[0]


def _grid_point_between(a: int, b: int) -> bool:
    return any(a <= 1 << k < b for k in range(4, 15))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(17, 16384), max_size=5, unique=True))
def test_windows_find_every_edge_between_grid_points(cuts):
    """Runs (of wins and of losses) that each contain a grid point (a power of two) are found exactly."""
    cuts = sorted(cuts)
    assume(all(_grid_point_between(a, b) for a, b in zip(cuts, cuts[1:] + [16385])))

    def wins(n):
        return sum(n >= c for c in cuts) % 2 == 1

    spans = windows(wins, 16, 16384)
    for a, b in spans:
        assert wins(a) and wins(b) and (a == 16 or not wins(a - 1)) and (b == 16384 or not wins(b + 1))
        assert all(wins(n) for n in range(a, b + 1, max(1, (b - a) // 50)))
    stays = locate(wins, 16, 16384)
    assert stays == (spans[-1][0] if spans and spans[-1][1] == 16384 else None)


def test_cli_rejects_unknown_unit(capsys):
    assert run(["crossover", "weighted_sum", "--large-unit", "tpu"]) == 2


def test_tiles_longer_than_a_core_slice_simulate_like_the_covering_tile():
    """``best`` skips them: the kernels clamp a tile to the core's slice, so they are duplicates.

    If a kernel stopped clamping, the skip would change "best"; this catches it.
    """
    from autotile.kernels import registry
    from autotile.models import crossover as X

    checked = 0
    for op, units in X.CATEGORICAL.items():
        mod = registry.implementation(op)
        for unit in units:
            for n, on_chip in ((100, True), (3000, False), (5000, True), (70000, False)):
                if on_chip and "on_chip" not in registry.get(op).placements:
                    continue
                dtype = registry.get(op).dtypes[-1]
                opts = {"data": "on_chip"} if on_chip else None
                cands = X.candidate_params(op, unit, n, HW, on_chip)
                tiles = sorted({p["tile_len"] for p in cands})
                full = {}
                for p in cands:
                    r = mod.simulate({"n": n}, p, dtype, HW, unit=unit, options=opts)
                    full[tuple(sorted(p.items()))] = r.cycles if r.feasible else None
                for p in cands:
                    cover = X.covering_tile(n, p["cores"], tiles)
                    got = full[tuple(sorted(p.items()))]
                    if cover is None or p["tile_len"] <= cover or got is None:
                        continue
                    assert got == full[tuple(sorted({**p, "tile_len": cover}.items()))], (op, unit, n, p)
                    checked += 1
                feasible = [(c, dict(k)) for k, c in full.items() if c is not None]
                want = min(c for c, _ in feasible)
                got_c, got_p = X.best(op, unit, n, dtype, HW, on_chip)
                assert got_c == want and full[tuple(sorted(got_p.items()))] == want
                first = next(p for c, p in ((full[tuple(sorted(p.items()))], p) for p in cands) if c == want)
                assert got_p == first  # the same pick as the exhaustive grid, ties included
    assert checked > 500


def test_cli_refuses_ops_without_one_size(run_cli):
    code, out, err = run_cli("crossover", "matmul", "--json")
    assert code == 2 and out == ""
    assert err.strip() == ("autotile: error: crossover searches one size n; op matmul has dims m, n, k "
                           "(compare units on given shapes with `autotile simulate`)")


def test_ops_without_an_on_chip_framing_have_only_the_gm_crossover(run_cli):
    """global_sum's kernel always streams its input from GM: an "on chip" crossover (or a selector
    row, or a decision) for it would be the GM one mislabelled, so none is given."""
    with pytest.raises(InputError, match="no on-chip framing"):
        best("global_sum", "vector", 4096, "fp16", HW, True)
    code, out, _ = run_cli("crossover", "global_sum", "--small-unit", "vector", "--large-unit", "cube", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["simulated_n"] is None and doc["simulated_windows"] is None
    assert doc["simulated_windows_unaligned"] is None and doc["what_decides"]["on_chip"] is None
    assert "always reads its inputs from GM" in doc["simulated_note"]
    assert doc["end_to_end_windows"] == [] and doc["learned_n"] is None
    code, out, err = run_cli("decide", "global_sum", "--shape", "n=4096", "--data", "on_chip")
    assert code == 2 and "no on-chip framing" in err and len(err.strip().splitlines()) == 1
    rows = unit_rows("global_sum", ("fp16",), HW, sizes=[256])
    assert rows and {r.data for r in rows} == {"gm"}
    assert {r.data for r in unit_rows("weighted_sum", ("fp16",), HW, sizes=[256])} == {"gm", "on_chip"}


def test_text_names_no_on_chip_result_for_an_op_without_that_framing(run_cli):
    """global_sum printed "from nowhere up to n=16,384 (data on chip)" and "none (on chip)": a
    result of a search never run. Only the GM figures are printed, and the note says why."""
    code, out, _ = run_cli("crossover", "global_sum")
    assert code == 0 and "on chip" not in out
    assert "from nowhere up to n=16,384 (inputs in GM); learned:" in out and "none (inputs in GM);" in out
    assert "no on-chip framing" in out


def test_grid_is_printed_in_text_mode(capsys):
    assert run(["crossover", "weighted_sum", "--grid"]) == 0
    out = capsys.readouterr().out
    assert "best cycles per size:" in out
    head = next(line for line in out.splitlines() if line.strip().startswith("n "))
    assert head.split() == ["n", "vector", "(on", "chip)", "cube", "(on", "chip)", "vector", "(GM)", "cube", "(GM)"]
    assert any(line.split()[0] == "16,384" for line in out.splitlines() if line.strip())


def test_grid_lines_merge_the_framings():
    from autotile.cli.crossover import _grid_lines

    lines = _grid_lines([{"n": 16, "vector": 1.0, "cube": 2.0}],
                        [{"n": 16, "vector": 3.0, "cube": 4.0}, {"n": 24, "vector": 5.0, "cube": 6.25}],
                        ("vector", "cube"))
    assert [line.split() for line in lines[2:]] == [["16", "1.0", "2.0", "3.0", "4.0"],
                                                    ["24", "-", "-", "5.0", "6.2"]]
    assert _grid_lines([], [{"n": 16, "vector": 3.0, "cube": 4.0}], ("vector", "cube"))[1].split() == \
        ["n", "vector", "(GM)", "cube", "(GM)"]


@pytest.mark.parametrize("argv, needle", [
    (["--models", "/nonexistent/models"], "--models: /nonexistent/models does not exist"),
    (["--small-unit", "vector", "--large-unit", "vector"], "both 'vector': expected two different units"),
])
def test_cli_refuses_a_missing_models_folder_and_one_unit_twice(run_cli, argv, needle):
    code, out, err = run_cli("crossover", "weighted_sum", *argv)
    assert code == 2 and out == "" and needle in err and len(err.strip().splitlines()) == 1


def test_text_mode_says_nowhere_and_shortens_long_range_lists(capsys):
    """No crossover is 'nowhere up to n=16,384' (it printed n=None); a learned curve's dozens of
    ranges are shortened in text (--json keeps them all)."""
    from autotile.cli.crossover import _from, _spans

    assert _from(None) == "nowhere up to n=16,384" and _from(1280) == "n=1,280"
    spans = [[n, n] for n in range(100, 120)]
    text = _spans(spans)
    assert text.startswith("[100, 100], [101, 101], [102, 102], ... (20 ranges in all")
    assert text.endswith("[117, 117], [118, 118], [119, 119]")
    assert _spans(spans[:6]).count("[") == 6 and _spans([]) == "none"
    assert run(["crossover", "weighted_sum", "--dtype", "fp16"]) == 0
    out = capsys.readouterr().out
    assert "None" not in out and "nowhere up to n=16,384 (inputs in GM)" in out


# -- every one-size op with two units has a default pair; op options reach the kernels ----------

@pytest.mark.parametrize("op", ["sigmoid", "elementwise"])
def test_two_unit_ops_default_to_their_own_units(capsys, op):
    assert run(["crossover", op, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # the narrower unit first: the answer is where the Vector takes over from the S pipe
    assert out["units"] == ["scalar", "vector"]
    assert out["end_to_end_n"] is not None and out["end_to_end_n"] <= 1024  # the decision tree's ~1 KB
    # the grid's choices are named: sigmoid's is the exact variant only (QA: "all categorical params")
    assert ("only variant exact" in out["search"]) == (op == "sigmoid")


def test_a_one_unit_op_has_no_crossover(run_cli):
    code, _, err = run_cli("crossover", "copy")
    assert code == 2 and "one unit" in err and err.count("\n") == 1


def test_explicit_units_still_choose_the_pair(capsys):
    assert run(["crossover", "elementwise", "--small-unit", "scalar", "--large-unit", "vector", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["units"] == ["scalar", "vector"] and out["end_to_end_n"] == 16
    assert run(["crossover", "elementwise", "--large-unit", "scalar", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["units"] == ["vector", "scalar"]


def test_elementwise_kind_is_simulated(capsys):
    relu = best("elementwise", "vector", 4096, "fp16", HW, True, {"kind": "relu"})[0]
    assert relu < best("elementwise", "vector", 4096, "fp16", HW, True, {"kind": "add"})[0]
    assert best("elementwise", "vector", 4096, "fp16", HW, True) == best("elementwise", "vector", 4096, "fp16", HW, True,
                                                                         {"kind": "add"})
    grids = {}
    for kind in ("add", "relu"):
        assert run(["crossover", "elementwise", "--inputs", f"kind={kind}", "--json", "--grid"]) == 0
        out = json.loads(capsys.readouterr().out)
        assert out["inputs"] == {"kind": kind}
        grids[kind] = {r["n"]: r["vector"] for r in out["grid_on_chip"]}
    assert grids["relu"][4096] == pytest.approx(relu) and grids["relu"][4096] < grids["add"][4096]
    assert "trained with the default options" in out["learned_note"]


@pytest.mark.parametrize("inputs,needle", [("kind=foo", "--inputs kind: expected one of add, mul, relu, got 'foo'"),
                                           ("data=gm", "--inputs data: crossover runs both framings"),
                                           ("bogus=1", "--inputs bogus: unknown option of elementwise")])
def test_bad_crossover_inputs(capsys, inputs, needle):
    assert run(["crossover", "elementwise", "--inputs", inputs]) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


def test_report_says_which_choices_the_grid_leaves_out():
    """The report's crossover lines for sigmoid are the exact variant's, and say so."""
    import types

    from autotile.report.perf import _crossover_intro
    from autotile.space import load_spec

    spec = load_spec("studies/sigmoid.yaml")
    data = types.SimpleNamespace(hw=HW, spec=spec, summary={}, results=[{"shape": {"n": 4096}}])
    text = _crossover_intro(data, "sigmoid", ("n",), False, False, True)
    assert "only variant exact" in text
    assert "only variant" not in _crossover_intro(data, "elementwise", ("n",), False, False, True)


# -- the ends of the searched range: a crossover there is flagged, and the range can be moved --------

def test_windows_reach_a_high_that_is_not_low_doubled():
    """16 doubled never lands on 10000: the grid stopped at 8192, so a unit faster from 9000 had no
    window and no crossover at all."""
    assert windows(lambda n: n >= 9000, 16, 10000) == [[9000, 10000]]
    assert locate(lambda n: n >= 9000, 16, 10000) == 9000
    assert windows(lambda n: n <= 9500, 16, 10000) == [[16, 9500]]


def test_range_edge_names_a_crossover_at_either_end():
    from autotile.models.crossover import range_edge

    assert [range_edge(n, 16, 16384) for n in (16, 17, 8192, 8193, 16384, None)] == \
        ["floor", None, None, "ceiling", "ceiling", None]
    assert range_edge(1, 1, 64) is None  # nothing is smaller than n=1: faster at every size
    assert range_edge(9001, 16, 10000) == "ceiling" and range_edge(8192, 16, 10000) is None


def test_sigmoid_crossover_at_the_floor_is_flagged_and_found_below_it(run_cli):
    """The Vector beats the S pipe at every size on the grid, so 'stays faster from n=16' was the
    grid's first point, not a crossover; the simulator's own per-size best puts it at n=2."""
    code, out, _ = run_cli("crossover", "sigmoid", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["simulated_n"] == doc["end_to_end_n"] == 16 and doc["range"] == [16, 16384]
    assert doc["range_edges"]["simulated_n"] == doc["range_edges"]["end_to_end_n"] == "floor"
    code, out, _ = run_cli("crossover", "sigmoid")
    assert code == 0 and "from n=16 (the search's floor) (data on chip)" in out
    assert "already faster at n=16, the smallest n searched" in out and "searched n=16..16,384" in out
    code, out, _ = run_cli("crossover", "sigmoid", "--low", "1", "--high", "64", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["simulated_n"] == doc["end_to_end_n"] == 2 and doc["range"] == [1, 64]
    assert doc["simulated_windows"] == [[2, 64]] and set(doc["range_edges"].values()) == {None}
    assert "log2 grid 1..64" in doc["search"]
    for on_chip in (True, False):
        s1, v1 = (best("sigmoid", u, 1, "fp16", HW, on_chip)[0] for u in ("scalar", "vector"))
        s2, v2 = (best("sigmoid", u, 2, "fp16", HW, on_chip)[0] for u in ("scalar", "vector"))
        assert v1 >= s1 and v2 < s2


@pytest.mark.parametrize("op, unit_args, n", [("elementwise", (), 5),
                                              ("weighted_sum", ("--small-unit", "scalar", "--large-unit", "vector"), 7)])
def test_a_lower_floor_finds_the_crossover_below_16(run_cli, op, unit_args, n):
    code, out, _ = run_cli("crossover", op, *unit_args, "--low", "1", "--high", "32", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["simulated_n"] == doc["end_to_end_n"] == n
    assert doc["range_edges"]["simulated_n"] is None


def test_a_crossover_in_the_grids_top_step_is_flagged_at_the_ceiling():
    """Inputs in GM the Vector overtakes the Cube again at n=15,702, inside the last grid step; it
    "stays" faster only up to 16,384 (at 2**17 the Cube is ahead once more)."""
    res = crossover("weighted_sum", "fp16", HW, small_unit="cube", large_unit="vector", on_chip=False)
    assert res["n"] == 15702 and res["edge"] == "ceiling"
    n = 1 << 17
    assert best("weighted_sum", "cube", n, "fp16", HW, False)[0] < best("weighted_sum", "vector", n, "fp16", HW, False)[0]


def test_text_says_what_a_crossover_at_the_ceiling_leaves_open():
    from autotile.cli.crossover import _edge_notes, _from

    assert _from(15617, "ceiling", 16384) == "n=15,617 up to 16,384 (the search's ceiling)"
    assert _from(16, "floor") == "n=16 (the search's floor)" and _from(None, None, 64) == "nowhere up to n=64"
    (note,) = _edge_notes({"ceiling", None}, 16, 16384)
    assert "top step (n=8,192..16,384)" in note and "up to n=16,384 only" in note
    assert _edge_notes({None}, 16, 16384) == []


@pytest.mark.parametrize("argv, needle", [
    (["--low", "0"], "--low: expected an integer from 1 to 1048575, got 0"),
    (["--high", "2000000"], "--high: expected an integer from 2 to 1048576, got 2000000"),
    (["--low", "100", "--high", "50"], "--high: expected an integer above --low (100), got 50"),
    (["--low", "64", "--high", "64"], "--high: expected an integer above --low (64), got 64"),
    (["--low", "abc"], "argument --low: invalid int value: 'abc'"),
])
def test_bad_search_ranges_are_one_line(run_cli, argv, needle):
    code, out, err = run_cli("crossover", "sigmoid", *argv)
    assert code == 2 and out == "" and needle in err and err.count("\n") == 1


@pytest.mark.parametrize("lead,flagged", [(0.001, True), (0.05, False)])
def test_a_crossover_the_cube_holds_by_a_hair_says_so(monkeypatch, run_cli, lead, flagged):
    """weighted_sum in GM with --high 1048576 said the Cube stays faster from n=89,857, where it led
    by 0.05%; the Vector was faster at n=95,000, between two probes. Only probed sizes are known, so
    a lead under 1% is reported (closest_leads) and flagged in the text."""
    import autotile.models.crossover as X

    def fake(op, unit, n, dtype, hw, on_chip, options=None):
        cycles = 1000.0 + n
        return (cycles * (1 - lead if n >= 100 else 1 + lead) if unit == "cube" else cycles), {}

    monkeypatch.setattr(X, "best", fake)
    code, out, err = run_cli("crossover", "weighted_sum", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["end_to_end_n"] == 100 and got["closest_leads"]["end_to_end_n"]["lead"] == pytest.approx(lead)
    assert "probed size" in got["meaning"]
    code, out, _ = run_cli("crossover", "weighted_sum")
    assert code == 0 and ("close call (inputs in GM): cube leads by only 0.10%" in out) == flagged


def test_a_change_the_lines_do_not_explain_is_put_down_to_the_step(monkeypatch):
    """weighted_sum bf16 in GM, Cube to Vector at n = 16,129 (while its GM loads were charged whole
    fractals): from n to 2n the Vector has the less fixed cost and grows the faster, which would make
    it faster at every smaller n, yet the Cube wins below; the explanation named the fixed cost.
    What decides is the Cube's 64th fractal."""
    import autotile.models.crossover as cx
    from autotile.models.what_decides import explain

    def fake(op, unit, n, *a):
        if unit == "vector":
            return 848.0 + 0.0064 * n, {}
        return 861.0 + 0.0057 * n - (9.0 if n <= 16128 else 0.0), {}  # the 64th fractal from 16,129

    monkeypatch.setattr(cx, "best", fake)
    e = explain("weighted_sum", "bf16", HW, False, 16129, "cube", "vector")
    v, c = e["vector"], e["cube"]
    assert v["fixed_cycles"] < c["fixed_cycles"] and v["cycles_per_element"] > c["cycles_per_element"]
    cube = [fake("", "cube", n)[0] for n in (16128, 16129)]
    vec = [fake("", "vector", n)[0] for n in (16128, 16129)]
    assert cube[0] < vec[0] and cube[1] > vec[1]
    assert e["why"].startswith(f"cube's cost steps up at n=16,129: {cube[0]:,.1f} cycles at 16,128, "
                               f"{cube[1]:,.1f} at 16,129 (+{cube[1] - cube[0]:.1f}: 16,128 is 63 whole 16 x 16 "
                               f"fractals, one element more needs another), past vector's {vec[1]:,.1f}")
    assert "a step, not a trend" in e["why"] and "and grows faster" in e["why"]


def test_a_step_down_names_the_unit_that_drops_and_its_new_core_count(monkeypatch):
    """The other side of a step: the unit that wins from n got cheaper there (more cores from n on)."""
    import autotile.models.crossover as cx
    from autotile.models import what_decides

    def fake(op, unit, n, *a):
        if unit == "vector":
            return 100 + 0.1 * n, {}
        return 120 + 0.1 * n - (40 if n >= 300 else 0), {"cores": 2 if n >= 300 else 1}

    monkeypatch.setattr(cx, "best", fake)
    why = what_decides.explain("weighted_sum", "fp16", HW, True, 300, "vector", "cube")["why"]
    assert why.startswith("cube's cost steps down at n=300: 149.9 cycles at 299, 110.0 at 300 (-39.9: its best "
                          "tiling moves from 1 to 2 cores), below vector's 130.0; a step, not a trend")


@pytest.mark.parametrize("lead,flagged", [(0.001, True), (0.05, False)])
def test_a_window_the_cube_holds_by_a_hair_says_so(monkeypatch, run_cli, lead, flagged):
    """weighted_sum fp32 in GM: the Cube faster on [217, 7680] only, by 0.11% at 217 (and the Vector
    faster at n = 259, between probes); with no *_n there, the window got no close-call check."""
    import autotile.models.crossover as X

    def fake(op, unit, n, dtype, hw, on_chip, options=None):
        cycles = 1000.0 + n
        return (cycles * (1 - lead if 100 <= n <= 3000 else 1 + lead) if unit == "cube" else cycles), {}

    monkeypatch.setattr(X, "best", fake)
    code, out, err = run_cli("crossover", "weighted_sum", "--json")
    assert code == 0, err
    got = json.loads(out)
    assert got["end_to_end_n"] is None and got["end_to_end_windows"] == [[100, 3000]]
    (w,) = got["closest_window_leads"]["end_to_end_windows"]
    assert w["window"] == [100, 3000] and w["lead"] == pytest.approx(lead)
    code, out, _ = run_cli("crossover", "weighted_sum")
    assert code == 0
    assert ("close call (inputs in GM): cube leads by only 0.10% at n=100 in [100, 3,000]" in out) == flagged


@pytest.mark.parametrize("on_chip", [True, False])
def test_the_unaligned_search_stays_within_high(monkeypatch, on_chip):
    """weighted_sum fp32 on chip to --high 16,384: the top probe, a multiple of 256, was moved to
    16,400, past --high and past the Cube's trace form in L0A, so the Cube "stayed faster" nowhere
    though it wins at 16,368 and 16,383. The top moves down instead."""
    import autotile.models.crossover as X

    probed = []

    def fake(op, unit, n, dtype, hw, on_chip, options=None):
        probed.append(n)
        step = 20.0 if unit == "cube" and n > 16384 else 1.0  # the cube's cost steps up past 16,384
        return (1000.0 - (n >= 705) if unit == "cube" else 999.5) * step, {}

    monkeypatch.setattr(X, "best", fake)
    got = X.crossover("weighted_sum", "fp16", HW, on_chip=on_chip, aligned=False)
    assert max(probed) <= 16384 and got["top"] == 16368
    assert got["n"] == 705 and got["windows"] == [[705, 16368]]


def test_a_near_tie_at_two_probes_gets_a_probe_between_them(monkeypatch):
    """weighted_sum fp32 in GM: the Cube 1.1% ahead at 256 and 11% at 512, both probes its, so the
    search said it wins on [217, 7,680]; the Vector is faster at n = 257..296 (its 2nd fractal)."""
    import autotile.models.crossover as X

    def fake(op, unit, n, dtype, hw, on_chip, options=None):
        if unit == "vector":
            return 400.0 + n / 10, {}
        ratio = 1.017 if 257 <= n <= 296 else (0.989 if n >= 217 and n < 512 else 0.9 if n >= 217 else 1.05)
        return (400.0 + n / 10) * ratio, {}

    monkeypatch.setattr(X, "best", fake)
    got = X.crossover("weighted_sum", "fp32", HW, on_chip=False)
    assert got["windows"] == [[217, 256], [297, 16384]] and got["n"] == 297
    probed = {r["n"] for r in got["grid"]}
    assert len(probed) < 60  # a few midpoints, not every size
