"""Enumeration and counting against a brute-force pure-Python reference.

Each case gives a spec and, written independently of the package, the box of candidate values
per param plus predicates for "inside the declared domains" (raw) and "feasible". The reference
walks itertools.product over the box.
"""

from __future__ import annotations

import itertools

import pytest

from autotile.space import load_spec
from tests.conftest import DATA, ROOT


def _pow2(v, lo, hi):
    return lo <= v <= hi and v & (v - 1) == 0


def _small_raw(p, s, dtype):
    c0 = {"fp16": 16, "fp32": 8}[dtype]
    return (p["base_m"] % 16 == 0 and 16 <= p["base_m"] <= min(64, -(-s["m"] // 16) * 16)
            and p["base_n"] in (16, 32, 48, 64)
            and ("base_k" not in p or _pow2(p["base_k"], c0, 64)))


def _small_feasible(p, s, dtype):
    l0c = p["base_m"] * p["base_n"] * 4 * (2 if p["db"] else 1)
    return (_small_raw(p, s, dtype) and l0c <= 16384
            and ("base_k" not in p or p["base_k"] * p["split"] <= 64)
            and ((p["base_n"] // 16) % p["split"] == 0 or p["split"] == 1))


SMALL_BOX = {"base_m": range(0, 81, 8), "base_n": range(0, 81, 8), "base_k": range(1, 80),
             "split": [1, 2, 3], "order": ["m_first", "n_first"], "db": [False, True]}

DEPENDENT = """
op: elementwise
shapes: [{n: 40}, {n: 7}]
params:
  a: {type: int, low: 1, high: 6}
  b: {type: int, low: a, high: "min(12, shape.n // 2)", multiple_of: a}
  c: {type: int, low: "a + 1", high: "a * b", pow2: true}
  d: {type: int, low: 0, high: "b - a", step: "max(1, a // 2)"}
  e: {type: int, low: 1, high: 9, where: "divides(e, b) or divides(b, e)"}
derived:
  total: a * b + c - d
constraints:
  - {expr: "total <= 30", message: "too big"}
  - {expr: "c % 4 != 2 or d == 0", message: "c=2 mod 4 needs d=0"}
  - {expr: "b / a >= 1.5 or e > 2", message: "ratio"}
"""


def _dep_raw(p, s, dtype=None):
    a, b, c, d, e = (p[k] for k in "abcde")
    return (1 <= a <= 6 and a <= b <= min(12, s["n"] // 2) and b % a == 0
            and _pow2(c, a + 1, a * b) and 0 <= d <= b - a and d % max(1, a // 2) == 0
            and 1 <= e <= 9 and (b % e == 0 or e % b == 0))


def _dep_feasible(p, s, dtype=None):
    a, b, c, d, e = (p[k] for k in "abcde")
    return (_dep_raw(p, s) and a * b + c - d <= 30 and (c % 4 != 2 or d == 0)
            and (b / a >= 1.5 or e > 2))


DEP_BOX = {"a": range(0, 8), "b": range(0, 14), "c": [0, 1, 2, 3, 4, 6, 8, 12, 16, 32, 64, 65],
           "d": range(0, 13), "e": range(0, 11)}


def _reference(space, box, raw_pred, feas_pred):
    names = [n for n in box if n in space.names]
    fixed = {p.name: p.choices[0] for p in space.params if getattr(p, "kind", "") == "fixed"}
    raw, feasible = 0, set()
    for values in itertools.product(*(box[n] for n in names)):
        p = dict(zip(names, values), **fixed)
        if raw_pred(p, space.shape, space.dtype):
            raw += 1
            ok = feas_pred(p, space.shape, space.dtype)
            assert (space.check(p) is None) == ok, (p, space.check(p))
            if ok:
                feasible.add(tuple(p[n] for n in space.names))
        else:
            assert space.check(p) is not None, p
    return raw, feasible


def _cases():
    small = load_spec(DATA / "small.yaml")
    for shape in small.shapes:
        for dtype in small.dtypes:
            for unit in small.units:
                yield pytest.param(small.space(shape, dtype, unit), SMALL_BOX, _small_raw,
                                   _small_feasible, id=f"small-{shape['m']}-{dtype}-{unit}")


@pytest.fixture(scope="module")
def dependent(tmp_path_factory):
    path = tmp_path_factory.mktemp("dep") / "dep.yaml"
    path.write_text(DEPENDENT)
    return load_spec(path)


@pytest.mark.parametrize("space,box,raw_pred,feas_pred", list(_cases()))
def test_small_spec_counts_match_brute_force(space, box, raw_pred, feas_pred):
    raw, feasible = _reference(space, box, raw_pred, feas_pred)
    count = space.count()
    assert (count.raw_size, count.feasible_size, count.method) == (raw, len(feasible), "exact")
    enum = space.enumerate()
    got = {tuple(enum.row(i)[n] for n in space.names) for i in range(len(enum))}
    assert got == feasible and len(enum) == len(feasible)


@pytest.mark.parametrize("shape_index", [0, 1])
def test_dependent_bounds_match_brute_force(dependent, shape_index):
    space = dependent.space(dependent.shapes[shape_index])
    raw, feasible = _reference(space, DEP_BOX, _dep_raw, _dep_feasible)
    assert 0 < len(feasible) < raw
    count = space.count()
    assert (count.raw_size, count.feasible_size, count.method) == (raw, len(feasible), "exact")
    enum = space.enumerate()
    assert {tuple(enum.row(i)[n] for n in space.names) for i in range(len(enum))} == feasible


def test_top_constraint_is_the_one_failing_most_raw_points(dependent):
    space = dependent.space(dependent.shapes[0])
    points = [dict(zip(DEP_BOX, v)) for v in itertools.product(*DEP_BOX.values())]
    raw = [p for p in points if _dep_raw(p, space.shape)]
    rules = {"too big": lambda p: p["a"] * p["b"] + p["c"] - p["d"] <= 30,
             "c=2 mod 4 needs d=0": lambda p: p["c"] % 4 != 2 or p["d"] == 0,
             "ratio": lambda p: p["b"] / p["a"] >= 1.5 or p["e"] > 2}
    fails = {msg: sum(not rule(p) for p in raw) for msg, rule in rules.items()}
    best = max(fails, key=fails.get)
    count = space.count()
    assert (count.top_constraint, count.top_removes) == (best, fails[best])


def test_sampled_count_brackets_the_exact_one(dependent):
    space = dependent.space(dependent.shapes[0])
    exact = space.count()
    sampled = space.count(max_rows=2, samples=20_000, seed=1)
    assert sampled.method == "sampled" and sampled.samples == 20_000
    lo, hi = sampled.ci95
    assert lo <= exact.feasible_size <= hi
    assert abs(sampled.raw_size - exact.raw_size) / exact.raw_size < 0.1
    assert sampled.top_constraint == exact.top_constraint


def test_enumerate_decodes_text_choices_and_keeps_derived():
    spec = load_spec(DATA / "small.yaml")
    enum = spec.enumerate(spec.shapes[0], "fp16", "cube")
    assert enum.decoders == {"order": ("m_first", "n_first")}
    assert set(enum.columns["order"].tolist()) == {0, 1}
    row = enum.row(0)
    assert row["order"] in ("m_first", "n_first") and "l0c" not in row
    env = spec.evaluate(row, spec.shapes[0], "fp16", "cube")
    assert enum.columns["l0c"][0] == env["l0c"]


def test_enumerate_refuses_a_space_too_large(dependent):
    from autotile.errors import InputError

    with pytest.raises(InputError, match="more than 5 rows to enumerate"):
        dependent.space(dependent.shapes[0]).enumerate(max_rows=5)


def test_domain_follows_earlier_params(dependent):
    space = dependent.space(dependent.shapes[0])
    assert list(space.domain("b", {"a": 3})) == [3, 6, 9, 12]
    assert space.domain("c", {"a": 3, "b": 6}) == [4, 8, 16]
    assert space.domain("e", {"a": 3, "b": 6}) == [1, 2, 3, 6]
    assert list(space.domain("b", {"a": 7})) == [7]
    assert list(dependent.space(dependent.shapes[1]).domain("b", {"a": 4})) == []


def test_domain_names_the_params_it_reads_that_are_missing(dependent):
    """The docstring's and README's domain("base_k", {"base_m": 128, "db_l0a": 2}) raised a bare
    KeyError 'db_l0b' from the expression evaluator."""
    from autotile.errors import InputError

    with pytest.raises(InputError, match=r"^missing params: a \(the domain of b reads them\)$"):
        dependent.space(dependent.shapes[0]).domain("b", {})
    space = load_spec(ROOT / "studies" / "matmul.yaml").space({"m": 1024, "n": 2048, "k": 512}, "fp16", "cube")
    with pytest.raises(InputError, match=r"^missing params: db_l0b, base_n "):
        space.domain("base_k", {"base_m": 128, "db_l0a": 2})
    assert space.domain("base_k", {"db_l0a": 2, "db_l0b": 2, "base_m": 128, "base_n": 128}) == range(16, 129, 16)


def test_the_readme_python_api_snippet_runs(monkeypatch):
    """Every line of README's Python API block: it had a `...` placeholder, an undefined
    ``params`` and an enumerate() of a 4e11-configuration space, past the 4,000,000-row limit."""
    readme = (ROOT / "README.md").read_text()
    block = readme.split("### Python API\n\n```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    env: dict = {}
    exec(compile(block, "README.md", "exec"), env)
    assert len(env["small"].enumerate()) > 0 and env["space"].check(env["params"]) is None


def test_check_names_the_param_or_constraint_and_the_numbers(dependent):
    space = dependent.space(dependent.shapes[0])
    assert space.check({"a": 3, "b": 5, "c": 4, "d": 0, "e": 1}) == (
        "b=5 outside its domain [3, 6, 9, 12]")
    assert space.check({"a": 2, "b": 12, "c": 16, "d": 2, "e": 4}) == (
        "too big (total <= 30 with total=38)")
    assert space.check({"a": 2, "b": 4, "c": 4, "d": 0, "e": 4}) is None


def test_matmul_buffers_hold_in_every_enumerated_config():
    spec = load_spec(ROOT / "studies" / "matmul.yaml")
    shape = {"m": 64, "n": 64, "k": 64}
    enum = spec.enumerate(shape)
    hw = spec.hardware
    c = enum.columns
    assert len(enum) == spec.count(shape).feasible_size > 0
    assert (c["base_m"] * c["base_k"] * 2 * c["db_l0a"] <= hw.l0a_bytes).all()
    assert (c["base_m"] * c["base_n"] * 4 * c["db_l0c"] <= hw.l0c_bytes).all()
    l1 = (c["depth_a1"] * c["base_m"] * c["base_k"] + c["depth_b1"] * c["base_k"] * c["base_n"]) * 2
    assert (l1 <= hw.l1_bytes).all()
    ka, kb = c["step_ka"], c["step_kb"]
    assert ((ka % kb == 0) | (kb % ka == 0)).all()


def test_matmul_define_by_run_suggestions_are_mostly_feasible():
    """What a tuner sees before it learns anything: each param drawn uniformly from its domain
    given the params above it. Fewer than 20% of such configs may be infeasible."""
    import random

    spec = load_spec(ROOT / "studies" / "matmul.yaml")
    rng = random.Random(0)
    for shape in spec.shapes:
        space = spec.space(shape)
        infeasible = 0
        for _ in range(400):
            params: dict = {}
            for name in space.names:
                domain = space.domain(name, params)
                assert len(domain) > 0, (shape, name, params)
                params[name] = domain[rng.randrange(len(domain))]
            infeasible += space.check(params) is not None
        assert infeasible / 400 < 0.2, shape


def test_merging_keeps_counts_exact_far_beyond_the_row_limit(write_spec):
    """About 1e8 raw points, never more than 100,000 rows: after each step, rows that later
    steps cannot tell apart (same min(10, a * b % 7 + 1), same d % 13 + 1, ...) are merged."""
    spec = load_spec(write_spec(
        "op: elementwise\nshapes: [{n: 1}]\nparams:\n"
        "  a: {type: int, low: 1, high: 300}\n  b: {type: int, low: 1, high: 300}\n"
        "  c: {type: int, low: 1, high: \"min(10, a * b % 7 + 1)\"}\n"
        "  d: {type: int, low: 1, high: c * 30}\n"
        "  e: {type: int, low: 1, high: d % 13 + 1}\n"
        "constraints:\n  - {expr: \"(c + e) % 4 != 0\", message: \"c + e divisible by 4\"}\n"))

    def below(c, keep):  # points (d, e) under a given c, written out independently
        return sum(1 for d in range(1, 30 * c + 1) for e in range(1, d % 13 + 2) if keep(c, e))

    raw_c = {c: below(c, lambda c, e: True) for c in range(1, 11)}
    feas_c = {c: below(c, lambda c, e: (c + e) % 4 != 0) for c in range(1, 11)}
    tops = [min(10, a * b % 7 + 1) for a in range(1, 301) for b in range(1, 301)]
    raw = sum(raw_c[c] for t in tops for c in range(1, t + 1))
    feasible = sum(feas_c[c] for t in tops for c in range(1, t + 1))
    count = spec.space(spec.shapes[0]).count(max_rows=100_000)
    assert raw > 5e7
    assert (count.method, count.raw_size, count.feasible_size) == ("exact", raw, feasible)
    assert count.top_removes == raw - feasible


@pytest.mark.parametrize("dom, text", [
    ([1, 2, 3, 4, 6, 8, 12, 16, 24, 48], "[1, 2, 3, 4, 6, 8, 12, 16, 24, 48]"),  # divisors: in full
    ([1, 2, 4, 8, 16, 32, 64], "[1, 2, 4, 8, 16, 32, 64]"),
    ([2**i for i in range(13)], "[1, 2, 4, ..., 4096] (13 values)"),
    (list(range(16, 257, 16)), "[16, 32, 48, ..., 256] (16 values)"),
    ([d for d in range(1, 721) if 720 % d == 0], "[1, 2, 3, 4, 5, ..., 360, 720] (30 values)"),
    ([], "(empty)"),
])
def test_describe_shows_the_domain_pattern(dom, text):
    from autotile.space.space import describe

    assert describe(dom) == text


@pytest.mark.parametrize("c", [3, 2048, 65536])
def test_a_where_domain_that_reads_no_param_is_filtered_once(c):
    """roi_align's tile_c (powers of two, and c) is filtered by a ``where``: per row of tile_rois
    x tile_bins that was up to 980 x 19,660 tests (14 x 14 bins), past the 5e6 limit, so counting a wide map
    failed. Its counts are those of the plain powers of two, plus c's own configurations when c
    is not one (c=3: tile_c=3)."""
    spec = load_spec(str(ROOT / "studies" / "roi_align.yaml"))
    text = (ROOT / "studies" / "roi_align.yaml").read_text()
    text = text.replace('high: "min(shape.c, hw.ub_bytes // (5 * dtype.bytes))"', 'high: "shape.c"')
    text = text.replace('where: "is_pow2(tile_c) or tile_c == shape.c"', "pow2: true")
    from autotile.space import load_spec_text

    pow2 = load_spec_text(text, "roi_pow2.yaml")
    shape = {"n": 1, "c": c, "h": 100, "w": 152, "rois": 512, "pooled_h": 14, "pooled_w": 14}
    got, old = spec.space(shape, "fp16").count(), pow2.space(shape, "fp16").count()
    assert got.method == old.method == "exact"
    extra = int((spec.space(shape, "fp16").enumerate().columns["tile_c"] == 3).sum()) if c == 3 else 0
    assert got.feasible_size == old.feasible_size + extra and (extra > 0) == (c == 3)


SPARSE = """
op: sigmoid
hardware: ascend910b2
dtypes: [fp16]
units: [vector]
shapes: [{{n: 2147483647}}]
inputs: {{data: gm}}
params:
  tile_len: {{type: int, low: 16, high: {high}}}
  buffer_num: {{type: int, low: 1, high: 4}}
  cores: {{type: int, low: 1, high: 20}}
  variant: {{type: categorical, choices: [exact, poly]}}
constraints:
  - {{expr: "2 * buffer_num * tile_len * dtype.bytes <= hw.ub_bytes", message: tiles fit in UB}}
seed: 0
"""


def test_sampled_count_with_no_feasible_sample_still_bounds_the_feasible_size(write_spec):
    """~1e-5 of this space is feasible: no sample hit it and the normal interval said 0..0,
    though narrowing tile_len to where the constraint lets it reach counts millions exactly."""
    sparse = load_spec(write_spec(SPARSE.format(high='"shape.n"')))
    space = sparse.space(sparse.shapes[0])
    count = space.count()
    assert (count.method, count.raw_exact, count.feasible_samples) == ("sampled", True, 0)
    exact = load_spec(write_spec(SPARSE.format(high=49152), "narrow.yaml"))
    exact = exact.space(exact.shapes[0]).count()
    assert exact.method == "exact" and exact.feasible_size > 0
    lo, hi = count.ci95
    assert lo == 0 and exact.feasible_size <= hi
    assert hi <= 4 * count.raw_size / count.samples  # Wilson: ~3.84 / samples of the raw size


def test_sampled_count_with_every_sample_feasible_is_not_a_point(write_spec):
    """Every path feasible: the normal interval was raw..raw."""
    spec = load_spec(write_spec(SPARSE.format(high=49152).replace(
        "2 * buffer_num * tile_len * dtype.bytes <= hw.ub_bytes", "tile_len >= 16")))
    space = spec.space(spec.shapes[0])
    count = space.count(max_rows=1, samples=2_000)
    assert count.method == "sampled" and count.feasible_samples == count.samples
    lo, hi = count.ci95
    assert lo < hi == count.raw_size == space.count().feasible_size
