"""Synthetic measurement landscapes of known character, for benchmarking search strategies.

Each generator gives a :class:`Landscape`: a GPU-style space of five tunable parameters
(1,440 configurations, those with more than 1,024 threads per block absent as Kernel Tuner's
restrictions leave them out) with a time in ms or a failure string per configuration.

- ``needle``: a smooth trend toward a narrow optimum; only the optimum and its twin with the
  other ``variant`` are within 5% of the best (the other configurations are at least 7% slower).
- ``bowl``: a smooth quadratic bowl, many configurations near the best.
- ``failing``: a bowl whose optimum sits at the edge of a resource limit, with about half of
  the measured configurations failed (over the limit, plus scattered runtime failures).
- ``gemm``: a larger GEMM-like space (seven parameters, 10,368 configurations, about half failed)
  whose parameters interact through occupancy, register and shared-memory limits, with two
  basins (with and without a shared-memory tile). The three above are small and separable:
  every sampler finds their optimum within 50 trials, so they cannot tell strategies apart;
  this one can, as the real GEMM caches of Kernel Tuner do.
- ``convolution``: a 2D convolution with a shared-memory input tile (six parameters after Kernel
  Tuner's convolution example, 4,736 configurations, a third of them too big to compile), rugged:
  edge waste, partial waves and shared-memory bank conflicts jump between neighbouring tile
  widths; 12 configurations within 5% of the best.

``write(landscape, path)`` writes a Kernel Tuner cache (``.json``, ``.json.gz``) or a CSV;
``write_spec`` writes the replay spec next to it.
"""

from __future__ import annotations

import csv
import gzip
import io
import itertools
import json
import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from autotile.atomic import write_bytes
from autotile.tune import importkt

PARAMS = {
    "block_size_x": [16, 32, 64, 128, 256, 512],
    "block_size_y": [1, 2, 4, 8, 16],
    "tile_size_x": [1, 2, 3, 4, 5, 6],
    "tile_size_y": [1, 2, 3, 4],
    "variant": ["plain", "vectorized"],
}
MAX_THREADS = 1024
PROBLEM_SIZE = [4096, 4096]


@dataclass(frozen=True)
class Landscape:
    """Measured times (ms) or failure strings by configuration (a tuple in ``params`` order)."""

    name: str
    params: dict  # name -> list of values
    times: dict  # config tuple -> float ms | str

    def best(self) -> tuple[dict, float]:
        """The fastest valid configuration and its time."""
        cfg, t = min(((c, t) for c, t in self.times.items() if not isinstance(t, str)),
                     key=lambda ct: ct[1])
        return dict(zip(self.params, cfg)), t

    def near(self, frac: float = 0.05) -> int:
        """How many valid configurations are within ``frac`` of the best."""
        best = self.best()[1]
        return sum(1 for t in self.times.values() if not isinstance(t, str) and t <= best * (1 + frac))

    def failed(self) -> int:
        return sum(1 for t in self.times.values() if isinstance(t, str))


def _grid():
    """Every configuration within the thread limit, with its normalized coordinates in [0, 1]."""
    names = list(PARAMS)
    for cfg in itertools.product(*PARAMS.values()):
        if cfg[0] * cfg[1] > MAX_THREADS:
            continue
        u = [PARAMS[n].index(v) / (len(PARAMS[n]) - 1) for n, v in zip(names, cfg)]
        yield cfg, np.array(u[:4]), cfg[4]


def _target(rng) -> np.ndarray:
    """A random optimum inside the grid (no coordinate at its ends), within the thread limit."""
    while True:
        idx = [rng.integers(1, len(PARAMS[n]) - 1) for n in list(PARAMS)[:4]]
        if PARAMS["block_size_x"][idx[0]] * PARAMS["block_size_y"][idx[1]] <= MAX_THREADS:
            return np.array([i / (len(PARAMS[n]) - 1) for i, n in zip(idx, PARAMS)])


def needle(seed: int = 0, scale_ms: float = 0.25, runtime_failures: float = 0.03) -> Landscape:
    """A smooth L1 trend toward a narrow optimum: a 7% step separates it from its neighbours;
    a few scattered configurations (never the optimum) failed at run time."""
    rng = np.random.default_rng(seed)
    o, w = _target(rng), rng.uniform(0.5, 1.5, 4)
    good = rng.choice(PARAMS["variant"])
    times = {}
    for cfg, u, variant in _grid():
        d = float(np.dot(w, np.abs(u - o)) / w.sum())
        if d > 1e-9 and rng.random() < runtime_failures:
            times[cfg] = "RuntimeFailedConfig"
            continue
        t = (1 + 0.6 * d + (0.07 if d > 1e-9 else 0.0)) * (1.0 if variant == good else 1.03)
        times[cfg] = scale_ms * t * (1 + rng.uniform(0, 0.004))
    return Landscape("needle", PARAMS, times)


