"""Helpers for the table tests: a table built straight from a spec's default tilings (no tuning),
and what the header tests compile against."""

from __future__ import annotations

import subprocess
from pathlib import Path

from autotile.space import load_spec
from autotile.tables.schema import build_table

DATA = Path(__file__).resolve().parent / "data"
SMALL_SPEC = DATA / "matmul_small.yaml"
UNITS_SPEC = DATA.parent.parent / "studies" / "matmul_small.yaml"  # matmul on cube and vector

C_MAIN = r"""
#include <stdio.h>
#include "table.h"

/* stdin: "m n k dtype" lines; stdout: "index exact" (-1 0 when the lookup returns NULL) */
int main(void)
{
    long long m, n, k;
    int dtype, exact;
    while (scanf("%lld %lld %lld %d", &m, &n, &k, &dtype) == 4) {
        int64_t x[3];
        const autotile_matmul_entry *e;
        x[0] = m; x[1] = n; x[2] = k;
        e = autotile_matmul_lookup(x, dtype, &exact);
        printf("%d %d\n", e ? (int)(e - AUTOTILE_MATMUL_ENTRIES) : -1, e ? exact : 0);
    }
    return 0;
}
"""

STAND_IN = r"""
#pragma once
// Stand-ins for CANN's tiling macros: a class with set_/get_ per field that records the
// declaration order of its fields. The registration defines a global helper object, not static,
// as CANN's does (so a header registering in every file that includes it fails to link), whose
// constructor records the OpType in tiling_registrations().
#include <cstdint>
#include <string>
#include <vector>
#define BEGIN_TILING_DATA_DEF(name) class name { public: std::vector<std::string> names_;
#define TILING_DATA_FIELD_DEF(type, field) \
  private: type field##_ = 0; int reg_##field##_ = (names_.push_back(#field), 0); \
  public: void set_##field(type v) { field##_ = v; } type get_##field() const { return field##_; }
#define END_TILING_DATA_DEF }
inline std::vector<std::string> &tiling_registrations() { static std::vector<std::string> r; return r; }
#define REGISTER_TILING_DATA_CLASS(op, cls) \
  class op##cls##Helper { public: op##cls##Helper() { tiling_registrations().push_back(#op); } }; \
  op##cls##Helper g_tilingdata_##op##cls##helper;
"""


def region_edges(look, limit: int = 2**31 - 1) -> list[tuple[tuple[int, ...], str]]:
    """(shape, dtype) on and beside every region's box edges (lo - 1, lo, hi, hi + 1 along one
    dim, the others at the entry's shape), where the C and Python checks are likeliest to part."""
    out = []
    for e, r in zip(look.table.entries, look.regions):
        base = tuple(e.shape.values())
        for d in range(len(base)):
            for v in (r.lo[d] - 1, r.lo[d], r.hi[d], r.hi[d] + 1):
                if 1 <= v <= limit:
                    out.append((base[:d] + (v,) + base[d + 1:], e.dtype))
    return out


def inside(look, rng, count: int) -> list[tuple[tuple[int, ...], str]]:
    """``count`` (shape, dtype) drawn in random entries' regions: each dim log-uniform from ``lo``
    to ``hi`` or four times the entry's shape, whichever is smaller, redrawn (up to 50 times) until
    the region's core limit holds too; entries with an empty region are skipped."""
    live = [i for i, r in enumerate(look.regions) if all(lo <= hi for lo, hi in zip(r.lo, r.hi))]
    out = []
    for _ in range(count):
        i = rng.choice(live)
        e, r = look.table.entries[i], look.regions[i]
        for _ in range(50):
            tops = [max(lo, min(hi, 4 * v)) for lo, hi, v in zip(r.lo, r.hi, e.shape.values())]
            shape = tuple(min(top, int(lo * (top / lo) ** rng.random())) for lo, top in zip(r.lo, tops))
            if r.contains(shape):
                break
        out.append((shape, e.dtype))
    return out


def compile_ok(cmd, cwd):
    """Run a compiler command in ``cwd``; fail the test with its messages unless it succeeds."""
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


def default_table(spec_path=SMALL_SPEC, unit_of=None, verified=True) -> dict:
    """A table whose entries are the kernel's default tilings of every (shape, dtype) of the spec,
    on ``unit_of(shape, dtype)`` (default: the spec's first unit), marked ``verified`` (the table
    tests check lookup and export, not the gate: export warns of unverified entries)."""
    spec = load_spec(spec_path)
    results = []
    for shape in spec.shapes:
        for dtype in spec.dtypes:
            unit = unit_of(shape, dtype) if unit_of else spec.units[0]
            space = spec.space(shape, dtype, unit)
            params = space.default_tiling()
            assert space.check(params) is None, (shape, dtype, space.check(params))
            results.append({"shape": space.shape, "dtype": dtype, "unit": unit, "params": params,
                            "cycles": 1000.0, "time_us": 1.0, "pct_of_peak": 50.0, "verified": verified,
                            "study": f"test/{dtype}", "trial": 0, "chosen": True})
    return build_table(spec, {"results": results}, created="2026-01-01T00:00:00+00:00")


def ascendc_fill(cwd: Path, op_class: str, ndims: int, fields) -> Path:
    """Compile a program over ``tiling.h`` (in ``cwd``, with the CANN stand-in beside it) that reads
    lines of ``ndims`` sizes and a dtype code and prints, per line, ``none`` when no entry fits, else
    the TilingData's field names, blockDim and ``fields``' values; returns the executable."""
    (cwd / "register").mkdir(exist_ok=True)
    (cwd / "register" / "tilingdata_base.h").write_text(STAND_IN)
    dims = ", ".join(f"x{i}" for i in range(ndims))
    reads = ", ".join(f"&x{i}" for i in range(ndims))
    prints = "\n".join(f'        std::printf(" %d", (int)t.get_{f}());' for f in fields)
    (cwd / "main.cc").write_text(f"""
#include <cstdio>
#include "tiling.h"

int main()
{{
    long long {dims};
    int dtype;
    while (std::scanf("{' '.join(['%lld'] * ndims)} %d", {reads}, &dtype) == {ndims + 1}) {{
        const int64_t x[{ndims}] = {{{dims}}};
        optiling::{op_class}TilingData t;
        uint32_t blockDim = 0;
        if (optiling::{op_class}TilingFromTable(x, dtype, t, &blockDim) != 0) {{
            std::printf("none\\n");
            continue;
        }}
        for (const std::string &name : t.names_)
            std::printf("%s,", name.c_str());
        std::printf(" %u", blockDim);
{prints}
        std::printf("\\n");
    }}
    return 0;
}}
""")
    compile_ok(["g++", "-std=c++17", "-Wall", "-Wextra", "-Werror", "-I.", "main.cc", "-o", "fill"], cwd)
    return cwd / "fill"
