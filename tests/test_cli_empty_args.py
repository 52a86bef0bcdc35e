"""An empty file or folder positional is bad input, never the current folder."""

import pytest


@pytest.mark.parametrize("args", [
    ["report", ""], ["report", " "], ["export", "", "-o", "out.json"], ["lookup", "", "--shape", "n=4096"],
    ["import-kt", "", "-o", "out"], ["space", ""], ["simulate", "", "--shape", "n=1"], ["bench-search", ""],
    ["hw", "show", ""], ["tune", ""], ["tune", "studies/matmul.yaml", ""],
])
def test_an_empty_positional_is_one_line_exit_2(run_cli, tmp_path, monkeypatch, args):
    """`report ""` rendered the current folder and `export ""` read ./table.json (exit 0 there)."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "summary.json").write_text("{}")  # what `report ""` read as ./summary.json
    code, out, err = run_cli(*args)
    assert code == 2 and err.count("\n") == 1 and "got an empty one" in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]  # nothing written
