"""The replay backend: score configurations by looking up recorded measurements.

A spec with ``backend: replay`` and ``measurements: FILE`` (CSV or Kernel Tuner cache, see
:mod:`autotile.tune.measurements`) is tuned offline: constraints are checked first as always,
then the configuration is looked up. A configuration absent from the file, recorded as failed,
or over one of the spec's ``limits`` (the reason text is the simulator backend's), is infeasible
(with the reason), never a crash. A limit on a metric the file has no column for is a spec error.

Objective values of a measured configuration: ``time_us``; ``cycles``, the file's ``cycles``
metric or else the time at the hardware profile's clock (nominal for kernels of other devices,
but ordered like the time); and every numeric metric of the file under its own name.

``rows(spec)`` gives the measurements as a dataset, the way the models (unit selector, cost
regressor) train and evaluate on recorded data.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

from autotile.errors import InputError
from autotile.space.space import Space
from autotile.tune import measurements
from autotile.tune.evaluate import Evaluator, Outcome, config_key, over_limit
from autotile.tune.naming import shape_text


@dataclass(frozen=True)
class Measured:
    """The result of a replayed configuration (what ``Outcome.result`` holds)."""

    time_us: float
    cycles: float
    metrics: dict = field(default_factory=dict)
    source: str = ""  # "file: line 12"


@dataclass(frozen=True)
class Row:
    """One measured configuration of one space of a replay spec (a dataset row)."""

    shape: dict
    dtype: str
    unit: str
    params: dict
    time_us: float | None  # None when the configuration failed
    cycles: float | None
    metrics: dict
    failure: str | None = None

    def value(self, objective: str) -> float | None:
        """The row's value of an objective (time_us, cycles or a metric); None if it has none."""
        if objective == "time_us":
            return self.time_us
        if objective == "cycles":
            return self.cycles
        return self.metrics.get(objective)


def values_of(record: measurements.Record, clock_ghz: float) -> dict:
    """Objective values of a measured record: time_us, cycles and the file's metrics."""
    cycles = record.metrics.get("cycles", record.time_us * clock_ghz * 1e3)
    return {**record.metrics, "time_us": record.time_us, "cycles": float(cycles)}


def check_columns(spec) -> None:
    """A located spec error for a limit on a metric no measurement of ``spec``'s file records
    (it would cap nothing, so every configuration would pass it silently)."""
    if not spec.limits:
        return
    m = measurements.load(spec)
    have = set().union(*(r.metrics for r in m.records)) | {"time_us", "cycles"}
    for metric, _ in spec.limits:
        if metric not in have:
            raise spec.error_at(f"limits.{metric}", f"the measurements ({m.file}) have no column {metric!r} "
                                                    f"to cap (they have {', '.join(sorted(have))})")


def index(space: Space) -> dict[str, measurements.Record]:
    """The records of ``space`` (matching its shape, dtype and unit) by configuration key."""
    m = measurements.load(space.spec)
    names = space.names
    out: dict[str, measurements.Record] = {}
    for r in m.records:
        if not _applies(r.context, space):
            continue
        if any(r.params.get(n) is None for n in names):
            continue
        key = config_key({n: r.params[n] for n in names})
        if key in out:
            raise InputError(
                f"{out[key].where} and {r.where} record the same configuration of "
                f"{_where(space)}; if another column is a parameter, declare it in the spec",
                file=m.file)
        out[key] = r
    return out


def _applies(context: dict, space: Space) -> bool:
    for k, v in context.items():
        want = space.dtype if k == "dtype" else space.unit if k == "unit" else space.shape.get(k)
        if v != want:
            return False
    return True


def _where(space: Space) -> str:
    return f"shape {shape_text(space.shape)}, dtype {space.dtype}, unit {space.unit}"


