"""``run_with_table`` reads the shape off the inputs for every op with a kernel, and a ``shape=``
must agree with them: resize and roi_align raised "cannot tell the shape from the inputs; pass
shape=" though their execute derives it, and a ``shape=`` of another tuned shape answered
``exact`` on that entry's tiling for arrays of a different shape."""

from __future__ import annotations

import numpy as np
import pytest
from tablekit import default_table
from test_lookup_query import DOWN, UP, _flow, _spec

from autotile.errors import InputError
from autotile.kernels import elementwise, resize, roi_align
from autotile.tables.run import run_with_table

ROI = {"n": 1, "c": 16, "h": 16, "w": 16, "rois": 4, "pooled_h": 2, "pooled_w": 2}


@pytest.fixture(scope="module")
def resize_nhwc(tmp_path_factory):
    """A resize table of UP and DOWN in NHWC: x's dims are read in the table's layout."""
    spec = _spec(tmp_path_factory.mktemp("r"), "resize.yaml", f"[{_flow(UP)}, {_flow(DOWN)}]",
                 inputs="{mode: bilinear, layout: NHWC, align_corners: false}")
    return default_table(spec)


def test_resize_reads_its_shape_in_the_tables_layout(resize_nhwc):
    options = resize_nhwc["spec"]["content"]["inputs"]
    x, sizes = resize.make_inputs(UP, "fp16", seed=1, options=options)
    assert x.shape == (1, 8, 8, 4)  # NHWC: read as NCHW it is c=8, w_in=4, another shape
    out, m = run_with_table("resize", (x, sizes), resize_nhwc)
    assert m.match == "exact" and m.shape == UP and m.matched_shape == UP
    np.testing.assert_allclose(out.astype(np.float64), resize.reference((x, sizes), "fp16", options=options),
                               rtol=1e-2, atol=1e-2)


def test_a_shape_the_inputs_disagree_with_is_refused(resize_nhwc):
    x, sizes = resize.make_inputs(UP, "fp16", seed=1, options=resize_nhwc["spec"]["content"]["inputs"])
    # DOWN is tuned too: it answered exact, DOWN's tiling run on UP's arrays
    with pytest.raises(InputError, match=r"^shape\.h_in: shape= gives h_in=16, but the inputs have h_in=8$"):
        run_with_table("resize", (x, sizes), resize_nhwc, shape=DOWN)
    # the same shape given is fine; one lacking a dim is named by the lookup
    assert run_with_table("resize", (x, sizes), resize_nhwc, shape=dict(UP))[1].match == "exact"
    with pytest.raises(InputError, match=r"^shape: missing w_out \(a resize table's dims: n, c, h_in, w_in, h_out, "):
        run_with_table("resize", (x, sizes), resize_nhwc, shape={k: v for k, v in UP.items() if k != "w_out"})
    with pytest.raises(InputError, match=r"^inputs: expected two inputs, x and sizes"):
        run_with_table("resize", (x,), resize_nhwc)


def test_elementwise_shape_must_match_the_arrays(tmp_path):
    table = default_table(_spec(tmp_path, "elementwise.yaml", "[{n: 256}, {n: 4096}]"))
    a, b = elementwise.make_inputs({"n": 4096}, "fp16", seed=0, options={"kind": "add"})
    with pytest.raises(InputError, match=r"^shape\.n: shape= gives n=256, but the inputs have n=4096$"):
        run_with_table("elementwise", (a, b), table, shape={"n": 256})
    out, m = run_with_table("elementwise", (a, b), table, shape={"n": np.int64(4096)})
    assert m.match == "exact" and m.shape == {"n": 4096}
    np.testing.assert_array_equal(out, run_with_table("elementwise", (a, b), table)[0])


def test_roi_align_reads_its_shape_from_features_rois_and_pooled(tmp_path):
    table = default_table(_spec(tmp_path, "roi_align.yaml", f"[{_flow(ROI)}]"))
    options = table["spec"]["content"]["inputs"]
    inputs = roi_align.make_inputs(ROI, "fp16", seed=0, options=options)
    out, m = run_with_table("roi_align", inputs, table)
    assert m.match == "exact" and m.shape == ROI and out.shape == (4, 2, 2, 16)
    with pytest.raises(InputError, match=r"^shape\.pooled_w: shape= gives pooled_w=3, but the inputs have pooled_w=2$"):
        run_with_table("roi_align", inputs, table, shape={**ROI, "pooled_w": 3})
    with pytest.raises(InputError, match=r"^inputs: expected three inputs, features \[n, h, w, c\], rois \[rois, 5\] "
                                         r"and pooled \[pooled_h, pooled_w\], got 2$"):
        run_with_table("roi_align", inputs[:2], table)


def test_roi_align_names_a_box_larger_than_the_table_entry_was_tiled_for(tmp_path):
    """The entry's tiling holds the sampling grid of roi_max's boxes (a host tiles before the ROIs
    exist); a whole-image box (10 x 10 points a bin against 5 x 5) raised a raw InfeasibleConfig
    ("UB overflow") out of run_with_table. Now an InputError naming the ROI row and roi_max."""
    shape = {"n": 1, "c": 256, "h": 64, "w": 64, "rois": 4, "pooled_h": 7, "pooled_w": 7}
    table = default_table(_spec(tmp_path, "roi_align.yaml", f"[{_flow(shape)}]",
                                inputs="{spatial_scale: 0.25, sampling_ratio: 0, aligned: true}"))
    feat = np.ones((1, 64, 64, 256), np.float16)
    rois = np.array([[0, 8, 8, 64, 64], [0, 0, 0, 256, 256], [0, 0, 0, 256, 256], [0, 0, 0, 8, 8]], dtype=float)
    out, m = run_with_table("roi_align", (feat, rois[[0, 3, 0, 3]], np.array([7, 7])), table)
    assert m.match == "exact" and out.shape == (4, 7, 7, 256)
    with pytest.raises(InputError, match=r"^rois\[1\]: ROI row 1 \(x1, y1, x2, y2\) = \(0, 0, 256, 256\) needs a "
                                         r"10 x 10 sampling grid a bin, more than the tiling holds in UB \(411,648 "
                                         r"bytes needed, 196,608 held\): it was sized for boxes up to roi_max 0\.5 "
                                         r"of the image side \(25 points a bin\); tune with a larger roi_max"):
        run_with_table("roi_align", (feat, rois, np.array([7, 7])), table)
