"""Normal random samples of an n×n matrix, each framework's own generator (document 004).

Every generator is seeded once when the case is built and advances on each call, so each timed
call draws fresh numbers: NumPy's and CuPy's `Generator`, `tf.random.Generator`, a seeded
`torch.Generator` (torch.compile uses the global seed: it cannot trace a Generator object),
and JAX's explicit keys, split on every call. The numbers differ between frameworks by design,
so the check is statistical: mean and variance within six standard errors of 0 and 1.
"""

from typing import Any

import numpy as np

from arraybench.backends.backend import Backend
from arraybench.backends.cupy_backend import CupyBackend
from arraybench.backends.tensorflow_backend import TensorflowBackend
from arraybench.backends.torch_backend import TorchBackend
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import Check, Workload, leaves

SEED = 0

rng = Workload(
    name="rng",
    description="n×n standard normal samples from each framework's generator (document 004)",
    defaults={"n": 1_000},
    size_param="n",
    presets={"small": {"n": 1_000}, "large": {"n": 3_000}, "sweep": log_sweep("n", 32, 4096, 8)},
    # No FLOP count: drawing a normal sample is no fixed number of floating-point operations.
    bytes=lambda n, itemsize: float(n * n * itemsize),
)


@rng.inputs
def _no_inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return ()


rng.reference(lambda n: (0.0, 1.0))


@rng.check_with
def _statistics(out: Any, ref: Any, dtype: str, params: dict[str, Any]) -> Check:
    (x,) = leaves(out)
    n = params["n"]
    if x.shape != (n, n) or x.dtype != np.dtype(dtype):
        return Check(False, float("inf"), float("inf"), 0.0, f"{x.dtype}{x.shape}, expected {dtype}({n}, {n})")
    x64 = x.astype(np.float64)
    if not np.all(np.isfinite(x64)):
        return Check(False, float("inf"), float("inf"), 0.0, "output has NaN or inf")
    mean, var = float(x64.mean()), float(x64.var())
    # Standard errors of the sample mean (1/√N) and variance (√(2/N)) of N standard normals.
    se_mean, se_var = 1.0 / np.sqrt(x.size), np.sqrt(2.0 / x.size)
    z = max(abs(mean) / se_mean, abs(var - 1.0) / se_var)
    return Check(bool(z <= 6.0), max(abs(mean), abs(var - 1.0)), float(z), 6.0,
                 f"mean {mean:.4g}, variance {var:.4g}: {z:.1f} standard errors off")


@rng.impl("numpy")
def _numpy(be: Backend, n: int) -> Any:
    gen = np.random.default_rng(SEED)
    dtype = np.dtype(be.dtype)
    return lambda: gen.standard_normal((n, n), dtype=dtype)


@rng.impl("numba", "jit")
def _numba(be: Backend, n: int) -> Any:
    import numba

    dtype = np.dtype(be.dtype)

    @numba.njit(parallel=True)
    def draw(out: np.ndarray) -> np.ndarray:
        # Numba keeps one generator state per thread; prange fills rows in parallel.
        for i in numba.prange(out.shape[0]):
            for j in range(out.shape[1]):
                out[i, j] = np.random.standard_normal()
        return out

    @numba.njit
    def seed(s: int) -> None:
        np.random.seed(s)  # seeds Numba's own generator, not NumPy's

    seed(SEED)
    return lambda: draw(np.empty((n, n), dtype))


@rng.impl("jax")
def _jax_eager(be: Backend, n: int) -> Any:
    import jax

    state = {"key": jax.random.key(SEED)}
    dtype = be.xp.dtype(be.dtype)

    def draw() -> Any:
        state["key"], sub = jax.random.split(state["key"])
        return jax.random.normal(sub, (n, n), dtype)

    return draw


@rng.impl("jax", "jit")
def _jax_jit(be: Backend, n: int) -> Any:
    import jax

    dtype = be.xp.dtype(be.dtype)

    @jax.jit
    def step(key: Any) -> tuple:
        key, sub = jax.random.split(key)
        return key, jax.random.normal(sub, (n, n), dtype)

    state = {"key": jax.random.key(SEED)}

    def draw() -> Any:
        state["key"], x = step(state["key"])
        return x

    return draw


def _tf_draw(be: TensorflowBackend, n: int) -> Any:
    tf = be.tf
    with tf.device(be.dev_name):
        gen = tf.random.Generator.from_seed(SEED)
    dtype = tf.as_dtype(be.dtype)
    return lambda: gen.normal((n, n), dtype=dtype)


@rng.impl("tensorflow")
def _tf_eager(be: TensorflowBackend, n: int) -> Any:
    return be.run_on_device(_tf_draw(be, n))


@rng.impl("tensorflow", "jit")
def _tf_jit(be: TensorflowBackend, n: int) -> Any:
    return be.jit(_tf_draw(be, n), "jit")


@rng.impl("torch")
def _torch_eager(be: TorchBackend, n: int) -> Any:
    torch = be.torch
    gen = torch.Generator(device=be.dev).manual_seed(SEED)
    dtype = getattr(torch, be.dtype)
    return lambda: torch.randn((n, n), generator=gen, dtype=dtype, device=be.dev)


@rng.impl("torch", "jit")
def _torch_compile(be: TorchBackend, n: int) -> Any:
    torch = be.torch
    torch.manual_seed(SEED)
    dtype = getattr(torch, be.dtype)
    return torch.compile(lambda: torch.randn((n, n), dtype=dtype, device=be.dev), fullgraph=True, dynamic=False)


@rng.impl("cupy")
def _cupy(be: CupyBackend, n: int) -> Any:
    gen = be.cupy.random.default_rng(SEED)
    dtype = np.dtype(be.dtype)
    return lambda: gen.standard_normal((n, n), dtype=dtype)


rng.cannot("cupy", "jit", "cupy.fuse cannot call a random generator")
