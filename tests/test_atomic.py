"""Atomic outputs: symlinks are written through, streams are written in place, bad names fail clearly."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from autotile import atomic
from autotile.errors import InputError


def test_symlink_is_written_through(tmp_path):
    (tmp_path / "gen").mkdir()
    target = tmp_path / "gen" / "tiling.h"
    target.write_text("old")
    link = tmp_path / "tiling.h"
    link.symlink_to(os.path.join("gen", "tiling.h"))
    assert atomic.write_text(link, "new") == link
    assert link.is_symlink() and target.read_text() == "new"
    assert sorted(p.name for p in (tmp_path / "gen").iterdir()) == ["tiling.h"]  # no temp file left


def test_a_replaced_file_keeps_its_mode_and_a_new_one_gets_the_usual_one(tmp_path):
    """Re-exporting over a read-only (0444) header left it 0644: the temporary file's mode won."""
    import stat

    old, new = tmp_path / "t.h", tmp_path / "new.h"
    old.write_text("old")
    old.chmod(0o444)
    atomic.write_text(old, "new")
    atomic.write_text(new, "new")
    umask = os.umask(0)
    os.umask(umask)
    assert old.read_text() == "new" and stat.S_IMODE(old.stat().st_mode) == 0o444
    assert stat.S_IMODE(new.stat().st_mode) == 0o666 & ~umask
    old.chmod(0o4755)  # a setuid bit is not carried over to new contents
    atomic.write_text(old, "newer")
    assert stat.S_IMODE(old.stat().st_mode) == 0o755


def test_a_stream_is_written_in_place(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    r = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        atomic.write_text(fifo, "hello")
        assert os.read(r, 100) == b"hello"
    finally:
        os.close(r)
    assert not fifo.is_file() and not fifo.is_dir() and fifo.exists()


def test_dev_stdout_on_a_pipe_is_written_in_place(tmp_path):
    """``export ... -o /dev/stdout | wc -c``: /dev/stdout resolves to /proc/<pid>/fd/pipe:[N], a
    name that does not exist, so the write went to a temporary file beside it and failed ("No such
    file or directory", exit 1)."""
    from tablekit import default_table

    from autotile.tables.export import render
    from autotile.tables.schema import write_table

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    got = subprocess.run([sys.executable, "-c", "from autotile import atomic; atomic.write_text('/dev/stdout', 'hi')"],
                         capture_output=True, env=env, check=False)
    assert (got.returncode, got.stdout, got.stderr) == (0, b"hi", b"")
    write_table(tmp_path / "table.json", default_table())
    got = subprocess.run([sys.executable, "-m", "autotile", "export", str(tmp_path), "--format", "c", "-o",
                          "/dev/stdout"], capture_output=True, env=env, check=False)
    assert got.returncode == 0, got.stderr
    assert got.stdout.decode() == render(tmp_path / "table.json", "c")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.json"]


def test_empty_name_is_bad_input():
    with pytest.raises(InputError, match="empty"):
        atomic.write_text("", "x")


def test_text_a_file_name_cannot_encode_is_replaced(tmp_path):
    out = tmp_path / "r.md"
    atomic.write_text(out, "spec /tmp/bad\udcffname.yaml")
    assert out.read_text(encoding="utf-8") == "spec /tmp/bad?name.yaml"


def test_failure_keeps_the_old_file(tmp_path, monkeypatch):
    out = tmp_path / "t.json"
    out.write_text("old")

    def full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic, "_fsync", full)
    with pytest.raises(atomic.OutputError, match="No space"):
        atomic.write_text(out, "new")
    assert out.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_a_file_in_the_way_of_the_folder_is_named_as_such(tmp_path):
    (tmp_path / "afile").write_text("keep")
    with pytest.raises(atomic.OutputError, match="Not a directory"):
        atomic.write_text(tmp_path / "afile" / "sub" / "x.h", "x")
    assert (tmp_path / "afile").read_text() == "keep"


def test_tune_refuses_an_empty_out_and_names_a_file_in_its_way(run_cli, tmp_path):
    from tinyspecs import EW

    spec = tmp_path / "ew.yaml"
    spec.write_text(EW)
    code, _, err = run_cli("tune", str(spec), "--out", "", "--quiet")
    assert code == 2 and "--out" in err and err.count("\n") == 1
    (tmp_path / "afile").write_text("keep")
    code, _, err = run_cli("tune", str(spec), "--out", str(tmp_path / "afile"), "--quiet", "--trials", "2")
    assert code == 1 and "Not a directory" in err and (tmp_path / "afile").read_text() == "keep"


