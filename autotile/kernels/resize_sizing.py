"""resize's sizing limit, free of Numba: the spec loader and ``simulate`` refuse a shape whose
count mode cannot fit in memory before anything is made.

Count mode builds PyTorch's index/weight tables on the host (``resize.src_index``): the two source
indices and the weight of every output row and column, then ``must_move``'s sorted union of the
sampled rows and columns. Measured with tracemalloc (fp16, both modes, 10^6 to 10^7 entries), that
peaks at 56 bytes per output row or column (57.2 MB in all at 10^6 rows: the simulator's own state
besides), counted as 64, plus one 8-byte mark per source row (``_row_runs``).
A resize to h_out = 2^31-1 rows asked ~120 GB and the process died out of memory; a shape over
``MAX_TABLE_BYTES`` is refused, naming its largest dimension, as roi_align refuses its ROIs.
"""

from __future__ import annotations

TABLE_BYTES = 64  # per output row or column
MARK_BYTES = 8  # per source row
MAX_TABLE_BYTES = 1 << 30


def table_bytes(shape: dict) -> int:
    """The host memory count mode needs for ``shape``'s index/weight tables, at its peak."""
    return TABLE_BYTES * (int(shape["h_out"]) + int(shape["w_out"])) + MARK_BYTES * int(shape["h_in"])


def shape_problem(shape: dict, limit: int | None = None) -> tuple[str, str] | None:
    """(dim, why) when count mode cannot hold ``shape``'s tables within ``limit`` bytes
    (``MAX_TABLE_BYTES``), else None (OpInfo's ``shape_check``); ``dim`` asks the most."""
    limit = MAX_TABLE_BYTES if limit is None else limit
    need = table_bytes(shape)
    if need <= limit:
        return None
    share = {"h_out": TABLE_BYTES * int(shape["h_out"]), "w_out": TABLE_BYTES * int(shape["w_out"]),
             "h_in": MARK_BYTES * int(shape["h_in"])}
    dim = max(share, key=share.get)
    dims = ",".join(f"{d}={v}" for d, v in shape.items())
    return dim, (f"shape {dims} is too large to simulate: count mode builds index/weight tables of "
                 f"{need:,} bytes ({TABLE_BYTES} a row and column of the output, {MARK_BYTES} a source row), "
                 f"over its limit of {limit:,} bytes (h_out + w_out at most {limit // TABLE_BYTES:,})")
