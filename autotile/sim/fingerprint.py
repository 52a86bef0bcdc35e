"""Which simulator computed a cycle count: autotile's version and the kernel and simulator sources.

Stored results (tuned studies, cached datasets) carry it, so numbers from an older cost model are
never mixed with new ones.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

from autotile import __version__

ROOT = Path(__file__).resolve().parents[1]


@functools.cache
def simulator_fingerprint() -> str:
    """sha256 (16 hex digits) of the version and every kernels/ and sim/ source file."""
    h = hashlib.sha256(f"{__version__}\n".encode())
    for f in sorted((ROOT / "kernels").glob("*.py")) + sorted((ROOT / "sim").glob("*.py")):
        h.update(f.name.encode())
        h.update(f.read_bytes())
    return h.hexdigest()[:16]
