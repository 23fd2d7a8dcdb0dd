"""A stand-in for CuPy where there is no GPU: NumPy arrays that know which of N fake GPUs holds them.

Like CuPy's kernels, an operation refuses an array that lives on another device than the current
one, so a multi-GPU path that forgets a `with device:` fails here as it would on real GPUs. N is
$FAKE_CUPY_DEVICES (default 2). Only tests put this folder on PYTHONPATH: it times nothing real.
"""

import os
from types import SimpleNamespace
from typing import Any

import numpy as np

_current = [0]
float32, float64 = np.float32, np.float64


class ndarray(np.ndarray):  # noqa: N801 - CuPy's name
    device_id: int

    def __array_finalize__(self, obj: Any) -> None:
        self.device_id = getattr(obj, "device_id", _current[0])

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        for x in (*inputs, *kwargs.get("out", ())):
            if isinstance(x, ndarray) and x.device_id != _current[0]:
                raise ValueError(f"The device where the array resides ({x.device_id}) is different from the "
                                 f"current device ({_current[0]})")
        plain = [np.asarray(x) if isinstance(x, ndarray) else x for x in inputs]
        return _here(getattr(ufunc, method)(*plain, **kwargs))

    @property
    def data(self) -> Any:
        return SimpleNamespace(ptr=self.ctypes.data)


def _here(result: Any) -> Any:
    """A result of an operation, on the current device."""
    if isinstance(result, tuple):
        return tuple(_here(r) for r in result)
    if not isinstance(result, np.ndarray):
        return result
    out = np.asarray(result).view(ndarray)
    out.device_id = _current[0]
    return out


def asarray(a: Any, dtype: Any = None) -> Any:
    if isinstance(a, ndarray) and dtype is None:
        return a  # as CuPy: an array already on a GPU, whichever, is returned as it is
    return _here(np.array(a, dtype=dtype))


def copy(a: Any) -> Any:
    return _here(np.array(np.asarray(a)))  # onto the current device, from any


def asnumpy(a: Any) -> np.ndarray:
    return np.array(np.asarray(a))


def stack(arrays: Any, axis: int = 0) -> Any:
    return _here(np.stack([np.asarray(a) for a in arrays], axis))


def empty(shape: Any, dtype: Any = np.float32) -> Any:
    return _here(np.empty(shape, dtype))


def fuse(kernel_name: str = "") -> Any:
    return lambda fn: fn


class _Device:
    def __init__(self, i: int = 0) -> None:
        self.id = i
        self._before: list[int] = []

    def use(self) -> None:
        _current[0] = self.id

    def synchronize(self) -> None:
        pass

    def __enter__(self) -> "_Device":
        self._before.append(_current[0])
        _current[0] = self.id
        return self

    def __exit__(self, *exc: Any) -> None:
        _current[0] = self._before.pop()


class _CUDARuntimeError(RuntimeError):
    pass


_stream = SimpleNamespace(synchronize=lambda: None, ptr=0)
_pool = SimpleNamespace(free_all_blocks=lambda: None, total_bytes=lambda: 0, used_bytes=lambda: 0)
cuda = SimpleNamespace(
    Device=_Device,
    get_current_stream=lambda: _stream,
    runtime=SimpleNamespace(
        getDeviceCount=lambda: int(os.environ.get("FAKE_CUPY_DEVICES", "2")),
        CUDARuntimeError=_CUDARuntimeError,
        getDeviceProperties=lambda i: {"name": b"fake GPU", "major": 0, "minor": 0},
        runtimeGetVersion=lambda: 0,
        driverGetVersion=lambda: 0,
    ),
)


def get_default_memory_pool() -> Any:
    return _pool
