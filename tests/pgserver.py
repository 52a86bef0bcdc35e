"""A throwaway PostgreSQL server for tests: initdb in a temp folder, start, stop.

Used for the scale-out and fault tests; CI installs Debian's postgresql package. Tests that
need a server are skipped, with the reason, where PostgreSQL is not installed.
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


class PgServer:
    """One cluster; ``url`` is set once started. Runs as the postgres user when root."""

    def __init__(self):
        self.bin = pg_bin()
        self.dir = tempfile.mkdtemp(prefix="autotile-pg-")
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
