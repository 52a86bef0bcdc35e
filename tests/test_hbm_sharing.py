"""Reads and writes that stream together share a core's HBM share, fairly, and neither starves;
how many cores contend does not grow with a faster cube."""

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.hardware import load_profile
from autotile.kernels import matmul as mm
from autotile.sim.costs import gm_rates, write_fraction

HW = load_profile()
CORES = 48  # the per-core HBM share is below the L2 caps, so the split alone sets the rates


def _times(read_bytes, write_bytes):
    """(read time, write time) in cycles at the rates the split gives."""
    read, write = gm_rates(HW, CORES, 0.0, write_fraction(read_bytes, write_bytes))
    return read_bytes / read, write_bytes / write


@pytest.mark.parametrize("read_bytes,write_bytes", [
    (512, 2_016_000), (2_016_000, 512), (1, 10**9), (10**9, 1), (3, 7), (7, 3), (1, 1), (2, 1),
])
def test_split_is_fair_and_never_beats_hbm(read_bytes, write_bytes):
    share = HW.hbm_bytes_per_cycle / CORES
    total = (read_bytes + write_bytes) / share
    tr, tw = _times(read_bytes, write_bytes)
    assert max(tr, tw) >= total * (1 - 1e-9)  # together they never move faster than HBM
    assert max(tr, tw) <= total * 1.002  # the heavier direction keeps its share of the traffic
    light, t_light = min((read_bytes, tr), (write_bytes, tw))
    assert t_light <= 2 * light / share * (1 + 1e-9)  # the lighter one: at least half the share


def test_write_fraction_keeps_a_direction_with_traffic():
    assert 0 < write_fraction(10**9, 1) < 0.5 < write_fraction(1, 10**9) < 1
    assert write_fraction(0, 5) == 1.0 and write_fraction(5, 0) == 0.0 and write_fraction(0, 0) is None


@pytest.mark.parametrize("write_share", [0.1, 0.5, 0.9])
def test_a_lightly_loaded_share_splits_less(write_share):
    whole = gm_rates(HW, CORES, 0.0, None)
    rates = [gm_rates(HW, CORES, 0.0, write_share, hbm_load=u) for u in (0.0, 0.3, 0.7, 1.0)]
    assert rates[0] == pytest.approx(whole)  # an idle share: the directions never meet
    assert rates[-1] == pytest.approx(gm_rates(HW, CORES, 0.0, write_share))  # saturated: the fair split
    for lighter, heavier in zip(rates, rates[1:]):
        assert heavier[0] <= lighter[0] and heavier[1] <= lighter[1]


def _splits(n, cores):
    from autotile.kernels import _common as C

    return tuple(C.split(n, cores, 16))


@pytest.mark.parametrize("op,unit,params,options", [
    ("elementwise", "vector", {"tile_len": 1024, "buffer_num": 2}, {"kind": "add"}),
    ("elementwise", "vector", {"tile_len": 64, "buffer_num": 2}, {"kind": "relu"}),
    ("elementwise", "scalar", {"tile_len": 64, "buffer_num": 2}, {"kind": "mul"}),
    ("sigmoid", "vector", {"tile_len": 1024, "buffer_num": 2, "variant": "exact"}, None),
    ("sigmoid", "scalar", {"tile_len": 64, "buffer_num": 2, "variant": "lut_linear"}, None),
    ("weighted_sum", "vector", {"tile_len": 1024, "buffer_num": 2, "acc_dtype": "fp32", "reduction": "tree"}, None),
    ("weighted_sum", "scalar", {"tile_len": 64, "buffer_num": 2, "acc_dtype": "fp32"}, None),
    ("weighted_sum", "cube", {"tile_len": 64, "buffer_num": 2, "cube_form": "trace"}, None),
    ("global_sum", "vector", {"tile_len": 1024, "buffer_num": 2, "acc_dtype": "fp32", "combine": "vector"}, None),
])
def test_the_same_split_costs_the_same_whatever_cores_asks(op, unit, params, options):
    """HBM is shared by the cores the split gives work, not by the ``cores`` param: n = 1600 at
    cores 34..48 is the same 33 x 48 + 1 x 16 elements, so the same cycles (elementwise fp32
    rose 371.3 -> 387.4 over that range while the split and block_dim stayed put)."""
    from autotile.kernels import registry

    kernel = registry.implementation(op)
    top = HW.cube_cores if unit == "cube" else HW.vector_cores
    n = 1600
    by_split: dict = {}
    for cores in range(1, top + 1):
        by_split.setdefault(_splits(n, cores), []).append(cores)
    groups = [g for g in by_split.values() if len(g) > 1]
    assert groups  # the case has cores values the split cannot tell apart
    for group in groups:
        runs = [kernel.simulate({"n": n}, {**params, "cores": c}, "fp32", HW, unit=unit, options=options)
                for c in group]
        assert all(r.feasible for r in runs), [r.reason for r in runs]
        active = sum(c for c, _, _ in _splits(n, group[0]))
        assert {r.block_dim for r in runs} == {active}
        assert {r.cycles for r in runs} == {runs[0].cycles}, (group, [r.cycles for r in runs])


def _faster_cube(hw, factor):
    return dataclasses.replace(hw, cube=dataclasses.replace(
        hw.cube, macs_per_cycle={d: r * factor for d, r in hw.cube.macs_per_cycle.items()}))


@pytest.mark.parametrize("shape,dtype", [({"m": 4096, "n": 4096, "k": 4096}, "fp16"),
                                         ({"m": 1000, "n": 1000, "k": 1000}, "fp32")])
def test_a_faster_cube_never_slows_a_fixed_tiling(shape, dtype):
    """Contention came from a duration bound that included cube time: twice the MACs per cycle
    took 4096^3 fp16 from 884,577 to 885,641 cycles and 1000^3 fp32 from 32,910 to 33,375."""
    params = mm.default_params(shape, dtype, HW)
    slow, fast = (mm.simulate(shape, params, dtype, _faster_cube(HW, f)).cycles for f in (1.0, 2.0))
    assert fast <= slow


@settings(max_examples=60, deadline=None)
@given(m=st.integers(1, 128).map(lambda i: 16 * i), n=st.integers(1, 128).map(lambda i: 16 * i),
       k=st.integers(1, 128).map(lambda i: 16 * i),
       dtype=st.sampled_from(["fp16", "fp32"]), factors=st.tuples(st.floats(0.25, 4.0), st.floats(0.25, 4.0)))
def test_more_macs_per_cycle_never_slow_a_matmul(m, n, k, dtype, factors):
    shape = {"m": m, "n": n, "k": k}
    params = mm.default_params(shape, dtype, HW)
    lo, hi = sorted(factors)
    slow, fast = (mm.simulate(shape, params, dtype, _faster_cube(HW, f)).cycles for f in (lo, hi))
    assert fast <= slow * (1 + 1e-12)
