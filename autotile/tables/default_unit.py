"""The lookup's default step in a table of several units: whose default tiling it answers (in a
table of one unit, its default, simulated within the same budget for the cycles it answers).

Each unit's default heuristic tiling that is feasible for the shape is simulated (count mode,
one simulation per unit: milliseconds for a 1-D op of 1e8 elements) and the fewest cycles win,
so the answer is never slower than another unit's default and its cycles are those of the tiling
returned. The spec's unit order used to decide (the first feasible default won): a weighted_sum
table that picked the cube at n=4096 answered n=4097 with the vector default, 959 cycles, where
the cube default took 593 (601 while its GM loads were charged whole fractals).

A default simulated over one of the spec's ``limits`` is infeasible, as tune prunes it: it is
passed over (``how`` names it), and when every default simulated is, the lookup has no answer
(``OverLimits``). One not simulated is answered with ``how`` saying the limits were not checked.
An error limit (``max_abs_error``) is checked by executing the default, which costs far more than
its count mode (resize fp32 at 134M elements of inputs and output: 20 s and 3 GB, where count mode
took 1.8 s): only within ``EXECUTE_ELEMENTS``; past it, or where execute mode cannot run the shape,
the answer's ``how`` says the error limits were not checked. An error not measured is never "over".

When the defaults together would take longer to simulate than ``sim_budget.BUDGET_S`` (matmul
on the vector unit from ~4300^3), none is simulated: the unit of the table's nearest entry of the
dtype (what tuning picked at the closest tuned shape) is answered, else the spec's first unit with
a feasible default.

The unit selector ``autotile train`` builds is not asked. It exists for the 1-D ops, whose
defaults all simulate within the budget at any shape a spec allows (n <= 2**31 - 1: ~0.05 s per
unit estimated; weighted_sum's three took 19 ms of CPU together), and it predicts each unit's
cycles at that unit's *best* tiling, while this step answers the *default* tiling: the simulated
cycles of the tilings answered settle the choice exactly, and a prediction could only differ
from them by being wrong.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from autotile.models import sim_budget

# inputs and output (a kernel's ``io_elements``, else its shape's product) up to which a lookup
# executes a tiling for an error limit: execute mode took 50 to 150 ns an element (resize fp32,
# 134M: 20 s and 3 GB; 2.1M: 0.10 s; matmul fp32 m=65536 n=k=16, 2.1M: 0.12 s), so at most ~0.3 s
# here beside the count mode's budget
EXECUTE_ELEMENTS = 1 << 21


class OverLimits(Exception):
    """Every default the step could simulate breaks one of the spec's ``limits`` (``reasons``:
    ``(unit, why)`` each); tune prunes such a configuration as infeasible, so the lookup answers none."""

    def __init__(self, reasons: list[tuple[str, str]]):
        super().__init__("; ".join(f"{u}: {why}" for u, why in reasons))
        self.reasons = reasons


@dataclass(frozen=True)
class UnitChoice:
    """The unit the default step answers, its default tiling, and why."""

    unit: str
    params: dict
    cycles: float | None = None  # the tiling's, on the simulator (None: not simulated)
    how: str | None = None  # why this unit (None: the spec has only this one)


def choose(look, shape: dict, dtype: str, feasible: list[tuple[str, dict]], infeasible: list[str]) -> UnitChoice:
    """The unit of ``feasible`` ((unit, default params), in spec order) the default step of
    ``look`` (a ``Lookup``) answers; ``infeasible``: the spec's units without a feasible default."""
    spec = look.table.spec
    computing = spec.units_for(dtype)
    if len(computing) == 1:  # nothing to choose; its cycles still, as every answer gives them when known
        unit, params = feasible[0]
        est = sim_budget.estimate_seconds(look.table.op, shape, dtype, unit, params, spec.backend, spec.inputs or {})
        only = f"the default of {unit}, the only unit for {dtype}"  # said only beside a note on the limits
        if est > sim_budget.BUDGET_S:
            return UnitChoice(unit, params, how=_unchecked(spec, only) if spec.limits else None)
        got = scored(look, shape, dtype, unit, params)
        if got.over is not None:
            raise OverLimits([(unit, got.over)])
        return UnitChoice(unit, params, cycles=got.cycles, how=also(only, got.unchecked) if got.unchecked else None)
    units = "/".join(computing)
    none = ("" if not infeasible else f"; {infeasible[0]}'s default is infeasible here" if len(infeasible) == 1
            else f"; the defaults of {_names(infeasible)} are infeasible here")
    if len(feasible) == 1 and not spec.limits:  # nothing to choose or to check
        return UnitChoice(*feasible[0], how=f"the only feasible default of {units}{none}")
    est = sum(sim_budget.estimate_seconds(look.table.op, shape, dtype, u, p, spec.backend, spec.inputs or {})
              for u, p in feasible)
    if est <= sim_budget.BUDGET_S:
        ran = [(scored(look, shape, dtype, u, p), i) for i, (u, p) in enumerate(feasible)]
        sims = [(s.cycles, i) for s, i in ran if s.cycles is not None and s.over is None]
        broke = [(feasible[i][0], s.over) for s, i in ran if s.over is not None]
        if broke and not sims:
            raise OverLimits(broke)
        over = f"; over the spec's limits: {'; '.join(f'{u} {why}' for u, why in broke)}" if broke else ""
        if len(feasible) == 1 and sims:
            return UnitChoice(*feasible[0], cycles=sims[0][0],
                              how=also(f"the only feasible default of {units}{none}", ran[0][0].unchecked))
        if sims:
            c, i = min(sims)  # a tie goes to the spec's earlier unit
            each = ", ".join(f"{feasible[j][0]} {cj:,.0f}" for cj, j in sorted(sims))
            refused = [feasible[j][0] for s, j in ran if s.cycles is None]
            if refused:
                each += f"; the simulator refused {_names(refused)}"
            return UnitChoice(*feasible[i], cycles=c, how=also(f"the fastest default of {units} on the simulator "
                                                                f"(cycles: {each}){none}{over}", ran[i][0].unchecked))
        why = "none of them ran on the simulator"
    else:
        why = sim_budget.too_long(est, sim_budget.BUDGET_S, "them")
    if len(feasible) == 1:
        return UnitChoice(*feasible[0], how=_unchecked(spec, f"the only feasible default of {units}{none}"))
    return _unsimulated(look, shape, dtype, feasible,
                        _unchecked(spec, f"the defaults were not simulated ({why}){none}"))


