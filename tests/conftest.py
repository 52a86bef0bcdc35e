"""Shared test fixtures."""

import pytest

from autotile.hardware import load_profile


@pytest.fixture(scope="session")
def hw():
    return load_profile("ascend910b2")
