"""Test servers outlive a test run killed by a timeout (SIGKILL runs no teardown); the next server
a run starts stops and removes them, and leaves a live run's servers alone."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

import pytest
from pgserver import OWNER, pg_bin, reap_orphans


def _postmaster(folder: str) -> int | None:
    try:
        with open(os.path.join(folder, "data", "postmaster.pid")) as f:
            return int(f.readline())
    except OSError:
        return None


@pytest.fixture
def tmp_path():
    """A temp folder the postgres user can enter (pytest's are private to root)."""
    folder = tempfile.mkdtemp(prefix="autotile-reap-")
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_a_killed_runs_server_is_reaped_and_a_live_ones_kept(tmp_path):
    if pg_bin() is None:
        pytest.skip("PostgreSQL is not installed (CI installs Debian's postgresql package)")
    tests = os.path.dirname(__file__)
    # a 'test run' that starts a server, reports it, and is killed before its teardown
    child = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, tempfile, time
        sys.path.insert(0, {tests!r})
        tempfile.tempdir = {tmp_path!r}
        from pgserver import PgServer
        s = PgServer().init().start()
        print(s.dir, flush=True)
        time.sleep(600)
        """)], stdout=subprocess.PIPE, text=True)
    try:
        folder = child.stdout.readline().strip()
        assert folder and _postmaster(folder)
        live = os.path.join(tmp_path, "autotile-pg-live")
        os.mkdir(live)
        with open(os.path.join(live, OWNER), "w") as f:
            f.write(str(os.getpid()))
        assert reap_orphans(pg_bin(), tmp_path) == []  # its owner still runs
        server_pid = _postmaster(folder)
    finally:
        child.kill()
        child.wait()
    os.kill(server_pid, 0)  # the killed run left its server running
    assert reap_orphans(pg_bin(), tmp_path) == [folder]
    assert not os.path.exists(folder) and os.path.exists(live)
    with pytest.raises(ProcessLookupError):
        for _ in range(100):  # pg_ctl -w waited for the shutdown; give init a moment to reap it
            os.kill(server_pid, 0)
            time.sleep(0.05)
