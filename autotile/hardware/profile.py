"""The hardware profile: a frozen description of one chip, loaded strictly from YAML.

Every constant in a profile file is a mapping ``{value: X, source: "..."}`` or
``{value: X, calibrated: "..."}`` so a reader can always tell where a number came from.
Adding a chip means adding a YAML file; the simulator never changes for it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from autotile.errors import InputError
from autotile.hardware.ops import (
    KERNEL_SCALAR_OPS,
    KERNEL_VECTOR_OPS,
    SCALAR_MEMORY_OPS,
    SCALAR_OPS,
    VECTOR_OPS,
    signature_problem,
)
from autotile.yamlsrc import Located, load_file, suggest

SCHEMA = "autotile.hardware/1"
DEFAULT_PROFILE = "ascend910b2"
COPY_PATHS = ("gm_ub", "ub_gm", "gm_l1", "gm_l0a", "gm_l0b", "l1_l0a", "l1_l0b", "l0c_gm", "l0c_l1", "ub_ub")
CUBE_DTYPES = ("fp16", "bf16", "fp32", "int8")  # fp16 required; a chip without one of the others leaves it out
BUFFERS = ("l1", "l0a", "l0b", "l0c", "ub")


@dataclass(frozen=True)
class CopyPath:
    """One data path of a core's memory engines (MTE1/MTE2/MTE3/FixPipe).

    A copy of B bytes keeps its pipe busy ``issue_cycles + B / bytes_per_cycle`` and its data is
    usable ``latency_cycles`` after that (the latency overlaps other work on the same pipe).
    """

    bytes_per_cycle: float
    issue_cycles: float
    latency_cycles: float


@dataclass(frozen=True)
class VectorCost:
    """One vector instruction of ``repeat`` repeats costs ``max(min_cycles, startup + per_repeat * repeat)``."""

    startup: float
    per_repeat: float
    min_cycles: float


@dataclass(frozen=True)
class CubeCosts:
    """Cube (M pipe) costs: MACs per cycle by dtype, per-Mmad issue cost and pipeline latency."""

    macs_per_cycle: dict
    issue_cycles: float
    latency_cycles: float


@dataclass(frozen=True)
class HardwareProfile:
    """A chip. Sizes are bytes, rates are bytes per cycle, times are cycles of ``clock_ghz``."""

    name: str
    description: str
    cube_cores: int
    vector_cores: int
    clock_ghz: float
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    ub_bytes: int
    l2_bytes: int
    hbm_bytes_per_cycle: float  # whole chip
    l2_read_bytes_per_cycle: float  # per core
    l2_write_bytes_per_cycle: float  # per core
    align: dict  # buffer -> bytes granule
    copy: dict  # path -> CopyPath
    cube: CubeCosts
    vector_bytes_per_repeat: int
    vector_max_repeat: int
    vector: dict  # op -> {dtype signature -> VectorCost}
    scalar: dict  # op -> cycles per operation
    notes: dict = field(default_factory=dict, compare=False)  # constant path -> source note
    # constant path -> (path it follows, scale): a profile's declared "same rate as" / "half of"
    derived: dict = field(default_factory=dict, compare=False)
    path: str | None = field(default=None, compare=False)

    # -- derived figures -------------------------------------------------------------
    def symbols(self) -> dict[str, float | int]:
        """The ``hw.`` namespace of spec expressions."""
        return {
            "l1_bytes": self.l1_bytes,
            "l0a_bytes": self.l0a_bytes,
            "l0b_bytes": self.l0b_bytes,
            "l0c_bytes": self.l0c_bytes,
            "ub_bytes": self.ub_bytes,
            "l2_bytes": self.l2_bytes,
            "cube_cores": self.cube_cores,
            "vector_cores": self.vector_cores,
            "clock_ghz": self.clock_ghz,
        }

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes the chip holds: its cube's (``macs_per_cycle``) and those in any vector
        signature. The 910A and 310P have no bf16, so their profiles name it nowhere."""
        sigs = {d for table in self.vector.values() for sig in table for d in sig.split("_")}
        return tuple(d for d in ("fp32", "fp16", "bf16", "int8") if d in self.cube.macs_per_cycle or d in sigs)

    def dtype_problem(self, unit: str | None, dtype: str) -> str | None:
        """Why ``unit`` of this chip (None: the chip as a whole) cannot compute in ``dtype`` (None
        when it can): the chip lacks the dtype, or the cube has no rate for it."""
        if dtype not in self.dtypes:
            return f"{self.name} has no {dtype} (its dtypes: {', '.join(self.dtypes)})"
        if unit == "cube" and dtype not in self.cube.macs_per_cycle:
            return (f"the cube of {self.name} has no {dtype} rate (cube.macs_per_cycle: "
                    f"{', '.join(self.cube.macs_per_cycle)})")
        return None

    def vector_compute_dtype(self, dtype: str) -> str:
        """The dtype the Vector unit does ``dtype``'s arithmetic in: ``dtype`` itself when the
        profile costs a VADD in it, else fp32 when it costs the VCONVs to and from fp32 (the
        910B's vector converts bf16 but has no bf16 arithmetic), else ``dtype`` (no arithmetic).

        >>> load_profile("ascend910b2").vector_compute_dtype("bf16")
        'fp32'
        """
        if _sig3(dtype) in self.vector.get("vadd", {}):
            return dtype
        conv = self.vector.get("vconv", {})
        if f"{dtype}_fp32" in conv and f"fp32_{dtype}" in conv:
            return "fp32"
        return dtype

    def peak_flops(self, unit: str, dtype: str) -> float:
        """Whole-chip peak FLOP/s (2 per MAC) of ``unit`` for ``dtype``: the fastest rate any of
        its arithmetic instructions sustains, so no kernel can exceed it.

        The vector peak is the best of ``VECTOR_FLOPS`` over the profile's costs (on the 910B2 a
        VADDS or VMULS repeat, ~1 cycle; a VMLA takes 6, so a peak taken from it was a third of
        what simple instructions reach), in the dtype the arithmetic runs in
        (``vector_compute_dtype``): bf16 reaches the fp32 rate, 64 lanes a repeat, not twice
        fp16's. The scalar peak is one ALU op a cycle and core at the cheapest ALU op a kernel
        issues (``scalar_alu_cycles``): every scalar kernel issues at least one ALU op for each
        useful FLOP it is credited, and its loads and stores issue beside them. A peak of one add
        or multiply a cycle let a table sigmoid of compares priced at 0.25 reach 130% of it.
        """
        if unit == "cube":
            return 2.0 * self.cube.macs_per_cycle[dtype] * self.cube_cores * self.clock_ghz * 1e9
        if unit == "vector":
            cd = self.vector_compute_dtype(dtype)
            lanes = self.vector_bytes_per_repeat // max(1, _dtype_bytes(cd))
            rates = [flops / cost.per_repeat for op, flops in VECTOR_FLOPS.items()
                     if (cost := self.vector.get(op, {}).get(_sig3(cd))) is not None and cost.per_repeat > 0]
            per_lane = max(rates) if rates else 2.0  # no arithmetic costed for this dtype: one multiply-add a cycle
            return per_lane * lanes * self.vector_cores * self.clock_ghz * 1e9
        if unit == "scalar":
            return 1.0 / self.scalar_alu_cycles * self.vector_cores * self.clock_ghz * 1e9
        raise KeyError(f"unknown unit {unit!r}")

    @property
    def scalar_alu_cycles(self) -> float:
        """Cycles of the cheapest scalar ALU op the kernels issue (``KERNEL_SCALAR_OPS`` less the
        loads and stores, which issue beside ALU work): the scalar peak's rate."""
        costs = [self.scalar[op] for op in KERNEL_SCALAR_OPS if op not in SCALAR_MEMORY_OPS and op in self.scalar]
        return min(costs) if costs else 1.0

    @property
    def hbm_bytes_per_second(self) -> float:
        return self.hbm_bytes_per_cycle * self.clock_ghz * 1e9

    def gb_per_s(self, bytes_per_cycle: float) -> float:
        """GB/s of a rate in bytes per cycle at this profile's clock."""
        return round(bytes_per_cycle * self.clock_ghz, 1)

    def content_hash(self) -> str:
        """sha256 of the profile's values (not its notes): models and tables record it."""
        data = asdict(self)
        data.pop("notes", None)
        data.pop("derived", None)
        data.pop("path", None)
        data.pop("description", None)
        blob = json.dumps(data, sort_keys=True, default=str).encode()
        return hashlib.sha256(blob).hexdigest()[:16]

    @property
    def shipped(self) -> bool:
        """Whether this is a bundled profile as shipped: its name's file, with the same values."""
        return is_shipped(self.name, self.content_hash())

    @property
    def label(self) -> str:
        """The profile as headers name it: see :func:`label_of`."""
        return label_of(self.name, self.content_hash())

    @property
    def reference(self) -> str:
        """The profile as messages and ``--hw`` name it: a bundled profile as shipped by its name,
        any other by its file when it has one (an edited copy keeps the bundled name, so the
        name would be the shipped chip), else by its label."""
        if self.shipped:
            return self.name
        return self.path or self.label

    def summary(self) -> dict[str, Any]:
        """The `autotile hw show --json` view."""
        return {
            "name": self.name,
            "description": self.description,
            "cube_cores": self.cube_cores,
            "vector_cores": self.vector_cores,
            "clock_ghz": self.clock_ghz,
            "l1_bytes": self.l1_bytes,
            "l0a_bytes": self.l0a_bytes,
            "l0b_bytes": self.l0b_bytes,
            "l0c_bytes": self.l0c_bytes,
            "ub_bytes": self.ub_bytes,
            "l2_bytes": self.l2_bytes,
            "hbm_gb_per_s": round(self.hbm_bytes_per_second / 1e9, 1),
            # rates are given per cycle: their GB/s follow clock_ghz (RATES_NOTE)
            "l2_gb_per_s_per_core": {"read": self.gb_per_s(self.l2_read_bytes_per_cycle),
                                     "write": self.gb_per_s(self.l2_write_bytes_per_cycle)},
            "copy_gb_per_s_per_core": {p: self.gb_per_s(c.bytes_per_cycle) for p, c in self.copy.items()},
            "peak_tflops_fp16_cube": round(self.peak_flops("cube", "fp16") / 1e12, 1),
            "content_hash": self.content_hash(),
            "path": self.path,
        }


