"""Before a tune writes anything: the hardware costs each study's kernel asks for.

A profile holds every vector op the kernels use (checked when it loads), but which of an op's
dtype signatures a kernel needs depends on the study: its dtype, unit and choices (weighted_sum's
fp32 accumulator needs VCONV fp16_fp32; a VMLA into an fp16 accumulator, VMLA fp16_fp16_fp16). A
profile without one failed at trial 0, or whenever a trial first needed it, inside Optuna, with its
traceback and a journal holding one failed trial. Simulating each study's baseline with every
combination of its choice params the spec accepts, once each in count mode (well under a
millisecond; a few dozen combinations at most in the bundled specs), asks the profile for those
costs first, so the run is refused with the profile's file, line and column before any output
exists. Signatures that depend on integer params alone, or a study whose default is infeasible
in its space, are still met at the trial that needs them.
"""

from __future__ import annotations

from autotile.kernels import registry
from autotile.space.params import ChoiceParam

MAX_VARIANTS = 512  # combinations simulated per study at most (the bundled specs have <= 8)


def variants(space, base: dict) -> list[dict]:
    """``base`` with every combination of values of its choice params (in spec order, each from
    its domain given the ones before) that the spec accepts; ``base`` first. One-choice changes
    missed what only two choices together need (reduction vmla with acc_dtype fp16)."""
    combos = [dict(base)]
    for p in space.params:
        if not isinstance(p, ChoiceParam) or p.name not in base:
            continue
        combos = [{**c, p.name: v} for c in combos for v in space.domain(p.name, c)][:MAX_VARIANTS]
    out = [base]
    out += [c for c in combos if c != base and space.check(c) is None]
    return out


def check_costs(plans) -> None:
    """Simulate every plan's baseline variants (a replayed spec's plans have no baseline); a cost
    the profile lacks raises its InputError here. Infeasible results are the search's business."""
    for plan in plans:
        if plan.baseline is None:
            continue
        sp = plan.space
        kernel = registry.implementation(sp.spec.op.name)
        for params in variants(sp, plan.baseline):
            kernel.simulate(sp.shape, params, sp.dtype, sp.spec.hardware, unit=sp.unit,
                            options=dict(sp.spec.inputs or {}))


PLACEHOLDER = (0.0, 1.0, 1.0)  # startup, per_repeat, min_cycles: lets a probe run past a missing cost


def missing_vector_costs(hw, dtype: str) -> dict:
    """(op, signature) -> the bundled studies that ask for it: the vector costs ``hw`` lacks that
    the kernels of the bundled studies ask for in ``dtype`` (each study at its smallest shape, on
    each of its units that compute ``dtype``, with every choice combination, as ``check_costs``
    runs them; a study that does not list ``dtype`` is probed in it when its op has it). A kernel
    stops at the first cost it lacks, so each one found is filled with a placeholder and the
    simulation repeated, to list them all. ``calibrate`` warns with these when a fit changes the
    dtype a Vector computes ``dtype`` in (a VADD cost in it makes its arithmetic native)."""
    import math
    from dataclasses import replace

    from autotile.errors import InfeasibleConfig, InputError
    from autotile.hardware import VectorCost
    from autotile.kernels._common import MissingCost
    from autotile.space.loader import load_spec
    from autotile.space.studies import bundled_studies

    out: dict = {}
    work = hw
    for name in bundled_studies():
        spec = load_spec(name)
        if spec.backend != "simulator" or not spec.op.module or dtype not in spec.op.dtypes:
            continue
        spec = replace(spec, hardware=hw, dtypes=(dtype,))
        shape = min(spec.shapes, key=lambda s: math.prod(s.values()))
        kernel = registry.implementation(spec.op.name)
        for unit in spec.units_for(dtype):
            try:
                space = spec.space(shape, dtype, unit)
            except InputError:
                continue
            base = space.default_tiling()
            if space.check(base) is not None:
                continue
            for params in variants(space, base):
                while True:
                    try:
                        kernel.simulate(space.shape, params, dtype, work, unit=unit, options=dict(spec.inputs or {}))
                    except MissingCost as exc:
                        out.setdefault((exc.op, exc.sig), []).append(name)
                        table = {**work.vector.get(exc.op, {}), exc.sig: VectorCost(*PLACEHOLDER)}
                        work = replace(work, vector={**work.vector, exc.op: table})
                        continue
                    except (InputError, InfeasibleConfig):
                        pass
                    break
    return {k: sorted(set(v)) for k, v in out.items()}
