"""The operator registry: static metadata, with the implementation module imported on demand.

Spec validation needs only the metadata (dimension names, units, dtypes), so loading a spec never
imports Numba. ``implementation(name)`` imports the kernel module when a simulation needs it.
"""

from __future__ import annotations

import importlib
import math
from dataclasses import dataclass
from types import ModuleType

from autotile.errors import InputError


class OptionError(ValueError):
    """A bad value in an op's ``inputs:`` mapping; ``key`` names the option."""

    def __init__(self, key: str, message: str):
        super().__init__(message)
        self.key = key


@dataclass(frozen=True)
class Option:
    """One key of an op's ``inputs:`` mapping (the spec's op-specific options) and what it admits.

    ``kind``: ``choice`` (one of ``choices``), ``bool``, ``int`` or ``number``; numbers lie in
    [``low``, ``high``] (``low`` itself excluded when ``low_open``) and are at most option
    ``at_most``'s value when that is set. ``only_with`` ``(option, values)``: a true value is
    admitted only when that option holds one of ``values``. ``fits``: ``module.function`` (in
    ``autotile.kernels``, free of Numba) taking (value, profile, dtypes) and saying why no tiling
    of the kernel holds the value on that profile, or None (roi_align's sampling_ratio in UB).
    """

    name: str
    kind: str
    default: object
    choices: tuple = ()
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    at_most: str | None = None
    only_with: tuple[str, tuple] | None = None
    fits: str = ""

    def expected(self) -> str:
        """What the option admits, as an error message says it."""
        if self.kind == "choice":
            return "one of " + ", ".join(map(str, self.choices))
        if self.kind == "bool":
            return "true or false"
        what = "an integer" if self.kind == "int" else "a number"
        lo, hi = (None if v is None else f"{v:g}" if v != int(v) else str(int(v)) for v in (self.low, self.high))
        if lo is not None and hi is not None:
            return f"{what} in {'(' if self.low_open else '['}{lo}, {hi}]"
        if lo is not None:
            return f"{what} {'>' if self.low_open else '>='} {lo}"
        if hi is not None:
            return f"{what} <= {hi}"
        return what

    def _within(self, value: int | float) -> bool:
        """Whether a number lies in the bounds; an int is compared exactly (``math.isfinite``
        would overflow on one past the float range), so no size of integer gets through."""
        if isinstance(value, float) and not math.isfinite(value):
            return False
        return (self.low is None or (value > self.low if self.low_open else value >= self.low)) \
            and (self.high is None or value <= self.high)

    def check(self, value) -> None:
        """Raise OptionError unless ``value`` is admissible (``at_most`` is checked by the op)."""
        if self.kind == "choice":
            ok = isinstance(value, (str, int, float)) and not isinstance(value, bool) and value in self.choices
        elif self.kind == "bool":
            ok = isinstance(value, bool)
        else:
            kinds = (int,) if self.kind == "int" else (int, float)
            ok = isinstance(value, kinds) and not isinstance(value, bool) and self._within(value)
        if not ok:
            raise OptionError(self.name, f"expected {self.expected()}, got {value!r}")


