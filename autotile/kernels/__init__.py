"""Operators: one module per operator with its tiled Numba kernel, reference and default tiling."""
