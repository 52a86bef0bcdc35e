"""Before a tune writes anything: the hardware costs each study's kernel asks for.

A profile holds every vector op the kernels use (checked when it loads), but which of an op's
dtype signatures a kernel needs depends on the study: its dtype, unit and choices (weighted_sum's
fp32 accumulator needs VCONV fp16_fp32). A profile without one failed at trial 0, inside Optuna,
with its traceback and a journal holding one failed trial. Simulating each study's baseline, and
each one-choice change of it, once in count mode (well under a millisecond each) asks the profile
for those costs first, so the run is refused with the profile's file, line and column before any
output exists.
"""

from __future__ import annotations

from autotile.kernels import registry
from autotile.space.params import ChoiceParam


def variants(space, base: dict) -> list[dict]:
    """``base`` and each configuration that changes one of its choice params to another value
    its domain allows and the spec accepts."""
    out = [base]
    for p in space.params:
        if not isinstance(p, ChoiceParam) or p.name not in base:
            continue
        for v in space.domain(p.name, base):
            cand = {**base, p.name: v}
            if v != base[p.name] and space.check(cand) is None:
                out.append(cand)
    return out


def check_costs(plans) -> None:
    """Simulate every plan's baseline variants (simulator backend only); a cost the profile lacks
    raises its InputError here. Infeasible results are the search's business, not this check's."""
    for plan in plans:
        if plan.baseline is None or plan.space.spec.backend == "replay":
            continue
        sp = plan.space
        kernel = registry.implementation(sp.spec.op.name)
        for params in variants(sp, plan.baseline):
            kernel.simulate(sp.shape, params, sp.dtype, sp.spec.hardware, unit=sp.unit,
                            options=dict(sp.spec.inputs or {}))
