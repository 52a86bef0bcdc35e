"""The portfolio sampler: member record, credit from the shared history, constraints, resume."""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import optuna
import pytest
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState, create_trial

from autotile.space import load_spec
from autotile.space.loader import load_spec_text
from autotile.tune import landscapes, portfolio, runner
from autotile.tune.mutation import GreedyMutationSampler
from autotile.tune.portfolio import MEMBER_ATTR, PortfolioSampler
from autotile.tune.samplers import make_sampler
from autotile.tune.suggest import suggest

optuna.logging.set_verbosity(optuna.logging.WARNING)


def _members(trials) -> list:
    return [t.system_attrs.get(MEMBER_ATTR) for t in sorted(trials, key=lambda t: t.number)]


def _objective(trial):
    x, y = trial.suggest_float("x", -2, 2), trial.suggest_int("y", 0, 20)
    return (x - 0.3) ** 2 + (y - 7) ** 2 / 50


def _small(seed=0, **kw) -> PortfolioSampler:
    return PortfolioSampler({"tpe": optuna.samplers.TPESampler(seed=seed, n_startup_trials=5),
                             "random": optuna.samplers.RandomSampler(seed=seed)}, seed=seed, **kw)


def test_every_trial_records_its_member_and_each_member_gets_trials():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # seed 1: its first trial is not already on the lowest level (seed 0's is: nothing to improve)
        study = optuna.create_study(sampler=make_sampler("portfolio", 1))
        study.optimize(lambda t: math.floor(_objective(t) * 2) / 2, n_trials=60)  # few levels: it stalls
    names = _members(study.trials)
    assert set(names) <= {"tpe", "nsga2", "cmaes", "random", "mutation"} and None not in names
    assert {"tpe", "nsga2", "random"} <= set(names)
    stats = portfolio.member_stats(study.trials)
    assert sum(r["trials"] for r in stats) == 60
    assert sum(r["improvements"] for r in stats) >= 1
    assert all(r["best"] is not None for r in stats)


def test_same_seed_same_members():
    runs = []
    for _ in range(2):
        study = optuna.create_study(sampler=_small(3))
        study.optimize(_objective, n_trials=15)
        runs.append((_members(study.trials), [t.params for t in study.trials]))
    assert runs[0] == runs[1]


def _history(study, rows):
    """Add finished trials: (member, value or None for a pruned infeasible one)."""
    dist = {"x": FloatDistribution(0, 10)}
    for i, (member, value) in enumerate(rows):
        attrs = {MEMBER_ATTR: member, "constraints:feasible": 0.0 if value is not None else 1.0}
        state = TrialState.COMPLETE if value is not None else TrialState.PRUNED
        study.add_trial(create_trial(state=state, value=value, params={"x": float(i % 10)},
                                     distributions=dist, system_attrs=attrs))


def test_credit_goes_to_members_that_set_new_bests_by_the_size_of_the_gain():
    s = _small(exploration=0.0)
    study = optuna.create_study(sampler=s)
    _history(study, [("random", 10.0), ("tpe", 9.0), ("random", 9.5), ("tpe", 8.0), ("random", None),
                     ("tpe", 7.0), ("random", 7.0), ("enqueued", 1.0), ("tpe", 2.0)])
    credit = s.credit(study)
    assert credit["random"]["uses"] == 4 and credit["tpe"]["uses"] == 4  # enqueued: no member
    # the first result improves on nothing; the enqueued 1.0 makes tpe's later 2.0 no improvement;
    # each gain is the relative improvement of the best value, recency-weighted 1, 2, 3, 4
    assert credit["random"]["credit"] == 0.0
    assert credit["tpe"]["credit"] == pytest.approx((1 * 1 / 10 + 2 * 1 / 9 + 3 * 1 / 8) / 10)
    trial = study.ask()  # before_trial chooses: the higher credit wins without exploration
    assert study._storage.get_trial(trial._trial_id).system_attrs[MEMBER_ATTR] == "tpe"


def test_exploration_gives_a_slow_starter_trials():
    s = _small(exploration=0.25)
    study = optuna.create_study(sampler=s)
    _history(study, [("random", 10.0)] + [("tpe", 10.0 * 0.5 ** i) for i in range(1, 20)])  # gains of 1/2
    picks = []
    for _ in range(40):
        trial = study.ask()
        picks.append(trial.study._storage.get_trial(trial._trial_id).system_attrs[MEMBER_ATTR])
        study.tell(trial, 100.0)  # nobody improves any more
    assert picks[0] == "tpe" and "random" in picks


