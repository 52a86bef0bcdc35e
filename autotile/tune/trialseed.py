"""Samplers whose random draws depend on (seed, trial number), not on one stream per process.

An Optuna sampler draws from one random stream that starts at its seed, so what trial t proposes
depends on how many draws this process made before it: a run stopped with Ctrl-C and resumed
starts the stream again and proposes other trials than one uninterrupted run with that seed.
``PerTrial`` makes the sampler afresh for each trial, seeded from the seed and the trial number.
Everything else Optuna's samplers use (TPE's and NSGA-II's history, CMA-ES's state, the GP's
data) is read from the study, so each proposal is a function of the seed and the study history:
a resumed run proposes exactly what an uninterrupted one does, and processes sharing a study
with one seed do not repeat each other's random draws (their trial numbers differ).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from optuna.samplers import BaseSampler

LIVE = 4  # samplers kept for unfinished trials (one process runs one trial at a time)


def trial_seed(seed: int | None, number: int) -> int | None:
    """The seed of trial ``number``'s draws, in 0 .. 2**32 - 1: ``seed`` and ``number`` mixed by
    NumPy's SeedSequence (nearby seeds and numbers give unrelated streams); None stays None.

    >>> trial_seed(0, 5) == trial_seed(0, 5) != trial_seed(0, 6), trial_seed(None, 5)
    (True, None)
    """
    if seed is None:
        return None
    return int(np.random.SeedSequence([seed, number]).generate_state(1)[0])


class PerTrial(BaseSampler):
    """``make(seed)`` for each trial, with ``trial_seed(seed, trial.number)``; ``template``,
    made with ``seed`` itself, answers what draws nothing (a genetic search's generations).

    >>> import optuna
    >>> s = PerTrial(lambda seed: optuna.samplers.RandomSampler(seed=seed), 0)
    >>> a, b = (optuna.create_study(sampler=s) for _ in range(2))
    >>> a.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    >>> b.enqueue_trial({"x": 0.5}); b.optimize(lambda t: t.suggest_float("x", 0, 1), n_trials=3)
    >>> a.trials[2].params == b.trials[2].params  # trial 2 draws the same however many came before
    True
    """

    def __init__(self, make: Callable[[int | None], BaseSampler], seed: int | None) -> None:
        self._make = make
        self._seed = seed
        self.template = make(seed)
        self._live: dict[int, BaseSampler] = {}  # trial number -> its sampler, until after_trial (one study)

    def sampler_for(self, trial) -> BaseSampler:
        """The sampler of ``trial`` (a FrozenTrial), made on first use."""
        s = self._live.get(trial.number)
        if s is None:
            s = self._live[trial.number] = self._make(trial_seed(self._seed, trial.number))
            while len(self._live) > LIVE:  # trials asked about but run by another sampler
                del self._live[next(iter(self._live))]
        return s

    def infer_relative_search_space(self, study, trial):
        return self.sampler_for(trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        return self.sampler_for(trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self.sampler_for(trial).sample_independent(study, trial, param_name, param_distribution)

    def before_trial(self, study, trial) -> None:
        self.sampler_for(trial).before_trial(study, trial)

    def after_trial(self, study, trial, state, values) -> None:
        self.sampler_for(trial).after_trial(study, trial, state, values)
        self._live.pop(trial.number, None)

    def reseed_rng(self) -> None:
        self._seed = int(np.random.SeedSequence().generate_state(1)[0])
        self._live.clear()
        self.template.reseed_rng()
