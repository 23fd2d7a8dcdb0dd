"""Dense matrix product C = A·B (documents 002, 003, 004), with document 004's device comparison.

`matmul` is the size sweep (100², 2000², and the opt-in `huge` 10000² of document 002).
`matmul_3000` and `matmul_3000_to_host` are document 004's two GPU cases at 3000²: the product
left on the device, and the product copied back to the host inside the timer (the copy is what
that case measures; on a CPU both are the same). Precision stays at the dtype's own: TF32 is off
in every backend and JAX multiplies at "highest" precision, or the error check would fail.
"""

from typing import Any

import numpy as np

from arraybench.backends.base import Backend
from arraybench.workloads.base import Workload
from arraybench.workloads.common import NO_FUSE, eps, norm_check, register_everywhere
from arraybench.workloads.sizes import log_sweep


def _make(name: str, description: str, presets: dict[str, Any], default_presets: tuple[str, ...],
          in_default_suite: bool = True) -> Workload:
    return Workload(
        name=name,
        description=description,
        defaults={"n": 100},
        size_param="n",
        presets=presets,
        default_presets=default_presets,
        in_default_suite=in_default_suite,
        flops=lambda n: 2.0 * n**3,
        bytes=lambda n, itemsize: 3.0 * n * n * itemsize,
    )


matmul = _make(
    "matmul", "C = A·B of random n×n matrices (documents 002, 003)",
    {"small": {"n": 100}, "large": {"n": 2_000}, "huge": {"n": 10_000}, "sweep": log_sweep("n", 16, 2048, 8)},
    ("small", "large"),
)
# Document 004's fixed-size pair: `--suite seeds` measures them. The default suite leaves them
# out: `matmul` covers the operation (100² and 2000²), and at ~1 s a call on two cores each costs
# as much as twenty other cases.
matmul_3000 = _make(
    "matmul_3000", "C = A·B at 3000², result left on the device (document 004)",
    {"large": {"n": 3_000}}, ("large",), in_default_suite=False,
)
matmul_3000_to_host = _make(
    "matmul_3000_to_host", "C = A·B at 3000², result copied back to the host in the timer (document 004)",
    {"large": {"n": 3_000}}, ("large",), in_default_suite=False,
)
ALL = (matmul, matmul_3000, matmul_3000_to_host)


def _inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return rng.standard_normal((n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype)


def _tolerance(dtype: str, params: dict[str, Any]) -> float:
    # Rounding error of a length-n dot product grows like √n·eps; TF32 (eps 1e-3) fails this.
    return 4.0 * np.sqrt(params["n"]) * eps(dtype)


for wl in ALL:
    wl.inputs(_inputs)
    wl.reference(lambda a, b, n: a @ b)
    wl.check_with(norm_check(_tolerance))


for wl in (matmul, matmul_3000):
    register_everywhere(wl, lambda be: lambda a, b: a @ b, cupy_jit=False)


def _to_host_everywhere() -> None:
    """The product, then the backend's own device-to-host copy: `.cpu().numpy()`, `np.asarray`..."""
    def build(be: Backend, **params: Any) -> Any:
        product = be.run_on_device(lambda a, b: a @ b)
        return lambda a, b: be.to_host(product(a, b))

    def build_jit(be: Backend, **params: Any) -> Any:
        product = be.jit(lambda a, b: a @ b, "jit")
        return lambda a, b: be.to_host(product(a, b))

    matmul_3000_to_host.impl("numpy")(build)
    matmul_3000_to_host.impl("cupy")(build)
    matmul_3000_to_host.cannot("cupy", "jit", NO_FUSE)
    matmul_3000_to_host.impl("numba", "jit")(build_jit)
    for backend in ("jax", "tensorflow", "torch"):
        matmul_3000_to_host.impl(backend)(build)
        matmul_3000_to_host.impl(backend, "jit")(build_jit)


_to_host_everywhere()
