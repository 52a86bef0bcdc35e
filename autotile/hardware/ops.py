"""The operation names a profile may cost, and the ones the kernels need.

A profile is read strictly: a vector op or scalar cost outside these catalogues is a typo, and
one the kernels use must be there, so a profile that lacks it fails when it loads rather than
when a kernel first asks for it in the middle of a tune.
"""

from __future__ import annotations

# vector instruction -> dtypes in its cost signature (sources then result: vadd fp16_fp16_fp16)
VECTOR_OPS = {
    **dict.fromkeys(("vadd", "vsub", "vmul", "vdiv", "vmax", "vmin", "vand", "vor", "vadds", "vmuls",
                     "vmaxs", "vmins", "vshl", "vshr", "vlrelu", "vmla", "vaxpy", "vmadd", "vmaddrelu",
                     "vaddrelu", "vsubrelu", "vcmp", "vsel"), 3),
    **dict.fromkeys(("vexp", "vln", "vabs", "vrec", "vsqrt", "vrsqrt", "vnot", "vrelu", "vconv", "vcopy",
                     "vdup", "vbrcb", "vgather", "vreduce", "vcadd", "vcmax", "vcmin", "vcgadd", "vcgmax",
                     "vcgmin", "vcpadd", "vtranspose"), 2),
}
# a vector op's code in cost tables and traces (autotile.sim.costs.vector_table): its index here
VECTOR_OP_NAMES = tuple(VECTOR_OPS)
# what the kernels (autotile/kernels/*.py) ask ``vtable`` for; tests check they ask for no other
KERNEL_VECTOR_OPS = ("vadd", "vmul", "vmla", "vcadd", "vexp", "vconv", "vdup", "vaxpy", "vmuls", "vadds",
                     "vmaxs", "vmins", "vrec", "vrelu", "vgather", "vcopy")
SCALAR_OPS = ("add", "mul", "div", "exp", "ln", "cmp", "load", "store")
KERNEL_SCALAR_OPS = ("add", "mul", "div", "exp", "cmp", "load", "store")
# UB loads and stores: they issue beside ALU work (``kernels._common.scalar_per_elem``)
SCALAR_MEMORY_OPS = ("load", "store")
SIGNATURE_DTYPES = ("fp32", "fp16", "bf16", "int8", "uint8", "int16", "int32")


def signature_problem(op: str, sig: str) -> str | None:
    """Why ``sig`` is not a dtype signature of vector op ``op`` (None when it is one)."""
    parts = str(sig).split("_")
    bad = [p for p in parts if p not in SIGNATURE_DTYPES]
    if bad:
        return f"unknown dtype {bad[0]!r} in signature {sig!r} (dtypes: {', '.join(SIGNATURE_DTYPES)})"
    want = VECTOR_OPS[op]
    if len(parts) != want:
        return f"{op} takes a signature of {want} dtypes joined by _ (e.g. {'_'.join(['fp16'] * want)}), got {sig!r}"
    return None
