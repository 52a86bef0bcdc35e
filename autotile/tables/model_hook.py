"""The lookup's ``model`` fallback: the learned cost regressor ranks configurations of the
table's own spec for a shape nobody tuned (``autotile train`` writes the model).

The model file is read only when a lookup falls through to the model: an exact or nearest
match never needs it, so a stale, corrupt or other-profile model cannot break those. When it
is needed but unusable, ``warn`` gets one line naming the file and why, and the lookup goes on
to its next method (the default tiling); so does a model that loads but fails to predict.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

from autotile.errors import InputError


def default_of(space) -> dict | None:
    """The default heuristic's tiling on ``space`` (the lookup's last step), or None if it has
    none or it fails the spec's constraints."""
    from autotile.errors import InfeasibleConfig

    try:
        params = space.default_tiling()
    except (InfeasibleConfig, InputError, ValueError, ZeroDivisionError):
        return None
    return params if space.check(params) is None else None


def warn_stderr(text: str) -> None:
    print(f"autotile: warning: {text}", file=sys.stderr)


def regressor_hook(table, models_dir: str | Path | None = None, warn: Callable[[str], None] = warn_stderr
                   ) -> Callable | None:
    """``model(op, shape, dtype) -> {"unit", "params", "how", "match", "warning"} or None`` from a
    trained cost model; ``match`` is ``default`` when the default tiling, scored beside the model's
    best candidates, was not slower (see ``regressor.pick_params``), or when the model's pick could
    not be simulated and the shape is outside its training range;
    or None if there is no model file for the table's op and profile. A folder given explicitly
    but without that file still gets a model that says so (once, when a lookup needs it): the
    user asked for models, and the table's profile may not be the one they were trained for."""
    from autotile.models import store

    path = store.locate("cost", table.op, models_dir, table.hardware)
    if not path.exists():
        if models_dir is None:
            return None
        said: list = []

        def missing(op: str, shape: dict, dtype: str):
            if not said:
                warn(f"no cost model for {table.op} on profile {store.profile_folder(table.hardware)} at {path} "
                     f"(`{store.retrain_command(table.op, table.hardware, models_dir)}` writes it); the lookup "
                     "falls back to the default tiling")
                said.append(True)
            return None

        return missing
    loaded: list = []  # [regressor or None], filled on first use

    def regressor():
        if not loaded:
            try:
                loaded.append(store.load_regressor(table.op, models_dir, hw=table.hardware))
            except InputError as exc:
                warn(f"{exc}; the lookup falls back to the default tiling")
                loaded.append(None)
        return loaded[0]

    def model(op: str, shape: dict, dtype: str):
        from autotile.models.state import UnusableModel

        reg = regressor()
        if reg is None:
            return None
        try:
            return answer(reg, op, shape, dtype)
        except UnusableModel as exc:
            warn(f"{exc}; the lookup falls back to the default tiling")
            loaded[0] = None
            return None

    def answer(reg, op: str, shape: dict, dtype: str):
        from autotile.models.dataset import placement
        from autotile.models.regressor import pick_params

        spec = table.spec
        data = placement(spec)
        picks = []  # each unit the model knows, at its pick; the fewest cycles wins
        defaults = {}  # each such unit's default tiling, scored beside the model's candidates
        for unit in spec.units_for(dtype):
            if unit in reg.units:
                space = spec.space(shape, dtype, unit)
                defaults[unit] = default_of(space)
                got = pick_params(op, shape, dtype, space, model=reg, unit=unit, baseline=defaults[unit], data=data)
                if got is not None:
                    picks.append((got.cycles if got.cycles is not None else float("inf"), unit, got))
        if not picks:
            return None
        cycles, unit, got = min(picks, key=lambda t: t[0])
        how = got.how if len(picks) == 1 else (
            f"{unit} of {', '.join(u for _, u, _ in picks)} (fewest cycles: "
            + ", ".join(f"{u} {c:,.0f}" for c, u, _ in picks) + f"); {got.how}")
        far = reg.outside(shape, data)
        params, match, notes = got.params, "default" if got.default else "model", []
        cycles, source = got.cycles, "simulator" if got.verified else "model"
        if got.default:
            notes.append("the model's best was not faster than the default tiling, which the lookup keeps")
        elif far and not got.verified and (base := defaults[unit]) is not None:
            # an unverified ranking that extrapolates does not replace the default heuristic
            params, match, cycles = base, "default", None
            how = f"the default tiling (not simulated), kept over {how}"
            notes.append("the model's best was not verified on the simulator and extrapolates, so the lookup "
                         "keeps the default tiling")
        if far:
            notes.append(f"{far}; the model's ranking extrapolates")
        return {"unit": unit, "params": params, "how": how, "match": match,
                "warning": "; ".join(notes) if notes else None,
                "cycles": cycles, "cycles_from": source if cycles is not None else None}

    return model