class ReplayEvaluator(Evaluator):
    """Scores configurations of one space from recorded measurements (``backend: replay``)."""

    def __init__(self, space: Space, objectives: tuple[str, ...] = ("cycles",)):
        self.space = space
        self.objectives = tuple(objectives)
        self.hw = space.spec.hardware
        self.cache: dict[str, Outcome] = {}
        self.simulated = 0  # lookups of configurations not seen before
        self.file = str(space.spec.measurements)
        self.records = index(space)
        if not self.records:
            raise InputError(f"no measurements for {_where(space)}", file=self.file)
        check_columns(space.spec)
        have = set().union(*(r.metrics for r in self.records.values())) | {"time_us", "cycles"}
        for o in self.objectives:
            if o not in have:
                raise InputError(f"objective {o}: the measurements have no column {o!r} "
                                 f"(they have {', '.join(sorted(have))})", file=self.file)

    def score(self, params: dict) -> Outcome:
        """Constraints, then the lookup; values are normalized first (``1.0`` is ``1``)."""
        return super().score({k: measurements.norm(v) for k, v in params.items()})

    def _simulate(self, params: dict) -> Outcome:
        self.simulated += 1
        r = self.records.get(config_key({n: params[n] for n in self.space.names}))
        if r is None:
            return Outcome(params, False, f"not measured (absent from {self.file})")
        if r.time_us is None:
            return Outcome(params, False, f"measured as failed: {r.failure} ({r.where})")
        values = values_of(r, self.hw.clock_ghz)
        missing = [o for o in self.objectives if o not in values]
        if missing:
            return Outcome(params, False, f"no {missing[0]} recorded ({r.where})")
        res = Measured(r.time_us, values["cycles"], dict(r.metrics), f"{self.file}: {r.where}")
        reason = over_limit(values, dict(self.space.spec.limits), r.where)
        if reason is not None:
            return Outcome(params, False, reason, values, res)
        return Outcome(params, True, None, values, res)


def space_rows(space: Space, *, include_failed: bool = False) -> Iterator[Row]:
    """The measured configurations of one space that its constraints and ``limits`` allow, as
    dataset rows (a row over a limit is left out as the tuner prunes it)."""
    clock = space.spec.hardware.clock_ghz
    limits = dict(space.spec.limits)
    check_columns(space.spec)
    for r in index(space).values():
        params = {n: r.params[n] for n in space.names}
        if space.check(params) is not None:
            continue
        if r.time_us is None:
            if include_failed:
                yield Row(space.shape, space.dtype, space.unit, params, None, None, dict(r.metrics),
                          r.failure)
            continue
        values = values_of(r, clock)
        if over_limit(values, limits) is not None:
            continue
        cycles = values["cycles"]
        yield Row(space.shape, space.dtype, space.unit, params, r.time_us, cycles, dict(r.metrics))


def rows(spec, *, include_failed: bool = False) -> Iterator[Row]:
    """Every measured configuration of every (shape, dtype, unit) space of replay ``spec``
    that the spec's constraints and limits allow, as dataset rows (failed ones too on request, with
    ``time_us`` None and the ``failure``). The models train and evaluate on these.

    >>> spec = load_spec("examples/kt_gemm.yaml")  # doctest: +SKIP
    >>> [(r.params, r.time_us) for r in rows(spec)][:1]  # doctest: +SKIP
    [({'block_size_x': 16, ...}, 812.5)]
    """
    _require_replay(spec)
    for shape in spec.shapes:
        for dtype in spec.dtypes:
            for unit in spec.units_for(dtype):
                yield from space_rows(spec.space(shape, dtype, unit), include_failed=include_failed)


def optimum(space: Space, objective: str = "cycles") -> tuple[dict, float, int]:
    """(params, value, count) of the best valid measurement of ``space`` and how many there are."""
    _require_replay(space.spec)
    scored = [(r.params, r.value(objective)) for r in space_rows(space)]
    scored = [(p, v) for p, v in scored if v is not None]
    if not scored:
        raise InputError(f"no valid measurement for {_where(space)}", file=str(space.spec.measurements))
    params, value = min(scored, key=lambda pv: pv[1])
    return params, value, len(scored)


def _require_replay(spec) -> None:
    if spec.backend != "replay":
        raise InputError("expected a spec with backend: replay", file=spec.file, field="backend")
