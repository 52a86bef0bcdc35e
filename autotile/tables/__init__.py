"""tables package."""
