"""The verification gate goes down the ranking until a candidate passes: how far, at what cost,
and which candidates it rejects without running them."""

import types

import numpy as np

from autotile.hardware import load_profile
from autotile.kernels import sigmoid as S
from autotile.tune import driver, verify

HW = load_profile()
SHAPE = {"n": 2048}


def _params(variant: str, tile: int = 256) -> dict:
    return {"tile_len": tile, "buffer_num": 2, "cores": 1, "variant": variant}


def _kernel(*, wrong: bool = False):
    """The sigmoid kernel, counting its execute-mode runs (``calls``); ``wrong``: every output off by 1.
    A sigmoid candidate that passes runs twice: on make_inputs, then on the tails beyond them."""
    calls = []

    def execute(inputs, params, dtype, hw, **kw):
        calls.append(params)
        y = S.execute(inputs, params, dtype, hw, **kw)
        return y.astype(np.float64) + 1.0 if wrong else y

    kernel = types.SimpleNamespace(**{k: getattr(S, k) for k in dir(S) if not k.startswith("__")})
    kernel.execute = execute
    return kernel, calls


# a Scalar fp16 sigmoid space ranked by cycles alone: eight inexact configurations before an exact one
INEXACT = [_params(v, t) for v in ("lut_nearest", "poly") for t in (256, 512, 1024, 2048)]


def test_the_gate_goes_past_five_failures_to_the_first_accurate_configuration():
    """It tried five and gave up: the study had no result though the exact variant was measured."""
    kernel, calls = _kernel()
    g = verify.gate(kernel, SHAPE, [*INEXACT, _params("exact")], "fp16", HW, unit="scalar")
    assert g.params == _params("exact") and g.rank == len(INEXACT) and g.verification.passed
    assert len(g.rejected) == len(INEXACT) and all(v.executed for _, v in g.rejected)
    assert g.executed == len(INEXACT) + 1 and not g.capped
    assert calls == [*INEXACT, _params("exact"), _params("exact")] and g.verification.runs == 2
    assert g.to_json()["rank"] == len(INEXACT) + 1


def test_the_first_candidate_passing_is_the_only_one_run():
    kernel, calls = _kernel()
    g = verify.gate(kernel, SHAPE, [_params("exact"), *INEXACT], "fp16", HW, unit="scalar")
    assert g.params == _params("exact") and g.rank == 0 and g.rejected == []
    assert calls == [_params("exact")] * 2 and g.executed == 1
    assert g.to_json() == {"rank": 1, "candidates": 9, "executed": 1, "not_executed": 0,
                           "limit": verify.MAX_EXECUTED, "considered": verify.MAX_CONSIDERED, "capped": False}


def test_the_cap_bounds_the_runs_of_a_kernel_wrong_everywhere():
    kernel, calls = _kernel(wrong=True)
    cands = [_params("exact", 16 * (i + 1)) for i in range(verify.MAX_EXECUTED + 8)]
    g = verify.gate(kernel, SHAPE, cands, "fp16", HW, unit="scalar")
    assert g.params is None and g.capped
    assert len(calls) == g.executed == len(g.rejected) == verify.MAX_EXECUTED
    reason = driver.failed_verification_reason(g)
    assert reason.startswith(f"FAILED verification: the {verify.MAX_EXECUTED} best of its {len(cands)} candidates")
    assert f"stops after {verify.MAX_EXECUTED} runs" in reason
    small = verify.gate(kernel, SHAPE, cands[:3], "fp16", HW, unit="scalar", limit=2)
    assert small.executed == 2 and small.capped and len(calls) == verify.MAX_EXECUTED + 2


def test_candidates_rejected_unrun_are_bounded_too():
    """Rejections without a run cost no execution but fill the summary: ``considered`` bounds them."""
    kernel, calls = _kernel()
    cands = INEXACT * 3 + [_params("exact")]
    g = verify.gate(kernel, SHAPE, cands, "fp16", HW, unit="scalar", recorded=[float("inf")] * len(cands),
                    considered=10)
    assert g.params is None and g.capped and len(g.rejected) == 10 and g.executed == 0 and calls == []
    assert "10 of them not executed" in driver.failed_verification_reason(g)


def test_a_recorded_error_beyond_the_tolerance_rejects_without_running():
    """The study measured these errors on the gate's own inputs: the runs would fail, so they are
    not made. A recorded error the tolerance admits is still executed (execute decides: lut_linear
    passes on make_inputs' [-8, 8] and fails on the tails, where its table is clamped)."""
    kernel, calls = _kernel()
    cands = [*INEXACT[:3], _params("lut_linear"), _params("exact")]
    recorded = [0.0078, 0.0078, float("inf"), 1e-5, 0.0]  # the lut_linear claim is too good: it is run
    g = verify.gate(kernel, SHAPE, cands, "fp16", HW, unit="scalar", recorded=recorded)
    assert [v.executed for _, v in g.rejected][:3] == [False, False, False]
    assert all(v.reason.startswith("not executed: its study recorded") for _, v in g.rejected[:3])
    assert "non-finite" in g.rejected[2][1].reason and "0.0078" in g.rejected[0][1].reason
    assert calls[0] == _params("lut_linear")  # the first run is the first candidate not rejected unrun
    assert g.rejected[3][1].executed and "(tails)" in g.rejected[3][1].reason
    assert g.params == _params("exact") and g.rank == 4
    assert g.to_json()["not_executed"] == 3 and g.executed == 2
    assert calls == [_params("lut_linear")] * 2 + [_params("exact")] * 2


