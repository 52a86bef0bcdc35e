"""roi_align's sizing limits, free of Numba: the kernel's checks and the spec loader share them.

The kernel keeps every sampling point of a bin in UB (its 2 x 2 neighbourhood), so a large fixed
``sampling_ratio`` outgrows UB whatever the tiling: on the 910B2 (192 KiB) from 56 up even one
ROI, bin and channel single buffered overflows, and every configuration of such a spec was
infeasible. The loader refuses that ratio where it stands (``sampling_ratio_fits``).

Count mode simulates every seeded ROI, so it holds them all: ``make_rois`` peaks at 96 bytes a ROI
(the [rois, 5] float64 boxes and the generator's columns, measured with tracemalloc). A shape
needing more than ``MAX_ROI_BYTES`` is refused before any is made (2**31-1 ROIs asked 206 GB and
ended in a MemoryError traceback), as verification refuses execute runs past ~1 GiB; the loader
refuses such a shape in a spec where it stands (``shape_problem``).
"""

from __future__ import annotations

from autotile.dtypes import get as get_dtype

ACC = "fp32"  # the bins' sums, whatever the dtype
ROI_BYTES = 96
MAX_ROI_BYTES = 1 << 30
# the largest sampling grid a bin of a given ROI may have (adaptive sampling): the largest
# sampling_ratio the options take (registry), squared; no bundled profile's UB holds it (the
# smallest tiling needs 262,176 bytes, the 910's UB 262,144). A box of 1e30 wrapped the kernel's
# int grid to -2**63 and set the reference looping over 2.5e29 points.
MAX_SIDE = 64
MAX_GRID = MAX_SIDE * MAX_SIDE


def rois_problem(shape: dict, limit: int = MAX_ROI_BYTES) -> str | None:
    """Why count mode cannot hold the seeded ROIs of ``shape`` within ``limit`` bytes, or None."""
    need = shape["rois"] * ROI_BYTES
    if need <= limit:
        return None
    dims = ",".join(f"{d}={v}" for d, v in shape.items())
    return (f"shape {dims} is too large to simulate: count mode generates every ROI, {need:,} bytes for "
            f"{shape['rois']:,} ({ROI_BYTES} each), over its limit of {limit:,} bytes (at most "
            f"{limit // ROI_BYTES:,} ROIs)")


def shape_problem(shape: dict) -> tuple[str, str] | None:
    """(dim, why) when no configuration of ``shape`` can be simulated, else None (OpInfo's ``shape_check``)."""
    why = rois_problem(shape)
    return None if why is None else ("rois", why)


def _align32(n: int) -> int:
    return -(-n // 32) * 32


def ub_used(grid: int, tr: int, tb: int, tc: int, c: int, dtype: str, buffer_num: int) -> int:
    """Bytes of UB a tile of ``tr`` ROIs x ``tb`` bins x ``tc`` of ``c`` channels needs at
    ``grid`` sampling points a bin, in ``buffer_num`` slots: each point's 2 x 2 neighbourhood
    (each pixel's channels padded to 32 B; a tile of all channels pads two pixels together) and
    the bin's output, plus one fp32 tile of sums for a narrower dtype."""
    nb = get_dtype(dtype).bytes
    cblk = _align32(tc * nb)
    pair = _align32(2 * tc * nb) * 2 if tc == c else 4 * cblk
    acc = 0 if dtype == ACC else tr * tb * _align32(tc * get_dtype(ACC).bytes)
    return buffer_num * (tr * tb * grid * pair + tr * tb * cblk) + acc


def least_ub(grid: int, dtype: str) -> int:
    """The UB the smallest tiling of any shape needs: one ROI, bin and channel, single buffered,
    of a map whose channels fill at most one 32 B block per pixel pair (wider ones need more)."""
    return ub_used(grid, 1, 1, 1, 1, dtype, 1)


def largest_sampling_ratio(ub_bytes: int, dtype: str) -> int:
    """The largest fixed ``sampling_ratio`` some tiling holds in ``ub_bytes`` (0: none)."""
    s = 0
    while least_ub((s + 1) ** 2, dtype) <= ub_bytes:
        s += 1
    return s


def sampling_ratio_fits(value: int, hw, dtypes) -> str | None:
    """Why no tiling of any shape holds ``value`` ** 2 points a bin in ``hw``'s UB in one of
    ``dtypes``, or None (adaptive sampling, <= 0, depends on the shape: met per configuration)."""
    for dtype in dtypes:
        need = least_ub(value * value, dtype)
        if value > 0 and need > hw.ub_bytes:
            top = largest_sampling_ratio(hw.ub_bytes, dtype)
            return (f"{value} keeps {value * value:,} sampling points a bin in UB: the smallest tiling (one ROI, "
                    f"bin and channel, single buffered) needs {need:,} bytes in {dtype}, more than {hw.reference}'s "
                    f"ub_bytes {hw.ub_bytes:,}; at most {top} fits (with up to {16 // get_dtype(dtype).bytes} "
                    "channels; fewer with more)")
    return None
