"""Define-by-run suggestion of a configuration from a Space, in declaration order.

Each parameter's domain may depend on the shape, the hardware and the parameters above it, so
it is evaluated with the values chosen so far. Integers are suggested as ordered integers (with
their step), powers of two through their exponent, so samplers see order where there is order;
only unordered choices are categorical.
"""

from __future__ import annotations

import math

from autotile.space.space import Space


def suggest(trial, space: Space) -> tuple[dict, str | None]:
    """Suggest every parameter of ``space`` on ``trial``.

    Returns (params, None), or (partial params, reason) when a domain turns out empty: the
    configuration is then infeasible and the caller reports it as such.
    """
    env: dict = {}
    for p in space.params:
        dom = space.domain(p.name, env)
        if len(dom) == 0:
            return env, f"{p.name}: no allowed value given {_given(env)}"
        env[p.name] = _suggest_one(trial, p, dom)
    return env, None


def _suggest_one(trial, p, dom):
    kind = p.kind
    if kind == "fixed" or len(dom) == 1:
        return dom[0]
    if kind == "int":
        if getattr(p, "pow2", False):
            e0 = int(math.log2(dom[0]))
            e = trial.suggest_int(f"{p.name}.log2", e0, e0 + len(dom) - 1)
            return dom[e - e0]
        if isinstance(dom, range):
            return trial.suggest_int(p.name, dom.start, dom[-1], step=dom.step)
        # a filtered (``where``) list of integers: ordered, snapped to the nearest allowed value
        v = trial.suggest_int(p.name, dom[0], dom[-1])
        return min(dom, key=lambda d: (abs(d - v), d))
    return trial.suggest_categorical(p.name, list(dom))


def _given(env: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in env.items()) or "the shape"
