"""Parameter importance: advice only from enough trials (8 trials of a sigmoid study ranked tile_len
first, 60 ranked cores first), and the objective it ranks named when a study has two."""

from __future__ import annotations

import warnings

import optuna

from autotile.report import search
from autotile.report.data import ReportData
from autotile.report.doc import Para, Table


def _data(tmp_path, trials: list[int], objectives: list[str]) -> ReportData:
    storage = optuna.storages.InMemoryStorage()
    results = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        for i, n in enumerate(trials):
            study = optuna.create_study(study_name=f"s{i}", storage=storage, directions=["minimize"] * len(objectives),
                                        sampler=optuna.samplers.RandomSampler(seed=i))
            study.optimize(lambda t: (t.suggest_int("tile_len", 1, 64) + t.suggest_int("cores", 1, 8) * 0.1,
                                      1.0)[:len(objectives)], n_trials=n)
            results.append({"shape": {"n": 1024 * (i + 1)}, "dtype": "fp16", "unit": "vector", "study": f"s{i}",
                            "cycles": 100.0, "history": [300.0, 200.0], "history_trials": [0, 1]})
    return ReportData(out_dir=tmp_path, summary={"op": "sigmoid", "objectives": objectives, "sampler": "tpe",
                                                 "results": results}, hw=None, storage=storage)


def _texts(sec) -> list[str]:
    return [b.text for b in sec.blocks if isinstance(b, Para)]


def test_too_few_trials_give_the_shares_with_a_caveat_instead_of_advice(tmp_path):
    sec = search.importance(_data(tmp_path, [8], ["cycles"]))
    text = " ".join(_texts(sec))
    assert "the one to get right" not in text
    assert "only 8 completed trials" in text and "not yet reliable" in text
    (table,) = [b for b in sec.blocks if isinstance(b, Table)]
    assert table.rows[0][2] == "8 (too few: not yet reliable)"


def test_enough_trials_give_the_advice(tmp_path):
    sec = search.importance(_data(tmp_path, [search.MIN_ADVICE_TRIALS], ["cycles"]))
    text = " ".join(_texts(sec))
    assert "A parameter with a large share is the one to get right" in text and "not yet reliable" not in text


def test_advice_and_caveat_each_name_their_studies_when_trial_counts_differ(tmp_path):
    sec = search.importance(_data(tmp_path, [8, search.MIN_ADVICE_TRIALS + 5], ["cycles"]))
    text = " ".join(_texts(sec))
    assert f"For the studies with at least {search.MIN_ADVICE_TRIALS} completed trials: a parameter" in text
    assert "n=1024 fp16 vector: only 8 completed trials" in text and "n=2048" not in text


def test_a_two_objective_study_names_the_objective_its_importance_ranks(tmp_path):
    sec = search.importance(_data(tmp_path, [12], ["cycles", "max_abs_error"]))
    intro = _texts(sec)[0]
    assert intro.startswith("How much of the variation of cycles among the good trials")
    assert "by the first, cycles, only (max_abs_error is not ranked)" in intro
    one = _texts(search.importance(_data(tmp_path, [12], ["time_us"])))[0]
    assert "variation of time_us" in one and "not ranked" not in one
