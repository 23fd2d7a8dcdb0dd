"""Backend registry: each adapter class by its name; importing it imports no framework."""

from arraybench.backends.backend import Backend
from arraybench.backends.cupy_backend import CupyBackend
from arraybench.backends.jax_backend import JaxBackend
from arraybench.backends.numba_backend import NumbaBackend
from arraybench.backends.numpy_backend import NumpyBackend
from arraybench.backends.tensorflow_backend import TensorflowBackend
from arraybench.backends.torch_backend import TorchBackend
from arraybench.errors import unknown

BACKENDS: dict[str, type[Backend]] = {
    cls.name: cls
    for cls in (NumpyBackend, NumbaBackend, JaxBackend, TensorflowBackend, TorchBackend, CupyBackend)
}


def backend_class(name: str) -> type[Backend]:
    """The adapter class for `name`; a UsageError with the closest name if there is none."""
    try:
        return BACKENDS[name]
    except KeyError:
        raise unknown("backend", name, BACKENDS) from None
