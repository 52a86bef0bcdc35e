"""autotile: tiling-parameter search for Ascend-style NPU operators on a cost simulator."""

from autotile.jitcache import configure as _configure_jit_cache

__version__ = "0.1.0"

_configure_jit_cache()  # before any kernel module imports Numba
