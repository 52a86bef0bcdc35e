"""The trial cap (CAP_FACTOR x budget trials in all): a study that reaches it short of its budget
says so, and a resume never adds a trial past it."""

from __future__ import annotations

import json

import optuna
import pytest
from tinyspecs import EW, SMALL

from autotile.report import markdown
from autotile.tune import runner
from autotile.tune.runner import CAP_FACTOR


def _run(run_cli, spec, out) -> tuple[dict, str]:
    code, stdout, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--no-verify")
    assert code == 0, err
    return json.loads((out / "summary.json").read_text()), stdout


@pytest.fixture
def uncounted(monkeypatch):
    """Spaces whose feasible size is unknown (as an estimated count is): only the cap ends a
    study short of its budget (a counted space of 6 configurations is exhausted first)."""
    monkeypatch.setattr(runner, "feasible_size", lambda plan: None)


def test_a_resume_adds_no_trial_past_the_cap(run_cli, write_spec, tmp_path, uncounted):
    out, spec = tmp_path / "out", write_spec(SMALL)
    trials = [_run(run_cli, spec, out)[0]["results"][0]["trials"] for _ in range(2)]
    assert trials == [CAP_FACTOR * 10] * 2


def test_a_study_that_reaches_the_cap_says_so(run_cli, write_spec, tmp_path, uncounted):
    out = tmp_path / "out"
    summary, stdout = _run(run_cli, write_spec(SMALL), out)
    r = summary["results"][0]
    assert r["unique_configs"] == 6 and r["cap_reached"] is True
    assert r["interrupted"] is False and summary["interrupted"] is False
    assert f"trial cap reached ({CAP_FACTOR * 10} trials) short of the budget 10" in stdout
    assert "1 study reached the trial cap" in (out / "report.md").read_text()


def test_a_study_that_meets_its_budget_is_not_flagged(run_cli, write_spec, tmp_path):
    out = tmp_path / "out"
    code, stdout, _ = run_cli("tune", write_spec(SMALL.replace("trials: 10", "trials: 4")), "--out", str(out),
                              "--quiet", "--no-verify", "--json")
    r = json.loads(stdout)["results"][0]
    assert code == 0 and r["unique_configs"] == 4 and r["cap_reached"] is False


def test_infeasible_reasons_group_wordings_that_differ_in_numbers():
    from autotile.tune.runner import infeasible_reasons

    got = infeasible_reasons(["UB overflow: need 300 bytes", "L1 overflows", "UB overflow: need 200 bytes",
                              "UB overflow: need 300 bytes", None])
    assert got == [{"reason": "UB overflow: need 300 bytes", "count": 3, "wordings": 2},
                   {"reason": "L1 overflows", "count": 1, "wordings": 1}]


def test_a_study_of_infeasible_trials_says_why(run_cli, write_spec, tmp_path, uncounted):
    """Every trial fails a check, in a space whose size is only estimated: the summary, CLI line
    and report give that check (they said only "no feasible configuration found"), and the cap
    note says the trials were infeasible (it blamed the sampler for repeating measured
    configurations). A space counted exactly is ``test_an_empty_space_runs_no_trial``."""
    out = tmp_path / "out"
    spec = write_spec(SMALL.replace("objective: cycles", "derived:\n  ub: tile_len * buffer_num * 100000\n"
                                    "constraints:\n  - {expr: \"ub <= hw.ub_bytes\", message: \"UB overflow\"}\n"
                                    "objective: cycles"))
    summary, stdout = _run(run_cli, spec, out)
    r = summary["results"][0]
    assert r["cycles"] is None and r["cap_reached"] is True and r["infeasible"] == r["trials"] == CAP_FACTOR * 10
    assert r["reason"].startswith(f"no feasible configuration found: all {r['trials']} trials were infeasible; "
                                  f"the most frequent reason ({r['trials']} of them, numbers varying): UB overflow")
    assert r["reason"] in stdout
    md = (out / "report.md").read_text()
    assert markdown.esc(r["reason"]) in md and "kept proposing" not in md
    assert f"(0 distinct, {r['trials']} of {r['trials']} trials infeasible)" in md