def test_an_output_set_renames_its_files_together_or_leaves_the_old_ones(tmp_path):
    """A set whose later write fails leaves every old file as it was and no temporary file; one
    that succeeds replaces them all, reads its own pending files, and deletes only at the end."""
    a, b, gone = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "gone.png"
    for p in (a, b, gone):
        p.write_text("old")
    with pytest.raises(atomic.OutputError, match="No space"):
        with atomic.output_set():
            atomic.write_text(a, "new")
            atomic.remove(gone)
            raise atomic.OutputError(f"{b}: cannot write: No space left on device")
    assert [p.read_text() for p in (a, b, gone)] == ["old"] * 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json", "gone.png"]
    with atomic.output_set():
        atomic.write_text(a, "new a")
        atomic.write_text(b, "new b")
        atomic.remove(gone)
        assert a.read_text() == "old" and atomic.pending(a).read_text() == "new a" and gone.exists()
    assert (a.read_text(), b.read_text(), gone.exists()) == ("new a", "new b", False)
    assert atomic.pending(a) == a and sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]


def _outputs(out):
    """Every output file of a tune folder but its study journal, with its bytes."""
    return {p: p.read_bytes() for p in out.rglob("*") if p.is_file() and "journal" not in p.name}


def test_a_tune_whose_report_the_disk_cannot_hold_keeps_every_earlier_output(run_cli, tmp_path, monkeypatch):
    """On a full disk a resumed tune failed on a later output after summary.json held the new bests,
    while table.json (what export reads) kept the old ones. Now no output is replaced."""
    from tinyspecs import EW

    from autotile.report import render

    spec, out = tmp_path / "ew.yaml", tmp_path / "out"
    spec.write_text(EW)
    assert run_cli("tune", str(spec), "--out", str(out), "--quiet", "--trials", "3")[0] == 0
    old = _outputs(out)
    assert {"summary.json", "table.json", "report.html", "report.md"} <= {p.name for p in old}
    assert any(p.suffix == ".png" for p in old)
    real = render.write_bytes

    def full(path, data):
        if str(path).endswith(".png"):
            raise atomic.OutputError(f"{path}: cannot write: No space left on device")
        return real(path, data)

    monkeypatch.setattr(render, "write_bytes", full)
    code, _, err = run_cli("tune", str(spec), "--out", str(out), "--quiet", "--trials", "8")
    assert code == 1 and err.count("\n") == 1, err
    assert "No space left on device" in err and "earlier outputs" in err and "rerun the same command" in err
    now = _outputs(out)
    assert now == old  # byte-identical, nothing added (no temporary file left)
    monkeypatch.setattr(render, "write_bytes", real)
    assert run_cli("tune", str(spec), "--out", str(out), "--quiet", "--trials", "8")[0] == 0
    assert (out / "summary.json").read_bytes() != old[out / "summary.json"]


def test_report_and_export_say_when_table_and_summary_were_not_written_together(run_cli, tmp_path):
    """table.json records a digest of the summary.json written with it: a table.json beside another
    run's summary.json (what a half-written set left before) is one warning line in both commands."""
    import shutil

    from tinyspecs import EW

    spec, out, other = tmp_path / "ew.yaml", tmp_path / "out", tmp_path / "other"
    spec.write_text(EW)
    assert run_cli("tune", str(spec), "--out", str(out), "--quiet", "--trials", "3")[0] == 0
    code, _, err = run_cli("export", str(out), "-o", str(tmp_path / "t.h"))
    assert code == 0 and "not written with" not in err, err
    assert run_cli("tune", str(spec), "--out", str(other), "--quiet", "--trials", "6")[0] == 0
    shutil.copy(other / "summary.json", out / "summary.json")
    for cmd in (("export", str(out), "-o", str(tmp_path / "t.h")), ("report", str(out))):
        code, _, err = run_cli(*cmd)
        lines = [line for line in err.splitlines() if "not written with" in line]
        assert code == 0 and len(lines) == 1 and lines[0].startswith("autotile: warning: "), err
        assert str(out / "table.json") in lines[0] and str(out / "summary.json") in lines[0]


def test_a_report_the_disk_cannot_hold_keeps_the_earlier_report_whole(run_cli, tmp_path, monkeypatch):
    """`autotile report DIR` on a full disk replaced some plots and traces, then failed before the pages."""
    from tinyspecs import EW

    from autotile.report import render

    spec, out = tmp_path / "ew.yaml", tmp_path / "out"
    spec.write_text(EW)
    assert run_cli("tune", str(spec), "--out", str(out), "--quiet", "--trials", "3")[0] == 0
    (out / "report.md").write_text("earlier report\n")  # so a render that replaced it would show
    old = _outputs(out)
    real = render.write_text

    def full(path, text):
        if str(path).endswith(".html"):
            raise atomic.OutputError(f"{path}: cannot write: No space left on device")
        return real(path, text)

    monkeypatch.setattr(render, "write_text", full)
    code, _, err = run_cli("report", str(out))
    assert code == 1 and "No space left on device" in err, err
    assert _outputs(out) == old
