"""The on-chip framing holds only data the unit's buffers can hold: a problem past them is
infeasible with the buffer, the bytes and the capacity named."""

from __future__ import annotations

from autotile.hardware import load_profile
from autotile.kernels import elementwise as EW
from autotile.kernels import sigmoid as SG
from autotile.kernels import weighted_sum as W

HW = load_profile()
ON = {"data": "on_chip"}
ONE = {"tile_len": 8192, "buffer_num": 2, "cores": 1}


def test_weighted_sum_operands_past_l0a_are_infeasible_on_chip():
    """8 MiB of fp32 operands on one core simulated at 8,519 cycles and 0 GM bytes (L0A: 64 KiB)."""
    n = 1 << 20
    r = W.simulate({"n": n}, {**ONE, "cube_form": "trace"}, "fp32", HW, unit="cube", options=ON)
    assert not r.feasible and "L0A" in r.reason and "4,194,304 bytes" in r.reason and "65,536" in r.reason
    r = W.simulate({"n": n}, {**ONE, "reduction": "tree", "acc_dtype": "fp32"}, "fp32", HW, unit="vector", options=ON)
    assert not r.feasible and "UB" in r.reason and "8,388,608 bytes" in r.reason and "196,608" in r.reason
    r = W.simulate({"n": n}, {**ONE, "cube_form": "naive", "tile_len": 16}, "fp32", HW, unit="cube", options=ON)
    assert not r.feasible and "L1" in r.reason and "524,288" in r.reason
    assert W.simulate({"n": n}, {**ONE, "cube_form": "trace"}, "fp32", HW, unit="cube").feasible  # GM streams it


def test_each_core_holds_its_own_slice_on_chip():
    """cores > 1 on chip: each core holds its slice, so 8 cores hold 8 times what one does."""
    p = {"tile_len": 4096, "buffer_num": 2, "cores": 8, "cube_form": "trace"}
    assert W.simulate({"n": 1 << 18}, p, "fp16", HW, unit="cube", options=ON).feasible  # 32 KiB a core
    r = W.simulate({"n": 1 << 20}, p, "fp16", HW, unit="cube", options=ON)
    assert not r.feasible and "a core's 131,072 elements of n=1,048,576" in r.reason


def test_the_published_range_still_fits():
    """fp16 n = 16,384 is 32 KiB an operand, fp32 64 KiB: L0A exactly; one 16-element row more does not fit."""
    trace = {"tile_len": 16384, "buffer_num": 1, "cores": 1, "cube_form": "trace"}
    for dtype in ("fp16", "fp32"):
        assert W.simulate({"n": 16384}, trace, dtype, HW, unit="cube", options=ON).feasible
    r = W.simulate({"n": 16384}, trace, "fp32", HW, unit="cube", options=ON)
    assert r.buffers["l0a"]["used"] == HW.l0a_bytes
    r = W.simulate({"n": 16400}, trace, "fp32", HW, unit="cube", options=ON)
    assert not r.feasible and "L0A" in r.reason


def test_sigmoid_and_elementwise_hold_input_and_output_on_chip():
    p = {"tile_len": 1024, "buffer_num": 2, "cores": 1}
    r = SG.simulate({"n": 1 << 16}, {**p, "variant": "exact"}, "fp32", HW, unit="vector", options=ON)
    assert not r.feasible and "x and y" in r.reason and "UB holds 196,608" in r.reason
    assert SG.simulate({"n": 1 << 16}, {**p, "variant": "exact"}, "fp32", HW, unit="vector").feasible
    r = EW.simulate({"n": 1 << 15}, p, "fp32", HW, unit="vector", options=ON)
    assert not r.feasible and "a and b and y" in r.reason
    assert EW.simulate({"n": 1 << 14}, {**p, "tile_len": 16}, "fp32", HW, unit="vector", options=ON).feasible
