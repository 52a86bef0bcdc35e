"""The kernels' heuristic tilings, moved onto a spec's domains, are every study's trial 0 and the
lookup's last resort; a spec param no kernel reads is refused."""

import json
import re
from pathlib import Path

import pytest

from autotile.cli import run as cli
from autotile.errors import InputError
from autotile.kernels import registry
from autotile.space import load_spec
from autotile.tables.lookup import lookup

ROOT = Path(__file__).resolve().parents[1]
WS = load_spec(str(ROOT / "studies" / "weighted_sum.yaml"))
KERNEL = registry.implementation("weighted_sum")


def _heuristic(space):
    base = KERNEL.default_params(space.shape, space.dtype, WS.hardware, space.unit)
    return {k: v for k, v in base.items() if k in space.names}


@pytest.mark.parametrize("n,unit,want", [
    (300, "vector", {"tile_len": 256, "cores": 1}),  # 304 among powers of two: 256 (ratio 1.19 against 1.68)
    (100, "scalar", {"tile_len": 64}),  # 112: the domain stops at n=100
    (4_608, "vector", {"cores": 32}),  # 36 cores: 32 is nearer by ratio (1.125) than 48 (1.33)
    (5_120, "vector", {"cores": 48}),  # 40 cores: 48, every core (1.2), rather than 32 (1.25)
    (40_960, "cube", {"cores": 24}),  # 20 cube cores: all 24 (1.2) rather than 16 (1.25)
])
def test_projection_moves_each_param_to_its_nearest_allowed_value(n, unit, want):
    space = WS.space({"n": n}, "fp16", unit)
    base = _heuristic(space)
    assert space.check(base) is not None  # the heuristic alone is outside the spec
    moved = space.project(base)
    assert space.check(moved) is None
    assert {k: moved[k] for k in want} == want
    assert moved["buffer_num"] == base["buffer_num"]


def test_projection_keeps_what_is_allowed_and_ties_go_down():
    space = WS.space({"n": 4096}, "fp16", "vector")
    base = {"tile_len": 1024, "buffer_num": 2, "cores": 1, "reduction": "vmla", "acc_dtype": "fp16"}
    assert space.project(base) == base
    assert space.project(base | {"tile_len": 1448})["tile_len"] == 1024  # sqrt(2) * 1024: nearer 1024
    assert space.project(base | {"tile_len": 1449})["tile_len"] == 2048


def test_non_power_of_two_shape_gets_a_baseline(tmp_path, capsys):
    text = (ROOT / "studies" / "weighted_sum.yaml").read_text()
    text = re.sub(r"(?ms)^shapes:.*?(?=^\w)", "shapes: [{n: 300}]\n", text, count=1)
    text = re.sub(r"(?m)^dtypes:.*$", "dtypes: [fp16]", text, count=1)
    spec = tmp_path / "ws.yaml"
    spec.write_text(text)
    assert cli(["tune", str(spec), "--out", str(tmp_path / "out"), "--trials", "4", "--quiet", "--no-verify"]) == 0
    capsys.readouterr()
    results = json.loads((tmp_path / "out" / "summary.json").read_text())["results"]
    assert results and all(r["baseline_cycles"] for r in results)
    tiles = {r["unit"]: (r["baseline_params"]["tile_len"], r["baseline_params"]["cores"]) for r in results}
    assert tiles == {"vector": (256, 1), "cube": (256, 1), "scalar": (64, 8)}  # Scalar: 9 cores, 48-element tiles; projected: 8, 64
    m = lookup(tmp_path / "out" / "table.json", {"n": 100})
    assert m.match == "default" and m.params["tile_len"] == 64


def test_a_param_no_kernel_reads_is_refused(tmp_path):
    text = (ROOT / "studies" / "weighted_sum.yaml").read_text()
    text = text.replace("\nparams:\n", "\nparams:\n  tile_lenght: {type: int, low: 16, high: 64}\n", 1)
    spec = tmp_path / "ws.yaml"
    spec.write_text(text)
    with pytest.raises(InputError, match="'tile_lenght' is not read by the weighted_sum kernel.*did you mean tile_len"):
        load_spec(str(spec)).require_kernel_params()


def _with_inputs(tmp_path, name: str, old: str, new: str) -> Path:
    text = (ROOT / "studies" / f"{name}.yaml").read_text()
    assert old in text
    path = tmp_path / f"{name}.yaml"
    path.write_text(text.replace(old, new))
    return path


