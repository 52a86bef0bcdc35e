"""Numba's cache folder when site-packages and the home folder are read-only (autotile.jitcache).

Before: every command that imports a kernel ended in a traceback, ``RuntimeError: cannot cache
function 'reset': no locator available for file '.../autotile/sim/engine.py'``, exit 1.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

from autotile import cli, jitcache
from tests.conftest import ROOT

NUMBA_ERROR = "cannot cache function 'reset': no locator available for file '/x/autotile/sim/engine.py'"


def _only(*ok):
    return lambda folder: any(str(folder).startswith(str(o)) for o in ok)


def test_no_fallback_when_numba_has_a_folder(tmp_path):
    tree, user = [tmp_path / "kernels", tmp_path / "sim"], tmp_path / "user"
    assert not jitcache.needs_fallback({}, tree, user, _only(tmp_path))  # in-tree writable
    assert not jitcache.needs_fallback({}, tree, user, _only(tree[0], user))  # user-wide writable
    assert not jitcache.needs_fallback({"NUMBA_CACHE_DIR": "/x"}, tree, user, _only())  # the user's choice


def test_fallback_when_no_folder_is_writable(tmp_path):
    tree, user = [tmp_path / "kernels", tmp_path / "sim"], tmp_path / "user"
    assert jitcache.needs_fallback({}, tree, user, _only())
    assert jitcache.needs_fallback({"NUMBA_CACHE_DIR": ""}, tree, user, _only())  # Numba ignores ""
    assert jitcache.needs_fallback({}, tree, user, _only(tree[0]))  # sim/ not writable


def test_configure_points_numba_at_a_private_temporary_folder(tmp_path, monkeypatch):
    monkeypatch.setattr(jitcache.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(jitcache, "writable", _only(tmp_path))  # the package and home are read-only
    env = {"HOME": "/nonexistent"}
    folder = jitcache.configure(env)
    assert folder is not None and env["NUMBA_CACHE_DIR"] == folder
    assert Path(folder).parent == tmp_path
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert jitcache.configure(dict(env)) is None  # already set: left alone


def test_configure_changes_nothing_when_numba_can_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(jitcache.tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(jitcache, "writable", lambda folder: True)
    env: dict = {}
    assert jitcache.configure(env) is None and env == {}
    assert list(tmp_path.iterdir()) == []


def test_a_shared_or_foreign_folder_is_not_used(tmp_path):
    name = tmp_path / f"autotile-numba-{os.geteuid()}"
    name.mkdir(mode=0o777)
    name.chmod(0o777)  # others could plant cache files (pickles) in it
    folder = jitcache.private_folder(str(tmp_path))
    assert folder is not None and Path(folder) != name and Path(folder).parent == tmp_path
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    name.rmdir()
    name.symlink_to(tmp_path / "elsewhere")
    assert Path(jitcache.private_folder(str(tmp_path))) != name
    name.unlink()
    assert Path(jitcache.private_folder(str(tmp_path))) == name  # made afresh, private


def test_user_wide_folder_follows_xdg():
    assert jitcache.user_wide_folder({"XDG_CACHE_HOME": "/c"}, "linux") == Path("/c/numba")


def test_jit_packages_lists_every_module_that_imports_numba():
    pkg = ROOT / "autotile"
    users = {str(p.parent.relative_to(pkg)) for p in pkg.rglob("*.py")
             if p.name != "jitcache.py" and ("from numba" in p.read_text() or "import numba" in p.read_text())}
    assert users and users <= set(jitcache.JIT_PACKAGES), users


def test_no_writable_folder_at_all_is_one_line(monkeypatch, capsys):
    def fail(args):
        raise RuntimeError(NUMBA_ERROR)

    monkeypatch.setattr("autotile.cli.hw.run", fail)
    assert cli.run(["hw", "list"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("autotile: error:") and "NUMBA_CACHE_DIR" in err


def test_read_only_package_and_home_end_to_end(tmp_path):
    """The package's kernel folders and the user cache cannot take a folder (a file stands where
    ``__pycache__`` / ``.cache`` would go: read-only even for root), so only the fallback is left."""
    pkg = tmp_path / "pkg"
    shutil.copytree(ROOT / "autotile", pkg / "autotile", ignore=shutil.ignore_patterns("__pycache__"))
    for sub in jitcache.JIT_PACKAGES:
        (pkg / "autotile" / sub / "__pycache__").write_text("")
    home, tmp = tmp_path / "home", tmp_path / "tmp"
    home.mkdir()
    tmp.mkdir()
    (home / ".cache").write_text("")
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME")}
    env.update(PYTHONPATH=str(pkg), HOME=str(home), TMPDIR=str(tmp))
    spec = pkg / "autotile" / "studies" / "elementwise.yaml"
    proc = subprocess.run([sys.executable, "-m", "autotile", "simulate", str(spec), "--shape", "n=4096"],
                          env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "cycles" in proc.stdout
    assert list((tmp / f"autotile-numba-{os.geteuid()}").rglob("*.nbi"))
