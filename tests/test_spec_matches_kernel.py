"""The bundled studies' constraints are the kernels' own checks. 1-D studies: every configuration
a space enumerates simulates feasibly (a spec that overstated its space offered acc_dtype fp16 for
fp32 input, left out accumulator buffers or sized the naive cube form's fractals too small).
resize, roi_align and matmul_small: on every bundled profile a configuration is spec-feasible
exactly when the kernel's check accepts it."""

from __future__ import annotations

import dataclasses
import functools
import itertools
from pathlib import Path

import pytest

from autotile.errors import InfeasibleConfig, InputError
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


# -- the multi-dimensional studies: spec-feasible exactly when the kernel's check passes ----------

PROFILES = ("ascend910b2", "ascend910b4", "ascend910", "ascend310p3")
SAMPLES = 60  # per space: enumerated (feasible) configurations, and as many from its domains
ODD = {  # shapes beside each study's own: odd and prime sizes, dims below a tile, big ratios
    "matmul_small": [{"m": 64, "n": 512, "k": 512}, {"m": 37, "n": 300, "k": 1000}, {"m": 200, "n": 24, "k": 8},
                     {"m": 1, "n": 4096, "k": 100}],
    "resize": [{"n": 1, "c": 61, "h_in": 101, "w_in": 8, "h_out": 117, "w_out": 6},
               {"n": 2, "c": 5, "h_in": 33, "w_in": 1000, "h_out": 17, "w_out": 77},
               {"n": 1, "c": 3, "h_in": 7, "w_in": 3, "h_out": 300, "w_out": 500},
               # columns far apart: each column's window copied apart (NHWC: by the channel tile)
               {"n": 1, "c": 5, "h_in": 40, "w_in": 30000, "h_out": 6, "w_out": 7},
               {"n": 1, "c": 70, "h_in": 9, "w_in": 2000, "h_out": 5, "w_out": 40}],
    "roi_align": [{"n": 1, "c": 48, "h": 37, "w": 23, "rois": 33, "pooled_h": 3, "pooled_w": 5},
                  {"n": 2, "c": 7, "h": 200, "w": 120, "rois": 100, "pooled_h": 7, "pooled_w": 7}],
}


@functools.cache
def _study(name: str):
    return load_spec(STUDIES / f"{name}.yaml")


def _kernel_check(spec, shape, params, dtype, unit, rois) -> str | None:
    """None if the kernel's own check (what simulate runs first) accepts the tiling, else why not."""
    from autotile.kernels import matmul, matmul_vector, resize, roi_align

    hw = spec.hardware
    try:
        if spec.op.name == "resize":
            resize.check(shape, params, dtype, hw, spec.inputs)
        elif spec.op.name == "roi_align":
            roi_align.check(shape, params, dtype, hw, spec.inputs, rois)
        elif unit == "vector":
            matmul_vector.check(shape, params, dtype, hw)
        else:
            matmul.check(shape, params, dtype, hw)
    except InfeasibleConfig as exc:
        return exc.reason
    return None


