"""Shared test helpers: the default profile, the calibration file, spec files, the CLI in-process."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from autotile import cli
from autotile.hardware import load_profile

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[1]
CSV = ROOT.parent / "shared" / "calibration" / "ascend910b_microops.csv"
MAX_DIM = 2**31 - 1  # the largest dimension a spec or --shape takes


def md_table(md: str, column: str) -> list[dict]:
    """The rows of the Markdown table that has ``column``, as {header: cell}."""
    lines = md.splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith("|") and f"| {column} |" in line)
    head = [c.strip() for c in lines[i].strip("|").split("|")]
    rows = []
    for line in lines[i + 2:]:
        if not line.startswith("|"):
            break
        rows.append(dict(zip(head, (c.strip() for c in line.strip("|").split("|")))))
    return rows


def peak_memory(fn):
    """(fn's result, the peak bytes Python and NumPy allocated while it ran)."""
    tracemalloc.start()
    try:
        out = fn()
        return out, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="session")
def hw():
    return load_profile("ascend910b2")


@pytest.fixture(scope="session")
def csv_path():
    if not CSV.exists():
        pytest.skip(f"calibration file {CSV} not present")
    return CSV


@pytest.fixture
def write_spec(tmp_path):
    """Write YAML text to ``tmp_path/spec.yaml`` and return its path as text."""

    def write(text: str, name: str = "spec.yaml") -> str:
        path = tmp_path / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    return write


@pytest.fixture
def run_cli(capsys):
    """Run ``autotile ARGS`` in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str):
        code = cli.run(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def pg_url():
    """A PostgreSQL URL: CI's server (AUTOTILE_TEST_PG), else a private throwaway one."""
    import os

    from pgserver import PgServer, pg_bin

    url = os.environ.get("AUTOTILE_TEST_PG")
    if url:
        yield url
        return
    if pg_bin() is None:
        pytest.skip("PostgreSQL is not installed (CI installs Debian's postgresql package)")
    server = PgServer().init().start()
    try:
        yield server.url
    finally:
        server.remove()


@pytest.fixture
def pg_private():
    """A private PostgreSQL server this test may stop and restart."""
    from pgserver import PgServer, pg_bin

    if pg_bin() is None:
        pytest.skip("PostgreSQL is not installed (CI installs Debian's postgresql package)")
    server = PgServer().init().start()
    try:
        yield server
    finally:
        server.remove()