# 9 x 3 x 2 = 54 configurations, all feasible
SPACE54 = EW.replace("buffer_num: {type: int, low: 1, high: 4, step: 1}", "buffer_num: {type: int, low: 1, high: 3}").replace(
    'cores: {type: int, low: 1, high: "min(hw.vector_cores, shape.n // 16)", pow2: true}',
    "cores: {type: int, low: 1, high: 2}")


def test_a_budget_past_the_space_ends_when_every_configuration_is_measured(run_cli, write_spec, tmp_path):
    """A budget of 200 over 54 configurations ran to the 1000-trial cap, measured 53 and said
    "trial cap reached": the study now reaches every configuration (the untried ones are queued
    once the sampler repeats itself) and stops there, saying the space is exhausted."""
    assert SPACE54 != EW
    out, spec = tmp_path / "out", write_spec(SPACE54)
    code, stdout, err = run_cli("space", spec, "--json")
    assert json.loads(stdout)["feasible_size"] == 54
    code, stdout, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--no-verify", "--trials", "200")
    assert code == 0, err
    r = json.loads((out / "summary.json").read_text())["results"][0]
    assert r["unique_configs"] == 54 and r["space_exhausted"] is True and r["feasible_configs"] == 54
    assert r["cap_reached"] is False and r["interrupted"] is False
    assert r["trials"] < 2 * 54
    assert "space exhausted (all 54 configurations the spec allows were tried) short of the budget 200" in stdout
    assert "trial cap" not in stdout
    md = (out / "report.md").read_text()
    assert "1 study tried every configuration its spec allows" in md and "reached the trial cap" not in md
    again = json.loads(run_cli("tune", spec, "--out", str(out), "--quiet", "--no-verify", "--trials", "200",
                               "--json")[1])["results"][0]
    assert again["trials"] == r["trials"] and again["space_exhausted"] is True  # a resume adds nothing


def test_configurations_the_kernel_refuses_count_as_tried(run_cli, write_spec, tmp_path):
    """48 configurations the spec allows, half of which overflow UB in the kernel (no constraint
    says so): once all 48 are tried the space is exhausted, with 24 measured."""
    text = SMALL.replace("tile_len: {type: int, low: 16, high: 64, pow2: true}",
                         "tile_len: {type: int, low: 1024, high: 4096, pow2: true}").replace(
        "buffer_num: {type: int, low: 1, high: 2}", "buffer_num: {type: int, low: 1, high: 16}")
    assert text != SMALL
    summary, stdout = _run(run_cli, write_spec(text.replace("trials: 10", "trials: 60")), tmp_path / "out")
    r = summary["results"][0]
    assert r["space_exhausted"] is True and r["feasible_configs"] == 48 and r["cap_reached"] is False
    assert r["unique_configs"] == 24 and r["infeasible"] >= 24
    assert r["trials"] < CAP_FACTOR * 60


ALL_INFEASIBLE = SMALL.replace("objective: cycles", "derived:\n  ub: tile_len * buffer_num * 100000\n"
                               "constraints:\n  - {expr: \"ub <= hw.ub_bytes\", message: \"UB overflow\"}\n"
                               "objective: cycles")


