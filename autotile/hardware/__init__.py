"""Hardware profiles: chip data (core counts, buffers, bandwidths, operation costs) as YAML."""

from autotile.hardware.profile import (
    CopyPath,
    CubeCosts,
    HardwareProfile,
    VectorCost,
    bundled_names,
    load_profile,
)

__all__ = [
    "CopyPath",
    "CubeCosts",
    "HardwareProfile",
    "VectorCost",
    "bundled_names",
    "load_profile",
]
