"""Process-session helpers for the tests that signal a command and check nothing outlives it."""

from __future__ import annotations

import subprocess
import time


def session(sid: int) -> list[str]:
    """The live processes of session ``sid`` (``ps`` lines; zombies left out)."""
    ps = subprocess.run(["ps", "-eo", "sid=,pid=,stat="], capture_output=True, text=True).stdout
    return [ln for ln in ps.splitlines() if ln.split()[0] == str(sid) and not ln.split()[2].startswith("Z")]


def gone(sid: int, timeout: float) -> bool:
    """Whether session ``sid`` has no live process left within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while session(sid) and time.monotonic() < deadline:
        time.sleep(0.2)
    return not session(sid)
