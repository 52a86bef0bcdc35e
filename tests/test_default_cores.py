"""The 1-D studies reach every core of the unit, and their default tilings use them.

Before: sigmoid, elementwise and weighted_sum declared ``cores`` as powers of two, so the 910B2's
48 vector cores (24 cube cores) stopped at 32 (16), and the default heuristics asked for one core
per 16-64 Ki elements: sigmoid's Scalar at n = 1 Mi ran on 32 cores, 427,529 cycles against
285,992 on all 48 (1.49x); weighted_sum's Scalar on 16, 132,294 against 45,534 (2.9x).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autotile.hardware import load_profile
from autotile.kernels import _common as C
from autotile.kernels import registry
from autotile.space import load_spec

STUDIES = Path(__file__).resolve().parents[1] / "studies"
ONE_D = ("sigmoid", "elementwise", "weighted_sum", "global_sum")
CASES = [(op, unit) for op in ONE_D for unit in load_spec(STUDIES / f"{op}.yaml").units]
HW = load_profile("ascend910b2")


def _space(op: str, unit: str, n: int, dtype: str = "fp32"):
    return load_spec(STUDIES / f"{op}.yaml").space({"n": n}, dtype, unit)


def _cycles_of(space):
    """Simulated cycles of a tiling of ``space`` (inf where infeasible)."""
    kernel = registry.implementation(space.spec.op.name)

    def cycles(p):
        r = kernel.simulate(dict(space.shape), p, space.dtype, HW, unit=space.unit, options=space.spec.inputs)
        return r.cycles if r.feasible else float("inf")

    return cycles


def _unit_cores(unit: str) -> int:
    return HW.cube_cores if unit == "cube" else HW.vector_cores


@pytest.mark.parametrize("op,unit", CASES)
def test_the_cores_domain_reaches_every_core_and_stays_small(op, unit):
    cores = list(_space(op, unit, 1 << 20).domain("cores", {}))
    assert cores[-1] == _unit_cores(unit)
    assert len(cores) <= 11  # powers of two plus the full count (global_sum: the even splits)
    if op != "global_sum":
        assert cores == [c for c in (1, 2, 4, 8, 16, 32) if c < cores[-1]] + [cores[-1]]


@pytest.mark.parametrize("op,unit", CASES)
@pytest.mark.parametrize("n", [1 << 20, 3 << 20])
def test_a_large_default_uses_every_core(op, unit, n):
    space = _space(op, unit, n)
    default = space.default_tiling()
    assert space.check(default) is None
    assert default["cores"] == _unit_cores(unit), default


@pytest.mark.parametrize("op", ["sigmoid", "elementwise", "weighted_sum"])
def test_the_compute_bound_scalar_default_is_faster_on_every_core(op):
    """The Scalar unit is compute-bound: all 48 cores against the 32 a power of two stopped at."""
    space = _space(op, "scalar", 1 << 20)
    kernel = registry.implementation(op)
    default = space.default_tiling()

    def cycles(p):
        r = kernel.simulate({"n": 1 << 20}, p, "fp32", HW, unit="scalar", options=space.spec.inputs)
        assert r.feasible, r.reason
        return r.cycles

    assert cycles({**default, "cores": 32}) > 1.4 * cycles(default)


def test_small_work_keeps_few_cores_and_reductions_spread_later():
    assert C.default_cores(16, "scalar", HW) == 1
    assert C.default_cores(1024, "vector", HW) == 8  # 128 elements a core
    assert C.default_cores(1024, "vector", HW, combined=True) == 1  # a combine costs more than it saves
    assert C.default_cores(1024, "scalar", HW, combined=True, scalar_elem=2.0) == 32
    assert C.default_cores(255, "scalar", HW, combined=True, scalar_elem=2.0) == 1  # the combine outweighs it
    assert C.default_cores(1 << 14, "cube", HW, combined=True) == 4
    assert C.default_cores(1 << 30, "cube", HW, combined=True) == 24


@pytest.mark.parametrize("op,n", [("weighted_sum", 64), ("weighted_sum", 240), ("global_sum", 64),
                                  ("global_sum", 256), ("global_sum", 496)])
def test_a_small_scalar_reduction_stays_on_one_core(op, n):
    """One core per 32 elements spread n = 64 over 2 cores, whose partials' combine (~400 cycles)
    cost more than the halved loop saved: weighted_sum 889 cycles against 470 on one (1.9x),
    global_sum 811 against 357 (2.3x). Until its S-pipe loop takes 512 cycles (weighted_sum 256
    elements, global_sum 512) one core beats every spread, whatever its tiles."""
    space = _space(op, "scalar", n)
    default = space.default_tiling()
    cycles = _cycles_of(space)

    assert default["cores"] == 1
    spread = [{**default, "cores": c, "tile_len": t} for c in range(2, n // 16 + 1)
              for t in (16, 32, 64, 128, 256) if t <= C.align(-(-n // c), 16)]
    assert cycles(default) < min(map(cycles, spread))


@pytest.mark.parametrize("op,n,spread", [("weighted_sum", 256, 8), ("global_sum", 512, 16)])
def test_a_scalar_reduction_spreads_once_its_loop_outweighs_the_combine(op, n, spread):
    space = _space(op, "scalar", n)
    assert space.default_tiling()["cores"] == spread
    assert _space(op, "scalar", n - 16).default_tiling()["cores"] == 1
    assert C.default_cores(64, "scalar", HW) == 2  # nothing to combine: the streaming ops spread


def test_a_streaming_default_gives_each_core_several_tiles():
    assert C.stream_tile(5462, 2) == 1024  # 256 Ki fp16 on 48 cores: 6 tiles of >= 2 KiB, not 2 of 8 KiB
    assert C.stream_tile(1 << 20, 2) == 4096  # never over 8 KiB
    assert C.stream_tile(700, 4) == 512  # not under 2 KiB while the slice has more
    assert C.stream_tile(100, 4) == 112  # a short slice is one tile
    assert C.stream_tile(1024, 2) == 512  # a 2 KiB slice: two 1 KiB tiles, not one of 2 KiB
    assert C.stream_tile(700, 2) == 704  # under 1.5 KiB: one tile (1 KiB and a short rest lose)


@pytest.mark.parametrize("op,dtype,n", [("sigmoid", "fp16", 1 << 18), ("sigmoid", "fp32", 1 << 17),
                                        ("elementwise", "fp16", 1 << 18), ("elementwise", "fp32", 1 << 17),
                                        ("sigmoid", "fp16", 49152), ("sigmoid", "fp32", 24576),
                                        ("elementwise", "fp16", 49152)])
def test_a_mid_size_streaming_default_is_near_its_best_tile(op, dtype, n):
    """One or two 8 KiB tiles a core ran load, compute and store back to back: sigmoid fp16 at
    256 Ki elements on the Vector took 1.36x its best tile length and core count (2,754 cycles).
    A 2 KiB slice a core was one tile: sigmoid fp16 at 48 Ki elements 1.14x (813 cycles)."""
    space = _space(op, "vector", n, dtype)
    default = space.default_tiling()
    cycles = _cycles_of(space)

    best = min(cycles({**default, "cores": c, "tile_len": t})
               for c in (16, 32, 48) for t in (256, 512, 1024, 2048, 4096, 8192))
    assert cycles(default) <= 1.06 * best


def test_a_vector_reduction_stays_on_one_core_until_the_combine_pays():
    assert C.default_cores(2048, "vector", HW, combined=True, read_bytes=2 * 2048 * 2) == 1
    assert C.default_cores(4096, "vector", HW, combined=True, read_bytes=2 * 4096 * 2) == 32  # then wide


@pytest.mark.parametrize("op,dtype,n", [("weighted_sum", "fp16", 2048), ("weighted_sum", "fp32", 4096),
                                        ("global_sum", "fp16", 3072), ("global_sum", "fp32", 2048)])
def test_a_small_vector_reduction_default_is_near_its_best_core_count(op, dtype, n):
    """One core per 1024 elements paid the ~850-cycle combine on 2-4 cores: weighted_sum fp16 at
    n = 2048 took 983 cycles on 2 against 642 on one (1.40x), global_sum fp16 903 against 505."""
    space = _space(op, "vector", n, dtype)
    default = space.default_tiling()
    cycles = _cycles_of(space)

    best = min(cycles({**default, "cores": c, "tile_len": min(default["tile_len"], -(-n // c // 16) * 16 or 16)})
               for c in (1, 2, 4, 8, 16, 24, 32, 48))
    assert cycles(default) <= 1.05 * best


@pytest.mark.parametrize("dtype,n", [("fp16", 4096), ("fp16", 8192), ("fp16", 16384), ("fp16", 65536),
                                     ("fp32", 4096), ("fp32", 8192), ("fp32", 32768)])
def test_a_cube_weighted_sum_default_is_near_its_best_core_count(dtype, n):
    """One core per 4096 elements put fp16 n = 8192 on 2 cube cores, 1,011 cycles against 736 on
    one (1.37x), and fp32 n = 8192 on 2, 1,155 against 960 on 8 (1.20x): the combine costs the
    same on 2 cores as on 8, so the default stays on one core until it pays and then goes wide."""
    space = _space("weighted_sum", "cube", n, dtype)
    default = space.default_tiling()
    cycles = _cycles_of(space)
    best = min(cycles({**default, "cores": c, "tile_len": t})
               for c in (1, 2, 4, 8, 16, 24) for t in (1024, 2048, 4096, 8192, 16384) if t <= max(1024, n // c))
    assert cycles(default) <= 1.05 * best