def test_constraints_and_infeasible_trials_earn_no_credit():
    def objective(trial):
        x = trial.suggest_float("x", -2, 2)
        if x > 0:
            trial.set_constraint("feasible", 1.0)
            raise optuna.TrialPruned("x > 0 does not fit")
        trial.set_constraint("feasible", 0.0)
        return x ** 2

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = make_sampler("portfolio", 1)
        study = optuna.create_study(sampler=s)
        study.optimize(objective, n_trials=40)
    pruned = [t for t in study.trials if t.state == TrialState.PRUNED]
    assert pruned and all(t.system_attrs.get(MEMBER_ATTR) for t in pruned)
    stats = {r["member"]: r for r in portfolio.member_stats(study.trials)}
    assert sum(r["trials"] - r["feasible"] for r in stats.values()) == len(pruned)
    hits = sum(r["improvements"] for r in stats.values())
    values = [t.value if portfolio.feasible(t) else None for t in study.trials]
    expected = sum(1 for i, v in enumerate(values) if v is not None
                   and any(u is not None for u in values[:i]) and v < min(u for u in values[:i] if u is not None))
    assert hits == expected >= 1


def test_two_workers_compute_the_same_credit_from_the_shared_history():
    storage = optuna.storages.InMemoryStorage()
    a, b = _small(0), _small(1)
    sa = optuna.create_study(study_name="s", storage=storage, sampler=a)
    sb = optuna.load_study(study_name="s", storage=storage, sampler=b)
    pending = sa.ask()  # a's trial stays running while b works: a pending use, no credit yet
    for _ in range(12):
        for st in (sb, sa):
            t = st.ask()
            st.tell(t, _objective(t))
    assert a.credit(sa) == b.credit(sb) == _small(9).credit(sa)
    running = pending._cached_frozen_trial.system_attrs[MEMBER_ATTR]
    sa.tell(pending, _objective(pending))
    after = _small(9).credit(sa)
    assert a.credit(sa) == b.credit(sb) == after
    assert after[running]["uses"] == a.credit(sa)[running]["uses"]
    assert {t.system_attrs[MEMBER_ATTR] for t in sa.trials} == {"tpe", "random"}


def test_enqueued_trials_are_recorded_as_such():
    study = optuna.create_study(sampler=_small())
    study.enqueue_trial({"x": 0.3, "y": 7})
    study.optimize(_objective, n_trials=4)
    assert _members(study.trials)[0] == "enqueued"
    assert study.trials[0].params == {"x": 0.3, "y": 7}


def test_two_objectives():
    study = optuna.create_study(directions=["minimize", "minimize"], sampler=make_sampler("portfolio", 0, n_objectives=2))
    study.optimize(lambda t: (t.suggest_float("x", 0, 1), 1 - t.suggest_float("x", 0, 1) ** 0.5), n_trials=20)
    assert "cmaes" not in set(_members(study.trials))
    assert sum(r["improvements"] for r in portfolio.member_stats(study.trials)) >= 2


@pytest.fixture(scope="module")
def failing_spec(tmp_path_factory):
    folder = tmp_path_factory.mktemp("failing")
    land = landscapes.failing(0)
    landscapes.write(land, folder / "f.json.gz")
    return load_spec(landscapes.write_spec(land, folder / "f.json.gz", folder / "f.yaml"))


def _plan(spec, budget, seed=0):
    return runner.StudyPlan(name="p", space=spec.space(spec.shapes[0]), objectives=("time_us",),
                            sampler="portfolio", seed=seed, budget=budget, timeout_s=None, baseline=None)