def test_a_claimed_error_is_the_tolerance_and_is_not_held_against_its_candidate():
    """A study that trades accuracy holds each candidate to the error it recorded: that same error,
    passed as recorded too, must not reject it unrun."""
    kernel, calls = _kernel()
    errs = [verify.verify_one(kernel, SHAPE, INEXACT[0], "fp16", HW, unit="scalar").max_abs_error]
    calls.clear()
    g = verify.gate(kernel, SHAPE, INEXACT[:1], "fp16", HW, unit="scalar", claimed=errs, recorded=errs)
    assert g.params == INEXACT[0] and calls == INEXACT[:1] * 2


# fp16 sigmoid with inexact forms only on the Scalar unit (the Vector keeps its exact one): every
# Scalar candidate fails verification, the Vector's pass
INEXACT_SPEC = """op: sigmoid
hardware: ascend910b2
dtypes: [fp16]
units: [vector, scalar]
shapes: [{n: 1024}]
inputs: {data: gm}
params:
  tile_len: {type: int, low: 16, high: "shape.n", pow2: true}
  buffer_num: {type: int, low: 1, high: 2}
  cores: {type: fixed, value: 1}
  variant: {type: categorical, choices: {vector: [exact], scalar: [poly, lut_nearest]}}
constraints:
  - {expr: "2 * buffer_num * tile_len * dtype.bytes + 4096 <= hw.ub_bytes", message: "fit UB"}
objective: cycles
budget: {trials: 4}
seed: 0
"""


def _report_best(out) -> str:
    md = (out / "report.md").read_text()
    return md.split("## Best configurations", 1)[1].split("\n## ", 1)[0]


def test_a_study_that_failed_verification_keeps_its_default_heuristic(run_cli, write_spec, tmp_path):
    """A study whose every candidate failed the gate lost its baseline: the report said "No study
    had a feasible default heuristic" when every study failed, "(the others have no default)" here."""
    import json

    out = tmp_path / "mixed"
    assert run_cli("tune", write_spec(INEXACT_SPEC), "--out", str(out), "--quiet")[0] == 0
    failed = next(r for r in json.loads((out / "summary.json").read_text())["results"] if r["unit"] == "scalar")
    assert failed["reason"].startswith("FAILED verification") and failed["baseline_params"] is not None
    assert failed["baseline_cycles"] > 0 and failed["speedup_vs_baseline"] is None
    assert "it was trial 0 of every study" in _report_best(out) and "no default" not in _report_best(out)


def test_a_run_with_no_verified_result_says_so_instead_of_empty_tables(run_cli, write_spec, tmp_path):
    out = tmp_path / "scalar"
    assert run_cli("tune", write_spec(INEXACT_SPEC.replace("[vector, scalar]", "[scalar]")), "--out", str(out),
                   "--quiet")[0] == 0
    best = _report_best(out)
    assert "| shape | dtype | unit | cycles |" not in best and "**Configurations**" not in best
    assert ("No study has a verified result, so the table exports no configuration: of 1 study, 1 FAILED "
            "verification") in best
    assert "it was trial 0 of every study" in best and "No study had a feasible default" not in best
    assert "| n=1024 fp16 scalar | FAILED verification: " in best


def test_a_shape_too_large_to_execute_is_the_pick_not_verified_not_a_disagreement():
    """roi_align at n=8, c=256, 256 x 256 holds 140M elements: every candidate was rejected unrun
    as if it disagreed, and the study had no entry. The best one is the pick, not verified, and
    the gate stops there (the others are as large)."""
    from autotile.kernels import roi_align as R

    shape = {"n": 8, "c": 256, "h": 256, "w": 256, "rois": 512, "pooled_h": 7, "pooled_w": 7}
    p = R.default_params(shape, "fp16", HW)
    cands = [p, {**p, "buffer_num": 1}]
    g = verify.gate(R, shape, cands, "fp16", HW, unit="vector")
    assert g.params == p and g.rank == 0 and g.rejected == [] and g.executed == 0
    v = g.verification
    assert not v.passed and not v.executed and v.max_abs_error is None
    assert v.reason == v.unverified and v.unverified.startswith(
        "too large to execute in verification: inputs and output hold 140,642,816 elements")


def test_running_out_of_memory_leaves_the_pick_not_verified_with_the_reason():
    """A MemoryError in execute mode (65536 x 128 x 65536's 43648 x 16384 C) ended the whole
    run before any output was written; it is this candidate's reason now."""
    kernel, calls = _kernel()

    def execute(inputs, params, dtype, hw, **kw):
        calls.append(params)
        raise MemoryError("Unable to allocate 2.66 GiB for an array with shape (43648, 16384) and data type float32")

    kernel.execute = execute
    g = verify.gate(kernel, SHAPE, [_params("exact"), _params("poly")], "fp16", HW, unit="scalar")
    assert calls == [_params("exact")] and g.params == _params("exact") and g.rejected == []
    assert not g.verification.passed and g.verification.unverified == (
        "out of memory in verification: Unable to allocate 2.66 GiB for an array with shape (43648, 16384) "
        "and data type float32")