def test_an_empty_space_runs_no_trial(run_cli, write_spec, tmp_path):
    """``space`` counts 0 feasible configurations exactly: the study stops before its first trial
    and says the space has no feasible tiling. It ran the 50-trial cap and said "trial cap
    reached" (a resize 4099 -> 3 NHWC on a 64 KiB UB: 50 of 50 trials infeasible)."""
    out, spec = tmp_path / "out", write_spec(ALL_INFEASIBLE)
    space = json.loads(run_cli("space", spec, "--json")[1])
    assert (space["feasible_size"], space["method"]) == (0, "exact")
    summary, stdout = _run(run_cli, spec, out)
    r = summary["results"][0]
    assert (r["trials"], r["cycles"], r["cap_reached"]) == (0, None, False)
    assert r["space_exhausted"] is True and r["feasible_configs"] == 0
    assert r["reason"] == ("space exhausted: the space has no feasible tiling (the spec's constraints allow none of "
                           "its configurations, counted exactly as autotile space counts), so no trial ran")
    assert r["reason"] in stdout and "trial cap" not in stdout
    md = (out / "report.md").read_text()
    assert "1 study has no feasible tiling: the spec's constraints allow no configuration" in md
    assert "reached the trial cap" not in md and "tried every configuration" not in md
    assert "found no feasible configuration." not in md  # the highlight above says why


def test_a_counted_space_stops_when_its_last_configuration_is_tried(run_cli, write_spec, tmp_path):
    """7 of 36 configurations fit (tile_len * buffer_num <= 64), budget 10: once the 7 are tried
    the study stops, though the sampler's next proposals are new infeasible ones, not repeats
    (the check waited for a repeat: 18 trials here, the last 3 after the seventh configuration)."""
    import optuna

    from autotile.tune.storage import make_storage

    text = SMALL.replace("tile_len: {type: int, low: 16, high: 64, pow2: true}",
                         "tile_len: {type: int, low: 16, high: 4096, pow2: true}").replace(
        "buffer_num: {type: int, low: 1, high: 2}", "buffer_num: {type: int, low: 1, high: 4}").replace(
        "objective: cycles", "constraints:\n  - {expr: \"tile_len * buffer_num <= 64\", message: \"small\"}\n"
        "objective: cycles")
    out, spec = tmp_path / "out", write_spec(text)
    assert json.loads(run_cli("space", spec, "--json")[1])["feasible_size"] == 7
    summary, _ = _run(run_cli, spec, out)
    r = summary["results"][0]
    assert r["space_exhausted"] is True and r["unique_configs"] == 7 and r["cap_reached"] is False
    trials = optuna.load_study(study_name=r["study"], storage=make_storage(None, out)).trials
    seen, last_new = set(), None
    for t in trials:
        key = t.user_attrs.get(runner.CONFIG_ATTR)
        if t.state == optuna.trial.TrialState.COMPLETE and key not in seen:
            seen.add(key)
            last_new = t.number
    assert len(seen) == 7 and last_new == trials[-1].number == r["trials"] - 1


# resize down to 64 x 1 from 64000 x 4 with no UB constraint: 21 configurations, every one of
# which the kernel refuses (UB overflow: 64 columns span ~64,000 source columns, 2 KB apart, just
# under the gap past which resize copies each column's window apart), so only the cap or the
# exhausted space ends a study
WIDE = """op: resize
hardware: ascend910b2
dtypes: [fp16]
units: [vector]
shapes: [{n: 1, c: 4, h_in: 4, w_in: 64000, h_out: 1, w_out: 64}]
params:
  tile_h: {type: int, low: 1, high: "min(64, shape.h_out)", pow2: true}
  tile_w: {type: int, low: 64, high: "min(1024, align_up(shape.w_out, 16))", pow2: true}
  tile_c: {type: int, low: 1, high: "min(256, shape.c)", where: "is_pow2(tile_c) or tile_c == shape.c"}
  buffer_num: {type: int, low: 1, high: 3}
  cores:
    type: int
    low: 1
    high: "min(hw.vector_cores, shape.n * ceil(shape.c / tile_c) * ceil(shape.h_out / tile_h) * ceil(shape.w_out / tile_w))"
    where: "divides(cores, hw.vector_cores)"
objective: cycles
budget: {trials: 5}
seed: 2
"""


