"""A rerun into an output folder resumes only studies of the same spec: an edited spec is refused
(or, with --restart, its changed studies start over); budget, seed and sampler changes resume."""

from __future__ import annotations

import json
import re
from pathlib import Path

import optuna
import pytest
from tinyspecs import EW

from autotile.errors import InputError
from autotile.space import load_spec
from autotile.tune import identity, runner
from autotile.tune.storage import JOURNAL_NAME, make_storage

NAME = "elementwise/ascend910b2/fp16/n=4096/vector"

EDITS = {  # an edit of the spec -> what the refusal names as changed
    "domain": (('high: "shape.n", pow2', 'high: 64, pow2'), "params.tile_len"),
    "constraint": (("<= hw.ub_bytes", "<= 1024"), "constraints"),
    "inputs": (("kind: add", "kind: relu"), "inputs"),
    "objective": (("objective: cycles", "objective: time_us"), "objectives"),
    "two objectives": (("objective: cycles", "objective: [cycles, max_abs_error]"), "objectives"),
}


def _trials(out, name=NAME) -> list:
    study = optuna.load_study(study_name=name, storage=make_storage(None, out))
    return [(t.number, t.state.name, t.user_attrs.get("config")) for t in study.get_trials()]


@pytest.mark.parametrize("edit", list(EDITS))
def test_a_changed_spec_is_refused_before_any_trial(edit, run_cli, write_spec, tmp_path):
    (old, new), changed = EDITS[edit]
    out = tmp_path / "out"
    assert run_cli("tune", write_spec(EW), "--out", str(out), "--quiet")[0] == 0
    journal = (out / JOURNAL_NAME).read_bytes()
    summary = (out / "summary.json").read_bytes()
    code, _, err = run_cli("tune", write_spec(EW.replace(old, new), "edited.yaml"), "--out", str(out), "--quiet",
                           "--trials", "20")
    assert code == 2 and err.count("\n") == 1, err
    assert str(out) in err and NAME in err and f"({changed} changed)" in err and "--restart" in err
    assert (out / JOURNAL_NAME).read_bytes() == journal and (out / "summary.json").read_bytes() == summary


def test_restart_gives_what_a_fresh_run_gives(run_cli, write_spec, tmp_path):
    out, fresh = tmp_path / "out", tmp_path / "fresh"
    assert run_cli("tune", write_spec(EW), "--out", str(out), "--quiet")[0] == 0
    relu = write_spec(EW.replace("kind: add", "kind: relu"), "relu.yaml")
    code, _, err = run_cli("tune", relu, "--out", str(out), "--quiet", "--restart")
    assert code == 0 and f"deleted 1 study of a changed spec from {out}: {NAME}" in err
    assert run_cli("tune", relu, "--out", str(fresh), "--quiet")[0] == 0
    got, want = (json.loads((d / "summary.json").read_text())["results"][0] for d in (out, fresh))
    for key in ("trials", "cycles", "values", "baseline_cycles", "speedup_vs_baseline", "params", "history"):
        assert got[key] == want[key], key
    assert run_cli("tune", relu, "--out", str(out), "--quiet")[0] == 0  # the new study resumes


def test_budget_seed_and_sampler_changes_resume(run_cli, write_spec, tmp_path):
    out = tmp_path / "out"
    assert run_cli("tune", write_spec(EW), "--out", str(out), "--quiet")[0] == 0
    before = _trials(out)
    more = EW.replace("trials: 10", "trials: 14").replace("seed: 0", "seed: 5\nsampler: tpe")
    assert run_cli("tune", write_spec(more, "more.yaml"), "--out", str(out), "--quiet", "--seed", "7")[0] == 0
    after = _trials(out)
    assert after[: len(before)] == before
    assert json.loads((out / "summary.json").read_text())["results"][0]["unique_configs"] == 14


def test_a_new_shape_leaves_the_tuned_study_as_it_was(run_cli, write_spec, tmp_path):
    out = tmp_path / "out"
    assert run_cli("tune", write_spec(EW), "--out", str(out), "--quiet")[0] == 0
    before = _trials(out)
    two = EW.replace("shapes: [{n: 4096}]", "shapes: [{n: 4096}, {n: 8192}]")
    assert run_cli("tune", write_spec(two, "two.yaml"), "--out", str(out), "--quiet")[0] == 0
    assert _trials(out) == before
    assert len(json.loads((out / "summary.json").read_text())["results"]) == 2


def test_a_study_without_a_recorded_spec(run_cli, write_spec, tmp_path, monkeypatch):
    """Made before identities were recorded: resumed by the very same spec (the folder's summary
    has its hash), refused for any other."""
    out = tmp_path / "out"
    with monkeypatch.context() as m:
        m.setattr(identity, "stamp", lambda study, ident: None)
        assert run_cli("tune", write_spec(EW), "--out", str(out), "--quiet")[0] == 0
    study = optuna.load_study(study_name=NAME, storage=make_storage(None, out))
    assert identity.IDENTITY_ATTR not in study.user_attrs
    edited = write_spec(EW.replace("kind: add", "kind: relu"), "relu.yaml")
    code, _, err = run_cli("tune", edited, "--out", str(out), "--quiet")
    assert code == 2 and "did not record its spec" in err
    assert run_cli("tune", write_spec(EW), "--out", str(out), "--quiet", "--trials", "12")[0] == 0
    study = optuna.load_study(study_name=NAME, storage=make_storage(None, out))
    assert study.user_attrs[identity.IDENTITY_ATTR]["inputs"]["kind"] == "add"


