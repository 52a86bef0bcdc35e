"""Bool values in replayed measurements: a choice of bools (``[true, false]``) read a CSV cell
``true`` as no number (``m.csv:2:1: flag: expected a number ...``, exit 2), and 1 / 0 as numbers
that match no bool, so every trial was "not measured". A bool spelling YAML reads (true / false,
yes / no, on / off, any case) or 1 / 0 (also written 1.0 / 0.0, as a numeric export writes
a flag) is the bool; other text stays a one-line error."""

from __future__ import annotations

import pytest

from autotile.cli import run as cli
from autotile.errors import InputError
from autotile.space import load_spec
from autotile.tune.evaluate import make_evaluator

SPEC = """\
op: replay
shapes: [{{x: 64}}]
params:
  flag: {flag}
  block: {{type: int, low: 16, high: 32, pow2: true}}
objective: time_us
backend: replay
measurements: m.csv
budget: {{trials: 4}}
"""


def _space(tmp_path, cells: tuple[str, str], flag: str = "{type: categorical, choices: [true, false]}"):
    """A spec whose CSV has ``cells`` (for True, then False) in the flag column; True is faster."""
    rows = ["flag,block,time_us"] + [f"{c},{b},{b + 10 * i}" for i, c in enumerate(cells) for b in (16, 32)]
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "s.yaml").write_text(SPEC.format(flag=flag))
    return load_spec(tmp_path / "s.yaml").space({"x": 64})


@pytest.mark.parametrize("cells", [("true", "false"), ("True", "FALSE"), ("yes", "no"), ("On", "off"), ("1", "0"), ("1.0", "0.0"), (" 1e0", "-0")])
def test_bool_choices_read_bool_cells(tmp_path, cells):
    ev = make_evaluator(_space(tmp_path, cells), ("time_us",))
    for flag, want in ((True, 16), (False, 26)):
        out = ev.score({"flag": flag, "block": 16})
        assert out.feasible and out.values["time_us"] == pytest.approx(want), (flag, out.reason)


def test_bool_choices_beside_a_number_and_a_fixed_bool(tmp_path):
    ev = make_evaluator(_space(tmp_path, ("TRUE", "4"), "{type: categorical, choices: [true, 4]}"), ("time_us",))
    assert ev.score({"flag": True, "block": 32}).values["time_us"] == pytest.approx(32)
    assert ev.score({"flag": 4, "block": 32}).values["time_us"] == pytest.approx(42)
    rows = ["flag,block,time_us", "yes,16,5", "yes,32,6"]
    (tmp_path / "m.csv").write_text("\n".join(rows) + "\n")
    (tmp_path / "s.yaml").write_text(SPEC.format(flag="{type: fixed, value: true}"))
    ev = make_evaluator(load_spec(tmp_path / "s.yaml").space({"x": 64}), ("time_us",))
    assert ev.score({"flag": True, "block": 16}).values["time_us"] == pytest.approx(5)


def test_bool_choices_tune_from_the_csv(tmp_path, capsys):
    _space(tmp_path, ("true", "false"))
    assert cli(["tune", str(tmp_path / "s.yaml"), "--quiet", "--out", str(tmp_path / "r")]) == 0
    assert cli(["lookup", str(tmp_path / "r"), "--shape", "x=64", "--json"]) == 0
    assert '"flag": true' in capsys.readouterr().out


@pytest.mark.parametrize("flag, cell, want", [
    ("{type: categorical, choices: [true, false]}", "maybe", "expected true or false for parameter flag, got 'maybe'"),
    ("{type: categorical, choices: [true, 4]}", "maybe", "expected true, false or a number for parameter flag"),
    ("{type: categorical, choices: [2, 4]}", "true", "expected a number for parameter flag, got 'true'"),
    ("{type: bool}", "maybe", "expected true or false, got 'maybe'"),
])
def test_other_text_is_a_one_line_error(tmp_path, capsys, flag, cell, want):
    with pytest.raises(InputError, match=rf"m\.csv:2:1: flag: {want}"):
        make_evaluator(_space(tmp_path, (cell, cell), flag), ("time_us",))
    assert cli(["tune", str(tmp_path / "s.yaml"), "--quiet", "--out", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and want in err