def _unsimulated(look, shape, dtype, feasible, why: str) -> UnitChoice:
    """The defaults could not be simulated: the table's nearest entry, else the spec's order decides."""
    from autotile.tables.lookup import distance  # here: lookup imports this module

    by_unit = dict(feasible)
    key = tuple(shape.values())
    near = sorted((distance(key, tuple(e.shape.values())), i) for i, e in enumerate(look.table.entries)
                  if e.dtype == dtype and e.unit in by_unit)
    if near:
        e = look.table.entries[near[0][1]]
        at = ",".join(f"{k}={v}" for k, v in e.shape.items())
        return UnitChoice(e.unit, by_unit[e.unit], how=f"the unit the table chose at the nearest tuned shape, "
                                                       f"{at}; {why}")
    unit, params = feasible[0]
    return UnitChoice(unit, params, how=f"the spec's first unit with a feasible default; {why}")


@dataclass(frozen=True)
class Score:
    """A tiling simulated at the queried shape, held to the spec's ``limits`` as tune holds a trial."""

    cycles: float | None  # count mode's (None: the simulator refused it; nothing else is then known)
    over: str | None = None  # why it breaks a limit it was checked against (None: it keeps them)
    unchecked: str | None = None  # why its error limits were not checked (None: checked, or none)


def scored(look, shape, dtype, unit, params) -> Score:
    """``params`` simulated on ``unit`` (count mode) and checked against the spec's ``limits`` as
    tune checks a trial (``over_limit``), so a tiling over a cap, which tune prunes as infeasible,
    is never answered as feasible. An error limit needs execute mode (``Evaluator.errors``); it
    runs only within ``EXECUTE_ELEMENTS``, else the error limits are ``unchecked``, not over."""
    from autotile.tune.evaluate import ERROR_OBJECTIVES, Evaluator, over_limit

    spec = look.table.spec
    res = look.kernel.simulate(dict(shape), dict(params), dtype, spec.hardware, unit=unit,
                               options=dict(spec.inputs or {}))
    if not res.feasible:
        return Score(None)
    values = {"cycles": float(res.cycles), "time_us": float(res.time_us)}
    caps = dict(spec.limits)
    errors = [m for m in caps if m in ERROR_OBJECTIVES]
    unchecked = None
    if errors:
        why = too_dear_to_execute(look.kernel, shape, params)
        got = why or Evaluator(spec.space(shape, dtype, unit), kernel=look.kernel).errors(dict(params))
        if isinstance(got, str):  # unknown, so neither kept nor broken
            unchecked = f"the spec's error limits ({', '.join(errors)}) not checked: {got}"
            caps = {m: c for m, c in caps.items() if m not in ERROR_OBJECTIVES}
        else:
            values.update(got)
    return Score(float(res.cycles), over_limit(values, caps), unchecked)


def too_dear_to_execute(kernel, shape: dict, params: dict) -> str | None:
    """Why a lookup does not execute ``params`` at ``shape`` for its errors (the inputs and output
    of the shape execute mode runs exceed ``EXECUTE_ELEMENTS``), or None."""
    from autotile.tune.verify import execute_shape

    run_shape, _ = execute_shape(kernel, shape, params)
    size = getattr(kernel, "io_elements", None)
    n = size(run_shape) if size is not None else math.prod(int(v) for v in run_shape.values())
    if n > EXECUTE_ELEMENTS:
        return (f"executing it would take inputs and output of {n:,} elements, more than the "
                f"{EXECUTE_ELEMENTS:,} a lookup executes within its budget")
    return None


def also(how: str | None, note: str | None) -> str | None:
    """``how`` and ``note``, either of which may be None."""
    return f"{how}; {note}" if how and note else how or note


def _unchecked(spec, how: str | None) -> str | None:
    """``how``, and that the spec's limits were not checked (the default was not simulated)."""
    if not spec.limits:
        return how
    return also(how, f"the spec's limits ({', '.join(m for m, _ in spec.limits)}) not checked: not simulated")


def _names(units: list[str]) -> str:
    return units[0] if len(units) == 1 else ", ".join(units[:-1]) + f" and {units[-1]}"
