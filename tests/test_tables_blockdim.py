"""The Ascend C header's blockDim is the cores the tiling really uses, as the simulator counts them
(``SimResult.block_dim``), for every registered op and unit. It was the ``cores`` param or 1: a
copy tiling tuned for block_dim=28 launched 1 core, and a 1-D tiling asking for more cores than
its split gives work launched idle ones."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest
from tablekit import ascendc_fill, inside

from autotile.cli import run as cli
from autotile.dtypes import get as get_dtype
from autotile.kernels import registry
from autotile.space import load_spec
from autotile.tables.export_ascendc import class_name
from autotile.tables.lookup import Lookup
from autotile.tables.schema import build_table, write_table

STUDIES = Path(__file__).resolve().parent.parent / "studies"
COPY = """\
op: copy
dtypes: [int8, fp16, fp32]
shapes: [{n: 4096}, {n: 1048576}]
params:
  block_dim: {type: int, low: 1, high: 48}
  tile_bytes: {type: int, low: 32, high: 65536, multiple_of: 32}
  depth: {type: int, low: 1, high: 2}
"""  # no bundled study: the QA report's spec, with more dtypes
OPS = sorted(op for op, info in registry.OPS.items() if not info.generic)  # replay has no kernel to count with
ODD = (17, 333, 4097, 100_003, 1_000_001)  # 1-D sizes that split unevenly


def _shapes(spec, rng) -> list[dict]:
    """The spec's shapes and, for a 1-D op, sizes that leave a short last core."""
    shapes = [dict(s) for s in spec.shapes]
    if spec.op.dims == ("n",):
        shapes += [{"n": n} for n in ODD]
    return shapes


def _variants(space, params: dict, rng, hw) -> list[dict]:
    """``params`` and copies asking for other core counts (idle cores included), where feasible."""
    split = registry.get(space.spec.op.name).core_split(space.unit)
    out = [params]
    if split is not None and split.count is not None:
        for c in sorted({1, 3, 5, 7, hw.vector_cores, rng.randint(1, 48)}):
            p = dict(params, **{split.count: c})
            if p != params and space.check(p) is None:
                out.append(p)
    return out


def _spec(op: str, tmp_path: Path):
    """``op``'s bundled spec (matmul's on both units), or COPY."""
    if op == "copy":
        (tmp_path / "copy.yaml").write_text(COPY)
        return load_spec(tmp_path / "copy.yaml")
    return load_spec(STUDIES / ("matmul_small.yaml" if op == "matmul" else f"{op}.yaml"))


def _table(spec, rng) -> dict:
    """A table of ``spec``: per unit, shape and dtype, the default tiling and variants with other
    core counts, each at its own shape (the first dim bumped past the shapes taken)."""
    results, used = [], set()
    for unit in spec.units:
        for dtype in spec.dtypes:
            if not spec.op.supports(unit, dtype) or spec.hardware.dtype_problem(unit, dtype):
                continue
            for shape in _shapes(spec, rng):
                base = spec.space(shape, dtype, unit).default_tiling()
                for params in _variants(spec.space(shape, dtype, unit), base, rng, spec.hardware):
                    s, first = dict(shape), spec.op.dims[0]
                    while (key := (tuple(s.values()), dtype)) in used:
                        s[first] += 1
                    if spec.space(s, dtype, unit).check(params):
                        continue
                    used.add(key)
                    results.append({"shape": s, "dtype": dtype, "unit": unit, "params": params,
                                    "cycles": 1000.0, "time_us": 1.0, "pct_of_peak": 50.0, "verified": True,
                                    "study": "test", "trial": 0, "chosen": True})
    return build_table(spec, {"results": results}, created="2026-01-01T00:00:00+00:00")


@pytest.mark.skipif(not shutil.which("g++"), reason="needs g++")
@pytest.mark.parametrize("op", OPS)
def test_block_dim_is_the_cores_the_simulator_uses(tmp_path, op):
    rng = random.Random(op)
    doc = _table(_spec(op, tmp_path), rng)
    write_table(tmp_path / "table.json", doc)
    look = Lookup(doc)
    spec, kernel, info = look.table.spec, registry.implementation(op), registry.get(op)
    assert {e.unit for e in look.table.entries} == set(spec.units) == set(info.units)  # every unit of the op
    queries = [(tuple(e.shape.values()), e.dtype) for e in look.table.entries] + inside(look, rng, 40)
    want, idle = [], 0
    for x, dtype in queries:
        got = look.from_table(dict(zip(look.table.dims, x)), dtype)
        assert got is not None, (x, dtype)
        res = kernel.simulate(got.shape, got.params, dtype, spec.hardware, unit=got.unit, options=spec.inputs)
        assert res.feasible, (x, dtype, res.reason)
        split = info.core_split(got.unit)
        assert split.busy(got.shape, got.params, get_dtype(dtype).bytes) == res.block_dim, (x, dtype, got.params)
        idle += split.count is not None and res.block_dim < got.params[split.count]
        want.append(res.block_dim)
    if spec.op.dims == ("n",):
        assert idle, "no tiling with idle cores: the test would not see blockDim = the count param"
    assert cli(["export", str(tmp_path), "--format", "ascendc", "-o", str(tmp_path / "tiling.h")]) == 0
    fill = ascendc_fill(tmp_path, class_name(op), len(look.table.dims), [])
    stdin = "".join(f"{' '.join(map(str, x))} {spec.dtypes.index(dt)}\n" for x, dt in queries)
    out = subprocess.run([str(fill)], input=stdin, capture_output=True, text=True, check=True).stdout
    got = [int(line.split()[1]) for line in out.splitlines()]
    assert got == want, [(q, g, w) for q, g, w in zip(queries, got, want) if g != w][:5]


def test_every_unit_declares_its_core_split():
    """Every unit of an op with a kernel declares how it spreads over cores, in params it reads."""
    for op, info in registry.OPS.items():
        if info.generic:
            continue
        for unit in info.units:
            split = info.core_split(unit)
            assert split is not None, (op, unit)
            assert set(split.params()) <= set(info.needs(unit)), (op, unit, split.params())