def _wide(write_spec, history: int, queued: int, repeat: bool = False):
    """WIDE's plan (cap 25) and an in-memory study that has tried 17 of its 21 configurations in
    ``history`` refused trials, then queued ``queued`` of the 4 left (and, with ``repeat``, one
    more of the tried ones first); returns (plan, storage, the untried configurations)."""
    from optuna.storages import InMemoryStorage
    from optuna.trial import TrialState, create_trial

    from autotile.space import load_spec
    from autotile.tune import driver
    from autotile.tune.evaluate import config_key

    spec = load_spec(write_spec(WIDE, "wide.yaml"))
    (plan,) = driver.plans(spec, driver.Options(trials=5))
    rows = plan.space.enumerate()
    configs = [rows.row(i) for i in range(len(rows))]
    assert len(configs) == runner.feasible_size(plan) == 21 and CAP_FACTOR * plan.budget == 25
    storage = InMemoryStorage()
    study = optuna.create_study(study_name=plan.name, storage=storage)
    for i in range(history):
        study.add_trial(create_trial(state=TrialState.PRUNED, user_attrs={
            runner.CONFIG_ATTR: config_key(configs[i % 17]), runner.IN_SPACE_ATTR: True}))
    if repeat:
        study.enqueue_trial(runner.optuna_params(plan.space, configs[0]))
    for cfg in configs[17:17 + queued]:
        study.enqueue_trial(runner.optuna_params(plan.space, cfg))
    return plan, storage, configs[17:]


def _waiting(plan, storage) -> int:
    from optuna.trial import TrialState

    study = optuna.load_study(study_name=plan.name, storage=storage)
    return len(study.get_trials(states=(TrialState.WAITING,)))


def test_queued_configurations_do_not_count_against_the_cap(write_spec):
    """21 trials run and the 4 untried configurations queued: they run, and the space is
    exhausted. The cap counted the queued ones as trials: the first ran and the study stopped,
    3 never ran but were counted (25 trials), and it was flagged cap_reached."""
    plan, storage, _ = _wide(write_spec, 21, 4)
    out = runner.run(plan, storage)
    assert (out.trials, out.exhausted, out.cap_reached) == (25, True, False)
    assert _waiting(plan, storage) == 0


def test_a_queue_never_reaches_past_the_cap(write_spec):
    """23 trials run, then a repeat (queued here, as a sampler might propose it): the 4 untried
    configurations fit the budget, but the cap leaves room for one, so only that one is queued.
    All 4 were queued, 3 never ran, and the summary counted 28 trials against the cap of 25."""
    from autotile.tune.evaluate import config_key

    plan, storage, left = _wide(write_spec, 23, 0, repeat=True)
    out = runner.run(plan, storage)
    assert (out.trials, out.exhausted, out.cap_reached) == (25, False, True)
    assert _waiting(plan, storage) == 0
    last = optuna.load_study(study_name=plan.name, storage=storage).trials[-1]
    assert last.user_attrs[runner.CONFIG_ATTR] in {config_key(c) for c in left}


def test_a_study_left_with_queued_trials_past_the_cap_counts_the_ones_run(write_spec):
    """A storage from before: 25 trials run and 4 queued past the cap. A resume runs none of them
    and its summary counts 25 trials (it said 29)."""
    plan, storage, _ = _wide(write_spec, 25, 4)
    out = runner.run(plan, storage)
    assert (out.trials, out.cap_reached) == (25, True) and _waiting(plan, storage) == 4


def test_a_run_of_refused_configurations_ends_within_the_cap(run_cli, write_spec, tmp_path):
    """The explorer's run (seed 2): the untried configurations were queued at the 24th trial and
    the summary said 29 trials against the cap of 25."""
    summary, _ = _run(run_cli, write_spec(WIDE), tmp_path / "out")
    r = summary["results"][0]
    assert r["trials"] <= CAP_FACTOR * 5 and r["infeasible"] == r["trials"]
    assert r["cap_reached"] is not r["space_exhausted"]
