"""One core's GM read rate through the shared L2: the formulas the simulator and the learned
models' features both use (plain floats, no Numba, so a model can import them cheaply).

L2 is shared like HBM. The profile's ``l2_read_bytes_per_cycle`` (the .ini's ``l2_read_rate``,
110 on the 910B) is read as a core's share when every AI core of the chip reads at once, as the
.ini's ``ddr_rate`` is its HBM share then: fewer readers split the same total, so a core alone
is held back only by its copy path (GM->L1 146 B/cycle measured on the 910B1, above 110). A hit
streams at the core's L2 share; a miss comes from HBM at the core's HBM share and still passes
L2, so it streams at the slower of the two and is never faster than a hit. Hits and misses mix
by their byte shares (time adds up) and the copy path caps the result: more hits never make
reads slower, and with the whole chip reading (L2 share = the .ini rate) a miss slower than that
rate mixes with it exactly as it always did.

>>> read_rate(833.0, l2_share(110.0, 24, 1), 0.0, cap=146.0)  # one core alone: the path's plateau
146.0
>>> round(read_rate(833.0 / 24, l2_share(110.0, 24, 24), 0.5), 1)  # the full chip: HBM share and L2
52.8
>>> read_rate(833.0 / 24, 110.0, 1.0, cap=42.2)  # the path's plateau caps even L2 hits
42.2
"""

from __future__ import annotations

import math


def l2_share(l2_read: float, chip_cores: float, readers: float) -> float:
    """Bytes per cycle of L2 read bandwidth one core gets while ``readers`` cores read GM:
    ``l2_read`` is its share when all ``chip_cores`` do."""
    return l2_read * chip_cores / max(1.0, readers)


def read_rate(hbm_share: float, l2: float, l2_hit: float, cap: float = math.inf) -> float:
    """Bytes per cycle one core reads from GM when ``l2_hit`` of its reads hit L2.

    ``hbm_share``: the core's share of HBM bandwidth (bytes/cycle) for its reads; ``l2``: its
    share of L2 read bandwidth (``l2_share``); ``cap``: its copy path's rate. Non-decreasing in
    ``l2_hit`` (a miss is never faster than a hit) and never above ``min(l2, cap)``.
    """
    h = min(max(l2_hit, 0.0), 1.0)
    miss = min(hbm_share, l2)
    return min(cap, 1.0 / ((1.0 - h) / miss + h / l2))