def test_a_peer_with_another_spec_is_refused_at_the_study(write_spec, tmp_path):
    """Two processes on one storage: the check at study creation catches what the up-front one
    could not see yet."""
    storage = make_storage(None, tmp_path)
    spaces = [load_spec(write_spec(EW.replace("kind: add", f"kind: {k}"), f"{k}.yaml")) for k in ("add", "relu")]
    plans = [runner.StudyPlan(name=NAME, space=s.space(s.shapes[0]), objectives=s.objectives, sampler="random",
                              seed=0, budget=5, timeout_s=None, baseline=None,
                              identity=identity.identity(s.space(s.shapes[0]), s.objectives)) for s in spaces]
    runner.prepare(plans[0], storage)
    runner.prepare(plans[0], storage)  # the same spec again: fine
    with pytest.raises(InputError, match="inputs changed"):
        runner.prepare(plans[1], storage)


def test_a_study_of_another_spec_without_trials_is_refused_and_restartable(run_cli, write_spec, tmp_path):
    """Created (identity recorded) but interrupted before any trial: still that spec's study."""
    out = tmp_path / "out"
    spec = load_spec(write_spec(EW))
    space = spec.space(spec.shapes[0])
    runner.prepare(runner.StudyPlan(name=NAME, space=space, objectives=spec.objectives, sampler="random", seed=0,
                                    budget=5, timeout_s=None, baseline=None,
                                    identity=identity.identity(space, spec.objectives)), make_storage(None, out))
    relu = write_spec(EW.replace("kind: add", "kind: relu"), "relu.yaml")
    code, _, err = run_cli("tune", relu, "--out", str(out), "--quiet")
    assert code == 2 and "(inputs changed)" in err
    assert run_cli("tune", relu, "--out", str(out), "--quiet", "--restart")[0] == 0


def test_trials_from_another_simulator_are_not_resumed(run_cli, write_spec, tmp_path, monkeypatch):
    """A rerun after the kernels or the cost model changed (a new autotile) would mix cycle counts
    of two models in one study: it is refused like an edited spec, and --restart redoes it."""
    from autotile.sim import fingerprint

    out, spec = tmp_path / "out", write_spec(EW)
    assert run_cli("tune", spec, "--out", str(out), "--quiet")[0] == 0
    monkeypatch.setattr(fingerprint, "simulator_fingerprint", lambda: "another-model")
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet")
    assert code == 2 and "(the simulator (autotile's kernels or cost model) changed)" in err and "--restart" in err
    code, _, err = run_cli("tune", spec, "--out", str(out), "--quiet", "--restart")
    assert code == 0 and f"deleted 1 study of a changed spec from {out}: {NAME}" in err
    assert run_cli("tune", spec, "--out", str(out), "--quiet")[0] == 0  # the same model resumes


ROOT = Path(__file__).resolve().parents[1]
ALL_DEFAULTS = {  # op -> its options' defaults written out (kernels/registry)
    "elementwise": "{kind: add, data: gm}", "weighted_sum": "{data: gm}", "sigmoid": "{data: gm}",
    "resize": "{mode: bilinear, layout: NCHW, align_corners: false}",
    "roi_align": "{spatial_scale: 0.25, sampling_ratio: 2, aligned: true, roi_seed: 0, roi_min: 0.05, roi_max: 0.5}",
}


def _ident(op: str, inputs: str | None, write_spec, raw: bool = False) -> dict:
    """The identity of the bundled study of ``op`` with its ``inputs:`` line set to ``inputs``
    (None: left out); ``raw``: as autotile recorded it before, the spec's text as written."""
    text = (ROOT / "studies" / f"{op}.yaml").read_text()
    text = re.sub(r"^inputs:.*$", "" if inputs is None else f"inputs: {inputs}", text, count=1, flags=re.M)
    spec = load_spec(write_spec(text, f"{op}.yaml"))
    ident = identity.identity(spec.space(spec.shapes[0], spec.dtypes[0]), spec.objectives)
    if raw:
        ident["inputs"] = json.loads(json.dumps(spec.inputs))
    return ident


@pytest.mark.parametrize("op,a,b", [
    *((op, None, full) for op, full in ALL_DEFAULTS.items()),
    *((op, "{}", full) for op, full in ALL_DEFAULTS.items()),
    ("elementwise", "{data: gm}", "{kind: add}"),
    ("resize", "{mode: bilinear}", "{align_corners: false, layout: NCHW}"),
    ("roi_align", "{sampling_ratio: -1}", "{sampling_ratio: 0}"),  # both adaptive (README)
    ("roi_align", "{sampling_ratio: 0, roi_max: 0.5}", "{sampling_ratio: -1, spatial_scale: 0.25}"),
])
def test_the_same_inputs_in_other_words_are_one_spec(op, a, b, write_spec):
    """Every trial simulates alike, so the identities are equal: a rerun resumes."""
    assert _ident(op, a, write_spec) == _ident(op, b, write_spec)


