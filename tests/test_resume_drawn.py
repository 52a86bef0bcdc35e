"""A resume under another sampler or seed keeps the stored trials: the outputs say which sampler
and seed drew them, and the report's Reproduce command is the one that draws them again."""

from __future__ import annotations

import json
import re

import optuna
from tinyspecs import EW

from autotile.tune import drawn
from autotile.tune.storage import make_storage

SPEC = EW.replace("trials: 10", "trials: 3")
NAME = "elementwise/ascend910b2/fp16/n=4096/vector"


def _summary(out) -> dict:
    return json.loads((out / "summary.json").read_text())


def _params(out) -> list:
    study = optuna.load_study(study_name=NAME, storage=make_storage(None, out))
    return [t.params for t in study.get_trials()]


def _reproduce(out) -> list[str]:
    """The report's ``autotile tune`` command, as arguments after ``tune``."""
    line = next(x for x in (out / "report.md").read_text().splitlines() if x.startswith("autotile tune "))
    return line.split()[2:]


def test_a_resume_under_another_sampler_and_seed_says_what_drew_the_trials(run_cli, write_spec, tmp_path):
    spec, out = write_spec(SPEC), tmp_path / "out"
    assert run_cli("tune", spec, "--out", str(out), "--quiet")[0] == 0
    first = _params(out)
    code, printed, _ = run_cli("tune", spec, "--out", str(out), "--quiet", "--sampler", "random", "--seed", "7")
    assert code == 0 and _params(out) == first  # resumed: no new trial
    assert "(random, budget 3, seed 7; resumed: 3 trials drawn by portfolio, seed 0)" in printed
    s = _summary(out)
    assert (s["sampler"], s["seed"]) == ("random", 7)  # what this invocation used ...
    assert s["results"][0]["drawn_by"] == [{"sampler": "portfolio", "seed": 0, "trials": 3}]  # ... and what drew them
    md = (out / "report.md").read_text()
    assert "random sampler, seed 7" in md and "(resumed: 3 trials drawn by portfolio, seed 0)" in md
    assert "No single command" not in md
    args = _reproduce(out)
    assert args[args.index("--seed") + 1] == "0" and args[args.index("--sampler") + 1] == "portfolio"
    # the Reproduce command, in a new folder, draws the stored trials again
    fresh = tmp_path / "fresh"
    args[args.index("--out") + 1] = str(fresh)
    assert run_cli("tune", *args, "--quiet")[0] == 0
    assert _params(fresh) == first


def test_an_edited_spec_seed_resumes_and_says_so(run_cli, write_spec, tmp_path):
    out = tmp_path / "out"
    assert run_cli("tune", write_spec(SPEC), "--out", str(out), "--quiet")[0] == 0
    code, printed, _ = run_cli("tune", write_spec(SPEC.replace("seed: 0", "seed: 5"), "seed5.yaml"), "--out",
                               str(out), "--quiet")
    assert code == 0 and "(portfolio, budget 3, seed 5; resumed: 3 trials drawn by portfolio, seed 0)" in printed
    assert _summary(out)["results"][0]["drawn_by"] == [{"sampler": "portfolio", "seed": 0, "trials": 3}]
    args = _reproduce(out)
    assert args[args.index("--seed") + 1] == "0"


def test_a_mixed_history_has_no_single_reproduce_command(run_cli, write_spec, tmp_path):
    spec, out = write_spec(SPEC), tmp_path / "out"
    assert run_cli("tune", spec, "--out", str(out), "--quiet")[0] == 0
    code, printed, _ = run_cli("tune", spec, "--out", str(out), "--quiet", "--sampler", "random", "--seed", "7",
                               "--trials", "5")
    assert code == 0 and "resumed: 3 trials drawn by portfolio, seed 0" in printed
    by = _summary(out)["results"][0]["drawn_by"]
    assert by[0] == {"sampler": "portfolio", "seed": 0, "trials": 3} and by[1]["sampler"] == "random"
    md = (out / "report.md").read_text()
    assert re.search(r"No single command reproduces these trials: they were drawn by portfolio, seed 0 "
                     r"\(3 trials\); random, seed 7 \(\d+ trials?\)", md)
    assert "The portfolio sampler gave each of its trials" in md and "random, seed 7:" in md


def test_a_plain_resume_changes_nothing(run_cli, write_spec, tmp_path):
    spec, out = write_spec(SPEC), tmp_path / "out"
    code, printed, _ = run_cli("tune", spec, "--out", str(out), "--quiet")
    before = _summary(out)
    code2, again, _ = run_cli("tune", spec, "--out", str(out), "--quiet")
    after = _summary(out)
    assert code == code2 == 0 and "drawn_by" not in json.dumps(after) and "resumed" not in again
    strip = re.compile(r"\d+\.\d s\b")
    assert strip.sub("", printed) == strip.sub("", again)
    for s in (before, after):  # what this invocation spent and simulated differs, as it always did
        s.pop("elapsed_s")
        for r in s["results"]:
            r.pop("elapsed_s"), r.pop("simulated")
    assert before == after
    assert "resumed" not in (out / "report.md").read_text()


def test_trials_that_record_nothing_give_no_record():
    """A study of an autotile before the record (no trial has it) summarizes as before."""
    study = optuna.create_study()
    study.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=2)
    assert drawn.record(study.trials) == []
    summary = {"sampler": "tpe", "seed": 1, "results": [{"trials": 2}]}
    assert drawn.resumed_note(summary) == "" and drawn.drawers(summary) == [{"sampler": "tpe", "seed": 1, "trials": 2}]
