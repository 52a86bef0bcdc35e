"""An op's options as its kernel takes them: the spec's ``inputs:`` with the defaults filled in
and the spellings the kernel treats alike made one.

Two specs that differ only there (``inputs: {}`` against the defaults written out, or roi_align's
adaptive ``sampling_ratio`` written -1 or 0) simulate every trial alike; the space's
``inputs.<option>`` fields read this form, and a study records it (``autotile.tune.identity``),
so such specs resume each other's studies.
"""

from __future__ import annotations

from autotile.kernels.registry import OpInfo

# (op, option) -> {spelling: the one it stands for}; kernels/roi_align reads sampling_ratio only
# as ``> 0`` (fixed grid) or not (adaptive), so 0 is -1, torchvision's default
SAME: dict[tuple[str, str], dict] = {("roi_align", "sampling_ratio"): {0: -1}}


def kernel_options(op: OpInfo, inputs: dict | None) -> dict:
    """``inputs`` checked (OptionError) and completed with ``op``'s defaults, each value in its one
    spelling."""
    out = op.check_options(inputs)
    for name, value in out.items():
        alias = SAME.get((op.name, name), {})
        if type(value) is int and value in alias:  # never True for 1
            out[name] = alias[value]
    return out
