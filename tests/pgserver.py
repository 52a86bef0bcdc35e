"""A throwaway PostgreSQL server for tests: initdb in a temp folder, start, stop.

Used for the scale-out and fault tests; CI installs Debian's postgresql package. Tests that
need a server are skipped, with the reason, where PostgreSQL is not installed. Each cluster's
folder names the test process that owns it; a run killed before it could stop its servers (a
timeout's SIGKILL) leaves them running, so a new server first stops and removes every cluster
whose owner is gone.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile


def pg_bin() -> str | None:
    """The newest PostgreSQL server bin folder, or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: [int(x) for x in p.split("/")[4].split(".") if x.isdigit()])
    return os.path.dirname(found[-1]) if found else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PREFIX = "autotile-pg-"
OWNER = "owner.pid"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def reap_orphans(bin_dir: str, tmp: str | None = None) -> list[str]:
    """Stop and remove the clusters of test processes that no longer run; returns their folders.
    A folder without an owner file (being created, or from before owners were recorded) is left."""
    reaped = []
    for folder in glob.glob(os.path.join(tmp or tempfile.gettempdir(), PREFIX + "*")):
        try:
            with open(os.path.join(folder, OWNER)) as f:
                pid = int(f.read().strip())
        except (OSError, ValueError):
            continue
        if _alive(pid):
            continue
        if os.path.exists(os.path.join(folder, "data", "postmaster.pid")):
            cmd = [f"{bin_dir}/pg_ctl", "-D", f"{folder}/data", "-m", "immediate", "-w", "stop"]
            if os.geteuid() == 0:
                cmd = ["runuser", "-u", "postgres", "--", *cmd]
            subprocess.run(cmd, capture_output=True, timeout=120)
        shutil.rmtree(folder, ignore_errors=True)
        reaped.append(folder)
    return reaped


class PgServer:
    """One cluster; ``url`` is set once started. Runs as the postgres user when root."""

    def __init__(self):
        self.bin = pg_bin()
        reap_orphans(self.bin)
        self.dir = tempfile.mkdtemp(prefix=PREFIX)
        with open(os.path.join(self.dir, OWNER), "w") as f:
            f.write(str(os.getpid()))
        self.port = _free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/postgres"
        if os.geteuid() == 0:
            shutil.chown(self.dir, "postgres")

    def _run(self, *args: str) -> None:
        cmd = list(args)
        if os.geteuid() == 0:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, capture_output=True, timeout=120)

    def init(self) -> PgServer:
        self._run(f"{self.bin}/initdb", "-D", f"{self.dir}/data", "-A", "trust", "-U", "postgres")
        return self

    def start(self) -> PgServer:
        opts = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c max_connections=100 -c fsync=off"
        self._run(f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-l", f"{self.dir}/log", "-w", "-o", opts, "start")
        return self

    def stop(self, mode: str = "fast") -> None:
        self._run(f"{self.bin}/pg_ctl", "-D", f"{self.dir}/data", "-m", mode, "-w", "stop")

    def remove(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)