def bowl(seed: int = 0, scale_ms: float = 0.25) -> Landscape:
    """A smooth quadratic bowl: many configurations within a few percent of the best."""
    rng = np.random.default_rng(seed)
    o, w = _target(rng), rng.uniform(0.5, 1.5, 4)
    times = {}
    for cfg, u, variant in _grid():
        t = 1 + 0.5 * float(np.dot(w, (u - o) ** 2)) + (0.02 if variant == "plain" else 0.0)
        times[cfg] = scale_ms * t * (1 + rng.uniform(0, 0.004))
    return Landscape("bowl", PARAMS, times)


def failing(seed: int = 0, scale_ms: float = 0.25, runtime_failures: float = 0.1) -> Landscape:
    """Faster with more work per thread, until the registers run out (compilation fails)."""
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.5, 1.5, 4)
    times = {}
    for cfg, u, variant in _grid():
        regs = cfg[2] * cfg[3] * (2 if variant == "vectorized" else 1)
        if regs > 8:
            times[cfg] = "CompilationFailedConfig"
            continue
        if rng.random() < runtime_failures:
            times[cfg] = "RuntimeFailedConfig"
            continue
        work = regs / 8
        t = 1 + 0.8 * (1 - work) ** 2 + 0.3 * float(np.dot(w[:2], (u[:2] - 0.5) ** 2))
        times[cfg] = scale_ms * t * (1 + rng.uniform(0, 0.004))
    return Landscape("failing", PARAMS, times)


GEMM_PARAMS = {
    "block_size_x": [8, 16, 32, 64, 128],
    "block_size_y": [1, 2, 4, 8, 16, 32],
    "tile_size_x": [1, 2, 4, 8],
    "tile_size_y": [1, 2, 4, 8],
    "vector": [1, 2, 4],
    "shared_a": [0, 1],
    "unroll": [1, 2, 4, 8],
}
_VECTOR_EFF = {0: {1: 0.8, 2: 0.93, 4: 1.0}, 1: {1: 0.9, 2: 0.97, 4: 0.95}}


