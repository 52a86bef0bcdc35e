"""One core's GM read rate through the shared L2: the formula the simulator and the learned
models' features both use (plain floats, no Numba, so a model can import it cheaply).

Every GM read goes through L2, at most at the core's L2 read rate. A hit is served there; a miss
also has to come from HBM, at the core's share of HBM bandwidth, and then still passes L2, so it
streams at the slower of the two. Hits and misses mix by their byte shares (time adds up), and
the core's own copy path caps the result. A miss is therefore never faster than a hit: more hits
never make reads slower, whatever the number of cores sharing HBM.

>>> read_rate(833.0, 110.0, 0.0)  # one core alone: its HBM share passes the L2 port at 110
110.0
>>> round(read_rate(833.0 / 24, 110.0, 0.5), 1)  # 24 cores: misses at the HBM share, hits at L2
52.8
>>> read_rate(833.0 / 24, 110.0, 1.0, cap=42.2)  # the path's plateau caps even L2 hits
42.2
"""

from __future__ import annotations

import math


def read_rate(hbm_share: float, l2_read: float, l2_hit: float, cap: float = math.inf) -> float:
    """Bytes per cycle one core reads from GM when ``l2_hit`` of its reads hit L2.

    ``hbm_share``: the core's share of HBM bandwidth (bytes/cycle) for its reads;
    ``l2_read``: its L2 read rate; ``cap``: its copy path's rate. Non-decreasing in ``l2_hit``
    and never above ``min(l2_read, cap)``.
    """
    h = min(max(l2_hit, 0.0), 1.0)
    miss = min(hbm_share, l2_read)
    return min(cap, 1.0 / ((1.0 - h) / miss + h / l2_read))
