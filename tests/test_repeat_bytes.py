"""Every kernel takes its vector lanes from the profile's ``vector.bytes_per_repeat``: the vector
matmul hard-coded 64 fp32 lanes (a 32-byte-repeat copy of the 910B2 gave 256x256x64 fp16 6,929
cycles, 153% of peak, and a 512-byte one the same 6,087 cycles as 256), the cross-core combine
256 bytes of partials a VCADD and the split-K cast 64 fp32 a VCONV."""

from __future__ import annotations

import re

import pytest

from autotile.hardware import load_profile
from autotile.hardware.profile import bundled_path
from autotile.kernels import _common as C
from autotile.kernels import matmul, matmul_vector, registry
from autotile.sim import engine as E
from autotile.sim.costs import cost_vector

WIDTHS = (32, 256, 512)


@pytest.fixture(scope="module")
def profiles(tmp_path_factory):
    """bytes per repeat -> the 910B2 profile with that width (256: the shipped one)."""
    folder = tmp_path_factory.mktemp("bpr")
    text = bundled_path("ascend910b2").read_text()
    out = {}
    for width in WIDTHS:
        new, n = re.subn(r"(bytes_per_repeat: \{value: )256", rf"\g<1>{width}", text, count=1)
        assert n == 1
        (folder / f"bpr{width}.yaml").write_text(new)
        out[width] = load_profile(str(folder / f"bpr{width}.yaml"))
    return out


ONE_D = [(op, unit) for op in ("elementwise", "sigmoid", "weighted_sum", "global_sum")
         for unit in registry.get(op).units]
SHAPES_2D = {
    "resize": {"n": 1, "c": 64, "h_in": 128, "w_in": 128, "h_out": 256, "w_out": 256},
    "roi_align": {"n": 1, "c": 64, "h": 100, "w": 152, "rois": 64, "pooled_h": 7, "pooled_w": 7},
}


def _check(res):
    assert res.feasible, res
    assert 0 < res.pct_of_peak <= 100.0 + 1e-9, (res.op, res.unit, res.dtype, res.shape, res.pct_of_peak)


@pytest.mark.parametrize("width", (32, 512))
@pytest.mark.parametrize("op,unit", ONE_D)
@pytest.mark.parametrize("n", (1000, 100_000))
def test_one_d_kernels_stay_under_peak(profiles, width, op, unit, n):
    hw = profiles[width]
    mod = registry.implementation(op)
    for dtype in registry.get(op).dtypes:
        p = mod.default_params({"n": n}, dtype, hw, unit)
        for cores in (1, hw.cube_cores if unit == "cube" else hw.vector_cores):
            _check(mod.simulate({"n": n}, dict(p, cores=cores), dtype, hw, unit=unit))


@pytest.mark.parametrize("width", (32, 512))
@pytest.mark.parametrize("op", sorted(SHAPES_2D))
def test_resize_and_roi_align_stay_under_peak(profiles, width, op):
    hw, shape = profiles[width], SHAPES_2D[op]
    mod = registry.implementation(op)
    for dtype in registry.get(op).dtypes:
        _check(mod.simulate(shape, mod.default_params(shape, dtype, hw), dtype, hw))


MATMUL = ({"m": 256, "n": 256, "k": 64}, {"m": 64, "n": 48, "k": 64}, {"m": 16, "n": 16, "k": 16})


@pytest.mark.parametrize("shape", MATMUL)
@pytest.mark.parametrize("dtype", ("fp16", "fp32", "bf16"))
def test_vector_matmul_follows_the_repeat_width(profiles, shape, dtype):
    """Under peak on every width, and fewer bytes a repeat never make it faster (more repeats
    of VDUP / VAXPY / VCONV); the 256x256 rows of 256 fp32 take fewer repeats at 512 bytes."""
    cycles = {}
    for width in WIDTHS:
        hw = profiles[width]
        res = matmul_vector.simulate(shape, matmul_vector.default_params(shape, dtype, hw), dtype, hw)
        _check(res)
        cycles[width] = res.cycles
    assert cycles[32] > cycles[256] >= cycles[512]
    if shape["n"] == 256:
        assert cycles[512] < cycles[256]


@pytest.mark.parametrize("shape", ({"m": 128, "n": 128, "k": 32768}, {"m": 256, "n": 256, "k": 8192}))
def test_split_k_matmul_stays_under_peak(profiles, shape):
    for width in (32, 512):
        hw = profiles[width]
        for dtype in ("fp16", "bf16"):
            p = matmul.default_params(shape, dtype, hw, "cube")
            assert p["single_core_k"] < shape["k"]  # split K: the vector cores cast the workspace
            _check(matmul.simulate(shape, p, dtype, hw, unit="cube"))


def _combine(hw, nparts):
    st = C.new_state(0)
    cadd = C.vtable(hw, [("vcadd", "fp32_fp32")])
    return C.combine(st, cost_vector(hw, "fp32"), cadd, nparts, 4, 0.0, True, 1.0, 1.0)


def test_combine_takes_the_profiles_lanes(profiles):
    """48 fp32 partials: one VCADD at 256 or 512 bytes a repeat, 6 and one more at 32."""
    ends = {w: _combine(profiles[w], 48) for w in WIDTHS}
    assert ends[32] > ends[256] == ends[512]
    ends = {w: _combine(profiles[w], 100) for w in WIDTHS}  # 2 repeats at 256 bytes, 1 at 512
    assert ends[32] > ends[256] > ends[512]


def test_split_k_cast_takes_the_profiles_lanes(profiles):
    """The cast VCONVs the profile's bytes a repeat of fp32: more repeats at 32 bytes, fewer at 512."""
    ends = {}
    for w in WIDTHS:
        hw = profiles[w]
        st = C.new_state(0)
        E.reset(st)
        ends[w] = matmul.cast_pass(st, cost_vector(hw, "fp16"), matmul._cast_table(hw, "fp16"), 65536, 2, 0.0)
    assert ends[32] > ends[256] > ends[512]


def test_training_sweep_steps_by_the_profiles_repeat(profiles, monkeypatch):
    """The unit-selector sweep adds sizes at each repeat's worth of elements between sweep sizes:
    one repeat of the profile (16 fp16 at 32 bytes), not 256 bytes' 128."""
    from autotile.models import dataset as D

    lanes = []
    monkeypatch.setitem(D.PLACEMENTS, "on_chip", (1024, 2048))
    monkeypatch.setattr(D, "best_of_unit", lambda *a: (1.0, {}))  # the lane, not the search, is under test
    monkeypatch.setattr(D, "step_sizes", lambda run, sizes, lane, grain=16: lanes.append(lane))
    for width in WIDTHS:
        D.unit_rows("weighted_sum", ("fp16", "fp32"), profiles[width], placements=("on_chip",))
    assert lanes == [16, 8, 128, 64, 256, 128]
