"""Split K (single_core_k, TCubeTiling's singleCoreK): the partial sums are computed for real and
match A @ B, usedCoreNum counts the K ranges, the combine is costed, and the default splits K
where the M x N blocks leave cores idle and K is long."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.errors import InfeasibleConfig
from autotile.kernels import matmul as mm
from autotile.sim import engine as E


@st.composite
def split_cases(draw):
    """An odd shape with a K tail and a tiling that splits K into 2..5 ranges (the last shorter)."""
    dtype = draw(st.sampled_from(["fp16", "bf16", "fp32", "int8"]))
    c0 = 32 if dtype == "int8" else 16
    bk = draw(st.sampled_from([c0, 2 * c0]))
    ranges = draw(st.integers(2, 5))
    steps = draw(st.integers(1, 3))  # base_k steps per K range
    sck = steps * bk
    k = (ranges - 1) * sck + draw(st.integers(1, sck))  # the last range is a tail, often not whole steps
    shape = {"m": draw(st.integers(1, 70)), "n": draw(st.integers(1, 70)), "k": k}
    bm, bn = draw(st.sampled_from([16, 32, 48])), draw(st.sampled_from([16, 32, 48]))
    step_ka = draw(st.sampled_from([1, 2]))
    params = {
        "base_m": bm, "base_n": bn, "base_k": bk, "step_m": 1, "step_n": 1, "step_ka": step_ka, "step_kb": 1,
        "depth_a1": step_ka * draw(st.integers(1, 2)), "depth_b1": draw(st.integers(1, 2)),
        "db_l0a": draw(st.integers(1, 2)), "db_l0b": 2, "db_l0c": draw(st.integers(1, 2)),
        "iterate_order": draw(st.sampled_from(mm.ORDERS)),
        "single_core_m": bm * draw(st.integers(1, 2)), "single_core_n": bn * draw(st.integers(1, 2)),
        "single_core_k": sck,
    }
    return shape, dtype, params


@settings(max_examples=40, deadline=None)
@given(split_cases())
def test_split_k_executes_a_at_b(hw, case):
    shape, dtype, params = case
    try:
        mm.check(shape, params, dtype, hw)
    except InfeasibleConfig:
        return  # more blocks than cube cores: the usedCoreNum test covers it
    assert mm.splits(shape, mm.check(shape, params, dtype, hw)[0])[2] > 1
    inputs = mm.make_inputs(shape, dtype, seed=shape["k"])
    got = mm.execute(inputs, params, dtype, hw)
    want = mm.reference(inputs, dtype)
    rtol, atol = mm.tolerance(dtype, shape)
    if dtype == "int8":  # int32 partial sums are exact
        np.testing.assert_array_equal(got, want)
    else:
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=rtol, atol=atol)


def test_partials_are_summed_in_fp32_and_rounded_once(hw):
    """fp16 output: each K range's fp32 partial is added in fp32 and C is rounded to fp16 once,
    so the result is the fp16 rounding of the fp32 sum of the partials (adding in fp16 differs)."""
    shape = {"m": 16, "n": 16, "k": 4096}
    p = mm.default_params({"m": 16, "n": 16, "k": 64}, "fp16", hw) | {"single_core_k": 1024, "base_k": 64}
    a, b = mm.make_inputs(shape, "fp16", seed=3)
    got = mm.execute((a, b), p, "fp16", hw)
    parts = [a[:, i:i + 1024].astype(np.float64) @ b[i:i + 1024].astype(np.float64) for i in range(0, 4096, 1024)]
    fp32_sum = np.zeros((16, 16), np.float32)
    for part in parts:
        fp32_sum += part.astype(np.float32)
    np.testing.assert_allclose(np.asarray(got, np.float64), fp32_sum.astype(np.float16).astype(np.float64),
                               rtol=0, atol=2.0**-10 * np.abs(fp32_sum).max())


def test_used_core_num_counts_the_k_ranges(hw):
    shape = {"m": 256, "n": 256, "k": 65536}
    p = mm.default_params(shape, "fp16", hw) | {"single_core_m": 128, "single_core_n": 128, "base_m": 128,
                                                 "base_n": 128, "single_core_k": 65536 // 6}
    p["single_core_k"] -= p["single_core_k"] % p["base_k"]  # 7 ranges, the last a tail
    assert mm.simulate(shape, p, "fp16", hw).reason.startswith("usedCoreNum=28 exceeds the 24 cube cores")
    p["single_core_k"] = 65536 // 6 + p["base_k"] - (65536 // 6) % p["base_k"]  # 6 ranges: 24 cores
    res = mm.simulate(shape, p, "fp16", hw)
    assert res.feasible and res.block_dim == 24
    cube = sorted(c["count"] for c in res.core_classes if c["core"] == "aic")
    assert cube == [4, 20]  # the K tail is a class of its own
    with pytest.raises(InfeasibleConfig, match="single_core_k=1000 is not a multiple of base_k"):
        mm.check(shape, p | {"single_core_k": 1000}, "fp16", hw)


def test_no_split_is_what_it_was(hw):
    """single_core_k >= K (or absent, as in tables written before it) splits nothing."""
    shape = {"m": 1000, "n": 1000, "k": 1000}
    p = mm.default_params(shape, "fp16", hw)
    assert p["single_core_k"] >= 1000
    base = mm.simulate(shape, {k: v for k, v in p.items() if k != "single_core_k"}, "fp16", hw)
    assert mm.simulate(shape, p | {"single_core_k": 1024}, "fp16", hw).cycles == base.cycles
    assert "ub_gm" not in base.bytes and "gm_ub" not in base.bytes


@pytest.mark.parametrize("dtype, cast", [("fp16", True), ("bf16", True), ("fp32", False), ("int8", False)])
def test_the_combine_moves_its_bytes(hw, dtype, cast):
    """The zero-init writes the fp32 target once; fp16/bf16 read it back and write C (the cast);
    FixPipe writes every K range's fp32 partial block."""
    shape = {"m": 96, "n": 128, "k": 8192}
    p = mm.default_params({"m": 96, "n": 128, "k": 512}, dtype, hw) | {"single_core_k": 2048}
    res = mm.simulate(shape, p, dtype, hw)
    assert res.feasible and mm.splits(shape, mm.check(shape, p, dtype, hw)[0])[2] == 4
    mn = 96 * 128
    out = {"fp16": 2, "bf16": 2}.get(dtype, 4)
    assert res.bytes["l0c_gm"] == 4 * mn * 4  # four K ranges of fp32 (int32) partials, 512 B rows
    assert res.bytes["ub_gm"] == pytest.approx(mn * 4 + (mn * out if cast else 0), rel=0.02)
    assert res.bytes.get("gm_ub", 0) == pytest.approx(mn * 4 if cast else 0, rel=0.02)


