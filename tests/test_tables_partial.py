"""The table of an interrupted run says it is partial: ``tune`` stopped by SIGINT left a table.json
with no mark of the studies it never ran or cut short, and ``export`` wrote headers from it
without a word. Tables made before the mark load as complete."""

from __future__ import annotations

import json

import pytest
from tablekit import default_table
from test_interrupt import sigint_after  # noqa: F401 (a fixture)
from tinyspecs import EW2

from autotile.errors import InputError
from autotile.tables.schema import load_table


def _warnings(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("autotile: warning: ")]


def test_an_interrupted_run_leaves_a_partial_table_that_export_warns_of(run_cli, write_spec, sigint_after,  # noqa: F811
                                                                         tmp_path):
    out, spec = tmp_path / "out", write_spec(EW2)
    sigint_after(2)
    assert run_cli("tune", spec, "--out", str(out), "--quiet")[0] == 130
    doc = json.loads((out / "table.json").read_text())
    assert doc["interrupted"] == {"not_run": 1, "cut_short": 1}
    assert load_table(out).interrupted == {"not_run": 1, "cut_short": 1}
    for fmt in ("c", "ascendc", "json"):
        code, _, err = run_cli("export", str(out), "--format", fmt, "-o", str(tmp_path / f"t.{fmt}"))
        assert code == 0
        assert "the table is partial: its tune was interrupted (1 study not run, 1 study stopped short of the " \
               "budget); resume the tune (the same command) to complete it" in _warnings(err)[0], err
        if fmt != "json":
            assert (" *   PARTIAL: its tune was interrupted (1 study not run, 1 stopped short of the budget); "
                    "resume it and re-export") in (tmp_path / f"t.{fmt}").read_text()
    # the same command resumes and completes: the mark goes, and so does the warning
    runner_stop_reset()
    assert run_cli("tune", spec, "--out", str(out), "--quiet")[0] == 0
    assert "interrupted" not in json.loads((out / "table.json").read_text())
    code, _, err = run_cli("export", str(out), "--format", "c", "-o", str(tmp_path / "t.h"))
    assert code == 0 and "partial" not in err and "PARTIAL" not in (tmp_path / "t.h").read_text()


def runner_stop_reset():
    from autotile.tune import runner

    runner._Stop.requested = False


def test_a_table_from_before_the_mark_loads_as_complete():
    doc = default_table()
    assert "interrupted" not in doc and load_table(doc).interrupted is None


@pytest.mark.parametrize("value, field, said", [
    ([1], "interrupted", "expected a mapping {not_run, cut_short} or null, got a list"),
    ({"not_run": 1}, "interrupted", "missing field 'cut_short'"),
    ({"not_run": -1, "cut_short": 0}, "interrupted.not_run", "expected a count of studies (0 or more), got -1"),
    ({"not_run": True, "cut_short": 0}, "interrupted.not_run", "expected a count of studies, got true"),
])
def test_a_bad_mark_is_one_line_naming_its_field(value, field, said):
    doc = default_table()
    doc["interrupted"] = value
    with pytest.raises(InputError) as exc:
        load_table(doc)
    assert exc.value.field == field and said in exc.value.message, exc.value
