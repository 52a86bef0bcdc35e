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
    (run / "summary.json").write_text(json.dumps({"schema": "autotile.summary/1", "op": "matmul", "results": []}))
    return run


def _one_line(err: str) -> bool:
    return err.count("\n") == 1 and "Traceback" not in err


def test_journal_in_a_missing_folder_is_bad_input(run_cli, tmp_path):
    url = f"journal:{tmp_path / 'nod' / 'j.journal'}"
    code, _, err = run_cli("tune", TINY, "--storage", url, "--out", str(tmp_path / "o"), "--quiet")
    assert code == 2 and _one_line(err)
    assert str(tmp_path / "nod" / "j.journal") in err and "does not exist" in err
    assert not (tmp_path / "nod").exists() and not (tmp_path / "o" / "summary.json").exists()


@pytest.mark.parametrize("under", ["afile", "afile/sub"])
def test_journal_under_a_file_says_it_is_not_a_folder(run_cli, tmp_path, under):
    """It said "the folder .../afile does not exist" of a regular file."""
    (tmp_path / "afile").write_text("")
    url = f"journal:{tmp_path / under / 'x.journal'}"
    code, _, err = run_cli("tune", TINY, "--storage", url, "--out", str(tmp_path / "o"), "--quiet")
    assert code == 2 and _one_line(err), err
    assert f"({tmp_path / 'afile'} is not a folder)" in err and "does not exist" not in err
    assert (tmp_path / "afile").read_text() == "" and not (tmp_path / "o").exists()


@pytest.mark.parametrize("named", [False, True])
def test_a_lock_that_is_a_folder_is_named_and_no_journal_is_made(run_cli, tmp_path, named):
    """A folder in the place of ``studies.journal.lock`` was reported as the journal being a
    directory, and an empty journal was left behind."""
    folder = tmp_path / "j" if named else tmp_path / "o"
    journal = folder / JOURNAL_NAME
    (folder / f"{JOURNAL_NAME}.lock").mkdir(parents=True)
    storage = ("--storage", f"journal:{journal}") if named else ()
    code, _, err = run_cli("tune", TINY, *storage, "--out", str(tmp_path / "o"), "--quiet")
    assert code == (2 if named else 1) and _one_line(err), err
    assert f"{journal}.lock: Is a directory" in err if named else f"{journal}.lock: cannot open" in err
    assert "lock file" in err and not journal.exists()


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


def test_relative_file_urls_are_made_absolute(tmp_path, monkeypatch):
    from autotile.tune.storage import absolute_url

    monkeypatch.chdir(tmp_path)
    up = tmp_path.parent
    assert absolute_url("sqlite:///../x.db") == f"sqlite:///{up / 'x.db'}"
    assert absolute_url("sqlite+pysqlite:///x.db?timeout=5") == f"sqlite+pysqlite:///{tmp_path / 'x.db'}?timeout=5"
    assert absolute_url("journal:../j.journal") == f"journal:{up / 'j.journal'}"
    for same in ("sqlite:////data/x.db", "sqlite:///:memory:", "postgresql://u:p@db/autotile", None):
        assert absolute_url(same) == same


def _reproduce(out: Path) -> list[str]:
    md = (out / "report.md").read_text()
    return md.split("## Reproduce\n", 1)[1].split("```\n", 1)[1].split("```", 1)[0].splitlines()


def test_a_relative_sqlite_storage_is_found_from_another_folder(run_cli, tmp_path, monkeypatch):
    """`--storage sqlite:///../x.db` was recorded verbatim: `autotile report` from another folder
    found no storage (or another file), and Reproduce offered optuna-dashboard a journal the run never
    wrote. The run records the absolute URL and spec; Reproduce names them and the output folder."""
    from tinyspecs import EW

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "ew.yaml").write_text(EW.replace("trials: 10", "trials: 3"))
    monkeypatch.chdir(tmp_path / "a")
    code, _, err = run_cli("tune", "../ew.yaml", "--storage", "sqlite:///../x.db", "--out", "../r", "--quiet",
                           "--no-verify")
    assert code == 0, err
    url = f"sqlite:///{tmp_path / 'x.db'}"
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["storage"] == url and summary["spec"] == str(tmp_path / "ew.yaml")
    monkeypatch.chdir(tmp_path / "b")
    assert run_cli("report", "../r")[0] == 0
    md = (tmp_path / "r" / "report.md").read_text()
    assert f"| study storage | {url} |" in md and "Parameter importance" in md
    tune, report, dash = _reproduce(tmp_path / "r")
    assert tune.startswith(f"autotile tune {tmp_path / 'ew.yaml'} ") and f"--out {tmp_path / 'r'} " in tune
    assert tune.endswith(f"--storage {url}")
    assert report == f"autotile report {tmp_path / 'r'}" and dash == f"optuna-dashboard {url}"
    # a summary from before: a relative URL that names no file here is neither opened nor created
    summary["storage"] = "sqlite:///../x.db"
    (tmp_path / "r" / "summary.json").write_text(json.dumps(summary))
    (tmp_path / "a" / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "a" / "sub")
    assert run_cli("report", "../../r")[0] == 0
    assert not (tmp_path / "a" / "x.db").exists()
    md = (tmp_path / "r" / "report.md").read_text()
    assert "| study storage | not available |" in md and "which the run recorded" in md
    assert _reproduce(tmp_path / "r")[2] == "optuna-dashboard sqlite:///../x.db"


def _raised(fn):
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - the test inspects it
        return exc
    raise AssertionError("nothing raised")


def test_a_lost_database_is_named_by_its_real_cause_not_optunas_commit_guess():
    """Optuna wraps the database's error in StorageInternalError ("... invalid data in the commit,
    e.g. exceeding max length"); the one line names the lost connection instead."""
    import optuna
    from sqlalchemy.exc import OperationalError

    from autotile.tune.storage import describe_failure, storage_cause

    lost = OperationalError("UPDATE trials", {}, Exception("server closed the connection unexpectedly"))

    def commit():
        try:
            raise lost
        except OperationalError as exc:
            raise optuna.exceptions.StorageInternalError("An exception is raised during the commit. This "
                                                         "typically happens due to invalid data") from exc

    def handling():  # another error raised while Optuna handled the first
        try:
            commit()
        except optuna.exceptions.StorageInternalError:
            raise RuntimeError("while failing the trial")  # noqa: B904 - its context is the failure

    for exc in (_raised(commit), _raised(handling)):
        assert storage_cause(exc) is lost
        line = describe_failure("postgresql://u:pw@db/x", storage_cause(exc))
        assert "server closed the connection unexpectedly" in line and "invalid data" not in line
        assert "pw" not in line
    other = _raised(lambda: (_ for _ in ()).throw(optuna.exceptions.StorageInternalError("disk")))
    assert storage_cause(other) is other  # nothing underneath: the error itself
    assert storage_cause(ValueError("not storage")) is None
