"""TensorFlow: eager ops and XLA-compiled tf.function on CPU or GPU; several devices through a
MirroredStrategy (logical devices on the CPU)."""

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from arraybench.backends.backend import Backend, Unavailable, to_host_tree
from arraybench.errors import install_hint

# What `import tensorflow` loads of Keras at once, only to register Keras's optimizers for loading
# SavedModels: about 0.5 s of a worker's 3 s start, which no case uses. Blocked during the import
# (TensorFlow catches the ImportError), Keras still loads on first use: tf.keras, tf.optimizers.
EAGER_KERAS = ("keras.src.optimizers", "tf_keras.src.optimizers")


class TensorflowBackend(Backend):
    name = "tensorflow"
    module = "tensorflow"
    distribution = "tensorflow-cpu"
    extra = "tensorflow"
    devices_supported = ("cpu", "gpu", "tpu")
    spans_devices = True
    jit_modes = ("jit",)
    jit_name = "tf.function(jit_compile=True)"
    # Autograph writes a module for each function it converts (__autograph_generated_file*.py), removed
    # only at exit, and a worker ends by SIGKILL: two files per worker of `selu` were left in /tmp.
    private_tmp = True

    @classmethod
    def version(cls) -> str | None:
        import importlib.metadata

        for dist in ("tensorflow-cpu", "tensorflow", "tensorflow-gpu"):
            try:
                return importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
        return None

    def env(self) -> dict[str, str]:
        env = super().env()
        env["TF_CPP_MIN_LOG_LEVEL"] = "2"  # drop INFO and WARNING chatter, keep errors
        env["TF_ENABLE_ONEDNN_OPTS"] = "1"
        if self.kind != "gpu":
            env["CUDA_VISIBLE_DEVICES"] = "-1"
        return env

    def load(self) -> None:
        blocked = [m for m in EAGER_KERAS if m not in sys.modules]
        for m in blocked:  # None in sys.modules: importing that name raises ImportError
            sys.modules[m] = None  # type: ignore[assignment]
        try:
            import tensorflow as tf
        except ImportError as e:
            raise Unavailable(f"{e} ({install_hint(repr('arraybench[tensorflow]'))})") from e
        finally:
            for m in blocked:
                del sys.modules[m]
        tf.get_logger().setLevel("ERROR")
        # Must happen before the first op creates the runtime.
        tf.config.threading.set_intra_op_parallelism_threads(self.threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.experimental.enable_tensor_float_32_execution(False)
        kind = self.kind.upper()
        found = tf.config.list_physical_devices(kind)
        if self.kind == "cpu" and not self.spec.single:
            # N logical CPU devices over the one physical CPU (its cores shared): before any op.
            count = max(self.spec.ids) + 1 if self.spec.ids else self.threads
            tf.config.set_logical_device_configuration(found[0], [tf.config.LogicalDeviceConfiguration()] * count)
            seen = count
        else:
            seen = len(found)
        ids = self.spec.ids if self.spec.ids is not None else tuple(range(seen))
        if not seen or max(ids) >= seen:
            raise Unavailable(f"TensorFlow sees {seen} {kind} device(s); {self.device} needs ids "
                              f"{', '.join(map(str, ids))}")
        if self.kind == "gpu":
            for i in ids:
                tf.config.experimental.set_memory_growth(found[i], True)
        self.dev_names = [f"/{kind}:{i}" for i in ids]
        self.dev_name = self.dev_names[0]
        self.n_devices = len(ids)
        # Several devices: one replica per device, all-reduce across them (on the CPU, in host memory).
        self.strategy = tf.distribute.MirroredStrategy(self.dev_names) if self.n_devices > 1 else None
        self.tf = tf
        self._sync_devices = getattr(tf.test.experimental, "sync_devices", None)
        self._synchronous = bool(tf.config.experimental.get_synchronous_execution())

    def info(self) -> dict[str, Any]:
        info = super().info()
        info["threads_verified"] = self.tf.config.threading.get_intra_op_parallelism_threads()
        info["inter_op_threads"] = self.tf.config.threading.get_inter_op_parallelism_threads()
        info["tf32"] = bool(self.tf.config.experimental.tensor_float_32_execution_enabled())
        info["synchronous_execution"] = self._synchronous
        info["sync"] = "tf.test.experimental.sync_devices" if self._sync_devices else ".numpy() copy"
        return info

    def devices(self) -> list[str]:
        return [d.name for d in self.tf.config.list_logical_devices()]

    def devices_used(self) -> list[str]:
        return list(self.dev_names)

    def to_devices(self, a: np.ndarray, how: str) -> Any:
        """A PerReplica value of the strategy: each replica's rows (`split`) or the whole of `a` (`copy`)
        on its device; `first`: a tensor on the first device."""
        if self.strategy is None or how == "first":
            return self.to_device(a)
        n, tf = self.n_devices, self.tf
        if how == "split" and a.shape[0] % n:
            raise Unavailable(f"{a.shape[0]} rows do not split evenly over {n} devices")
        rows = a.shape[0] // n

        def part(ctx: Any) -> Any:
            i = ctx.replica_id_in_sync_group
            piece = a[i * rows:(i + 1) * rows] if how == "split" else a
            return tf.identity(tf.convert_to_tensor(np.ascontiguousarray(piece)))

        x = self.strategy.experimental_distribute_values_from_function(part)
        for t in self.strategy.experimental_local_results(x):
            self.check_dtype(t)
        return x

    def gather(self, out: Any, how: str) -> Any:
        if self.strategy is None or how == "first":
            return self.to_host(out)
        parts = [t.numpy() for t in self.strategy.experimental_local_results(out)]
        return np.concatenate(parts) if how == "split" else parts[0]

    def upload(self, a: np.ndarray) -> Any:
        with self.tf.device(self.dev_name):
            return self.tf.identity(self.tf.convert_to_tensor(a))

    def to_host(self, out: Any) -> Any:
        return to_host_tree(out, lambda t: t.numpy() if hasattr(t, "numpy") else np.asarray(t))

    @property
    def asynchronous(self) -> bool:
        return self.kind == "gpu" or not self._synchronous

    def sync(self, out: Any) -> None:
        if self.kind == "cpu" and self._synchronous:
            return  # TF's synchronous executor: on the CPU the result exists when the call returns
        if self._sync_devices is not None:
            self._sync_devices()
        else:
            to_host_tree(out, lambda t: t.numpy())

    def run_on_device(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """Place every op `fn` creates on this backend's device.

        On the CPU no GPU is visible to the worker (CUDA_VISIBLE_DEVICES=-1), so every op lands
        on the CPU anyway and `fn` is returned as is: entering a device scope on every timed
        call is bookkeeping the other frameworks do not pay.
        """
        if self.kind == "cpu" and self.n_devices == 1:
            return fn
        tf, dev = self.tf, self.dev_name

        def placed(*args: Any) -> Any:
            with tf.device(dev):
                return fn(*args)

        return placed

    def jit(self, fn: Callable[..., Any], mode: str, *, any_shape: bool = False) -> Callable[..., Any]:
        return self.run_on_device(self.tf.function(fn, jit_compile=True))

    # TensorFlow's own ops, not its NumPy layer (`xp`), which adds dispatch cost.
    def sin_op(self) -> Callable[[Any], Any]:
        return self.tf.math.sin

    def sort_op(self) -> Callable[[Any], Any]:
        return self.tf.sort

    def fft_op(self) -> Callable[[Any], Any]:
        return self.tf.signal.fft

    @property
    def xp(self) -> Any:
        return self.tf.experimental.numpy

    memory_method = ("tf.config.experimental.get_memory_info: current, and peak since reset_memory_stats, of "
                     "TensorFlow's allocator for the device (on the CPU, oneDNN's pool); how large the pool has "
                     "grown it does not say")

    def _memory_info(self) -> dict[str, int] | None:
        """TensorFlow's own count for the case's device: its GPU allocator's, or on the CPU oneDNN's
        pool's (TF_ENABLE_ONEDNN_OPTS, which keeps freed blocks, so the resident set would not see a
        call reuse them); None where its allocator keeps none (the plain CPU allocator)."""
        try:
            return dict(self.tf.config.experimental.get_memory_info(self.dev_name.lstrip("/")))
        except ValueError:  # "Allocator stats not available for device"
            return None

    def settle_memory(self) -> int | None:
        if self._memory_info() is None:
            return None
        self.tf.config.experimental.reset_memory_stats(self.dev_name.lstrip("/"))
        info = self._memory_info()
        return None if info is None else int(info["current"])

    def peak_memory(self) -> int | None:
        info = self._memory_info()
        return None if info is None else int(info["peak"])

    def start_case(self) -> None:
        if self._memory_info() is not None:
            self.tf.config.experimental.reset_memory_stats(self.dev_name.lstrip("/"))
