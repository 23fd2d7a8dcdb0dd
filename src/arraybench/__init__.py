"""arraybench: which array framework is fastest for a computation, by how much, and is it right."""

from arraybench.case import Case
from arraybench.errors import UsageError
from arraybench.store import load

__version__ = "0.1.0"

__all__ = ["Case", "UsageError", "__version__", "load"]