def test_resume_keeps_the_record_and_continues_from_the_history(failing_spec, tmp_path):
    storage = optuna.storages.JournalStorage(optuna.storages.journal.JournalFileBackend(str(Path(tmp_path) / "j.log")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        first = runner.run(_plan(failing_spec, 12), storage)
        study = optuna.load_study(study_name="p", storage=storage)
        before = _members(study.trials)
        second = runner.run(_plan(failing_spec, 30), storage)
    assert first.unique >= 12 and second.unique >= 30
    study = optuna.load_study(study_name="p", storage=storage)
    after = _members(study.trials)
    assert after[: len(before)] == before and None not in after
    assert any(t.state == TrialState.PRUNED for t in study.trials)  # the failing landscape prunes
    fresh = make_sampler("portfolio", 0)
    assert fresh.credit(study)["tpe"]["uses"] == after[10:].count("tpe")  # the first 10: TPE's start-up


def test_bench_search_lists_the_portfolio(failing_spec, capsys):
    import json

    from autotile.cli import run as cli

    assert cli(["bench-search", str(failing_spec.file), "--samplers", "random,portfolio", "--budgets", "10",
                "--seeds", "1", "--json"]) == 0
    (sp,) = json.loads(capsys.readouterr().out)["spaces"]
    port = sp["samplers"][1]
    assert port["sampler"] == "portfolio" and port["available"]
    assert 0 < port["results"][0]["median_fraction"] <= 1


def test_summary_and_report_carry_the_member_record(failing_spec, tmp_path):
    from autotile.report import search
    from autotile.report.data import ReportData

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        oc = runner.run(_plan(failing_spec, 60), optuna.storages.InMemoryStorage())
    assert {m["member"] for m in oc.members} >= {"tpe", "random"}  # the challengers enter at a stall
    assert sum(m["trials"] for m in oc.members) == oc.trials
    rec = {"shape": failing_spec.shapes[0], "dtype": "fp32", "unit": "cuda", "study": "p", "members": oc.members}
    blocks = search.portfolio_members(ReportData(out_dir=tmp_path, summary={"results": [rec]}, hw=None))
    assert blocks and any("member" in getattr(b, "header", []) for b in blocks)


def _led(seed=0, **kw) -> PortfolioSampler:
    members = {"tpe": optuna.samplers.TPESampler(seed=seed, n_startup_trials=5),
               "random": optuna.samplers.RandomSampler(seed=seed),
               "nsga2": optuna.samplers.NSGAIISampler(seed=seed, population_size=8)}
    kw = {"lead": "tpe", "explorer": "random", "warmup": 5, "genetic": "nsga2", **kw}
    return PortfolioSampler(members, seed=seed, **kw)


def _ask(study) -> str:
    trial = study.ask()
    return study._storage.get_trial(trial._trial_id).system_attrs[MEMBER_ATTR], trial


def test_the_warmup_is_shared_exploration_without_credit():
    s = _led(late=["nsga2"], late_after=1000)
    study = optuna.create_study(sampler=s)
    study.enqueue_trial({"x": 0.3, "y": 7})  # enqueued: not a member trial, not part of the warmup
    study.optimize(_objective, n_trials=12)
    names = _members(study.trials)
    assert names[:6] == ["enqueued"] + ["random"] * 5
    assert names[6] == "tpe"  # the lead goes first after the warmup
    credit = s.credit(study)
    assert credit["random"]["uses"] == names[6:].count("random")  # warmup trials are no uses
    assert credit["tpe"]["uses"] == names.count("tpe")
    assert "nsga2" not in names  # late: not before late_after member trials


def test_the_lead_gets_most_trials_and_challengers_a_decaying_quota():
    s = _led(margin=math.inf)  # no takeover: the quota alone
    study = optuna.create_study(sampler=s)
    study.optimize(_objective, n_trials=105)
    after = _members(study.trials)[5:]
    challengers = [n for n in after if n != "tpe"]
    assert {"random", "nsga2"} <= set(challengers)  # exploration: every challenger gets trials
    assert len(challengers) <= math.sqrt(len(after)) + 1  # share 1: at most sqrt(n) of n
    first, second = after[:50], after[50:]
    assert sum(n != "tpe" for n in second) < sum(n != "tpe" for n in first)  # the share decays


def test_a_challenger_that_clearly_beats_the_lead_takes_over_while_it_finds_gains():
    s = _led(min_uses=2, share=0.0)
    study = optuna.create_study(sampler=s)
    rows = [("random", 100.0)] * 5  # the warmup
    rows += [("tpe", 100.0)] * 10 + [("random", 100.0 * 0.7 ** i) for i in range(1, 4)]
    _history(study, rows)
    assert s.credit(study)["random"]["credit"] > 2 * s.credit(study)["tpe"]["credit"]
    picks = []
    for _ in range(12):
        name, trial = _ask(study)
        picks.append(name)
        study.tell(trial, 1000.0)  # no more gains: random gives the trials back after min_uses
    assert picks == ["random", "random"] + ["tpe"] * 10


def test_two_workers_with_a_lead_compute_the_same_choices():
    storage = optuna.storages.InMemoryStorage()
    a, b = _led(0), _led(1)
    sa = optuna.create_study(study_name="s", storage=storage, sampler=a)
    sb = optuna.load_study(study_name="s", storage=storage, sampler=b)
    for _ in range(15):
        for st in (sb, sa):
            t = st.ask()
            st.tell(t, _objective(t))
    assert a.credit(sa) == b.credit(sb) == _led(9).credit(sa)
    names = _members(sa.trials)
    assert names[:5] == ["random"] * 5 and names.count("tpe") > len(names) / 2


def test_with_patience_challengers_wait_for_a_stall():
    s = _led(patience=8, late=["nsga2"], late_after=0)
    study = optuna.create_study(sampler=s)
    _history(study, [("random", 100.0)] * 5 + [("tpe", 100.0 * 0.9 ** i) for i in range(1, 7)])
    assert s.quiet(study) == 0
    name, trial = _ask(study)
    assert name == "tpe"  # improving: the lead keeps the trials
    trial.suggest_float("x", 0, 10)
    study.tell(trial, 1000.0)
    picks = []
    for _ in range(14):
        name, trial = _ask(study)
        picks.append(name)
        trial.suggest_float("x", 0, 10)  # a new configuration each time
        study.tell(trial, 1000.0)  # no gains from here on
    # quiet reaches 8 after the lead's 8th gainless trial; then the challengers' quota opens
    assert picks[:7] == ["tpe"] * 7 and set(picks[7:]) - {"tpe"}
    seen, fresh = set(), 0  # a genetic child can copy its parent: repeats do not count
    for t in study.trials:
        fresh += t.number >= 11 and t.params["x"] not in seen
        seen.add(t.params["x"])
    assert s.quiet(study) == fresh and fresh >= 12


def test_repeated_configurations_do_not_count_toward_patience():
    s = _led(patience=8)
    study = optuna.create_study(sampler=s)
    _history(study, [("random", 100.0)] * 5 + [("tpe", 50.0)])  # x = 0 .. 5

    def lead(x):
        study.add_trial(create_trial(value=60.0, params={"x": x}, distributions={"x": FloatDistribution(0, 10)},
                                     system_attrs={MEMBER_ATTR: "tpe", "constraints:feasible": 0.0}))

    for _ in range(12):
        lead(5.0)  # measured before (answered from the duplicate cache): says nothing about a stall
    assert s.quiet(study) == 0
    name, _ = _ask(study)
    assert name == "tpe"
    for x in (7.5, 8.5, 9.5):
        lead(x)
    assert s.quiet(study) == 3


def test_the_default_portfolio_is_the_tpe_run_with_its_seed_until_the_search_stalls():
    def run(name):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            study = optuna.create_study(sampler=make_sampler(name, 4))
            study.optimize(lambda t: -float(t.number) + 0.0 * t.suggest_float("x", -1, 1)
                           + 0.0 * t.suggest_int("y", 0, 9), n_trials=40)  # a new best every trial
        return study
    tpe, port = run("tpe"), run("portfolio")
    assert [t.params for t in port.trials] == [t.params for t in tpe.trials]
    assert set(_members(port.trials)) == {"tpe"}


def test_a_repeated_lead_proposal_hands_the_next_trial_to_the_local_search():
    members = {"tpe": optuna.samplers.TPESampler(seed=0, n_startup_trials=5),
               "random": optuna.samplers.RandomSampler(seed=0),
               "mutation": GreedyMutationSampler(seed=0)}
    s = PortfolioSampler(members, seed=0, lead="tpe", explorer="random", warmup=5, local="mutation",
                         patience=100)
    study = optuna.create_study(sampler=s)
    _history(study, [("random", 100.0)] * 5 + [("tpe", 50.0)])  # x = 0 .. 5, the best at x = 5
    name, trial = _ask(study)
    assert name == "tpe"  # the lead's last proposal was new
    study.tell(trial, 70.0)
    study.add_trial(create_trial(value=50.0, params={"x": 5.0}, distributions={"x": FloatDistribution(0, 10)},
                                 system_attrs={MEMBER_ATTR: "tpe", "constraints:feasible": 0.0}))  # a repeat
    name, trial = _ask(study)
    assert name == "mutation"
    x = trial.suggest_float("x", 0, 10)
    assert x in (4.0, 6.0)  # a tenth of the range from the incumbent, x = 5
    study.tell(trial, 40.0)
    assert _ask(study)[0] == "tpe"  # then back to the lead


def test_the_local_search_is_a_challenger_during_a_stall():
    """The mutation got trials only after a lead repeat, and TPE seldom repeats on a large space:
    on matmul 4096^3 it had 8 of 164 trials and never left the default (77.6% of peak). Now it
    shares the stalled challengers' quota like any member."""
    members = {"tpe": optuna.samplers.TPESampler(seed=0, n_startup_trials=5),
               "random": optuna.samplers.RandomSampler(seed=0),
               "mutation": GreedyMutationSampler(seed=0)}
    s = PortfolioSampler(members, seed=0, lead="tpe", explorer="random", warmup=5, local="mutation",
                         patience=3, exploration=0.0)
    study = optuna.create_study(sampler=s)
    _history(study, [("random", 100.0)] + [("random", 110.0)] * 4 + [("tpe", 120.0 + i) for i in range(4)]
             + [("random", 130.0)])  # stalled; random has had its trial, mutation none
    assert _ask(study)[0] == "mutation"


def test_mutation_moves_one_param_of_the_incumbent_to_an_unseen_neighbour():
    study = optuna.create_study(sampler=GreedyMutationSampler(seed=3))
    study.enqueue_trial({"a": 4, "b": "nz", "c": 10})
    study.enqueue_trial({"a": 5, "b": "nz", "c": 10})  # a measured neighbour
    score = {(4, "nz", 10): 1.0}

    def objective(t):
        key = (t.suggest_int("a", 0, 8), t.suggest_categorical("b", ["nz", "nd"]), t.suggest_int("c", 0, 20, step=5))
        return score.get(key, 2.0)

    study.optimize(objective, n_trials=6)  # two enqueued, then the incumbent's four other neighbours
    moved = [t.params for t in study.trials[2:]]
    assert sorted(map(str, moved)) == sorted(map(str, [{"a": 3, "b": "nz", "c": 10}, {"a": 4, "b": "nd", "c": 10},
                                                       {"a": 4, "b": "nz", "c": 5}, {"a": 4, "b": "nz", "c": 15}]))


def test_mutation_with_a_space_skips_moves_that_snap_to_a_measured_configuration():
    """``cores`` is filtered to the divisors of 48: cores 7 (one step from 6) is suggested as 6,
    the incumbent itself. With the space, the sampler knows that and moves elsewhere."""
    spec = load_spec_text("op: elementwise\nshapes: [{n: 4096}]\nparams:\n"
                          "  tile_len: {type: fixed, value: 1024}\n  buffer_num: {type: int, low: 1, high: 2}\n"
                          "  cores: {type: int, low: 1, high: 48, where: 'divides(cores, 48)'}\n", "s.yaml")
    space = spec.space(spec.shapes[0], spec.dtypes[0], spec.units[0])
    study = optuna.create_study(sampler=GreedyMutationSampler(seed=0, space=space))
    study.enqueue_trial({"buffer_num": 1, "cores": 6})
    seen = []

    def objective(t):
        params, _ = suggest(t, space)
        seen.append((params["buffer_num"], params["cores"]))
        return 1.0 if seen[-1] == (1, 6) else 2.0

    study.optimize(objective, n_trials=4)
    assert seen[0] == (1, 6) and len(set(seen)) == len(seen)  # every trial a new configuration


COUPLED = """op: elementwise
shapes: [{n: 4096}]
params:
  db: {type: int, low: 1, high: 2}
  m: {type: int, low: 1, high: 8}
  n: {type: int, low: 1, high: "8 // (db * m)"}
  p: {type: int, low: 0, high: 8}
  q: {type: int, low: 0, high: 8}
  r: {type: int, low: 0, high: 8}
"""


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mutation_repairs_a_move_that_a_coupled_bound_undoes(seed):
    """Bigger m * n is better and db = 1 costs a little, but m * n * db <= 8 (n's bound): from
    db=2, m=n=2 every single move is worse (m=3 snaps n to 1, db=1 alone pays), so one-param
    moves stayed at -4 (pairs drawn at random once they were spent: -4 for these seeds). m=3
    disturbs n, db=1 repairs it: the pair keeps n=2, and the search goes on to the optimum."""
    spec = load_spec_text(COUPLED, "s.yaml")
    space = spec.space(spec.shapes[0], spec.dtypes[0], spec.units[0])
    study = optuna.create_study(sampler=GreedyMutationSampler(seed=seed, space=space))
    study.enqueue_trial({"db": 2, "m": 2, "n": 2, "p": 4, "q": 4, "r": 4})
    proposed = []

    def objective(t):
        c, reason = suggest(t, space)
        proposed.append(reason)
        return -c["m"] * c["n"] + 0.5 * (c["db"] == 1) + 0.01 * sum(abs(c[k] - 4) for k in "pqr")

    study.optimize(objective, n_trials=20)
    assert study.best_value == -7.5  # db=1 and m * n = 8
    assert proposed == [None] * 20  # and no move the space rejects


def test_repeats_are_told_by_the_recorded_configuration():
    """Two Optuna values that the tuner snaps to one configuration are one configuration."""
    members = {"tpe": optuna.samplers.TPESampler(seed=0, n_startup_trials=5),
               "random": optuna.samplers.RandomSampler(seed=0),
               "mutation": GreedyMutationSampler(seed=0)}
    s = PortfolioSampler(members, seed=0, lead="tpe", explorer="random", warmup=5, local="mutation",
                         patience=100, config_attr=runner.CONFIG_ATTR)
    study = optuna.create_study(sampler=s)
    _history(study, [("random", 100.0)] * 5)
    for x in (5.0, 5.2):  # different values, one configuration
        study.add_trial(create_trial(value=50.0, params={"x": x}, distributions={"x": FloatDistribution(0, 10)},
                                     user_attrs={runner.CONFIG_ATTR: '{"x":5}'},
                                     system_attrs={MEMBER_ATTR: "tpe", "constraints:feasible": 0.0}))
    assert _ask(study)[0] == "mutation"


def test_every_documented_seed_makes_a_portfolio_with_distinct_member_seeds():
    """Members got ``seed * 16 + i``: any seed from 2**28 on was past numpy's 2**32 - 1 and
    crashed the default sampler. Small seeds keep their members' seeds (recorded results)."""
    from autotile.tune.samplers import make_sampler, member_seeds

    assert member_seeds(5, 6) == [5, 81, 82, 83, 84, 85]
    collides = (-3 * pow(15, -1, 2**32)) % 2**32  # seed * 16 + 3 wraps onto the seed itself
    for seed in (2**28, 2**32 - 1, collides):
        seeds = member_seeds(seed, 6)
        assert len(set(seeds)) == 6 and all(0 <= s < 2**32 for s in seeds)
        make_sampler("portfolio", seed)


def test_mutation_around_a_searched_out_incumbent_moves_from_the_next_best_not_again():
    """Every single and double move of the incumbent measured: the next trials move from the
    next best configurations to ones not measured, rather than measure a pair again (on the
    convolution landscape 134 of a portfolio's ~250 mutation trials were re-measurements)."""
    study = optuna.create_study(sampler=GreedyMutationSampler(seed=0))
    around = [(7 + dx, 7 + dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)]
    for x, y in around:
        study.enqueue_trial({"x": x, "y": y})

    def objective(t):
        return (t.suggest_int("x", 0, 20) - 7) ** 2 + (t.suggest_int("y", 0, 20) - 7) ** 2

    study.optimize(objective, n_trials=len(around) + 8)
    new = [(t.params["x"], t.params["y"]) for t in study.trials[len(around):]]
    assert len(set(new)) == len(new) and not set(new) & set(around)
    assert all(max(abs(x - 7), abs(y - 7)) == 2 for x, y in new)  # neighbours of the measured ring
