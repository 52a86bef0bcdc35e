"""autotile: tiling-parameter search for Ascend-style NPU operators on a cost simulator."""

__version__ = "0.1.0"
