"""Tiling search spaces: YAML specs, parameter kinds, safe expressions, feasible-space enumeration."""
