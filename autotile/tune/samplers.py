"""Sampler construction by name, with clear messages for optional extras."""

from __future__ import annotations

import importlib.util
import warnings

import optuna

from autotile.errors import InputError
from autotile.tune.trialseed import PerTrial

SAMPLERS = ("tpe", "random", "cmaes", "gp", "nsga2", "exhaustive", "portfolio")
_EXTRAS = {"cmaes": ("cmaes", "cmaes"), "gp": ("torch", "gp")}
SEEDS = 2**32  # numpy's and Optuna's samplers take seeds 0 .. SEEDS - 1


def offset_seed(seed: int | None, offset: int) -> int | None:
    """``seed + offset`` (a benchmark run's seed), wrapped into the samplers' range:
    unchanged while it fits, so recorded results stay reproducible, and distinct for offsets
    below 2**32.

    >>> offset_seed(7, 1), offset_seed(2**32 - 1, 1)
    (8, 0)
    """
    return None if seed is None else (seed + offset) % SEEDS


def member_seeds(seed: int, n: int) -> list[int]:
    """Seeds of a portfolio's ``n`` members: ``seed`` for the first, ``seed * 16 + i`` for the
    others, wrapped into the samplers' range (unchanged while it fits); a wrapped value equal to
    ``seed`` is skipped, so the members' seeds stay distinct.

    >>> member_seeds(0, 3), member_seeds(2**32 - 1, 3)
    ([0, 1, 2], [4294967295, 4294967281, 4294967282])
    """
    out, k = [seed], 1
    while len(out) < n:
        value = (seed * 16 + k) % SEEDS
        if value != seed:
            out.append(value)
        k += 1
    return out


def make_sampler(name: str, seed: int | None, *, n_objectives: int = 1, n_startup: int = 10, space=None):
    """An Optuna sampler for ``name`` (``exhaustive`` is handled outside Optuna's loop);
    ``space``, the Space searched, lets the portfolio's mutation member judge moves by the
    configuration they make.

    >>> type(make_sampler("tpe", 0).template).__name__
    'TPESampler'
    """
    if name not in SAMPLERS:
        raise InputError(f"unknown sampler {name!r}, expected one of {', '.join(SAMPLERS)}")
    if name in _EXTRAS:
        module, extra = _EXTRAS[name]
        if importlib.util.find_spec(module) is None:
            hint = "pip install 'autotile[gp]' (CPU PyTorch: pip install torch==2.13.0)" if extra == "gp" \
                else f"pip install 'autotile[{extra}]'"
            raise InputError(f"sampler {name!r} needs the {module!r} package: {hint}")
    if n_objectives > 1 and name in ("cmaes",):
        raise InputError(f"sampler {name!r} is single-objective; use nsga2, tpe or random for two objectives")
    if name == "portfolio":
        return _portfolio(seed, n_objectives, n_startup, space)
    if name == "exhaustive":
        raise InputError(f"sampler {name!r} does not run inside an Optuna study")
    # each trial's draws come from (seed, trial number), not from one stream: a resumed run
    # proposes what an uninterrupted one does (autotile.tune.trialseed)
    return PerTrial(lambda s: _optuna_sampler(name, s, n_startup), seed)


def _optuna_sampler(name: str, seed: int | None, n_startup: int):
    """Optuna's sampler ``name``, seeded with ``seed``."""
    # a huge integer range (a spec's cores to 2**53) overflows TPE's density arithmetic and NumPy
    # printed ~200 RuntimeWarning lines in a 25-trial tune; the sampler still proposes values
    warnings.filterwarnings("ignore", category=RuntimeWarning, module=r"optuna\.samplers\.")
    # trials record their constraint values (the portfolio credits feasibility); CMA-ES models only
    # the objective and said so once a trial, 64 lines in a 5-trial tune
    warnings.filterwarnings("ignore", message="Constraints have been set", category=UserWarning)
    if name == "tpe":
        # multivariate TPE over the whole space (group=False): on bench/specs/matmul_subspace.yaml
        # it came within 2% of the exhaustive optimum in 12 of 18 seeded 150-trial runs (three
        # shapes x 6 seeds), against 3 of 18 with group=True
        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_startup, multivariate=True,
                                          group=False, constant_liar=True)
    if name == "random":
        return optuna.samplers.RandomSampler(seed=seed)
    if name == "cmaes":
        return optuna.samplers.CmaEsSampler(seed=seed, n_startup_trials=n_startup,
                                            independent_sampler=optuna.samplers.RandomSampler(seed=seed),
                                            warn_independent_sampling=False)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=n_startup)
    return optuna.samplers.NSGAIISampler(seed=seed, population_size=max(8, n_startup))


def _portfolio(seed: int | None, n_objectives: int, n_startup: int, space=None):
    """TPE, NSGA-II (the genetic search), CMA-ES (one objective, ``cmaes`` installed), random and
    a greedy mutation (local search) under one bandit (``autotile.tune.portfolio``) led by TPE.

    TPE has the portfolio's seed and makes the first ``n_startup`` trials (its random start, no
    credit); while it proposes new configurations and keeps improving, a portfolio run is
    exactly the TPE run with that seed. The trial after TPE repeats a measured configuration goes
    to the greedy mutation (``space``: it judges moves by the configuration they make and
    repairs moves its bounds undo); during stalls (``2 * n_startup`` member trials of new
    configurations without a new best) the challengers, the mutation among them, share their
    quota, the genetic search and CMA-ES from ``2 * n_startup`` trials on. The other members are seeded from ``seed`` too."""
    from autotile.tune.mutation import GreedyMutationSampler
    from autotile.tune.portfolio import PortfolioSampler
    from autotile.tune.runner import CONFIG_ATTR

    names = ["tpe", "nsga2"]
    if n_objectives == 1 and importlib.util.find_spec("cmaes") is not None:
        names.append("cmaes")
    names.append("random")
    seeds = [None] * (len(names) + 1) if seed is None else member_seeds(seed, len(names) + 1)
    members = {n: make_sampler(n, seeds[i], n_objectives=n_objectives, n_startup=n_startup)
               for i, n in enumerate(names)}
    members["mutation"] = GreedyMutationSampler(seeds[-1], space, CONFIG_ATTR)
    return PortfolioSampler(members, seed=seed, genetic="nsga2",
                            needs_numeric=[n for n in names if n == "cmaes"], lead="tpe",
                            warmup=n_startup, late=[n for n in names if n in ("nsga2", "cmaes")],
                            late_after=2 * n_startup, patience=2 * n_startup, local="mutation",
                            config_attr=CONFIG_ATTR)
