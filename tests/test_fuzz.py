"""Bad input never crashes and never leaves a partial file.

A hypothesis fuzz test mutates valid specs, hardware profiles, tiling tables and measurement files
and feeds them through the same entry point the CLI uses (``autotile.cli.run``), in-process:
every case must either succeed (exit 0) or exit 2 with exactly one line on stderr, and a failed
command must not leave its output file behind. 4 x 260 = 1,040 cases.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from autotile import cli
from autotile.hardware.profile import bundled_path

ROOT = Path(__file__).resolve().parents[1]
CASES = 260

SPEC = """op: matmul
hardware: ascend910b2
dtypes: [fp16]
units: [cube]
shapes:
  - {m: 64, k: 64, n: 64}
params:
  db_l0a: {type: int, low: 1, high: 2}
  db_l0b: {type: int, low: 1, high: 2}
  db_l0c: {type: int, low: 1, high: 2}
  base_m: {type: int, low: 16, high: "min(64, align_up(shape.m, 16))", multiple_of: 16}
  base_n: {type: int, low: 16, high: "min(64, align_up(shape.n, 16))", multiple_of: 16}
  base_k: {type: int, low: 16, high: 64, multiple_of: 16}
  single_core_m: {type: int, low: base_m, high: "align_up(shape.m, base_m)", multiple_of: base_m}
  single_core_n: {type: int, low: base_n, high: "align_up(shape.n, base_n)", multiple_of: base_n}
  single_core_k: {type: int, low: base_k, high: "align_up(shape.k, base_k)", multiple_of: base_k}
  step_m: {type: int, low: 1, high: 2}
  step_ka: {type: int, low: 1, high: 2}
  depth_a1: {type: int, low: "step_m * step_ka", high: "2 * step_m * step_ka", step: "step_m * step_ka"}
  step_n: {type: int, low: 1, high: 2}
  step_kb: {type: int, low: 1, high: 2}
  depth_b1: {type: int, low: "step_n * step_kb", high: "2 * step_n * step_kb", step: "step_n * step_kb"}
  iterate_order: {type: categorical, choices: [m_first, n_first]}
derived:
  l1: (depth_a1 * base_m * base_k + depth_b1 * base_k * base_n) * dtype.bytes
constraints:
  - {expr: "l1 <= hw.l1_bytes", message: "L1 overflows"}
  - {expr: "divides(step_ka, step_kb) or divides(step_kb, step_ka)", message: "steps"}
objective: cycles
budget: {trials: 5}
"""

CSV = """chip,op,dtype,m,k,n,elems,repeat,cycles,series
910b1,mmad,fp16,32,16,16,,,4.862,back_to_back
910b1,mmad,fp16,32,16,64,,,9.802,back_to_back
910b3,mmad,fp16,16,16,16,,,24.983,isolated
910b3,mmad,fp16,16,16,64,,,27.001,isolated
910b1,vadd,fp16_fp16_fp16,,,,128,1,6.058,vector
910b1,vadd,fp16_fp16_fp16,,,,1280,10,20.072,vector
910b1,vcadd,fp16_fp16,,,,256,2,14.1,vector
910b1,vexp,fp16_fp16,,,,512,4,15.638,vector
"""

TOKENS = [":", ": ", "-", "- ", "[", "]", "{", "}", ",", "'", '"', "\n", "  ", "\t", "#", "&a ", "*a", "!!python/object:os.system ",
          "!!binary ", "1e999", "-1", "0", "0.5", "null", "true", "nan", "__import__('os').system('id')", "().__class__",
          "hw.__dict__", "10**10**10", "shape.q", "min(", "\x00", "\u00e9", "99999999999999999999", "=", "\\", "%"]


@st.composite
def mutated(draw, text: str) -> str:
    """``text`` after 1-4 edits: delete a slice, insert tokens, swap two lines, or truncate."""
    for _ in range(draw(st.integers(1, 4))):
        n = len(text)
        kind = draw(st.sampled_from(["delete", "insert", "swap", "truncate", "replace_number"]))
        i = draw(st.integers(0, max(0, n - 1)))
        if kind == "delete":
            text = text[:i] + text[i + draw(st.integers(1, 12)):]
        elif kind == "insert":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[i:]
        elif kind == "swap":
            lines = text.split("\n")
            a, b = draw(st.integers(0, len(lines) - 1)), draw(st.integers(0, len(lines) - 1))
            lines[a], lines[b] = lines[b], lines[a]
            text = "\n".join(lines)
        elif kind == "truncate":
            text = text[:i]
        else:
            digits = [j for j, c in enumerate(text) if c.isdigit()]
            if digits:
                j = draw(st.sampled_from(digits))
                text = text[:j] + draw(st.sampled_from(["0", "-", "9999999", ".5", "e", ""])) + text[j + 1:]
    return text


def _check(code: int, err: str) -> None:
    assert code in (0, 2), (code, err)
    assert "Traceback" not in err
    if code == 2:
        assert err.count("\n") == 1 and err.startswith("autotile: error: "), err


def _run(capsys, *args) -> tuple[int, str]:
    code = cli.run(list(args))
    return code, capsys.readouterr().err


FUZZ = settings(max_examples=CASES, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@FUZZ
@given(mutated(SPEC))
def test_mutated_specs(capsys, tmp_path, text):
    path = tmp_path / "spec.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _check(*_run(capsys, "simulate", str(path), "--shape", "m=64,n=64,k=64", "--json"))


@FUZZ
@given(mutated(bundled_path("ascend910b2").read_text()))
def test_mutated_profiles(capsys, tmp_path, text):
    path = tmp_path / "profile.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _check(*_run(capsys, "hw", "show", str(path), "--json"))


@pytest.fixture(scope="module")
def table_text():
    from tablekit import default_table

    return json.dumps(default_table(), indent=1)


@FUZZ
@given(data=st.data())
def test_mutated_tables(capsys, tmp_path, table_text, data):
    text = data.draw(mutated(table_text))
    path = tmp_path / "table.json"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _check(*_run(capsys, "lookup", str(path), "--shape", "m=512,n=2048,k=256", "--json"))


@FUZZ
@given(mutated(CSV))
def test_mutated_measurements(capsys, tmp_path, text):
    path = tmp_path / "m.csv"
    out = tmp_path / "fitted.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    code, err = _run(capsys, "calibrate", "--hw", "ascend910b2", "--measurements", str(path), "-o", str(out), "--json")
    _check(code, err)
    if code != 0:
        assert not out.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    out.unlink(missing_ok=True)
