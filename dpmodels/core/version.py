"""The version of dpmodels (written into every saved release)."""

__version__ = "0.1.0"
