"""arraybench: which array framework is fastest for a computation, by how much, and is it right."""

from typing import TYPE_CHECKING, Any

from arraybench.core.case import Case
from arraybench.errors import UsageError
from arraybench.version import __version__

if TYPE_CHECKING:
    from arraybench.api import compare, run, workload
    from arraybench.store import load


__all__ = ["Case", "UsageError", "__version__", "compare", "load", "run", "workload"]

_LAZY = {"run": "arraybench.api", "workload": "arraybench.api", "compare": "arraybench.api",
         "load": "arraybench.store"}


def __getattr__(name: str) -> Any:
    # Imported on first use: they import NumPy, and a worker process must pin its CPUs first.
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'arraybench' has no attribute {name!r}")
