"""The 1-D kernels place every UB buffer on the profile's UB granule (``align.ub``), as matmul
places its buffers on theirs: weighted_sum, elementwise and sigmoid rounded to 32 bytes whatever
the profile said, so a profile with a coarser granule held tilings its UB cannot."""

from __future__ import annotations

import dataclasses

import pytest

from autotile.hardware import load_profile
from autotile.kernels import elementwise as EW
from autotile.kernels import global_sum as GS
from autotile.kernels import sigmoid as SG
from autotile.kernels import weighted_sum as W

HW = load_profile()
COARSE = dataclasses.replace(HW, align={**HW.align, "ub": 1024})
TILE = {"tile_len": 48, "buffer_num": 1, "cores": 1}  # 96 bytes of fp16 a tile: 1024 on the coarse granule
ON = {"data": "on_chip"}


def _up(nbytes: int, granule: int) -> int:
    return -(-nbytes // granule) * granule


CASES = [  # (kernel, params, unit, options, UB bytes on granule g: the buffers each tiling holds)
    (W, {**TILE, "reduction": "tree", "acc_dtype": "fp32"}, "vector", None,
     lambda g: 2 * _up(96, g) + 2 * _up(48 * 4, g)),  # x and w, the products and the accumulator
    (EW, TILE, "vector", None, lambda g: 3 * _up(96, g)),  # a, b and y
    (SG, {**TILE, "variant": "exact"}, "vector", None, lambda g: 2 * _up(96, g)),  # x and y
    (GS, {**TILE, "acc_dtype": "fp32", "combine": "scalar"}, "vector", None,
     lambda g: _up(96, g) + 2 * _up(48 * 4, g)),  # x, its fp32 copy and the accumulator
    (W, {**TILE, "reduction": "tree", "acc_dtype": "fp32"}, "vector", ON,
     lambda g: 2 * _up(96, g) + 2 * _up(48 * 4, g)),  # n = 48 on one core: a tile's worth held
    (EW, TILE, "vector", ON, lambda g: 3 * _up(96, g)),
    (SG, {**TILE, "variant": "exact"}, "vector", ON, lambda g: 2 * _up(96, g)),
]


@pytest.mark.parametrize("kernel, params, unit, options, ub", CASES)
def test_ub_buffers_sit_on_the_profiles_granule(kernel, params, unit, options, ub):
    for hw, granule in ((HW, 32), (COARSE, 1024)):
        r = kernel.simulate({"n": 48}, params, "fp16", hw, unit=unit, options=options)
        assert r.feasible, r.reason
        assert r.buffers["ub"]["used"] == ub(granule), (hw.align["ub"], r.buffers)


def test_a_tiling_the_coarse_granule_cannot_hold_is_infeasible():
    """3 x 96 bytes fit a 2 KiB UB at 32-byte granules, not 3 x 1024 at 1 KiB ones."""
    small = dataclasses.replace(COARSE, ub_bytes=2048)
    assert EW.simulate({"n": 48}, TILE, "fp16", dataclasses.replace(HW, ub_bytes=2048), unit="vector").feasible
    r = EW.simulate({"n": 48}, TILE, "fp16", small, unit="vector")
    assert not r.feasible and "3072 bytes" in r.reason