@pytest.mark.parametrize("name,old,new,shape", [
    ("resize", "layout: NCHW", "layout: NHWC", "n=1,c=64,h_in=128,w_in=128,h_out=256,w_out=256"),
    ("roi_align", "sampling_ratio: 2, aligned: true, roi_seed: 0, roi_min: 0.05, roi_max: 0.5",
     "sampling_ratio: 0, aligned: true, roi_seed: 0, roi_min: 0.5, roi_max: 1.0",
     "n=2,c=256,h=64,w=64,rois=256,pooled_h=7,pooled_w=7"),
])
def test_the_default_tiling_follows_the_specs_inputs(tmp_path, capsys, name, old, new, shape):
    """NHWC resize and adaptive-sampling roi_align: the heuristic tiling sized for the spec's
    inputs fits UB (it used to be the NCHW / sampling_ratio 2 one, which overflowed, so simulate
    said infeasible and tune had no baseline)."""
    path = _with_inputs(tmp_path, name, old, new)
    assert cli(["simulate", str(path), "--shape", shape, "--json"]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["feasible"] is True, got.get("reason")
    spec = load_spec(str(path))
    dims = dict(kv.split("=") for kv in shape.split(","))
    space = spec.space({k: int(v) for k, v in dims.items()}, "fp16", "vector")
    assert space.check(space.default_tiling()) is None


@pytest.mark.parametrize("name", ["elementwise", "global_sum", "weighted_sum", "sigmoid"])
def test_the_1d_defaults_fit_a_small_ub(name):
    """With an 8 KiB UB the fixed 8 KiB tiles x 2 buffers were infeasible (tune's baseline and
    speedup null): the heuristic shrinks its tiles until they fit, on the spec's domains too."""
    import dataclasses

    spec = load_spec(str(ROOT / "studies" / f"{name}.yaml"))
    spec = dataclasses.replace(spec, hardware=dataclasses.replace(spec.hardware, ub_bytes=8192))
    kernel = registry.implementation(name)
    for unit in spec.units:
        for dtype in spec.dtypes:
            space = spec.space({"n": 1 << 20}, dtype, unit)
            p = space.default_tiling()
            assert space.check(p) is None, (unit, dtype, p)
            r = kernel.simulate(space.shape, p, dtype, spec.hardware, unit=unit, options=spec.inputs)
            assert r.feasible, (unit, dtype, r.reason)


def _nhwc_resize():
    text = (ROOT / "studies" / "resize.yaml").read_text().replace("layout: NCHW", "layout: NHWC")
    from autotile.space import load_spec_text

    return load_spec_text(text, "resize_nhwc.yaml")


RGB = {"n": 2, "c": 3, "h_in": 480, "w_in": 640, "h_out": 224, "w_out": 224}


@pytest.mark.parametrize("dtype", ["fp16", "fp32"])
def test_nhwc_resize_of_three_channels_can_take_them_all(dtype):
    """tile_c was a power of two only: for c=3, 1 or 2, which in NHWC pads each pixel's channels
    to 32 B (the default needed 457,472 B of UB, tune had no baseline, tile_c=3 was refused)."""
    space = _nhwc_resize().space(RGB, dtype, "vector")
    assert list(space.domain("tile_c", {})) == [1, 2, 3]
    p = space.default_tiling()
    assert p["tile_c"] == 3 and space.check(p) is None


def test_roi_align_of_three_channels_can_take_them_all():
    spec = load_spec(str(ROOT / "studies" / "roi_align.yaml"))
    space = spec.space({"n": 1, "c": 3, "h": 100, "w": 152, "rois": 512, "pooled_h": 7, "pooled_w": 7}, "fp16")
    assert list(space.domain("tile_c", {})) == [1, 2, 3]
    assert space.default_tiling()["tile_c"] == 3


def test_a_projection_that_breaks_a_constraint_moves_to_a_feasible_neighbour(monkeypatch):
    """NHWC, c=512 fp32: the heuristic's tile_w=8 raised to the spec's low (16) overflowed UB
    (284,416 B of 196,608); the default is now the nearest tiling that fits: half the channels.
    (The heuristic now keeps 16 columns itself; its old answer stands in for any kernel's.)"""
    space = _nhwc_resize().space({**RGB, "n": 1, "c": 512}, "fp32", "vector")
    kernel = registry.implementation("resize")
    old = {"tile_h": 1, "tile_w": 8, "tile_c": 256, "buffer_num": 2, "cores": 48}
    monkeypatch.setattr(kernel, "default_params", lambda *a, **k: dict(old))
    base = kernel.default_params(space.shape, "fp32", space.spec.hardware, options=space.spec.inputs)
    moved = space.project(base)
    assert (base["tile_w"], moved["tile_w"]) == (8, 16) and "fit in UB" in space.check(moved)
    p = space.default_tiling()
    assert space.check(p) is None
    assert p == {**moved, "tile_c": 128}


def test_a_default_nothing_near_fits_stays_the_projection():
    """A UB too small for any tiling: the walk gives up and the projection is kept (and said infeasible)."""
    import dataclasses

    spec = _nhwc_resize()
    spec = dataclasses.replace(spec, hardware=dataclasses.replace(spec.hardware, ub_bytes=256))
    space = spec.space(RGB, "fp16", "vector")
    kernel = registry.implementation("resize")
    base = kernel.default_params(space.shape, "fp16", spec.hardware, options=spec.inputs)
    assert space.default_tiling() == space.project(base)
    assert space.check(space.default_tiling()) is not None
