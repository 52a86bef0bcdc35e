"""tune package."""