@pytest.mark.parametrize("op,a,b", [
    ("elementwise", "{}", "{kind: mul}"), ("weighted_sum", "{}", "{data: on_chip}"),
    ("sigmoid", "{data: gm}", "{data: on_chip}"), ("resize", "{}", "{mode: nearest}"),
    ("resize", "{}", "{layout: NHWC}"), ("resize", "{}", "{align_corners: true}"),
    ("roi_align", "{}", "{sampling_ratio: 0}"), ("roi_align", "{sampling_ratio: 1}", "{sampling_ratio: 0}"),
    ("roi_align", "{}", "{roi_seed: 1}"), ("roi_align", "{}", "{spatial_scale: 0.5}"),
])
def test_other_inputs_are_another_spec(op, a, b, write_spec):
    assert identity.mismatch({identity.IDENTITY_ATTR: _ident(op, a, write_spec)},
                             _ident(op, b, write_spec)) == "inputs changed"


@pytest.mark.parametrize("op,written,same,other", [
    ("elementwise", "{kind: add, data: gm}", "{}", "{kind: relu}"),
    ("resize", "{}", "{mode: bilinear, layout: NCHW, align_corners: false}", "{layout: NHWC}"),
    ("roi_align", "{sampling_ratio: -1}", "{sampling_ratio: 0}", "{sampling_ratio: 2}"),
])
def test_a_study_recorded_with_the_inputs_as_written(op, written, same, other, write_spec):
    """Before, a study recorded ``inputs`` as the spec wrote them: the same spec text, or another
    spelling of it, still resumes it; other options are refused."""
    old = {identity.IDENTITY_ATTR: _ident(op, written, write_spec, raw=True)}
    assert identity.mismatch(old, _ident(op, written, write_spec)) is None
    assert identity.mismatch(old, _ident(op, same, write_spec)) is None
    assert identity.mismatch(old, _ident(op, other, write_spec)) == "inputs changed"


def test_the_defaults_written_out_resume_a_study_tuned_without_them(run_cli, write_spec, tmp_path):
    out = tmp_path / "out"
    assert run_cli("tune", write_spec(EW.replace("{kind: add, data: gm}", "{}")), "--out", str(out), "--quiet")[0] == 0
    before = _trials(out)
    code, _, err = run_cli("tune", write_spec(EW, "written.yaml"), "--out", str(out), "--quiet", "--trials", "12")
    assert code == 0, err
    assert _trials(out)[: len(before)] == before and len(_trials(out)) > len(before)


def test_a_resume_without_the_recorded_storage_is_refused_before_anything_runs(run_cli, tmp_path, monkeypatch):
    """Rerun without the first run's --storage, a tune started from zero in a new studies.journal
    and repointed summary.json, so the report no longer saw the first storage's trials."""
    monkeypatch.chdir(tmp_path)
    spec, out = tmp_path / "ew.yaml", tmp_path / "sq"
    spec.write_text(EW)
    db = f"sqlite:///{out / 's.db'}"
    out.mkdir()
    assert run_cli("tune", str(spec), "--out", str(out), "--storage", db, "--trials", "3", "--quiet", "--no-verify")[0] == 0
    before = (out / "summary.json").read_bytes()
    code, _, err = run_cli("tune", str(spec), "--out", str(out), "--trials", "5", "--quiet", "--no-verify")
    assert code == 2 and err.count("\n") == 1, err
    assert db in err and str(out / JOURNAL_NAME) in err and f"--storage {db}" in err and "--restart" in err
    assert (out / "summary.json").read_bytes() == before and not (out / JOURNAL_NAME).exists()
    # the same file spelled relatively resumes; --restart tunes in the journal instead
    assert run_cli("tune", str(spec), "--out", str(out), "--storage", "sqlite:///sq/s.db", "--trials", "4",
                   "--quiet", "--no-verify")[0] == 0
    assert run_cli("tune", str(spec), "--out", str(out), "--trials", "4", "--quiet", "--no-verify",
                   "--restart")[0] == 0
    assert json.loads((out / "summary.json").read_text())["storage"] == str(out / JOURNAL_NAME)
    # now recorded: the folder's journal, which another --storage would not see
    code, _, err = run_cli("tune", str(spec), "--out", str(out), "--storage", db, "--quiet", "--no-verify")
    assert code == 2 and "drop --storage to resume there" in err, err


def test_a_moved_output_folder_resumes_from_its_own_journal(run_cli, tmp_path):
    spec, out = tmp_path / "ew.yaml", tmp_path / "a"
    spec.write_text(EW)
    assert run_cli("tune", str(spec), "--out", str(out), "--trials", "3", "--quiet", "--no-verify")[0] == 0
    out.rename(tmp_path / "b")
    assert run_cli("tune", str(spec), "--out", str(tmp_path / "b"), "--trials", "4", "--quiet", "--no-verify")[0] == 0
