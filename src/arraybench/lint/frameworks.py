"""What the linter knows of each framework and clock, by qualified name: one table per fact."""

from __future__ import annotations

import re

# The names scripts give modules without importing them in the snippet at hand (a blog's code
# often shows no imports): used only for a name the file never binds.
CONVENTIONAL = {"np": "numpy", "numpy": "numpy", "jnp": "jax.numpy", "jax": "jax", "lax": "jax.lax",
                "torch": "torch", "tf": "tensorflow", "tensorflow": "tensorflow", "cp": "cupy", "cupy": "cupy",
                "numba": "numba", "nb": "numba", "time": "time", "timeit": "timeit", "os": "os",
                "functools": "functools", "datetime": "datetime"}

FRAMEWORKS = {"numpy": "numpy", "jax": "jax", "jaxlib": "jax", "torch": "torch", "tensorflow": "tensorflow",
              "cupy": "cupy", "cupyx": "cupy", "numba": "numba"}
NAMES = {"numpy": "NumPy", "jax": "JAX", "torch": "PyTorch", "tensorflow": "TensorFlow", "cupy": "CuPy",
         "numba": "Numba"}

CLOCKS = frozenset({
    "time.time", "time.time_ns", "time.perf_counter", "time.perf_counter_ns", "time.monotonic",
    "time.monotonic_ns", "time.process_time", "time.process_time_ns", "timeit.default_timer",
    "datetime.datetime.now", "datetime.datetime.utcnow",
})
# Clocks that follow the wall clock: adjustable (NTP, the user), so an interval can come out wrong.
WALL_CLOCKS = frozenset({"time.time", "time.time_ns", "datetime.datetime.now", "datetime.datetime.utcnow"})

# Wrappers that compile a function on its first call; the framework whose arrays a call returns.
JIT_WRAPPERS = {
    "jax.jit": "jax", "jax.pmap": "jax", "tensorflow.function": "tensorflow", "torch.compile": "torch",
    "torch.jit.script": "torch", "torch.jit.trace": "torch", "numba.jit": "numpy", "numba.njit": "numpy",
    "numba.vectorize": "numpy", "numba.guvectorize": "numpy", "cupy.fuse": "cupy",
}
# Transformations that return a function running the framework's operations eagerly.
TRANSFORMS = {
    "jax.grad": "jax", "jax.value_and_grad": "jax", "jax.vmap": "jax", "jax.jacfwd": "jax", "jax.jacrev": "jax",
    "jax.hessian": "jax", "jax.checkpoint": "jax", "jax.remat": "jax", "torch.func.grad": "torch",
    "torch.func.vmap": "torch", "torch.vmap": "torch",
}

SYNC_CALLS = {
    "jax.block_until_ready": "jax", "jax.effects_barrier": "jax", "torch.cuda.synchronize": "torch",
    "torch.accelerator.synchronize": "torch", "torch.mps.synchronize": "torch", "torch.xpu.synchronize": "torch",
    "cupy.cuda.runtime.deviceSynchronize": "cupy", "cupy.cuda.Stream.null.synchronize": "cupy",
    "cupy.cuda.Device.synchronize": "cupy", "tensorflow.test.experimental.sync_devices": "tensorflow",
}
SYNC_METHODS = frozenset({"block_until_ready", "synchronize"})
# Reading a value into Python waits for it, but copies a scalar, not an array.
SYNC_BUILTINS = frozenset({"float", "int", "bool", "complex", "print", "str", "repr", "format"})
SYNC_ONLY_METHODS = frozenset({"item"})

# Copies of a whole array from the framework's device to a NumPy array.
TO_HOST_CALLS = {"numpy.array": "copy", "numpy.asarray": "view", "numpy.asanyarray": "view",
                 "cupy.asnumpy": "copy", "jax.device_get": "view"}
TO_HOST_METHODS = frozenset({"numpy", "cpu", "get", "tolist", "__array__"})
# Conversions of host data into a framework's array.
TO_DEVICE_CALLS = {"jax.numpy.array": "jax", "jax.numpy.asarray": "jax", "jax.device_put": "jax",
                   "torch.tensor": "torch", "torch.as_tensor": "torch", "cupy.array": "cupy",
                   "cupy.asarray": "cupy", "tensorflow.constant": "tensorflow",
                   "tensorflow.convert_to_tensor": "tensorflow"}
# Conversions that share the host buffer: no copy on the CPU.
ZERO_COPY = frozenset({"torch.from_numpy", "torch.as_tensor"})

