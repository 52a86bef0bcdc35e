"""A feasible tiling near the kernel's heuristic one, when moving that tiling onto a spec's
domains breaks a constraint.

``Space.project`` moves each param to its nearest allowed value and looks at no constraint: a
value raised to a spec's low can overflow the buffer the heuristic's own value fit (NHWC resize,
c=512 fp32: tile_w 8 raised to 16 needed 284,416 B of a 192 KiB UB), and tune then had no
baseline, simulate and lookup no default. This walks the spec's domains from the projected
tiling, one allowed value up or down on one param at a time, nearest the heuristic first.
"""

from __future__ import annotations

import heapq
import itertools
import math

from autotile.space.expr import EvalError

MAX_CHECKS = 200  # configurations checked before giving up (the projection is then kept)


def nearest_feasible(space, start: dict, target: dict, max_checks: int = MAX_CHECKS) -> dict | None:
    """The first feasible configuration found best-first from ``start`` (a projected, in-domain
    configuration of ``space``) by nearness to ``target`` (the heuristic's values: the sum over
    params of |log ratio| of numbers, 1 per other difference; ties to the smaller values of the
    earlier params, so tiles shrink before buffers or cores change), or None if none of the
    first ``max_checks`` configurations is feasible."""
    order = itertools.count()
    heap = [(_key(space, start, target), next(order), start)]
    seen = {_frozen(start)}
    for _ in range(max_checks):
        if not heap:
            break
        _, _, p = heapq.heappop(heap)
        if space.check(p) is None:
            return p
        for q in _steps(space, p):
            k = _frozen(q)
            if k not in seen:
                seen.add(k)
                heapq.heappush(heap, (_key(space, q, target), next(order), q))
    return None


def _steps(space, p: dict):
    """``p`` with one param moved to the allowed value next to its own (below, then above) and
    the later params moved back onto the domains that move may have changed."""
    env = {**space.base_env(), **p}
    for param in space.params:
        try:
            dom = param.domain(env)
        except EvalError:
            continue
        i = _index(dom, p[param.name])
        if i is None:
            continue
        for j in (i - 1, i + 1):
            if 0 <= j < len(dom):
                yield space.project({**p, param.name: dom[j]})


def _index(dom, value) -> int | None:
    """Where ``value`` sits in ``dom`` (a range or a list), or None."""
    if isinstance(dom, range):
        return dom.index(value) if _number(value) and value in dom else None
    for i, v in enumerate(dom):
        if v == value and isinstance(v, str) == isinstance(value, str):
            return i
    return None


def _key(space, p: dict, target: dict) -> tuple:
    far = 0.0
    for name in space.names:
        v, t = p.get(name), target.get(name, p.get(name))
        if _number(v) and _number(t) and v > 0 and t > 0:
            far += abs(math.log(v / t))
        elif v != t:
            far += 1.0
    return round(far, 9), tuple(_sortable(p.get(n)) for n in space.names)


def _sortable(v) -> tuple:
    return (0, v, "") if _number(v) else (1, 0, str(v))


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _frozen(p: dict) -> tuple:
    return tuple(sorted((k, type(v).__name__, v) for k, v in p.items()))
