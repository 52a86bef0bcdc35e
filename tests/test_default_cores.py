"""The 1-D studies reach every core of the unit.

Before: sigmoid, elementwise and weighted_sum declared ``cores`` as powers of two, so the 910B2's
48 vector cores (24 cube cores) stopped at 32 (16): sigmoid's Scalar at n = 1 Mi could not get
below 427,529 cycles on 32 cores, against 285,992 on all 48 (1.49x).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from autotile.hardware import load_profile
from autotile.space import load_spec

STUDIES = Path(__file__).resolve().parents[1] / "studies"
ONE_D = ("sigmoid", "elementwise", "weighted_sum", "global_sum")
CASES = [(op, unit) for op in ONE_D for unit in load_spec(STUDIES / f"{op}.yaml").units]
HW = load_profile("ascend910b2")


def _space(op: str, unit: str, n: int, dtype: str = "fp32"):
    return load_spec(STUDIES / f"{op}.yaml").space({"n": n}, dtype, unit)


def _unit_cores(unit: str) -> int:
    return HW.cube_cores if unit == "cube" else HW.vector_cores


@pytest.mark.parametrize("op,unit", CASES)
def test_the_cores_domain_reaches_every_core_and_stays_small(op, unit):
    cores = list(_space(op, unit, 1 << 20).domain("cores", {}))
    assert cores[-1] == _unit_cores(unit)
    assert len(cores) <= 11  # powers of two plus the full count (global_sum: the even splits)
    if op != "global_sum":
        assert cores == [c for c in (1, 2, 4, 8, 16, 32) if c < cores[-1]] + [cores[-1]]