def test_atomic_adds_are_slower_than_plain_writes(hw):
    """FixPipe's atomic adds are costed at half the L2 write rate: a split whose K ranges are one
    base_k step each spends longer on FIX than the same blocks written once."""
    shape = {"m": 256, "n": 256, "k": 128}
    p = mm.default_params(shape, "fp32", hw) | {"single_core_m": 256, "single_core_n": 256}
    one, four = mm.simulate(shape, p, "fp32", hw), mm.simulate(shape, p | {"single_core_k": 32}, "fp32", hw)
    assert four.block_dim == 4 * one.block_dim
    assert four.pipes["fix"]["busy_cycles"] > 1.5 * one.pipes["fix"]["busy_cycles"]


def test_the_default_splits_a_long_k_over_idle_cores(hw):
    """64x64x65536 fp16 ran on one core (142k cycles); the default now splits K over all 24
    (~23k, memory-bound: the 16 MiB of A and B at HBM's rate take ~20k)."""
    shape = {"m": 64, "n": 64, "k": 65536}
    p = mm.default_params(shape, "fp16", hw)
    split = mm.simulate(shape, p, "fp16", hw)
    whole = mm.simulate(shape, p | {"single_core_k": 65536, "step_ka": 4, "step_kb": 4, "depth_a1": 8,
                                    "depth_b1": 8}, "fp16", hw)
    assert split.block_dim == 24 and whole.block_dim == 1
    assert split.cycles < whole.cycles / 4


def test_the_default_keeps_k_whole_when_the_blocks_fill_the_cores(hw):
    for shape in ({"m": 1024, "n": 2048, "k": 512}, {"m": 4096, "n": 4096, "k": 4096},
                  {"m": 16, "n": 11008, "k": 4096}, {"m": 1000, "n": 1000, "k": 1000}):
        assert mm.default_params(shape, "fp16", hw)["single_core_k"] >= shape["k"], shape


def test_trace_holds_the_cast(hw):
    """The traces of a split fp16 run show the vector cores' zero-init (MTE3) and their cast after
    the cube cores' K loop."""
    shape = {"m": 64, "n": 64, "k": 65536}
    res, traces = mm.simulate(shape, mm.default_params(shape, "fp16", hw), "fp16", hw, trace_capacity=100000,
                              want_traces=True)
    assert len(traces[0]) == 5  # count, block rows, cols, K range, operations
    assert not len(traces[0][-1][traces[0][-1][:, 0] == E.MTE3])  # the cube core has no MTE3 of its own
    rows = traces[-1][-1]  # the vector cores
    mte3 = rows[rows[:, 0] == E.MTE3]
    fix = traces[0][-1][traces[0][-1][:, 0] == E.FIX]
    assert len(mte3) >= 2 and mte3[0, 1] == 0.0  # zeroing starts at once
    assert mte3[-1, 1] > fix[:, 2].max()  # the cast's writes come after the last atomic add
    assert res.cycles == pytest.approx(max(r[:, 2].max() for *_, r in traces), rel=1e-6)


