"""Numba: NumPy code compiled by @njit on the CPU; its BLAS calls go through SciPy's OpenBLAS."""

import functools
from collections.abc import Callable
from typing import Any

import numpy as np

from arraybench.backends.backend import Backend, Unavailable
from arraybench.errors import install_hint


class NumbaBackend(Backend):
    name = "numba"
    module = "numba"
    distribution = "numba"
    extra = "numba"
    jit_modes = ("jit",)
    jit_name = "numba.njit"

    def load(self) -> None:
        try:
            import numba
            import scipy  # noqa: F401  (numba's np.dot needs SciPy's BLAS)
        except ImportError as e:
            raise Unavailable(f"{e} ({install_hint(repr('arraybench[numba]'))})") from e
        self.numba = numba

    def info(self) -> dict[str, Any]:
        info = super().info()
        info["threads_verified"] = self.numba.get_num_threads()
        info["threading_layer"] = self.numba.config.THREADING_LAYER
        return info

    def jit(self, fn: Callable[..., Any], mode: str, *, any_shape: bool = False) -> Callable[..., Any]:
        # njit takes plain functions only: compile a partial's function and pass its bound
        # arguments at each call (numba specialises on their types, as on constants).
        if isinstance(fn, functools.partial):
            return functools.partial(self._njit(fn.func), *fn.args, **fn.keywords)
        return self._njit(fn)

    def _njit(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        # A function the user compiled with options of their own (parallel=True, ...) stays so.
        if isinstance(fn, self.numba.core.dispatcher.Dispatcher):
            return fn
        return self.numba.njit(fn)

    @property
    def xp(self) -> Any:
        return np
