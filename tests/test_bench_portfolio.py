"""bench/portfolio.py: its landscapes stay runnable, and one that is not fails in one line."""

from __future__ import annotations

import json

import pytest

from autotile.tune import benchsearch
from bench import portfolio


@pytest.mark.parametrize("name", [n for n, v in portfolio.SIM_SPACES.items() if "matmul" in str(v[0])])
def test_matmul_landscapes_have_an_exhaustive_optimum(name, tmp_path):
    """bench-search simulates the whole space for the optimum: it must stay under the cap."""
    spec = portfolio._spec_for(name, tmp_path)
    (space,) = (spec.space(s, d, u) for s in spec.shapes for d in spec.dtypes for u in spec.units_for(d))
    assert space.count().feasible_size <= benchsearch.MAX_SIMULATED


def test_a_landscape_that_cannot_run_fails_in_one_line_and_the_rest_run(monkeypatch, capsys):
    monkeypatch.setattr(benchsearch, "MAX_SIMULATED", 10)
    rc = portfolio.main(["--seeds", "1", "--samplers", "random", "--landscapes", "matmul_128x1024x1024,bowl"])
    cap = capsys.readouterr()
    assert rc == 2
    assert "Traceback" not in cap.err
    (line,) = [ln for ln in cap.err.splitlines() if ln.startswith("matmul_128x1024x1024")]
    assert "not run" in line and "at most 10" in line
    out = json.loads(cap.out)
    assert list(out["failed"]) == ["matmul_128x1024x1024"]
    assert list(out["landscapes"]) == ["bowl"]


def test_an_unknown_landscape_is_one_line(capsys):
    assert portfolio.main(["--landscapes", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "unknown nope" in err


def test_the_portfolio_alone_is_measured_without_a_verdict(capsys):
    """No single sampler to compare with: no verdict (it used to fail on an empty max)."""
    assert portfolio.main(["--seeds", "1", "--samplers", "portfolio", "--landscapes", "bowl"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert "verdict" not in out and "portfolio" in out["landscapes"]["bowl"]["median_fraction"]