# The modules whose functions are array operations; a framework's other modules (its utilities, file
# systems, trees) are not array work the linter knows.
ARRAY_MODULES = frozenset({
    "numpy", "numpy.linalg", "numpy.fft", "numpy.random", "numpy.random.Generator", "jax.numpy",
    "jax.numpy.linalg", "jax.numpy.fft", "jax.lax", "jax.random", "jax.nn", "jax.scipy.linalg",
    "jax.scipy.special", "jax.scipy.signal", "torch", "torch.linalg", "torch.fft", "torch.special",
    "torch.nn.functional", "tensorflow", "tensorflow.math", "tensorflow.linalg", "tensorflow.signal",
    "tensorflow.random", "tensorflow.nn", "tensorflow.experimental.numpy", "cupy", "cupy.linalg", "cupy.fft",
    "cupy.random", "cupyx.scipy.linalg", "cupyx.scipy.fft", "cupyx.scipy.special",
})
# Calls in those modules that return no array and do no array work.
NOT_COMPUTE_PREFIXES = (
    "jax.devices", "jax.local_devices", "jax.default_device", "jax.default_backend", "jax.config",
    "jax.random.PRNGKey", "jax.random.key", "jax.make_jaxpr", "jax.numpy.dtype", "torch.cuda", "torch.device",
    "torch.manual_seed", "torch.set_", "torch.get_", "torch.backends", "torch.no_grad", "torch.accelerator",
    "tensorflow.config", "tensorflow.device", "tensorflow.random.set_seed", "tensorflow.test",
    "numpy.random.seed", "numpy.random.default_rng", "numpy.random.RandomState", "numpy.dtype",
    "numpy.set_printoptions", "numpy.random.set_state", "cupy.cuda", "numba",
)
# A dtype's own name (np.float32, torch.int64): a type or a scalar, not array work.
DTYPE_ATTRIBUTE = re.compile(r"(u?int\d*|float\d*|float_|bfloat16|complex\d*|bool_?|double|half|single)")

# Names of one operation in several frameworks: a timing of np.dot and one of torch.mm compare.
SAME_OPERATION = {"dot": "matmul", "mm": "matmul", "power": "pow", "absolute": "abs", "concatenate": "concat",
                  "arcsin": "asin", "arccos": "acos", "arctan": "atan", "arcsinh": "asinh", "arccosh": "acosh",
                  "arctanh": "atanh", "arctan2": "atan2", "amax": "max", "amin": "min", "reduce_sum": "sum",
                  "reduce_mean": "mean", "reduce_max": "max", "reduce_min": "min", "reduce_prod": "prod"}
# Words a function's name carries to say which framework's version it is: `linreg_jax`, `np_linreg`.
FRAMEWORK_WORDS = frozenset({"np", "numpy", "jnp", "jax", "torch", "pt", "pytorch", "tf", "tensorflow", "cp",
                             "cupy", "nb", "numba", "jit", "jitted", "compiled", "eager", "cpu", "gpu", "xla"})

DTYPE_NAMES = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16", "float32": "float32",
               "single": "float32", "float": "float32", "f4": "float32", "float64": "float64",
               "double": "float64", "f8": "float64", "float_": "float64"}
FLOAT_DTYPES = frozenset({"float16", "bfloat16", "float32", "float64"})

# Array creation whose values are random or constant, and whose default dtype is the framework's.
RANDOM_NORMAL = frozenset({
    "numpy.random.randn", "numpy.random.standard_normal", "numpy.random.normal", "jax.random.normal",
    "torch.randn", "tensorflow.random.normal", "cupy.random.randn", "cupy.random.standard_normal",
    "cupy.random.normal", "numpy.random.Generator.standard_normal", "numpy.random.Generator.normal",
})
RANDOM_UNIFORM = frozenset({
    "numpy.random.rand", "numpy.random.random", "numpy.random.random_sample", "numpy.random.uniform",
    "jax.random.uniform", "torch.rand", "tensorflow.random.uniform", "cupy.random.rand", "cupy.random.random",
    "numpy.random.Generator.random", "numpy.random.Generator.uniform",
})
FILLED = {"ones": 1.0, "zeros": 0.0}
CREATION = frozenset({"ones", "zeros", "empty", "full", "eye", "identity", "linspace", "logspace", "arange",
                      "ones_like", "zeros_like", "empty_like", "full_like"})


def framework_of(qual: str | None) -> str | None:
    """The framework a qualified name belongs to: "jax.numpy.dot" -> "jax"; None for the rest."""
    if not qual:
        return None
    return FRAMEWORKS.get(qual.split(".")[0])


def is_async(framework: str | None, device: str | None) -> bool:
    """Whether work of `framework` on `device` (None: the framework's default) returns before it ends.

    JAX dispatches asynchronously on every device, CuPy runs on a GPU; PyTorch is asynchronous on
    a GPU only, TensorFlow wherever it places work on one, which it does by default when one exists.
    """
    if framework in ("jax", "cupy"):
        return True
    if framework == "torch":
        return device == "gpu"
    if framework == "tensorflow":
        return device != "cpu"
    return False


def copies_to_host(framework: str | None, device: str | None, kind: str) -> bool:
    """Whether moving a `framework` array to NumPy copies it across (kind "copy") or may share it ("view")."""
    if framework in (None, "numpy", "numba"):
        return False
    if framework == "torch":
        return device == "gpu"
    if framework == "jax" and kind == "copy":
        return True  # np.array copies even on the CPU
    return device != "cpu"