RATES_NOTE = ("HBM, L2 and copy rates are bytes per cycle: GB/s = bytes/cycle x clock_ghz, so changing "
              "clock_ghz alone changes them too (2x the clock, 2x the HBM GB/s); scale the rates to keep them")

# FLOPs per lane of the vector instructions that do arithmetic (a multiply-add counts 2)
VECTOR_FLOPS = {"vadd": 1, "vsub": 1, "vmul": 1, "vadds": 1, "vmuls": 1, "vmla": 2, "vaxpy": 2}


def _dtype_bytes(dtype: str) -> int:
    return {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}.get(dtype, 2)


def _sig3(dtype: str) -> str:
    return f"{dtype}_{dtype}_{dtype}"


# -- loading -------------------------------------------------------------------------------

def bundled_names() -> list[str]:
    """Names of the profiles shipped in this package."""
    root = resources.files("autotile.hardware")
    return sorted(p.name[:-5] for p in root.iterdir() if p.name.endswith(".yaml"))


def bundled_path(name: str) -> Path:
    return Path(str(resources.files("autotile.hardware").joinpath(f"{name}.yaml")))


def is_shipped(name: str, content_hash: str | None) -> bool:
    """Whether a profile called ``name`` whose values hash to ``content_hash`` is the bundled
    profile of that name as shipped (None: a hash not recorded, taken on the name's word)."""
    if name not in bundled_names():
        return False
    return content_hash is None or load_profile(name).content_hash() == content_hash


