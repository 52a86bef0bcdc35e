"""On-chip bytes one micro-operation occupies, held against the profile's buffer sizes.

An Mmad reads L0A and L0B and accumulates in L0C, a copy reads and writes the buffers its path
names, and a vector instruction's tensors live in UB. An operation whose operands cannot fit
there cannot run, so timing it would report a figure no kernel reaches (an fp16 Mmad of
4096 x 4096 x 4096 "at 100% of cube peak" with 32 MiB operands against a 64 KiB L0A). The
sizes here are lower bounds: padded as the hardware pads them (whole fractals, each buffer's
granule), counting only the tensors an operation certainly holds.

>>> from autotile.hardware import load_profile
>>> hw = load_profile("ascend910b2")
>>> overflow(mmad_uses(32, 16, 1024, "fp16", hw), hw) is None  # C fills its 128 KiB L0C exactly
True
>>> print(overflow(copy_uses("gm_ub", 262144, hw), hw))
its destination needs 262144 bytes of UB: expected at most ub_bytes = 196608 in ascend910b2
"""

from __future__ import annotations

from dataclasses import dataclass

from autotile.dtypes import DTYPES
from autotile.hardware import HardwareProfile

# bytes of each dtype a vector signature may name
DTYPE_BYTES = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1, "uint8": 1, "int16": 2, "int32": 4}
# vector ops whose last source is a scalar register, not a UB tensor (vaxpy: dst += src * s)
SCALAR_SOURCE = frozenset(("vadds", "vmuls", "vmaxs", "vmins", "vshl", "vshr", "vlrelu", "vaxpy", "vdup"))
# reductions: result elements per repeat (every other op writes one per source element)
RESULTS_PER_REPEAT = {"vcadd": 1, "vcmax": 1, "vcmin": 1, "vreduce": 1, "vcgadd": 8, "vcgmax": 8, "vcgmin": 8}


@dataclass(frozen=True)
class Use:
    """``nbytes`` of buffer ``buffer`` (l1, l0a, l0b, l0c, ub) held by ``what``."""

    what: str
    buffer: str
    nbytes: int


def _up(a: int, b: int) -> int:
    return -(-a // b) * b


def _use(hw: HardwareProfile, what: str, buffer: str, nbytes: int) -> Use:
    return Use(what, buffer, _up(nbytes, hw.align[buffer]))


def mmad_uses(m: int, k: int, n: int, dtype: str, hw: HardwareProfile) -> tuple[Use, ...]:
    """A (m x k) in L0A, B (k x n) in L0B, C (m x n accumulators) in L0C, in whole 16 x C0 fractals."""
    dt = DTYPES[dtype]
    mp, kp, np_ = _up(m, 16), _up(k, dt.c0), _up(n, 16)
    return (_use(hw, f"A ({m} x {k} {dtype})", "l0a", mp * kp * dt.bytes),
            _use(hw, f"B ({k} x {n} {dtype})", "l0b", kp * np_ * dt.bytes),
            _use(hw, f"C ({m} x {n} {dt.acc})", "l0c", mp * np_ * dt.acc_bytes))


def copy_uses(path: str, nbytes: int, hw: HardwareProfile) -> tuple[Use, ...]:
    """The on-chip ends of a copy along ``path`` (``src_dst``; GM is off chip)."""
    src, dst = path.split("_")
    return tuple(_use(hw, f"its {end}", buf, nbytes)
                 for end, buf in (("source", src), ("destination", dst)) if buf != "gm")


def vector_uses(op: str, signature: str, elems: int, repeat: int, hw: HardwareProfile) -> tuple[Use, ...]:
    """The UB tensors of one vector op over ``elems`` elements in ``repeat`` repeats.

    ``signature`` is sources then result (vadd fp16_fp16_fp16). A scalar source holds no UB; a
    reduction writes a few results per repeat, vcmp one bit per element, vcpadd one per pair,
    vbrcb reads one element per 32 B block; vgather's addressed source is not counted."""
    *srcs, dst = signature.split("_")
    if op in SCALAR_SOURCE:
        srcs = srcs[:-1]
    src_elems = [elems] * len(srcs)
    if op == "vbrcb":
        src_elems = [repeat * 8]
    elif op == "vgather":
        src_elems = []
    dst_elems = elems
    if op in RESULTS_PER_REPEAT:
        dst_elems = repeat * RESULTS_PER_REPEAT[op]
    elif op == "vcpadd":
        dst_elems = -(-elems // 2)
    uses = [_use(hw, f"src{i} ({e} {d})", "ub", e * DTYPE_BYTES[d]) for i, (e, d) in enumerate(zip(src_elems, srcs))]
    dst_bytes = -(-dst_elems // 8) if op == "vcmp" else dst_elems * DTYPE_BYTES[dst]
    what = f"dst ({dst_elems} bits)" if op == "vcmp" else f"dst ({dst_elems} {dst})"
    return (*uses, _use(hw, what, "ub", dst_bytes))


def overflow(uses: tuple[Use, ...], hw: HardwareProfile) -> str | None:
    """Why ``uses`` do not fit ``hw``'s buffers (each buffer's over-full sum), or None when they fit."""
    problems = []
    for buf in dict.fromkeys(u.buffer for u in uses):
        mine = [u for u in uses if u.buffer == buf]
        used, cap = sum(u.nbytes for u in mine), getattr(hw, f"{buf}_bytes")
        if used > cap:
            verb = "needs" if len(mine) == 1 else "need"
            problems.append(f"{' + '.join(u.what for u in mine)} {verb} {used} bytes of {buf.upper()}: "
                            f"expected at most {buf}_bytes = {cap} in {hw.reference}")
    return "; ".join(problems) or None
