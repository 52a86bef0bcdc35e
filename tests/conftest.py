"""Shared fixtures: the default profile and the bundled calibration file."""

from pathlib import Path

import pytest

from autotile.hardware import load_profile

ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT.parent / "shared" / "calibration" / "ascend910b_microops.csv"


@pytest.fixture(scope="session")
def hw():
    return load_profile("ascend910b2")


@pytest.fixture(scope="session")
def csv_path():
    if not CSV.exists():
        pytest.skip(f"calibration file {CSV} not present")
    return CSV