def _configs(space, rng, k: int) -> list[tuple[dict, bool]]:
    """Seeded (configuration, spec-feasible) pairs of ``space``: ``k`` from its enumeration (what
    ``space`` counts and the exhaustive sampler runs) and ``k`` from its domains with the
    constraints left out, each marked by whether the enumeration holds it. A space too large to
    enumerate here (matmul's cube at 64 x 512 x 512) gives a few drawn param by param instead."""
    try:
        feasible = space.enumerate(max_rows=200_000)
        domains = dataclasses.replace(space, constraints=()).enumerate(max_rows=200_000)
    except InputError:
        out = []
        for _ in range(k // 4):
            p = {}
            for name in space.names:
                dom = space.domain(name, p)
                p[name] = dom[int(rng.integers(len(dom)))]
            out.append((p, space.check(p) is None))
        return out

    def sample(en):
        return [en.row(int(i)) for i in rng.choice(len(en), min(k, len(en)), replace=False)]

    def key(p):
        return tuple(feasible.decoders[n].index(v) if n in feasible.decoders else v for n, v in p.items())

    held = set(zip(*(feasible.columns[n].tolist() for n in feasible.names)))
    return [(p, True) for p in sample(feasible)] + [(p, key(p) in held) for p in sample(domains)]


def _disagreements(study: str, inputs: dict, profile: str):
    """(spec-feasible but refused by the kernel, spec-infeasible but accepted, configurations
    compared) over the study's shapes and the odd ones, every dtype and unit, on ``profile``."""
    import numpy as np

    from autotile.hardware import load_profile
    from autotile.kernels import roi_align

    base = _study(study)
    spec = dataclasses.replace(base, hardware=load_profile(profile), hardware_ref=profile,
                               inputs={**base.inputs, **inputs})
    wrong, missed, seen = [], [], 0
    for shape in (*spec.shapes, *ODD[study]):
        rois = roi_align.make_rois(shape, spec.inputs) if study == "roi_align" else None
        for dtype, unit in itertools.product(spec.dtypes, spec.units):
            if not spec.op.supports(unit, dtype):
                continue
            space = spec.space(shape, dtype, unit)
            for p, spec_ok in _configs(space, np.random.default_rng(0), SAMPLES):
                seen += 1
                reason = _kernel_check(spec, shape, p, dtype, unit, rois)
                if spec_ok and reason is not None:
                    wrong.append((shape, dtype, unit, p, reason))
                elif not spec_ok and reason is None:
                    missed.append((shape, dtype, unit, p, space.check(p)))
    return wrong, missed, seen


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("study,inputs", [
    ("matmul_small", {}), ("resize", {}), ("resize", {"mode": "nearest"}), ("resize", {"layout": "NHWC"}),
    ("resize", {"align_corners": True}), ("resize", {"mode": "nearest", "layout": "NHWC"}), ("roi_align", {}), ("roi_align", {"sampling_ratio": 1, "aligned": False}),
    ("roi_align", {"sampling_ratio": 3, "spatial_scale": 0.125}), ("roi_align", {"sampling_ratio": 0}),
    ("roi_align", {"sampling_ratio": -1, "aligned": False, "roi_max": 0.9}),
    ("roi_align", {"sampling_ratio": -1, "spatial_scale": 1.0, "roi_min": 0.01, "roi_max": 0.05}),
], ids=lambda v: v if isinstance(v, str) else ",".join(f"{k}={x}" for k, x in v.items()) or "as_given")
def test_multi_dim_studies_are_their_kernels_checks(study, inputs, profile):
    """resize, roi_align and matmul_small (cube and vector) on their own shapes and odd ones, on
    every bundled profile: a configuration is spec-feasible exactly when the kernel's check
    accepts it (the spec prunes trials without simulating, ``space`` counts by it and the
    exhaustive sampler enumerates it). QA found matmul_small with no vector UB constraint,
    roi_align's sized for one sampling point per bin, not its sampling_ratio ** 2 (adaptive
    sampling: the grid of the largest box the ROI generator can draw, kernel and spec alike),
    and resize's without the 32 B padding of each source row, the work buffers and the index
    tables (the source span is a closed form both use, resize.span_bound; or, for columns far
    apart, each column's window, resize.gathers_columns)."""
    wrong, missed, seen = _disagreements(study, inputs, profile)
    assert seen > 500
    assert not wrong, (f"{len(wrong)} of {seen} spec-feasible configurations the kernel refuses", wrong[:3])
    assert not missed, (f"{len(missed)} of {seen} configurations the kernel accepts and the spec does not",
                        missed[:3])



# -- elementwise: the spec's UB constraints follow inputs.kind as the kernel's check does ----------

@pytest.mark.parametrize("kind", ["add", "mul", "relu"])
def test_elementwise_spec_is_its_kernels_check_for_every_kind(kind):
    """Each unit (the scalar's constraint too), dtype and bundled profile, and a 64 KiB-UB copy
    of the 910B2: on a grid of tilings the bundled spec with ``inputs: {kind: K}`` accepts
    exactly what ``elementwise.check`` accepts. The spec charged two inputs whatever the kind, so
    relu fp16 tile_len=16384 x 3 buffers (exactly 192 KiB) was refused, and on the 64 KiB copy
    the bf16 relu default tiling broke the spec (the vector study ran with "no baseline")."""
    from autotile.hardware import load_profile
    from autotile.kernels import elementwise

    base = load_spec(STUDIES / "elementwise.yaml")
    b2 = load_profile("ascend910b2")
    profiles = [load_profile(p) for p in PROFILES] + [dataclasses.replace(b2, ub_bytes=64 * 1024)]
    agree, verdicts = 0, set()
    for hw in profiles:
        spec = dataclasses.replace(base, hardware=hw, inputs={**base.inputs, "kind": kind})
        for n, dtype in itertools.product((1 << 20, 5_000_011), spec.dtypes):
            if dtype not in hw.dtypes:
                continue
            for unit in spec.units_for(dtype):
                space = spec.space({"n": n}, dtype, unit)
                for t, b, c in itertools.product([1 << e for e in range(4, 21)], range(1, 5),
                                                 sorted({1, 2, hw.vector_cores})):
                    p = {"tile_len": t, "buffer_num": b, "cores": c}
                    try:
                        elementwise.check({"n": n}, p, dtype, hw, unit, kind)
                        kernel_ok = True
                    except InfeasibleConfig:
                        kernel_ok = False
                    spec_ok = space.check(p) is None
                    assert spec_ok == kernel_ok, (hw.ub_bytes, n, dtype, unit, p, space.check(p))
                    agree += 1
                    verdicts.add(kernel_ok)
    assert agree > 2000 and verdicts == {True, False}