def test_a_spec_without_single_core_k_simulates_each_core_over_all_of_k(tmp_path, capsys):
    """single_core_k is optional: a matmul spec from before split K (no such param) simulates and
    tunes with K whole on every core; it was refused with 'missing single_core_k'."""
    import json
    from pathlib import Path

    from autotile.cli import run as cli

    text = (Path(__file__).parent / "data" / "mm_tiny.yaml").read_text()
    lines = text.splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("  single_core_k:"))
    end = next(i for i in range(at + 1, len(lines)) if not lines[i].startswith("    "))
    text = "".join(lines[:at] + lines[end:]).replace(" * ceil(shape.k / single_core_k)", "")
    assert "single_core_k" not in text
    (tmp_path / "old.yaml").write_text(text)
    capsys.readouterr()
    assert cli(["simulate", str(tmp_path / "old.yaml"), "--shape", "m=64,n=64,k=65536", "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert "single_core_k" not in got["params"] and got["block_dim"] == 1


REPRO = ({"m": 1024, "n": 2048, "k": 512}, {"single_core_n": 512, "single_core_k": 256})


def _split_run(hw, dtype="fp16"):
    shape, extra = REPRO
    p = mm.default_params(shape, dtype, hw) | extra
    return mm.simulate(shape, p, dtype, hw, trace_capacity=200_000, want_traces=True)


def _busy(rows, pipe):
    rows = rows[rows[:, 0] == pipe]
    return float((rows[:, 2] - rows[:, 1]).sum())


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_msprof_ratios_belong_to_the_core_that_ran_the_pipe(hw, dtype):
    """The zero-init and the cast run on the vector cores: their MTE2/MTE3 time is aiv_*, and the
    cube's (AIC) ratios hold only its own loads (1024x2048x512 fp16, K in 2: aic_mte2 was 0.554
    with the cast's reads in it, against 0.40 of gm_l1, aic_mte3 0.177, aiv_mte2/mte3 0)."""
    res, traces = _split_run(hw, dtype)
    m = res.msprof
    assert m["aic_mte3_ratio"] == 0.0 and m["aiv_mte3_ratio"] > 0  # was 0.177 and 0 (fp16)
    cube = [t for t, c in zip(traces, res.core_classes) if c["core"] == "aic"]
    vec = [t for t, c in zip(traces, res.core_classes) if c["core"] == "aiv"]
    assert len(vec) == 1 and len(cube) == len(traces) - 1
    crit = max(cube, key=lambda t: t[-1][:, 2].max())[-1]
    names = {E.PATH_NAMES[int(r[4])] for t in cube for r in t[-1] if int(r[3]) == E.K_COPY}
    assert not names & {"gm_ub", "ub_gm"}  # the cube core has no UB traffic of its own here
    assert m["aic_mte2_ratio"] == pytest.approx(_busy(crit, E.MTE2) / res.cycles, abs=1e-4)
    rows = vec[0][-1]
    assert m["aiv_mte3_ratio"] == pytest.approx(_busy(rows, E.MTE3) / res.cycles, abs=1e-4)
    assert m["aiv_mte2_ratio"] == pytest.approx(_busy(rows, E.MTE2) / res.cycles, abs=1e-4)
    assert m["aiv_vec_ratio"] == pytest.approx(_busy(rows, E.V) / res.cycles, abs=1e-4)
    assert (m["aiv_mte2_ratio"] > 0) == (dtype == "fp16")  # only a cast reads the workspace back
    assert res.block_dim == 24  # blockDim counts cube cores: the vector cores come with them


@pytest.mark.parametrize("dtype", ["fp16", "fp32", "int8"])
def test_trace_totals_match_the_json_bytes(hw, dtype):
    """Each trace process's operations times its core count add up to the JSON's bytes per path
    (fp16 split K: the cast's gm_ub / ub_gm came to 4.19 / 6.29 MB against 8.39 / 12.58 MB: the
    trace showed one of a cube core's two vector cores and labelled it in cube cores)."""
    res, traces = _split_run(hw, dtype)
    total = {}
    for count, *_, rows in traces:
        for r in rows[rows[:, 3] == E.K_COPY]:
            p = E.PATH_NAMES[int(r[4])]
            total[p] = total.get(p, 0.0) + count * float(r[5])
    assert total == pytest.approx({p: res.bytes[p] for p in E.PATH_NAMES if p in res.bytes})
    assert [c["count"] for c in res.core_classes] == [t[0] for t in traces]


def test_the_trace_names_the_vector_cores(hw):
    """The zero-init and cast's process is labelled in vector cores (48 on the 910B2's 24 cube
    cores), not as one of the cube classes."""
    from autotile.sim.trace import class_label

    res, traces = _split_run(hw)
    labels = [class_label(i, t) for i, t in enumerate(traces)]
    assert labels[-1].startswith(f"core class {len(traces) - 1} (x 48 vector cores")
    assert all("vector" not in s for s in labels[:-1])
