"""The GM -> UB -> GM copy kernel: correctness, chip bandwidth and per-core plateau."""

import numpy as np
import pytest

from autotile.kernels import copy as C
from autotile.kernels import registry


def test_registered():
    info = registry.get("copy")
    assert info.dims == ("n",) and info.units == ("vector",)
    assert registry.implementation("copy") is C


def test_execute_matches_reference(hw):
    x = C.make_inputs({"n": 10_007}, "fp16", seed=3)
    out = C.execute(x, {"block_dim": 7, "tile_bytes": 1024, "depth": 2}, "fp16", hw)
    assert np.array_equal(out, C.reference(x, "fp16"))


def test_infeasible_configs_have_reasons(hw):
    r = C.simulate({"n": 1 << 20}, {"block_dim": 4, "tile_bytes": 131072, "depth": 2}, "int8", hw)
    assert not r.feasible and "UB overflow" in r.reason
    r = C.simulate({"n": 1 << 20}, {"block_dim": 99, "tile_bytes": 4096, "depth": 2}, "int8", hw)
    assert not r.feasible and "vector cores" in r.reason


def test_bandwidth_rises_with_cores_and_flattens_near_hbm(hw):
    n = 64 << 20
    bw = []
    for bd in (1, 2, 4, 8, 16, 24, 32, 48):
        r = C.simulate({"n": n}, {"block_dim": bd, "tile_bytes": 65536, "depth": 2}, "int8", hw)
        bw.append(2 * n / (r.time_us * 1e-6))  # bytes read + written per second
    for a, b in zip(bw, bw[1:]):
        assert b >= 0.98 * a
    assert bw[3] > 6 * bw[0]
    assert 0.85 * hw.hbm_bytes_per_second <= bw[-1] <= hw.hbm_bytes_per_second
    assert bw[-1] < 1.05 * bw[-3]  # flat from 24 to 48 cores


def test_single_core_plateau_needs_16k_copies(hw):
    plateau = hw.copy["gm_ub"].bytes_per_cycle
    n = 4 << 20

    def frac(tile):
        r = C.simulate({"n": n}, {"block_dim": 1, "tile_bytes": tile, "depth": 4}, "int8", hw)
        return n / r.cycles / plateau

    assert frac(4096) < 0.75 and frac(8192) < 0.85
    assert frac(16384) >= 0.88 and frac(32768) >= 0.93
    assert frac(32768) <= 1.0 + 1e-9


def test_default_params_feasible(hw):
    p = C.default_params({"n": 1 << 24}, "fp16", hw)
    assert C.simulate({"n": 1 << 24}, p, "fp16", hw).feasible
    assert p["depth"] == 2 and p["block_dim"] == hw.vector_cores


@pytest.mark.parametrize("nbytes,bd", [(100, 7), (1 << 20, 48), (33, 1)])
def test_slices_cover_the_tensor(nbytes, bd):
    sl = C.slices(nbytes, bd)
    assert sum(c * b for c, b in sl) == nbytes and sum(c for c, _ in sl) <= bd


@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16", "int8"])
def test_execute_walks_the_slices_count_mode_simulates(hw, dtype, monkeypatch):
    """bf16 lives in float32 on the host: execute must still copy 2 bytes per element, in the
    slices count mode timed, or verification checks another tiling than the one tuned."""
    n, p = 1000, {"block_dim": 2, "tile_bytes": 1024, "depth": 2}
    seen = []
    real = C.core

    def spy(st, cost, nbytes, tile, depth, execute, src, dst, off):
        seen.append((nbytes, off))
        return real(st, cost, nbytes, tile, depth, execute, src, dst, off)

    monkeypatch.setattr(C, "core", spy)
    (x,) = C.make_inputs({"n": n}, dtype, seed=3)
    out = C.execute((x,), p, dtype, hw)
    nb = n * {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}[dtype]
    expected, off = [], 0
    for count, sb in C.slices(nb, p["block_dim"]):
        for _ in range(count):
            expected.append((sb, off))
            off += sb
    assert seen == expected
    assert out.dtype == x.dtype and np.array_equal(out, C.reference((x,), dtype))