def file_placeholder(name: str, content_hash: str | None) -> str:
    """What a command passes as ``--hw`` for a profile whose file is not known (a table holds its
    values, not its path): the file to give, said plainly, since its name would load another
    profile or none."""
    return f"<the file of profile {name}" + (f" (content hash {content_hash})>" if content_hash else ">")


def label_of(name: str, content_hash: str | None) -> str:
    """How headers name a profile: a bundled one as shipped by its name, any other as
    ``<name>-<first 8 hex digits of its content hash>`` (the folder its models live in), so an
    edited copy that keeps the name ``ascend910b2`` never reads as the shipped chip.

    >>> label_of("ascend910b2", load_profile("ascend910b2").content_hash())
    'ascend910b2'
    >>> label_of("ascend910b2", "0123456789abcdef")
    'ascend910b2-01234567'
    """
    if is_shipped(name, content_hash) or not content_hash:
        return name
    return f"{name}-{content_hash[:8]}"


_CACHE: dict[tuple[str, float], HardwareProfile] = {}


def load_profile(name_or_path: str | None = None) -> HardwareProfile:
    """Load a bundled profile by name, or a profile file by path (validated strictly).

    >>> load_profile("ascend910b2").cube_cores
    24
    """
    ref = DEFAULT_PROFILE if name_or_path is None else name_or_path
    if not str(ref).strip():  # an empty --hw was taken for the default profile
        raise InputError(f"expected a hardware profile name ({', '.join(bundled_names())}) or a profile "
                         "file's path, got ''")
    if ref in bundled_names():
        path = bundled_path(ref)
    else:
        path = Path(ref)
        if not (path.suffix in (".yaml", ".yml") or path.exists()):
            raise InputError(
                f"unknown hardware profile {ref!r}, expected a bundled name "
                f"({', '.join(bundled_names())}) or a path to a profile file"
                + suggest(ref, bundled_names())
            )
    try:
        key = (str(path.resolve()), path.stat().st_mtime)
    except OSError:
        key = None
    if key and key in _CACHE:
        return _CACHE[key]
    prof = parse_profile(load_file(path))
    if key:
        _CACHE[key] = prof
    return prof


