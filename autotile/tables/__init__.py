"""Tiling tables: the versioned JSON schema, C / Ascend C exports and shape lookup."""
