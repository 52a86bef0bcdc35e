"""A lookup's shape takes NumPy integers (a shape read off ``.shape`` or ``.size``:
``np.int64(4096)`` was refused as "expected positive integers for n") and names the dims it
lacks or should not have (a missing w_out got that same wording, in Python and ``autotile lookup``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from tablekit import default_table

from autotile.cli import run as cli
from autotile.errors import InputError
from autotile.tables.lookup import Lookup, lookup

STUDIES = Path(__file__).resolve().parents[1] / "studies"
UP = {"n": 1, "c": 4, "h_in": 8, "w_in": 8, "h_out": 16, "w_out": 16}
DOWN = {"n": 1, "c": 4, "h_in": 16, "w_in": 16, "h_out": 8, "w_out": 8}


def _spec(tmp_path, name: str, shapes: str, dtypes: str = "[fp16]", inputs: str | None = None) -> Path:
    text = (STUDIES / name).read_text()
    text = re.sub(r"(?m)^dtypes: .*$", f"dtypes: {dtypes}", text)
    text = re.sub(r"(?m)^shapes:( \[.*\])?\n(?:  - .*\n)*", f"shapes: {shapes}\n", text)
    if inputs is not None:
        text = re.sub(r"(?m)^inputs: \{.*\}", f"inputs: {inputs}", text)
    spec = tmp_path / name
    spec.write_text(text)
    return spec


def _flow(d: dict) -> str:
    return "{" + ", ".join(f"{k}: {v}" for k, v in d.items()) + "}"


@pytest.fixture(scope="module")
def resize_table(tmp_path_factory):
    return default_table(_spec(tmp_path_factory.mktemp("r"), "resize.yaml", f"[{_flow(UP)}, {_flow(DOWN)}]"))


def test_lookup_takes_numpy_integers(resize_table):
    got = lookup(resize_table, {k: np.int64(v) for k, v in UP.items()}, "fp16")
    assert got == lookup(resize_table, UP, "fp16") and got.match == "exact"
    assert all(type(v) is int for v in got.shape.values())
    json.dumps(got.to_json())  # np.int64 is not JSON
    look = Lookup(resize_table)
    assert look.find({**UP, "n": np.uint8(1)}).match == "exact"
    for bad, said in (({**UP, "n": True}, "n=True"), ({**UP, "c": np.float64(4)}, "c=np.float64(4.0)"),
                      ({**UP, "w_out": 0}, "w_out=0")):
        with pytest.raises(InputError, match=rf"^shape: expected positive integers for n, c, h_in, w_in, h_out, "
                                             rf"w_out, got {re.escape(said)}$"):
            look.find(bad)


def test_lookup_names_missing_and_unknown_dims(resize_table, tmp_path, capsys):
    look = Lookup(resize_table)
    dims = r"\(a resize table's dims: n, c, h_in, w_in, h_out, w_out\)$"
    with pytest.raises(InputError, match=r"^shape: missing h_out, w_out; unknown h, w " + dims):
        look.find({"n": 1, "c": 4, "h_in": 8, "w_in": 8, "h": 16, "w": 16})
    with pytest.raises(InputError, match=r"^shape: unknown k " + dims):
        look.find({**UP, "k": 3})
    path = tmp_path / "table.json"
    path.write_text(json.dumps(resize_table))
    assert cli(["lookup", str(path), "--shape", "n=1,c=4,h_in=8,w_in=8,h_out=16"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("shape: missing w_out (a resize table's dims: n, c, h_in, w_in, h_out, w_out)"), err
    assert "\n" not in err and "Traceback" not in err
