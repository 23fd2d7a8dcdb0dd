"""arraybench: which array framework is fastest for a computation, by how much, and is it right."""

from typing import TYPE_CHECKING, Any

from arraybench.case import Case
from arraybench.errors import UsageError

if TYPE_CHECKING:
    from arraybench.api import run, workload

__version__ = "0.1.0"

__all__ = ["Case", "UsageError", "__version__", "run", "workload"]


def __getattr__(name: str) -> Any:
    # Imported on first use: they import NumPy, and a worker process must pin its CPUs first.
    if name in ("run", "workload"):
        from arraybench import api

        return getattr(api, name)
    raise AttributeError(f"module 'arraybench' has no attribute {name!r}")
