"""A replay spec from a Kernel Tuner cache (``autotile import-kt``).

Each tunable parameter becomes, from its value list in ``tune_params``:

- ``fixed`` for one value; ``bool`` for exactly false and true;
- an ordered ``int`` for integers: ``pow2`` when they are the consecutive powers of two of a
  range (16, 32, 64, 128), ``low``/``high``/``step`` for an arithmetic progression (32, 64, 96);
- ``categorical`` otherwise (floats, text, irregular integers), in the cache's order.

The spec uses the generic op ``replay`` with the cache's ``problem_size`` as its shape (dims
``x``, ``y``, ``z`` as Kernel Tuner names them; ``problem: 1`` when it is not positive
integers), the objective ``time_us`` and ``backend: replay`` with the cache as measurements
(a path relative to the spec). Configurations the cache lacks (Kernel Tuner restrictions)
are simply infeasible when tuning. The spec is loaded in memory before it is written: a cache
whose names or values a spec cannot hold (``block size x``, ``shape``, 2**70) is an error naming
the cache and the parameter, and nothing is written.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from autotile.atomic import refuse_input, write_text
from autotile.errors import InputError
from autotile.tune import ktcache
from autotile.tune.measurements import norm
from autotile.yamlsrc import SafeDumper

DIMS = ("x", "y", "z")
MAX_BUDGET = 100


def param_def(values: list) -> dict:
    """The spec definition of a parameter with these values.

    >>> param_def([16, 32, 64, 128])
    {'type': 'int', 'low': 16, 'high': 128, 'pow2': True}
    >>> param_def([32, 64, 96])
    {'type': 'int', 'low': 32, 'high': 96, 'step': 32}
    >>> param_def([1, 3, 4])
    {'type': 'categorical', 'choices': [1, 3, 4]}
    """
    vals = list(dict.fromkeys(norm(v) for v in values))
    if len(vals) == 1:
        return {"type": "fixed", "value": vals[0]}
    if all(isinstance(v, bool) for v in vals) and set(vals) == {False, True}:
        return {"type": "bool"}
    ints = all(isinstance(v, int) and not isinstance(v, bool) for v in vals)
    if ints:
        s = sorted(vals)
        if s[0] > 0 and all(v & (v - 1) == 0 for v in s) and all(b == 2 * a for a, b in zip(s, s[1:])):
            return {"type": "int", "low": s[0], "high": s[-1], "pow2": True}
        step = s[1] - s[0]
        if all(b - a == step for a, b in zip(s, s[1:])):
            out = {"type": "int", "low": s[0], "high": s[-1]}
            if step != 1:
                out["step"] = step
            return out
        return {"type": "categorical", "choices": s}
    if any(isinstance(v, str) for v in vals) and not all(isinstance(v, str) for v in vals):
        vals = [v if isinstance(v, str) else str(v).lower() if isinstance(v, bool) else str(v)
                for v in vals]  # mixed text and numbers: all text, as the replay matching reads them
    return {"type": "categorical", "choices": vals}


def shape_of(problem_size) -> dict:
    """The spec shape of a Kernel Tuner ``problem_size`` (int or up to three ints)."""
    sizes = problem_size if isinstance(problem_size, list) else [problem_size]
    if 1 <= len(sizes) <= len(DIMS) and all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                            for v in sizes):
        return dict(zip(DIMS, sizes))
    return {"problem": 1}


def replay_spec(values: dict, measurements: str, *, shape: dict, valid: int, description: str) -> dict:
    """A replay spec mapping: params from value lists, ``valid`` measured configurations."""
    return {
        "description": description,
        "op": "replay",
        "shapes": [shape],
        "params": {k: param_def(v) for k, v in values.items()},
        "objective": "time_us",
        "backend": "replay",
        "measurements": measurements,
        "budget": {"trials": max(1, min(MAX_BUDGET, valid // 4))},
        "sampler": "portfolio",
        "seed": 0,
    }


def spec_dict(doc: dict, measurements: str, *, name: str = "") -> dict:
    """The spec (as a mapping) of a cache document whose file is at ``measurements``."""
    entries = ktcache.entries(doc, name)
    valid = sum(1 for e in entries if e.time_ms is not None)
    desc = (f"Kernel Tuner cache of {_label(doc.get('kernel_name')) or 'a kernel'} on "
            f"{_label(doc.get('device_name')) or 'an unnamed device'}, problem size "
            f"{_label(doc.get('problem_size'), 200) or None}: "
            f"{len(entries)} configurations, {len(entries) - valid} failed")
    values = {k: doc["tune_params"][k] for k in doc["tune_params_keys"]}
    return replay_spec(values, measurements, shape=shape_of(doc.get("problem_size")), valid=valid,
                       description=desc)


def _label(value, limit: int = 100) -> str:
    """A cache's name field as description text, cut short (a cache's fields are not checked)."""
    if value is None:
        return ""
    try:
        text = value if isinstance(value, str) else str(value)
    except (RecursionError, ValueError):
        text = "?"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def import_cache(cache: str | Path, out: str | Path) -> dict:
    """Write the replay spec of Kernel Tuner cache ``cache`` to ``out`` (atomically); returns it.

    >>> import_cache("gemm_A100.json", "gemm.yaml")["backend"]  # doctest: +SKIP
    'replay'
    """
    cache, out = Path(cache), Path(out)
    refuse_overwrite(cache, out)
    doc = ktcache.read_cache(cache)
    rel = os.path.relpath(cache.resolve(), out.resolve().parent)
    spec = spec_dict(doc, rel, name=str(cache))
    # checked with the cache's absolute path: the output's folder may not exist yet
    check_loads(dump({**spec, "measurements": str(cache.resolve())}), out, cache, list(spec["params"]))
    write_text(out, dump(spec))
    return spec


def check_loads(text: str, out: Path, cache: Path, names: list) -> None:
    """Load the spec text in memory; a failure is an error about the cache (and its parameter),
    raised before anything is written.

    Names are not renamed: a replay spec matches the cache's entries by parameter name, so a
    renamed parameter would no longer find its measurements.
    """
    from autotile.space import load_spec_text

    try:
        load_spec_text(text, str(out))
    except InputError as exc:
        field = exc.field or ""
        name = next((n for n in names if field == f"params.{n}" or field.startswith(f"params.{n}.")), None)
        if name is None:
            raise InputError(f"cannot make a loadable spec: {exc}", file=str(cache)) from None
        hint = (" (rename it in the cache: a replay spec keeps the cache's names)"
                if field == f"params.{name}" else "")
        raise InputError(f"cannot import parameter {name!r}: {exc.message}{hint}", file=str(cache),
                         field=f"tune_params.{name}") from None


def refuse_overwrite(cache: Path, out: Path) -> None:
    """Refuse an output that is the cache itself (same path, symlink or hard link): writing the
    spec there would destroy the measurements it points at."""
    try:
        refuse_input("-o", out, {"the Kernel Tuner cache being imported": cache},
                     "expected another file (writing the spec there would destroy the measurements)")
    except InputError as exc:
        raise exc.located(file=str(cache)) from None


def write_spec(spec: dict, out: str | Path) -> Path:
    """Write a spec mapping as YAML, atomically."""
    return write_text(out, dump(spec))


def dump(spec: dict) -> str:
    """YAML text of a spec mapping: keys in order, one line per parameter."""
    head = {k: v for k, v in spec.items() if k not in ("params", "shapes", "budget")}
    lines = [yaml.dump({"description": head.pop("description")}, width=10_000, sort_keys=False, Dumper=SafeDumper).rstrip()]
    lines.append(f"op: {head.pop('op')}")
    lines.append("shapes: " + _flow(spec["shapes"]))
    lines.append("params:")
    for name, d in spec["params"].items():
        lines.append(f"  {_flow(name)}: {_flow(d)}")
    lines.append("budget: " + _flow(spec["budget"]))
    lines.extend(yaml.dump(head, sort_keys=False, width=10_000, Dumper=SafeDumper).rstrip().splitlines())
    return "\n".join(lines) + "\n"


def _flow(value) -> str:
    return yaml.dump(value, default_flow_style=True, width=10_000, sort_keys=False, Dumper=SafeDumper).strip().removesuffix("\n...")
