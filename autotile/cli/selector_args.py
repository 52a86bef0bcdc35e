"""What ``decide`` and ``crossover`` share about the trained unit selector: the op's options
(``--inputs``, checked as a spec's ``inputs:``), the ones the selector was trained with (the
defaults: ``train`` builds it from those only), and the units a dtype rules out on a chip."""

from __future__ import annotations

from autotile.errors import InputError
from autotile.kernels import registry


def parse_inputs(op: str, text: str, no_data: str) -> dict:
    """``--inputs k=v,...``: the op's options as given (each checked), ``data`` refused with ``no_data``."""
    from autotile.cli.common import parse_kv

    given = parse_kv(text, what="--inputs")
    if "data" in given:
        raise InputError(f"--inputs data: {no_data}")
    try:
        registry.get(op).check_options(given)
    except registry.OptionError as exc:
        raise InputError(f"--inputs {exc.key}: {exc}") from None
    return given


def trained_options(op: str) -> dict:
    """The options the unit selector of ``op`` assumes: the op's defaults (``data`` aside, a
    feature of the model), e.g. ``{"kind": "add"}`` for elementwise."""
    return {k: v for k, v in registry.get(op).check_options(None).items() if k != "data"}


def kv(options: dict) -> str:
    """``{"kind": "relu"}`` -> ``" kind=relu"``."""
    return "".join(f" {k}={v}" for k, v in options.items())


def untrained(op: str, options: dict) -> str | None:
    """Why the unit selector cannot answer for ``options`` (some differ from ``trained_options``), or None."""
    assumed = trained_options(op)
    if all(v == assumed.get(k) for k, v in options.items()):
        return None
    return f"the unit selector is trained with the default options ({kv(assumed).strip()}), not{kv(options)}"


def check_units_run(hw, dtype: str, units) -> None:
    """An InputError when one of ``units`` cannot compute ``dtype`` on ``hw`` (a cube without a bf16
    rate): a pair with such a unit has no crossover to find."""
    for u in units:
        problem = hw.dtype_problem(u, dtype)
        if problem:
            raise InputError(f"--dtype {dtype}: {problem}, so {u} cannot run it and {' / '.join(units)} has no "
                             f"crossover (pick another pair with --small-unit / --large-unit)")
