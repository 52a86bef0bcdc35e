"""The op's options a table was tuned for (the spec's ``inputs:``), as the exported headers state them.

They change which tilings fit and how fast they run: elementwise's UB rule charges
``(inputs_n + 1)`` tiles, so a ``tile_len`` tuned for ``kind: relu`` (one input) can overflow UB in
an ``add`` kernel; resize's mode and layout, roi_align's sampling_ratio and the ``data`` of the 1-D
ops change the work. A kernel checks the header's macros against the variant it was built as.
"""

from __future__ import annotations

import json

from autotile.space.options import kernel_options


def tuned_inputs(spec) -> list[tuple[str, object, object]]:
    """(name, value, ``registry.Option`` or None) of each option: on the simulator every option
    of the op in its declared order, defaults filled in, each value in the one spelling the study's
    identity records (roi_align's ``sampling_ratio`` 0 is -1: two tables of one variant must not
    disagree in a translation unit); with replay the spec's free record of them (not checked), keys
    sorted, without an Option."""
    if spec.backend == "simulator":
        values = kernel_options(spec.op, spec.inputs)
        return [(o.name, values[o.name], o) for o in spec.op.options]
    return [(str(k), spec.inputs[k], None) for k in sorted(spec.inputs, key=str)]


def shown(value, option=None) -> str:
    """One value as the ``INPUTS`` string has it: true / false, text as itself, a number option as a
    float (``1`` and ``1.0`` alike), anything else (a replay record's lists, maps) as compact JSON."""
    if option is not None and option.kind == "number":
        return repr(float(value))
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value) if not isinstance(value, float) else repr(value)
    return json.dumps(_plain(value), sort_keys=True, separators=(",", ":"), default=str)


def _plain(value):
    """``value`` with every map's keys as text (a YAML map may mix 1 and "a": JSON cannot sort them)."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def rendering(spec) -> str:
    """The canonical text of the options: ``kind=relu, data=gm`` ("" for an op without any)."""
    return ", ".join(f"{name}={shown(v, o)}" for name, v, o in tuned_inputs(spec))


def c_value(value, option) -> str:
    """A bool, int or number option's value as a C constant: 0 / 1, an integer, a double
    (parenthesized when negative, so the macro is one operand wherever it is used)."""
    if option.kind == "bool":
        return str(int(bool(value)))
    text = str(int(value)) if option.kind == "int" else repr(float(value))
    return f"({text})" if text.startswith("-") else text