@dataclass(frozen=True)
class CoreSplit:
    """How a unit's kernel spreads its work over cores: the cores it uses, as the simulator counts
    them (``SimResult.block_dim``) and the Ascend C export sets blockDim.

    The work is ``items``: the product over ``work`` of ceil(product of the dims / the param), or
    the dims' product for a factor without a param; in bytes (times the dtype's size) when
    ``in_bytes``. With ``count``, the param asking for cores, each core takes a contiguous run of
    ceil(items / count) items rounded up to ``granule`` (a number or a param), so ceil(items / run)
    cores get work (every asked one when ``work`` is empty: nothing more is known). Without
    ``count`` every item is a core block (matmul's cube: ceil(m / single_core_m) x ...). A
    factor whose param the spec leaves out (``optional``) is 1.
    """

    count: str | None
    work: tuple[tuple[tuple[str, ...], str | None], ...] = ()
    granule: int | str = 1
    in_bytes: bool = False

    def params(self) -> tuple[str, ...]:
        """The params the count reads."""
        names = [self.count] + [p for _, p in self.work] + [self.granule]
        return tuple(dict.fromkeys(p for p in names if isinstance(p, str)))

    def busy(self, shape: dict, params: dict, elem_bytes: int = 1) -> int:
        """The cores that get work at ``shape`` with ``params`` (ints; the dtype's ``elem_bytes``)."""
        items = elem_bytes if self.in_bytes else 1
        for dims, by in self.work:
            size = math.prod(int(shape[d]) for d in dims)
            if by is None:
                items *= size
            elif by in params:  # else an optional param left out: the whole dim on each core
                items *= -(-size // int(params[by]))
        if self.count is None:
            return items
        count = int(params[self.count])
        if not self.work:
            return count
        granule = self.granule if isinstance(self.granule, int) else int(params[self.granule])
        run = -(-items // (count * granule)) * granule
        return -(-items // run)


def _hook(path: str):
    """The function ``module.function`` names in ``autotile.kernels`` (an option's ``fits``, an
    op's ``shape_check``): imported when first asked, so the registry stays free of Numba."""
    module, func = path.rsplit(".", 1)
    return getattr(importlib.import_module(f"autotile.kernels.{module}"), func)


@dataclass(frozen=True)
class OpInfo:
    """What a spec may say about an operator."""

    name: str
    dims: tuple[str, ...]  # shape dimension names, in the order tables key them
    units: tuple[str, ...]  # execution units it has kernels for; the first is the default
    dtypes: tuple[str, ...]
    module: str  # autotile.kernels.<module>; "" for the generic replay op (no kernel)
    summary: str
    params: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (unit, params its kernel reads)
    options: tuple[Option, ...] = ()  # the keys its ``inputs:`` mapping may hold
    unit_dtypes: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (unit, dtypes) where a unit has fewer
    optional: tuple[str, ...] = ()  # params a kernel reads but a spec may leave out (the kernel's default then)
    cores: tuple[tuple[str, CoreSplit], ...] = ()  # (unit, how its kernel spreads over cores); absent: one core
    # how many leading inputs hold values of the dtype (None: all; the rest are sizes, boxes, ...)
    value_inputs: int | None = None
    # ``module.function`` (in autotile.kernels, free of Numba) taking a shape and returning (dim,
    # why) when no configuration of it can be simulated, else None: roi_align's ROIs, resize's
    # index tables in memory
    shape_check: str = ""
    # (unit, ((param, the text values its kernel accepts), ...)): the params it reads as text;
    # every other param it reads is a number
    texts: tuple[tuple[str, tuple[tuple[str, tuple[str, ...]], ...]], ...] = ()

    def admits(self, unit: str, name: str) -> tuple[str, ...] | None:
        """The values the kernel on ``unit`` accepts for param ``name`` when it reads it as text
        (sigmoid's ``variant``: exact, poly, ...), else None (a number, or a param it does not read);
        the kernel modules take their lists from here, so a spec's choices are checked as loaded."""
        return dict(dict(self.texts).get(unit, ())).get(name)

    def shape_problem(self, shape: dict) -> tuple[str, str] | None:
        """(dim, why) when the simulator cannot run ``shape`` at all (``shape_check``), else None."""
        return _hook(self.shape_check)(shape) if self.shape_check else None

    def core_split(self, unit: str) -> CoreSplit | None:
        """How the kernel on ``unit`` spreads its work over cores (None: it runs on one core)."""
        return dict(self.cores).get(unit)

    def supports(self, unit: str, dtype: str) -> bool:
        """Whether the kernel on ``unit`` computes in ``dtype`` (``dtypes`` unless ``unit_dtypes`` narrows it)."""
        return dtype in dict(self.unit_dtypes).get(unit, self.dtypes)

    def check_options(self, values: dict | None) -> dict:
        """``values`` (a spec's ``inputs:``) completed with the defaults; OptionError names the
        first unknown or inadmissible key."""
        known = {o.name: o for o in self.options}
        values = dict(values or {})
        for key in values:
            if key not in known:
                admits = ", ".join(known) if known else "none"
                raise OptionError(str(key), f"unknown option of {self.name} (it takes: {admits})")
        out = {o.name: values.get(o.name, o.default) for o in self.options}
        for o in self.options:
            o.check(out[o.name])
        for o in self.options:
            if o.at_most is not None and out[o.name] > out[o.at_most]:
                raise OptionError(o.name, f"expected at most {o.at_most} ({out[o.at_most]!r}), got {out[o.name]!r}")
            if o.only_with is not None and out[o.name] and out[o.only_with[0]] not in o.only_with[1]:
                other, admits = o.only_with
                raise OptionError(o.name, f"expected false with {other} {out[other]} (it applies to {other} "
                                          f"{' or '.join(admits)} only), got true")
        return out

    def check_fit(self, values: dict, hw, dtypes) -> None:
        """OptionError naming the first of ``values`` (checked, completed) that no tiling holds on
        profile ``hw`` in one of ``dtypes`` (an option's ``fits``)."""
        for o in self.options:
            if o.fits:
                why = _hook(o.fits)(values[o.name], hw, dtypes)
                if why is not None:
                    raise OptionError(o.name, why)

    def needs(self, unit: str) -> tuple[str, ...]:
        """The params the kernel on ``unit`` reads (its ``default_params`` keys; the kernel
        modules take their lists from here): a spec that simulates it must declare each one
        but the ``optional`` ones."""
        return dict(self.params).get(unit, ())

    def required(self, unit: str) -> tuple[str, ...]:
        """The params a spec simulating ``unit`` must declare: ``needs`` less ``optional``."""
        return tuple(name for name in self.needs(unit) if name not in self.optional)

    @property
    def placements(self) -> tuple[str, ...]:
        """Where its inputs may start: ``gm``, and ``on_chip`` (already in the unit's buffers,
        the published tables' framing) for ops whose kernels take the ``data`` option."""
        return ("gm", "on_chip") if any(o.name == "data" for o in self.options) else ("gm",)

    @property
    def generic(self) -> bool:
        """True for an op with no kernel whose dims come from the spec's shapes (``replay``)."""
        return not self.module


_TILE = ("tile_len", "buffer_num", "cores")
# the 1-D ops' split (_common.split): runs of whole 16-element granules, one per core
_SPLIT_1D = CoreSplit("cores", ((("n",), None),), granule=16)
# where the inputs start: "gm" (what a real kernel sees) or "on_chip" (the published tables' framing)
_DATA = Option("data", "choice", "gm", ("gm", "on_chip"))
_ACC = ("fp16", "fp32")  # the accumulator dtypes of the sums

OPS: dict[str, OpInfo] = {
    op.name: op
    for op in (
        OpInfo("matmul", ("m", "n", "k"), ("cube", "vector"), ("fp16", "bf16", "fp32", "int8"),
               "matmul", "C = A @ B, A MxK and B KxN row-major in GM",
               (("cube", ("base_m", "base_n", "base_k", "step_m", "step_n", "step_ka", "step_kb", "depth_a1",
                          "depth_b1", "db_l0a", "db_l0b", "db_l0c", "iterate_order", "single_core_m",
                          "single_core_n", "single_core_k")),
                ("vector", ("tile_m", "buffer_num", "cores"))),
               texts=(("cube", (("iterate_order", ("m_first", "n_first")),)),),
               unit_dtypes=(("vector", ("fp16", "bf16", "fp32")),),
               optional=("single_core_k",),  # absent: all of K on each core (specs from before split K)
               # cube: a core block per single_core_m x single_core_n x single_core_k (matmul.core_classes);
               # vector: runs of whole tile_m rows (matmul_vector's starts)
               cores=(("cube", CoreSplit(None, ((("m",), "single_core_m"), (("n",), "single_core_n"),
                                                (("k",), "single_core_k")))),
                      ("vector", CoreSplit("cores", ((("m",), None),), granule="tile_m")))),
        OpInfo("copy", ("n",), ("vector",), ("int8", "fp16", "bf16", "fp32"),
               "copy", "out = x streamed GM -> UB -> GM (n elements; bytes for int8)",
               (("vector", ("block_dim", "tile_bytes", "depth")),),
               cores=(("vector", CoreSplit("block_dim", ((("n",), None),), granule=32, in_bytes=True)),)),
        OpInfo("weighted_sum", ("n",), ("vector", "cube", "scalar"), ("fp16", "fp32", "bf16"),
               "weighted_sum", "out = sum(w[i] * x[i])",
               (("vector", (*_TILE, "reduction", "acc_dtype")), ("cube", (*_TILE, "cube_form")),
                ("scalar", (*_TILE, "acc_dtype"))), (_DATA,),
               texts=(("vector", (("reduction", ("tree", "vmla")), ("acc_dtype", _ACC))),
                      ("cube", (("cube_form", ("trace", "naive")),)), ("scalar", (("acc_dtype", _ACC),))),
               cores=(("vector", _SPLIT_1D), ("cube", _SPLIT_1D), ("scalar", _SPLIT_1D))),
        OpInfo("global_sum", ("n",), ("vector", "cube", "scalar"), ("fp16", "fp32", "bf16"),
               "global_sum", "sum of a whole tensor",
               (("vector", (*_TILE, "acc_dtype", "combine")), ("cube", _TILE), ("scalar", _TILE)),
               texts=(("vector", (("acc_dtype", _ACC), ("combine", ("scalar", "vector")))),),
               cores=(("vector", _SPLIT_1D), ("cube", _SPLIT_1D), ("scalar", _SPLIT_1D))),
        OpInfo("sigmoid", ("n",), ("vector", "scalar"), ("fp32", "fp16", "bf16"),
               "sigmoid", "1 / (1 + exp(-x)), exact and approximate variants",
               (("vector", (*_TILE, "variant")), ("scalar", (*_TILE, "variant"))), (_DATA,),
               texts=(("vector", (("variant", ("exact", "poly")),)),
                      ("scalar", (("variant", ("exact", "poly", "lut_nearest", "lut_linear")),))),
               cores=(("vector", _SPLIT_1D), ("scalar", _SPLIT_1D))),
        OpInfo("elementwise", ("n",), ("vector", "scalar"), ("fp32", "fp16", "bf16"),
               "elementwise", "add, mul, relu", (("vector", _TILE), ("scalar", _TILE)),
               (Option("kind", "choice", "add", ("add", "mul", "relu")), _DATA),
               cores=(("vector", _SPLIT_1D), ("scalar", _SPLIT_1D))),
        OpInfo("resize", ("n", "c", "h_in", "w_in", "h_out", "w_out"), ("vector",), ("fp32", "fp16"),
               "resize", "nearest / bilinear interpolation",
               (("vector", ("tile_h", "tile_w", "tile_c", "buffer_num", "cores")),),
               (Option("mode", "choice", "bilinear", ("nearest", "bilinear")),
                Option("layout", "choice", "NCHW", ("NCHW", "NHWC")),
                # PyTorch refuses align_corners with the non-interpolating nearest mode
                Option("align_corners", "bool", False, only_with=("mode", ("bilinear",)))),
               # runs of whole output tiles (resize._ntiles)
               cores=(("vector", CoreSplit("cores", ((("n",), None), (("c",), "tile_c"), (("h_out",), "tile_h"),
                                                     (("w_out",), "tile_w")))),),
               value_inputs=1,  # x; sizes is two integers
               shape_check="resize_sizing.shape_problem"),
        OpInfo("roi_align", ("n", "c", "h", "w", "rois", "pooled_h", "pooled_w"), ("vector",),
               ("fp32", "fp16"), "roi_align", "ROI Align with average pooling",
               (("vector", ("tile_rois", "tile_bins", "tile_c", "buffer_num", "cores")),),
               # torchvision's arguments, then the seeded ROI generator's: box sides log-uniform
               # in [roi_min, roi_max] of the image side
               # spatial_scale: feature side / image side; the ROI generator works in image
               # coordinates (feature side / scale), which must stay well inside float range
               (Option("spatial_scale", "number", 0.25, low=1e-6, high=1e6),
                # -1 (torchvision's default) or 0: adaptive, ceil(roi side / pooled side) per bin
                Option("sampling_ratio", "int", 2, low=-1, high=64, fits="roi_align_ub.sampling_ratio_fits"),
                Option("aligned", "bool", True),
                Option("roi_seed", "int", 0, low=0, high=2**32 - 1),
                Option("roi_min", "number", 0.05, low=0, high=1, low_open=True, at_most="roi_max"),
                Option("roi_max", "number", 0.5, low=0, high=1, low_open=True)),
               # runs of whole tiles (roi_align._ntiles)
               cores=(("vector", CoreSplit("cores", ((("rois",), "tile_rois"), (("pooled_h", "pooled_w"), "tile_bins"),
                                                     (("c",), "tile_c")))),),
               value_inputs=1,  # the features; the ROIs are coordinates, the pooled sizes integers
               shape_check="roi_align_ub.shape_problem"),
        OpInfo("replay", (), ("default",), ("fp32", "fp16", "bf16", "int8"),
               "", "any kernel with recorded measurements (backend: replay); dims from the shapes",
               # a spec param named cores is taken as the cores the measured kernel ran on
               cores=(("default", CoreSplit("cores")),)),
    )
}


def get(name: str) -> OpInfo:
    """Metadata of operator ``name``; KeyError names the valid ones."""
    try:
        return OPS[name]
    except KeyError:
        raise KeyError(f"unknown op {name!r}, expected one of {', '.join(OPS)}") from None


def implementation(name: str) -> ModuleType:
    """Import and return the kernel module of operator ``name``; an op without one (``replay``)
    is an input error, since only a spec can name it."""
    if not get(name).module:
        raise InputError(f"op {name!r} has no kernel to simulate: it can only be replayed from "
                         "its measurements (tune it with backend: replay)", field="op")
    return importlib.import_module(f"autotile.kernels.{get(name).module}")
