"""The bundled 1-D studies' constraints are the kernels' own checks: every configuration a
space enumerates simulates feasibly (a spec that overstated its space offered acc_dtype fp16 for
fp32 input, left out accumulator buffers or sized the naive cube form's fractals too small)."""

from __future__ import annotations

from pathlib import Path

import pytest

from autotile.kernels import registry
from autotile.space import load_spec

STUDIES = Path(__file__).resolve().parents[1] / "studies"
ONE_D = [p for p in sorted(STUDIES.glob("*.yaml")) if load_spec(p).op.dims == ("n",)]


@pytest.mark.parametrize("path", ONE_D, ids=[p.stem for p in ONE_D])
@pytest.mark.parametrize("n", [4099, 1 << 20])
def test_every_enumerated_configuration_simulates_feasibly(path, n):
    spec = load_spec(path)
    kernel = registry.implementation(spec.op.name)
    for dtype in spec.dtypes:
        for unit in spec.units:
            if not spec.op.supports(unit, dtype):
                continue
            space = spec.space({"n": n}, dtype, unit)
            en = space.enumerate()
            assert len(en) > 0
            for i in range(len(en)):
                params = en.row(i)
                res = kernel.simulate({"n": n}, params, dtype, spec.hardware, unit=unit, options=spec.inputs)
                assert res.feasible, (spec.op.name, n, dtype, unit, params, res.reason)