_NEEDED = {("vector", "ops"): " (the kernels use it)", ("scalar",): " (the kernels use it)"}


def profile_error(hw: HardwareProfile, path: tuple, message: str) -> InputError:
    """An InputError located at ``path`` in ``hw``'s file (its field alone if it has none)."""
    if hw.path:
        try:
            return load_file(hw.path).error(path, message)
        except InputError:
            pass
    return InputError(message, file=hw.path or hw.name, field=".".join(map(str, path)))


@dataclass(frozen=True)
class Bound:
    """The values a profile constant may take: ``lo`` (excluded when ``lo_open``) to ``hi``.

    Every constant is bounded so a typo cannot reach the simulator: 3 bytes per vector repeat made
    0 fp32 lanes (ZeroDivisionError), 10**20 overflowed Numba's int64 (TypingError) and a
    max_repeat of 10**20 made the instruction split loop run for ever. The bundled profiles sit
    well inside every range (tests/test_profiles.py checks it).
    """

    lo: float
    hi: float
    lo_open: bool = False
    multiple: int = 1

    def problem(self, v, kind) -> str | None:
        """What is wrong with ``v`` (already a finite number of ``kind``), or None."""
        below = v <= self.lo if self.lo_open else v < self.lo
        if below or v > self.hi or (self.multiple > 1 and v % self.multiple):
            return f"expected {self.describe(kind)}, got {v!r}"
        return None

    def describe(self, kind) -> str:
        hi = _bound_text(self.hi)
        if kind is int:
            what = f"an integer multiple of {self.multiple}" if self.multiple > 1 else "an integer"
            return f"{what} from {self.lo:g} to {hi}"
        if self.lo_open:
            return f"a number above {self.lo:g} and at most {hi}"
        return f"a number from {self.lo:g} to {hi}"


def _bound_text(x: float) -> str:
    """4096, 2**40, 1e9: a bound as a reader would write it."""
    if x >= 2**16 and x == int(x) and int(x).bit_count() == 1:
        return f"2**{int(x).bit_length() - 1}"
    if x >= 1e6 and float(f"{x:.0e}") == x:
        return f"{x:.0e}".replace("e+0", "e").replace("e+", "e")
    return f"{x:g}"


CORES = Bound(1, 4096)  # cube and vector cores
CLOCK = Bound(0.01, 100)  # GHz: cycles are divided by it
BYTES = Bound(1, 2**40)  # buffer and cache sizes
ALIGN = Bound(1, 2**20)  # address granule of a buffer
RATE = Bound(1e-3, 2**20)  # bytes per cycle: copies are divided by it
CYCLES = Bound(0, 1e9)  # issue, latency, startup and floor cycles
COST = Bound(0, 1e9, lo_open=True)  # cycles per repeat or per scalar operation
MACS = Bound(1, 2**24)  # cube MACs per cycle
REPEAT_BYTES = Bound(32, 4096, multiple=32)  # vector bytes per repeat: whole 32 B blocks
MAX_REPEAT = Bound(1, 65535)  # repeats per vector instruction


