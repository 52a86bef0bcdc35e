"""A replay spec's ``cores`` is blockDim only when it counts cores: an int param whose values are
all >= 1. ``cores: [few, many]`` set blockDim to the enum code (0 for ``few``, a launch of no
core) and an int ``cores`` from 0 or -1 gave 0 or 2**32 - 1; such a header launches 1 core and
says so, as export does on stderr."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from tablekit import ascendc_fill

from autotile.cli import run as cli

SPEC = """\
op: {op}
shapes: [{{{dim}: 1024}}]
{extra}params:
  block: {{type: int, low: 16, high: 32, pow2: true}}
  cores: {cores}
objective: time_us
backend: replay
measurements: meas.csv
budget: {{trials: 8}}
"""


def _export(tmp_path, cores: str, values, capsys, op: str = "replay") -> tuple[str, str, int]:
    """Tune a replay spec whose fastest row has ``values[0]`` cores, export ascendc; returns
    (header, stderr, blockDim the header sets for the tuned shape: -1 without g++, or for a known
    op, whose kernel check leaves such entries no C region)."""
    dim, extra = ("x", "") if op == "replay" else ("n", "dtypes: fp16\nunits: vector\n")
    block = "tile_len" if op != "replay" else "block"
    rows = [f"{dim},{block},cores,time_us"] + [f"1024,{b},{c},{b + 10 * i}" for i, c in enumerate(values)
                                                for b in (16, 32)]
    (tmp_path / "meas.csv").write_text("\n".join(rows) + "\n")
    spec = SPEC.format(op=op, dim=dim, extra=extra, cores=cores).replace("block:", f"{block}:")
    if op != "replay":
        spec = spec.replace("params:\n", "params:\n  buffer_num: {type: fixed, value: 2}\n")
        (tmp_path / "meas.csv").write_text("\n".join(r.replace("time_us", "buffer_num,time_us") if i == 0 else
                                                     r.rsplit(",", 1)[0] + ",2," + r.rsplit(",", 1)[1]
                                                     for i, r in enumerate(rows)) + "\n")
    (tmp_path / "s.yaml").write_text(spec)
    assert cli(["tune", str(tmp_path / "s.yaml"), "--quiet", "--out", str(tmp_path / "r")]) == 0
    capsys.readouterr()
    assert cli(["export", str(tmp_path / "r"), "--format", "ascendc", "-o", str(tmp_path / "tiling.h")]) == 0
    err = capsys.readouterr().err
    header = (tmp_path / "tiling.h").read_text()
    if not shutil.which("g++") or op != "replay":
        return header, err, -1
    fill = ascendc_fill(tmp_path, "Replay", 1, [])
    out = subprocess.run([str(fill)], input="1024 0\n", capture_output=True, text=True, check=True).stdout
    return header, err, int(out.split()[1])


@pytest.mark.parametrize("cores, values, why", [
    ("{type: categorical, choices: [few, many]}", ["few", "many"], "param cores is categorical (few, many)"),
    ("{type: int, low: 0, high: 2}", [0, 1, 2], "param cores admits 0"),
    ("{type: int, low: -1, high: 1}", [-1, 0, 1], "param cores admits -1"),
    ("{type: categorical, choices: [0, 4]}", [0, 4], "param cores admits 0 (0, 4)"),
])
def test_a_cores_param_that_is_no_count_launches_one_core(tmp_path, capsys, cores, values, why):
    header, err, block_dim = _export(tmp_path, cores, values, capsys)
    assert "const int32_t used = (int32_t)(1);" in header and "p->cores" not in header.split("used =")[1][:40]
    assert f"sets *blockDim (1: {why}, not a count of cores)" in header
    assert f"autotile: warning: ascendc: blockDim is 1: {why}, not a count of cores" in err
    assert block_dim in (1, -1)


@pytest.mark.parametrize("cores, values, want", [
    ("{type: int, low: 1, high: 4}", [3, 1, 4], 3),
    ("{type: int, low: 1, high: 8, pow2: true}", [4, 1, 8], 4),
    ("{type: categorical, choices: [2, 6]}", [6, 2], 6),
])
def test_a_cores_count_is_blockdim(tmp_path, capsys, cores, values, want):
    header, err, block_dim = _export(tmp_path, cores, values, capsys)
    assert "const int32_t used = (int32_t)(p->cores);" in header and "blockDim is 1" not in err
    assert block_dim in (want, -1)


def test_a_known_op_replayed_with_text_cores_launches_one_core(tmp_path, capsys):
    """elementwise's split divides by cores: with enum codes it counted 0 cores (or divided by 0)."""
    header, err, block_dim = _export(tmp_path, "{type: categorical, choices: [few, many]}", ["few", "many"], capsys,
                                     op="elementwise")
    assert "const int32_t used = (int32_t)(1);" in header and "ElementwiseBusy(" not in header.split("used =")[1][:60]
    assert "blockDim is 1: param cores is categorical (few, many)" in err
    assert block_dim in (1, -1)
