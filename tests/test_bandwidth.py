"""% of bandwidth is a share of what HBM can move: no kernel's tiling exceeds 100, and resize's
cycles stay finite and change smoothly with the size ratio."""

from __future__ import annotations

import math
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from autotile.hardware import load_profile
from autotile.kernels import registry
from autotile.kernels import resize as R

HW = load_profile()
ONE_D = ("copy", "elementwise", "sigmoid", "weighted_sum", "global_sum")


@dataclass(frozen=True)
class Case:
    """One simulation: an op's shape, dtype, unit, options and tiling (None: the default)."""

    op: str
    shape: dict
    dtype: str
    unit: str | None = None
    options: dict | None = None
    params: dict | None = None

    def run(self):
        mod = registry.implementation(self.op)
        p = self.params or _default(mod, self)
        return mod.simulate(self.shape, p, self.dtype, HW, unit=self.unit, options=self.options)


def _default(mod, case: Case) -> dict:
    if case.op in ("resize", "roi_align"):
        return mod.default_params(case.shape, case.dtype, HW, case.unit, options=case.options)
    return mod.default_params(case.shape, case.dtype, HW, case.unit)


def sizes(bits: int):
    """1 .. 2**bits, log-uniform: as many tiny as huge sizes, so extreme ratios are common."""
    return st.integers(0, bits).flatmap(lambda b: st.integers(max(1, (1 << b) >> 1), 1 << b))


@st.composite
def resize_tilings(draw, shape):
    """None (the default) or any tiling; infeasible ones are skipped by the caller."""
    if draw(st.booleans()):
        return None
    return {"tile_h": draw(st.integers(1, 16)), "tile_w": draw(sizes(10)), "tile_c": draw(st.integers(1, 8)),
            "buffer_num": draw(st.integers(1, 2)), "cores": draw(st.integers(1, HW.vector_cores))}


@st.composite
def resize_cases(draw):
    shape = {"n": draw(st.integers(1, 2)), "c": draw(sizes(4)), "h_in": draw(sizes(10)), "w_in": draw(sizes(10)),
             "h_out": draw(sizes(10)), "w_out": draw(sizes(10))}
    mode = draw(st.sampled_from(R.MODES))
    opts = {"mode": mode, "layout": draw(st.sampled_from(R.LAYOUTS)),
            "align_corners": mode == "bilinear" and draw(st.booleans())}  # nearest refuses it
    return Case("resize", shape, draw(st.sampled_from(["fp16", "fp32"])), options=opts,
                params=draw(resize_tilings(shape)))


@st.composite
def matmul_cases(draw):
    """Cube shapes from square to very skinny (one side up to 2**17, the others down to 1), and
    the Vector kernel's small shapes."""
    if draw(st.booleans()):
        dims = sorted([draw(sizes(17)), draw(sizes(12)), draw(sizes(12))], reverse=True)
        m, n, k = draw(st.permutations(dims))
        return Case("matmul", {"m": m, "n": n, "k": k}, draw(st.sampled_from(["fp16", "fp32", "int8"])), "cube")
    shape = {"m": draw(sizes(14)), "n": draw(sizes(6)), "k": draw(sizes(6))}
    return Case("matmul", shape, draw(st.sampled_from(["fp16", "fp32"])), "vector")


@st.composite
def one_d_cases(draw):
    op = draw(st.sampled_from(ONE_D))
    info = registry.get(op)
    unit = draw(st.sampled_from(info.units))
    dtype = draw(st.sampled_from([d for d in info.dtypes if info.supports(unit, d)]))
    opts = {"kind": draw(st.sampled_from(["add", "mul", "relu"]))} if op == "elementwise" else None
    return Case(op, {"n": draw(sizes(24))}, dtype, unit, opts)


@st.composite
def roi_align_cases(draw):
    shape = {"n": 1, "c": draw(sizes(8)), "h": draw(sizes(7)), "w": draw(sizes(7)), "rois": draw(sizes(6)),
             "pooled_h": draw(st.integers(1, 7)), "pooled_w": draw(st.integers(1, 7))}
    return Case("roi_align", shape, draw(st.sampled_from(["fp16", "fp32"])), "vector")


@settings(max_examples=600, deadline=None)
@given(st.one_of(resize_cases(), matmul_cases(), one_d_cases(), roi_align_cases()))
def test_pct_of_bandwidth_stays_within_hbm(case):
    res = case.run()
    if not res.feasible:
        return
    assert math.isfinite(res.cycles) and res.cycles > 0, case
    assert res.pct_of_bandwidth is None or 0 <= res.pct_of_bandwidth <= 100, (res.pct_of_bandwidth, case)


@settings(max_examples=300, deadline=None)
@given(resize_cases(), st.sampled_from([("h_in",), ("w_in",), ("h_in", "w_in")]))
def test_resize_cycles_change_smoothly_with_the_input_size(case, grow):
    """One more source row or column, same tiling: at most 4x the source bytes (1 -> 2 in both
    sides), and the cost follows the bytes, so it moves by far less than that. Not across an
    unchanged size: that resize is a copy (no gathers or weights), another algorithm, as in PyTorch
    (7 -> 8 rows into 8 x 8, NHWC bilinear: 608 cycles interpolating, 296 copying)."""
    from autotile.kernels.resize import unchanged

    params = case.params or _default(registry.implementation("resize"), case)
    bigger = {**case.shape, **{d: case.shape[d] + 1 for d in grow}}
    if unchanged(case.shape) != unchanged(bigger):
        return
    here = Case(case.op, case.shape, case.dtype, case.unit, case.options, params).run()
    there = Case(case.op, bigger, case.dtype, case.unit, case.options, params).run()
    if not (here.feasible and there.feasible):
        return
    assert 0.5 <= there.cycles / here.cycles <= 2, (here.cycles, there.cycles, case, grow)