DERIVED_SCALE = Bound(0, 1e6, lo_open=True)  # a derived constant's multiple of the one it follows
# how far a derived constant's written number may lie from its rule's (rounding, not a second
# estimate): 1% of it, or 0.01 cycles for a number below 1. A bf16 rate left at 4096 under an fp16
# edited to 2048 ("same rate as fp16") ran bf16 1.6x faster than fp16 with no word at load.
DERIVED_TOL = 0.01
VECTOR_NUMBERS = ("startup", "per_repeat", "min_cycles")


def follow_value(value, scale: float):
    """``scale`` times the value of the constant a derived one follows, as the derived one takes
    it: a cube rate in whole MACs per cycle (at least 1), a vector cost's three numbers to 4
    decimals (what ``calibrate -o`` writes)."""
    if isinstance(value, VectorCost):
        return VectorCost(*(round(getattr(value, n) * scale, 4) for n in VECTOR_NUMBERS))
    return max(1, int(round(value * scale)))


def _off_rule(written: float, rule: float) -> bool:
    return abs(written - rule) > DERIVED_TOL * max(1.0, abs(rule))


class _Reader:
    """Strict reading of a profile document, collecting source notes and declared relations
    (``derived``) as it goes."""

    def __init__(self, doc: Located):
        self.doc = doc
        self.notes: dict[str, str] = {}
        self.derived: dict[tuple, tuple] = {}

    def relation(self, path, prefix: tuple) -> None:
        """The optional ``derived: {from: PATH, scale: X}`` of the constant at ``path``: its value
        is ``scale`` (default 1) times the constant at PATH, one of the same kind (under
        ``prefix``), so ``calibrate -o`` moves it with a refit of that one. Whether PATH exists
        is checked once the whole profile is read (``check_relations``)."""
        node = self._get(path)
        if "derived" not in node:
            return
        where = path + ("derived",)
        rel = self.mapping(where, ["from"], ["scale"])
        src = rel["from"]
        parts = tuple(src.split(".")) if isinstance(src, str) else ()
        if parts[:len(prefix)] != prefix or len(parts) != len(path):
            raise self.doc.error(where + ("from",), f"expected the dotted path of a constant like this one "
                                                    f"({'.'.join(prefix)}.<...>), got {src!r}")
        scale = self.number(where + ("scale",), DERIVED_SCALE) if "scale" in rel else 1.0
        self.derived[path] = (parts, scale)

    def check_relations(self, present) -> None:
        """Every ``derived.from`` names another constant the profile has, itself not derived."""
        for path, (src, _) in self.derived.items():
            where = path + ("derived", "from")
            if src == path or not present(src):
                raise self.doc.error(where, f"expected another constant of this profile, got {'.'.join(src)!r}")
            if src in self.derived:
                raise self.doc.error(where, f"{'.'.join(src)} is itself derived: expected the constant it follows")

    def apply_relations(self, cube: dict, vector: dict) -> None:
        """Set every derived constant to its rule's value (``follow_value``) in ``cube`` (the
        MAC rates) and ``vector`` (op -> signature -> cost), refusing a written value that lies
        off the rule by more than ``DERIVED_TOL``: the file names one relation, so the profile
        keeps it, and an edit to the source alone is an error, not a silent contradiction."""
        def get(path):
            return cube[path[2]] if path[0] == "cube" else vector[path[2]][path[3]]

        for path, (src, scale) in self.derived.items():
            rule, written = follow_value(get(src), scale), get(path)
            pairs = ([(n, getattr(written, n), getattr(rule, n)) for n in VECTOR_NUMBERS]
                     if isinstance(rule, VectorCost) else [("value", written, rule)])
            for name, w, r in pairs:
                if _off_rule(w, r):
                    src_v = get(src) if name == "value" else getattr(get(src), name)
                    times = f" x {scale:g}" if scale != 1 else ""
                    of = "" if name == "value" else f"'s {name}"
                    raise self.doc.error(path + (name,), (
                        f"expected {r:g} ({'.'.join(src)}{of} = {src_v:g}{times}, its derived: rule), got {w:g}; edit it "
                        f"with the constant it follows, or drop its derived: if it is its own estimate"))
            if path[0] == "cube":
                cube[path[2]] = rule
            else:
                vector[path[2]][path[3]] = rule

    def mapping(self, path, keys_required, keys_optional=()):
        value = self._get(path)
        if not isinstance(value, dict):
            raise self.doc.error(path, "expected a mapping")
        allowed = set(keys_required) | set(keys_optional)
        for k in value:
            if k not in allowed:
                raise self.doc.error(
                    path + (k,), "unknown key" + suggest(k, sorted(allowed)), key=True
                )
        for k in keys_required:
            if k not in value:
                raise self.doc.error(path, f"missing key {k!r}" + _NEEDED.get(path, ""))
        return value

    def _get(self, path):
        v = self.doc.value
        for p in path:
            v = v[p]
        return v

    def const(self, path, bound: Bound, kind=float, extra=()):
        """A ``{value, source|calibrated}`` constant at ``path``."""
        node = self._get(path)
        if not isinstance(node, dict):
            raise self.doc.error(
                path, "expected a constant {value: ..., source: '...'} or {value: ..., calibrated: '...'}"
            )
        self.mapping(path, ["value"], ["source", "calibrated", *extra])
        if "derived" in extra:
            self.relation(path, path[:-1])
        notes = [k for k in ("source", "calibrated") if k in node]
        if len(notes) != 1:
            raise self.doc.error(path, "every constant needs exactly one of source: or calibrated:")
        note = node[notes[0]]
        if not isinstance(note, str) or not note.strip():
            raise self.doc.error(path + (notes[0],), "expected a non-empty note")
        self.notes[".".join(map(str, path))] = f"{notes[0]}: {note}"
        return self.number(path + ("value",), bound, kind)

    def number(self, path, bound: Bound, kind=float):
        v = self._get(path)
        if kind is bool:
            if not isinstance(v, bool):
                raise self.doc.error(path, "expected true or false")
            return v
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.doc.error(path, f"expected a {'whole ' if kind is int else ''}number, got {v!r}")
        if kind is int and (not isinstance(v, int)):
            raise self.doc.error(path, f"expected a whole number, got {v!r}")
        if v != v or v in (float("inf"), float("-inf")):
            raise self.doc.error(path, "expected a finite number")
        problem = bound.problem(v, kind)
        if problem:
            raise self.doc.error(path, problem)
        return kind(v)


