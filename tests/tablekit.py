"""Helpers for the table tests: a table built straight from a spec's default tilings (no tuning)."""

from __future__ import annotations

from pathlib import Path

from autotile.kernels import registry
from autotile.space import load_spec
from autotile.tables.schema import build_table

DATA = Path(__file__).resolve().parent / "data"
SMALL_SPEC = DATA / "matmul_small.yaml"


def default_table(spec_path=SMALL_SPEC) -> dict:
    """A table whose entries are the kernel's default tilings of every (shape, dtype) of the spec."""
    spec = load_spec(spec_path)
    kernel = registry.implementation(spec.op.name)
    results = []
    for shape in spec.shapes:
        for dtype in spec.dtypes:
            unit = spec.units[0]
            space = spec.space(shape, dtype, unit)
            params = {k: v for k, v in kernel.default_params(space.shape, dtype, spec.hardware, unit).items()
                      if k in space.names}
            assert space.check(params) is None, (shape, dtype, space.check(params))
            results.append({"shape": space.shape, "dtype": dtype, "unit": unit, "params": params,
                            "cycles": 1000.0, "time_us": 1.0, "pct_of_peak": 50.0, "verified": False,
                            "study": f"test/{dtype}", "trial": 0, "chosen": True})
    return build_table(spec, {"results": results}, created="2026-01-01T00:00:00+00:00")
