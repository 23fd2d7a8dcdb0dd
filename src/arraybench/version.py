"""The package's version, written once: pyproject.toml reads it from here, and every stage may import it."""

__version__ = "0.1.0"
