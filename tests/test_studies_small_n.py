"""Every bundled study covers tiny shapes: the kernels handle n = 1..15 (one partial 16-element
block), so a spec must give them a tiling, or lookup and simulate have no answer at all."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from autotile.kernels import registry
from autotile.space import load_spec
from autotile.tune.verify import verify_one

STUDIES = sorted((Path(__file__).resolve().parents[1] / "studies").glob("*.yaml"))
SIZES = range(1, 21)
SIZES_ND = (1, 2, 3, 7, 15, 17)  # multi-dimensional ops (every dim that size): fewer, their spaces cost more


def _spaces(spec, size: int):
    """The spec's space for every dim equal to ``size``, per dtype and unit the kernel computes."""
    shape = {d: size for d in spec.op.dims}
    for dtype, unit in itertools.product(spec.dtypes, spec.units):
        if spec.op.supports(unit, dtype):
            yield spec.space(shape, dtype, unit)


@pytest.mark.parametrize("path", STUDIES, ids=[p.stem for p in STUDIES])
def test_tiny_shapes_have_a_space_and_a_feasible_default(path):
    """n = 1..20 (other ops: every dim small): a non-empty feasible space, and the kernel's default tiling moved onto it (every study's
    trial 0 and lookup's fallback) is allowed by the spec and feasible in the kernel."""
    spec = load_spec(path)
    kernel = registry.implementation(spec.op.name)
    for size in SIZES if spec.op.dims == ("n",) else SIZES_ND:
        for space in _spaces(spec, size):
            where = (size, space.dtype, space.unit)
            assert space.count().feasible_size > 0, where
            base = kernel.default_params(space.shape, space.dtype, spec.hardware, space.unit)
            base = space.project({k: v for k, v in base.items() if k in space.names})
            assert space.check(base) is None, where
            res = kernel.simulate(space.shape, base, space.dtype, spec.hardware, unit=space.unit,
                                  options=spec.inputs)
            assert res.feasible, (where, res.reason)


def _option_sets(op) -> list[dict]:
    """Every combination of the op's choice options (data placement, elementwise kind)."""
    choices = [[(o.name, c) for c in o.choices] for o in op.options if o.kind == "choice"]
    return [dict(combo) for combo in itertools.product(*choices)]


ONE_D = [p for p in STUDIES if load_spec(p).op.dims == ("n",)]


def test_the_bundled_studies_are_found():
    assert {p.stem for p in ONE_D} == {"weighted_sum", "sigmoid", "elementwise", "global_sum"}
    assert len(STUDIES) > len(ONE_D)


@pytest.mark.parametrize("path", ONE_D, ids=[p.stem for p in ONE_D])
def test_tiny_shapes_compute_the_reference_with_every_tiling(path):
    """Execute mode matches the reference for every feasible configuration of the space at
    n = 1..20, every dtype, unit and option choice (approximate sigmoid variants trade accuracy
    by design and are verified against their recorded error when tuned, so only ``exact`` here)."""
    spec = load_spec(path)
    kernel = registry.implementation(spec.op.name)
    runs = 0
    for size in SIZES:
        for space in _spaces(spec, size):
            configs = space.enumerate()
            for i, options in itertools.product(range(len(configs)), _option_sets(spec.op)):
                params = configs.row(i)
                if params.get("variant", "exact") != "exact":
                    continue
                if not kernel.simulate(space.shape, params, space.dtype, spec.hardware, unit=space.unit,
                                       options=options).feasible:
                    continue
                # one input set a tiling: the thousands of tilings check the values the gate's reruns would
                v = verify_one(kernel, space.shape, params, space.dtype, spec.hardware, unit=space.unit,
                               options=options, min_checked=1)
                assert v.passed, (size, space.dtype, space.unit, params, options, v.reason)
                runs += 1
    assert runs >= 20 * len(spec.dtypes)