def gemm(seed: int = 0, scale_ms: float = 1.0, runtime_failures: float = 0.02) -> Landscape:
    """A GEMM-like kernel: time = scale / efficiency, the efficiency a product of occupancy
    (blocks resident per SM, limited by threads and registers), data reuse of the thread tile
    (more with a shared-memory A tile and taller blocks), vector width (wide loads pay off
    without the shared tile), unrolling (best depth grows with the tile) and block size (a
    seeded sweet spot). Too many registers or too much shared memory fail to compile; a vector
    width that does not divide the tile is invalid; a few others failed at run time."""
    rng = np.random.default_rng(seed)
    sweet = float(rng.choice([128, 256]))
    times = {}
    for cfg in itertools.product(*GEMM_PARAMS.values()):
        bx, by, tx, ty, vec, shared, unroll = cfg
        threads = bx * by
        if threads > MAX_THREADS:
            continue
        regs = 16 + 2 * tx * ty * (2 if vec > 1 else 1) + 2 * unroll
        if regs > 96 or (shared and bx * tx * 16 * unroll * 4 > 48 * 1024):
            times[cfg] = "CompilationFailedConfig"
        elif tx % vec:
            times[cfg] = "InvalidConfig"
        elif rng.random() < runtime_failures:
            times[cfg] = "RuntimeFailedConfig"
        else:
            blocks = min(32, 65536 // (threads * regs), 2048 // threads)
            occupancy = 0.35 + 0.65 * min(1.0, blocks * threads / 2048) ** 0.5
            reuse = tx * ty / (tx + ty) * (1.0 + 0.12 * np.log2(by) if shared else 1.0)
            unroll_eff = 1.0 - 0.06 * abs(np.log2(unroll) - (2 if tx * ty >= 16 else 1))
            block_eff = 1.0 - 0.08 * abs(np.log2(threads / sweet)) / 3
            eff = occupancy * reuse / (reuse + 0.9) * _VECTOR_EFF[shared][vec] * unroll_eff * block_eff
            times[cfg] = scale_ms / eff * (1 + rng.uniform(0, 0.004))
    return Landscape("gemm", GEMM_PARAMS, times)


CONV_PARAMS = {
    "block_size_x": [16, 32, 48, 64, 80, 96, 112, 128],
    "block_size_y": [1, 2, 4, 8, 16, 32],
    "tile_size_x": [1, 2, 3, 4, 5, 6, 7, 8],
    "tile_size_y": [1, 2, 4, 8],
    "use_padding": [0, 1],
    "read_only": [0, 1],
}
CONV_FILTER = 17  # a 17 x 17 filter over the 4096 x 4096 image of PROBLEM_SIZE
SMS = 80  # streaming multiprocessors of the modelled GPU (waves of resident blocks)


def _bank_conflicts(bx: int, tx: int, ty: int, stride: int) -> int:
    """The worst number of distinct shared-memory words one bank serves for a warp's load:
    thread i reads row (i // bx) * ty, column (i % bx) * tx of a tile ``stride`` words wide."""
    words = {((i // bx) * ty * stride + (i % bx) * tx) for i in range(32)}
    per_bank: dict[int, int] = {}
    for a in words:
        per_bank[a % 32] = per_bank.get(a % 32, 0) + 1
    return max(per_bank.values())


def convolution(seed: int = 0, scale_ms: float = 2.0, runtime_failures: float = 0.01) -> Landscape:
    """A 2D convolution with a shared-memory input tile, after Kernel Tuner's convolution example
    (its parameters and thread restriction). A block computes (bx tx) x (by ty) outputs from an
    input tile with a 16-wide halo: time is the loads (the halo's share, bank conflicts of the
    strided shared-memory reads that ``use_padding`` can break, the read-only cache) plus the
    multiply-adds (faster with more outputs per thread, up to register spills), divided by the
    latency hiding of the occupancy, times the waste of partial tiles at the image edge and of
    the last partial wave over the SMs. Tiles over 48 KiB of shared memory or 255 registers do
    not compile. Tile widths that are not powers of two make the edge, wave and bank-conflict
    terms jump between neighbouring values, so the landscape is rugged rather than smooth."""
    rng = np.random.default_rng(seed)
    size, halo = PROBLEM_SIZE[0], CONV_FILTER - 1
    times = {}
    for cfg in itertools.product(*CONV_PARAMS.values()):
        bx, by, tx, ty, pad, ro = cfg
        threads = bx * by
        if threads > MAX_THREADS or threads < 32:
            continue
        ox, oy = bx * tx, by * ty
        stride = ox + halo + pad
        smem = stride * (oy + halo) * 4
        regs = 24 + 2 * tx * ty + tx
        if smem > 48 * 1024 or regs > 255:
            times[cfg] = "CompilationFailedConfig"
            continue
        if rng.random() < runtime_failures:
            times[cfg] = "RuntimeFailedConfig"
            continue
        per_sm = min(32, 2048 // threads, 65536 // (threads * min(regs, 128)), (100 * 1024) // smem)
        hiding = 0.3 + 0.7 * min(1.0, per_sm * threads / 1024)
        loads = (ox + halo) * (oy + halo) / (ox * oy) * (0.8 if ro else 1.0)
        reads = CONV_FILTER * (tx + halo) / tx * _bank_conflicts(bx, tx, ty, stride) / CONV_FILTER ** 2
        fma = 1.0 / min(1.0, 0.35 + 0.65 * (tx * ty / 8) ** 0.5) * (1.6 if regs > 128 else 1.0)
        blocks = -(-size // ox) * -(-size // oy)
        edge = blocks * ox * oy / size ** 2
        waves = blocks / (SMS * per_sm)
        tail = math.ceil(waves) / waves if waves < 8 else 1.0
        t = (0.25 * loads + 0.6 * reads + fma) / hiding * edge * tail
        times[cfg] = scale_ms * t * (1 + rng.uniform(0, 0.004))
    return Landscape("convolution", CONV_PARAMS, times)


GENERATORS = {"needle": needle, "bowl": bowl, "failing": failing, "gemm": gemm, "convolution": convolution}


def kt_document(land: Landscape) -> dict:
    """The landscape as a Kernel Tuner cache document."""
    keys = list(land.params)
    cache = {}
    for cfg, t in land.times.items():
        entry = dict(zip(keys, cfg))
        entry.update(time=t, times=[t] * 3 if not isinstance(t, str) else t,
                     compile_time=12.5, verification_time=0, benchmark_time=0.75)
        cache[",".join(str(v) for v in cfg)] = entry
    return {"device_name": "synthetic", "kernel_name": land.name, "problem_size": PROBLEM_SIZE,
            "tune_params_keys": keys, "tune_params": land.params, "objective": "time",
            "cache": cache}


def write(land: Landscape, path: str | Path) -> Path:
    """Write ``land`` as a Kernel Tuner cache (``.json``/``.json.gz``) or CSV (other names)."""
    path = Path(path)
    name = path.name.lower()
    if name.endswith((".json", ".json.gz")):
        data = json.dumps(kt_document(land), indent=1).encode()
        return write_bytes(path, gzip.compress(data, mtime=0) if name.endswith(".gz") else data)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow([*land.params, "time"])
    for cfg, t in land.times.items():
        w.writerow([*cfg, t if isinstance(t, str) else f"{t:.6f}"])
    return write_bytes(path, buf.getvalue().encode())


def write_spec(land: Landscape, data: str | Path, spec: str | Path) -> Path:
    """Write the replay spec of ``land`` measured in file ``data`` (written with ``write``)."""
    data, spec = Path(data), Path(spec)
    rel = os.path.relpath(data.resolve(), spec.resolve().parent)
    valid = len(land.times) - land.failed()
    desc = (f"synthetic {land.name} landscape: {len(land.times)} configurations, {land.failed()} "
            f"failed, {land.near()} within 5% of the best")
    shape = dict(zip(importkt.DIMS, PROBLEM_SIZE))
    return importkt.write_spec(importkt.replay_spec(land.params, rel, shape=shape, valid=valid,
                                                    description=desc), spec)