def _vector_ops(r: _Reader) -> dict:
    """``vector.ops``: instructions from the catalogue (``ops.VECTOR_OPS``), each with its dtype
    signatures; every one the kernels use must be there."""
    doc = r.doc
    ops_node = r.mapping(("vector", "ops"), KERNEL_VECTOR_OPS, [o for o in VECTOR_OPS if o not in KERNEL_VECTOR_OPS])
    vector = {}
    for op, sigs in ops_node.items():
        if not isinstance(sigs, dict) or not sigs:
            raise doc.error(("vector", "ops", op), "expected a mapping of dtype signatures to costs")
        vector[op] = {}
        for sig, node in sigs.items():
            path = ("vector", "ops", op, sig)
            problem = signature_problem(op, sig)
            if problem:
                raise doc.error(path, problem, key=True)
            r.mapping(path, ["startup", "per_repeat", "min_cycles"], ["source", "calibrated", "derived"])
            r.relation(path, ("vector", "ops"))
            if sum(k in node for k in ("source", "calibrated")) != 1:
                raise doc.error(path, "every constant needs exactly one of source: or calibrated:")
            note_key = "source" if "source" in node else "calibrated"
            r.notes[".".join(path)] = f"{note_key}: {node[note_key]}"
            vector[op][sig] = VectorCost(
                r.number(path + ("startup",), CYCLES),
                r.number(path + ("per_repeat",), COST),
                r.number(path + ("min_cycles",), CYCLES),
            )
    return vector


def _check_schema(doc: Located) -> None:
    """The schema line first: another kind of file (a study spec given to ``hw show``) is named
    as such, not reported by its first key a profile lacks (``op: unknown key``)."""
    schema = doc.value.get("schema")
    if schema == SCHEMA:
        return
    got = "none" if schema is None else repr(schema)
    what = "" if isinstance(schema, str) and schema.startswith("autotile.hardware/") else (
        ": not a hardware profile" + (" (a study spec, by its op: key)" if "op" in doc.value else ""))
    line, col = doc.where(("schema",)) if schema is not None else (1, 1)
    raise InputError(f"expected {SCHEMA!r}, got {got}{what}", file=doc.file, line=line, col=col, field="schema")


