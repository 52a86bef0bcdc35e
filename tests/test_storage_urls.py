"""--storage URLs that cannot work are refused up front, as one line with exit 2 (tune and report)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from autotile.atomic import OutputError
from autotile.tune.storage import JOURNAL_NAME, make_storage

ROOT = Path(__file__).resolve().parents[1]
TINY = str(ROOT / "tests" / "data" / "mm_tiny.yaml")


def _report_dir(tmp_path: Path) -> Path:
    """An output folder with a minimal summary (the storage is checked before anything renders)."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "summary.json").write_text(json.dumps({"op": "matmul", "results": []}))
    return run


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


def test_journal_in_a_missing_folder_is_bad_input(run_cli, tmp_path):
    url = f"journal:{tmp_path / 'nod' / 'j.journal'}"
    code, _, err = run_cli("tune", TINY, "--storage", url, "--out", str(tmp_path / "o"), "--quiet")
    assert code == 2 and _one_line(err)
    assert str(tmp_path / "nod" / "j.journal") in err and "does not exist" in err
    assert not (tmp_path / "nod").exists() and not (tmp_path / "o" / "summary.json").exists()


@pytest.mark.parametrize("cmd", ["tune", "report"])
@pytest.mark.parametrize("path", ["folder", ""])
def test_journal_that_names_no_file_is_bad_input(run_cli, tmp_path, cmd, path):
    url = f"journal:{tmp_path}" if path else "journal:"
    args = (TINY, "--out", str(tmp_path / "o"), "--quiet") if cmd == "tune" else (str(_report_dir(tmp_path)),)
    code, _, err = run_cli(cmd, *args, "--storage", url)
    assert code == 2 and _one_line(err) and url in err
    assert "cannot open the journal file" in err if path else "expected journal:FILE" in err


def test_default_journal_that_cannot_open_is_an_output_error(tmp_path):
    (tmp_path / JOURNAL_NAME).mkdir()
    with pytest.raises(OutputError, match=JOURNAL_NAME):
        make_storage(None, tmp_path)


@pytest.mark.parametrize("url", ["sqlite://", "sqlite:///", "sqlite:///:memory:"])
@pytest.mark.parametrize("cmd", ["tune", "report"])
def test_a_storage_that_keeps_nothing_is_refused(run_cli, tmp_path, url, cmd):
    args = (TINY, "--out", str(tmp_path / "o"), "--quiet") if cmd == "tune" else (str(_report_dir(tmp_path)),)
    code, _, err = run_cli(cmd, *args, "--storage", url)
    assert code == 2 and _one_line(err)
    assert "in-memory" in err and "expected sqlite:///FILE" in err
    assert not (tmp_path / "o" / "summary.json").exists() and not (tmp_path / "run" / "report.html").exists()


def test_a_file_sqlite_url_still_opens(tmp_path):
    storage = make_storage(f"sqlite:///{tmp_path / 's.db'}", tmp_path)
    assert storage is not None and (tmp_path / "s.db").exists()
