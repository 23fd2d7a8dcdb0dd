"""Backends: one adapter per framework (`*_backend.py`) over a common base (`backend.py`), found by
name in the registry (`registry.py`); importing the package imports no framework."""

from arraybench.backends.backend import Backend, Unavailable
from arraybench.backends.registry import BACKENDS, backend_class

__all__ = ["BACKENDS", "Backend", "Unavailable", "backend_class"]
