"""Where Numba caches the compiled kernels, settled before Numba is imported.

Every kernel is ``@njit(cache=True)``; Numba then wants a writable cache folder when the module is
imported: ``NUMBA_CACHE_DIR`` if set, else ``__pycache__`` beside the source, else the user-wide
cache (``~/.cache/numba``). With a read-only site-packages and a read-only home (a locked-down
container, a service account) it found none and the import raised ``cannot cache function
'reset': no locator available``, a traceback from every command that simulates. Then, and only
then, this points ``NUMBA_CACHE_DIR`` at a private folder under the temporary directory.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ENV = "NUMBA_CACHE_DIR"
PACKAGE = Path(__file__).resolve().parent
# the subpackages with @njit(cache=True) functions (tests/test_jitcache.py keeps this complete)
JIT_PACKAGES = ("kernels", "sim")


def writable(folder: str | Path) -> bool:
    """Whether ``folder`` exists or can be made, and takes a new file: Numba's own test."""
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def in_tree_folders(package: Path = PACKAGE) -> list[Path]:
    """The ``__pycache__`` folders Numba tries first, one per module folder with kernels."""
    return [package / sub / "__pycache__" for sub in JIT_PACKAGES]


def user_wide_folder(environ=os.environ, platform: str = sys.platform) -> Path:
    """Numba's second choice, as its bundled appdirs computes it (not imported: that would
    import Numba, which reads ``NUMBA_CACHE_DIR`` once, at its import)."""
    if platform == "win32":
        base = environ.get("LOCALAPPDATA") or os.path.expanduser(r"~\AppData\Local")
        return Path(base) / "numba" / "Cache"
    if platform == "darwin":
        return Path(os.path.expanduser("~/Library/Caches")) / "numba"
    return Path(environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")) / "numba"


def needs_fallback(environ, in_tree: list[Path], user_wide: Path,
                   is_writable: Callable[[Path], bool] = writable) -> bool:
    """True when Numba would find no cache folder: ``NUMBA_CACHE_DIR`` unset (or empty, which
    Numba ignores), some kernel folder's ``__pycache__`` unwritable and the user-wide cache too."""
    if environ.get(ENV):
        return False
    if all(is_writable(f) for f in in_tree):
        return False
    return not is_writable(user_wide)


def private_folder(tmp: str | None = None) -> str | None:
    """``<tmp>/autotile-numba-<uid>``, made private (0700) to this user, or a fresh private
    folder when that name is taken by another user or open to others (Numba's cache files are
    pickles: a folder others can write to would let them run code here); None if neither can be
    made."""
    tmp = tmp or tempfile.gettempdir()
    uid = os.geteuid() if hasattr(os, "geteuid") else None
    user = uid if uid is not None else os.environ.get("USERNAME", "user")
    folder = os.path.join(tmp, f"autotile-numba-{user}")
    try:
        os.mkdir(folder, 0o700)
    except FileExistsError:
        pass
    except OSError:
        folder = None
    if folder is not None and _private(folder, uid) and writable(folder):
        return folder
    try:
        return tempfile.mkdtemp(prefix="autotile-numba-", dir=tmp)
    except OSError:
        return None


def _private(folder: str, uid: int | None) -> bool:
    """A real folder (not a link) owned by ``uid`` that no one else can write to."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode):
        return False
    if uid is None:  # Windows: the temporary folder is the user's own
        return True
    return st.st_uid == uid and not st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)


def configure(environ=os.environ) -> str | None:
    """Set ``NUMBA_CACHE_DIR`` to a private temporary folder when Numba would find no writable
    cache folder; returns the folder set, else None (nothing changed). If even that cannot be
    made, nothing is set and the CLI reports Numba's error in one line."""
    if not needs_fallback(environ, in_tree_folders(), user_wide_folder(environ), writable):
        return None
    folder = private_folder()
    if folder is None:
        return None
    environ[ENV] = folder
    if "numba" in sys.modules:  # imported before autotile: have it read the variable again
        from numba.core import config

        config.reload_config()
    return folder
