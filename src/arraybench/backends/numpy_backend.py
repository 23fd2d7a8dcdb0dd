"""NumPy: the reference framework, eager only, on the CPU."""

from typing import Any

import numpy as np

from arraybench.backends.backend import Backend


class NumpyBackend(Backend):
    name = "numpy"
    module = "numpy"
    distribution = "numpy"
    extra = "numpy"

    def load(self) -> None:
        pass

    def info(self) -> dict[str, Any]:
        info = super().info()
        info["threads_verified"] = max((p["num_threads"] for p in info["blas"]), default=1)
        return info

    @property
    def xp(self) -> Any:
        return np
