"""What a study's trial values depend on, recorded on the study so a rerun never mixes specs.

A study's name says what it tunes (op/hw/dtype/shape/unit). Its identity adds everything
else a trial's values depend on: the space of its unit (param domains, derived values,
constraints), the objectives and limits, ``inputs`` (as the kernel takes them, defaults filled
in and one spelling each: ``inputs: {}`` and the defaults written out are one spec), the backend
(with the measurements file's content for replay; else the simulator's version and sources,
``sim.fingerprint``) and the hardware profile's content. It is stored as a study user
attribute when the study is created; a rerun whose identity differs is refused (or, with
``--restart``, the old study is deleted). Budget, sampler and seed are not part of it: they
decide how long and how the search runs, not what a trial measures, so changing them resumes.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import optuna

from autotile.space.params import plain

IDENTITY_ATTR = "autotile.identity"
HASH_ATTR = "autotile.identity_hash"


def identity(space, objectives) -> dict:
    """The normalized description of what ``space``'s trial values depend on."""
    spec = space.spec
    params = {}
    for p in space.params:
        d = p.to_dict()
        d.pop("description", None)
        params[p.name] = d
    out = {
        "op": spec.op.name, "dtype": space.dtype, "unit": space.unit, "shape": dict(space.shape),
        "hardware profile": spec.hardware.content_hash(), "backend": spec.backend,
        "params": params,
        "derived": {d.name: plain(d.expr) for d in space.derived},
        "constraints": sorted(str(plain(c.expr)) for c in space.constraints),
        "objectives": list(objectives), "limits": dict(spec.limits),
        "inputs": _inputs(spec.op.name, spec.backend, spec.inputs),
    }
    if spec.backend != "replay":  # cycles from another cost model are not comparable
        from autotile.sim.fingerprint import simulator_fingerprint

        out["simulator"] = simulator_fingerprint()
    if spec.measurements is not None:
        out["measurements"] = hashlib.sha256(Path(spec.measurements).read_bytes()).hexdigest()[:16]
    return json.loads(json.dumps(out, sort_keys=True, default=str))  # as the storage gives it back


def _inputs(op: str, backend: str, inputs: dict | None) -> dict:
    """The options a simulator trial runs with (``options.kernel_options``); with replay, where
    ``inputs:`` is a free record, as written."""
    from autotile.kernels import registry
    from autotile.space.options import kernel_options

    if backend != "simulator":
        return dict(inputs or {})
    try:
        return kernel_options(registry.get(op), inputs)
    except (KeyError, registry.OptionError):  # an op or options this autotile does not know: as written
        return dict(inputs or {})


def _current(ident: dict) -> dict:
    """A stored identity as this autotile records it: one from before ``inputs`` held the
    options as the kernel takes them had them as the spec wrote them."""
    if not isinstance(ident.get("inputs"), dict) or "op" not in ident or "backend" not in ident:
        return ident
    inputs = _inputs(ident["op"], ident["backend"], ident["inputs"])
    return {**ident, "inputs": json.loads(json.dumps(inputs, sort_keys=True, default=str))}


def digest(ident: dict) -> str:
    """sha256 (16 hex digits) of an identity."""
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def stamp(study: optuna.Study, ident: dict) -> None:
    """Record ``ident`` on the study."""
    study.set_user_attr(IDENTITY_ATTR, ident)
    study.set_user_attr(HASH_ATTR, digest(ident))


def changes(old: dict, new: dict) -> list[str]:
    """What differs, e.g. ``["params.tile_len", "inputs"]`` (params listed one by one)."""
    out = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if key == "params" and isinstance(a, dict) and isinstance(b, dict):
            out += [f"params.{n}" for n in sorted(set(a) | set(b)) if a.get(n) != b.get(n)]
        else:
            out.append("the simulator (autotile's kernels or cost model)" if key == "simulator" else key)
    return out


def mismatch(stored: dict, ident: dict) -> str | None:
    """Why a study whose user attributes are ``stored`` cannot continue under ``ident`` (None: it can)."""
    old = stored.get(IDENTITY_ATTR)
    if old is None:
        return "tuned by an autotile that did not record its spec"
    if old == ident:
        return None
    if isinstance(old, dict):
        old = _current(old)
        if old == ident:
            return None
    return ", ".join(changes(old, ident)) + " changed"


def recorded_digest(stored: dict) -> str | None:
    """The digest of the identity a study's user attributes ``stored`` hold, as this autotile
    records it (``_current``), or None when it holds none. A summary records its studies'
    digests, so a report can tell a study another spec tuned since under the same name."""
    old = stored.get(IDENTITY_ATTR)
    return digest(_current(old) if isinstance(old, dict) else old) if old is not None else None


def reconcile(plans, storage, where: str, elsewhere: str, *, restart: bool, adopt_unrecorded: bool) -> list[str]:
    """Refuse (InputError) if a planned study in ``storage`` holds trials of another spec; with
    ``restart``, delete such studies instead and return their names. ``where`` names the storage
    in the message and ``elsewhere`` says where a fresh run would go.

    A study without a recorded identity (made before autotile recorded one) is taken as is when
    ``adopt_unrecorded`` (the output folder's summary has this very spec's hash).
    """
    from autotile.errors import InputError

    stored = {s.study_name: s for s in optuna.get_all_study_summaries(storage, include_best_trial=False)}
    bad = []
    for plan in plans:
        s = stored.get(plan.name)
        if s is None or plan.identity is None:
            continue
        if IDENTITY_ATTR not in s.user_attrs and (s.n_trials == 0 or adopt_unrecorded):
            continue  # just created by a peer, about to be stamped; or from before identities, same spec
        why = mismatch(s.user_attrs, plan.identity)
        if why is not None:
            bad.append((plan.name, why))
    if not bad:
        return []
    if restart:
        for name, _ in bad:
            optuna.delete_study(study_name=name, storage=storage)
        return [name for name, _ in bad]
    name, why = bad[0]
    more = f" and {len(bad) - 1} more" if len(bad) > 1 else ""
    raise InputError(f"{where} holds trials of a different spec for {name} ({why}){more}; tune into "
                     f"{elsewhere}, or add --restart to delete those studies and tune them afresh")