def parse_profile(doc: Located) -> HardwareProfile:
    """Validate a loaded profile document and build the profile."""
    r = _Reader(doc)
    if not isinstance(doc.value, dict):
        raise InputError("expected a hardware profile mapping", file=doc.file, line=1, col=1)
    _check_schema(doc)
    top = r.mapping((), ["schema", "name", "chip", "memory", "align", "copy", "cube", "vector", "scalar"], ["description"])
    name = top["name"]
    if not isinstance(name, str) or not name:
        raise doc.error(("name",), "expected a profile name")
    description = top.get("description", "")
    if not isinstance(description, str):
        raise doc.error(("description",), "expected text")

    r.mapping(("chip",), ["cube_cores", "vector_cores", "clock_ghz"])
    mem_keys = [f"{b}_bytes" for b in (*BUFFERS, "l2")] + [
        "hbm_bytes_per_cycle", "l2_read_bytes_per_cycle", "l2_write_bytes_per_cycle"]
    r.mapping(("memory",), mem_keys)
    r.mapping(("align",), list(BUFFERS))
    r.mapping(("copy",), list(COPY_PATHS))
    copies = {}
    for p in COPY_PATHS:
        r.mapping(("copy", p), ["bytes_per_cycle", "issue_cycles", "latency_cycles"])
        copies[p] = CopyPath(
            r.const(("copy", p, "bytes_per_cycle"), RATE),
            r.const(("copy", p, "issue_cycles"), CYCLES),
            r.const(("copy", p, "latency_cycles"), CYCLES),
        )
    r.mapping(("cube",), ["macs_per_cycle", "issue_cycles", "latency_cycles"])
    macs = r.mapping(("cube", "macs_per_cycle"), ["fp16"], CUBE_DTYPES[1:])
    cube = CubeCosts(
        {d: r.const(("cube", "macs_per_cycle", d), MACS, int, extra=("derived",)) for d in CUBE_DTYPES if d in macs},
        r.const(("cube", "issue_cycles"), CYCLES),
        r.const(("cube", "latency_cycles"), CYCLES),
    )
    r.mapping(("vector",), ["bytes_per_repeat", "max_repeat", "ops"])
    vector = _vector_ops(r)
    scalar_node = r.mapping(("scalar",), KERNEL_SCALAR_OPS, [o for o in SCALAR_OPS if o not in KERNEL_SCALAR_OPS])
    scalar = {op: r.const(("scalar", op), COST) for op in scalar_node}
    r.check_relations(lambda src: (src[:2] == ("cube", "macs_per_cycle") and src[2] in cube.macs_per_cycle)
                      or (src[:2] == ("vector", "ops") and src[3] in vector.get(src[2], {})))
    r.apply_relations(cube.macs_per_cycle, vector)

    prof = HardwareProfile(
        name=name,
        description=description,
        cube_cores=r.const(("chip", "cube_cores"), CORES, int),
        vector_cores=r.const(("chip", "vector_cores"), CORES, int),
        clock_ghz=r.const(("chip", "clock_ghz"), CLOCK),
        **{f"{b}_bytes": r.const(("memory", f"{b}_bytes"), BYTES, int) for b in (*BUFFERS, "l2")},
        hbm_bytes_per_cycle=r.const(("memory", "hbm_bytes_per_cycle"), RATE),
        l2_read_bytes_per_cycle=r.const(("memory", "l2_read_bytes_per_cycle"), RATE),
        l2_write_bytes_per_cycle=r.const(("memory", "l2_write_bytes_per_cycle"), RATE),
        align={b: r.const(("align", b), ALIGN, int) for b in BUFFERS},
        copy=copies,
        cube=cube,
        vector_bytes_per_repeat=r.const(("vector", "bytes_per_repeat"), REPEAT_BYTES, int),
        vector_max_repeat=r.const(("vector", "max_repeat"), MAX_REPEAT, int),
        vector=vector,
        scalar=scalar,
        notes=r.notes,
        derived=r.derived,
        path=doc.file,
    )
    if prof.vector_cores < prof.cube_cores:
        raise doc.error(("chip", "vector_cores"), "expected at least as many vector cores as cube cores")
    return prof
