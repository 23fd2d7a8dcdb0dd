"""TensorFlow: eager ops and XLA-compiled tf.function on CPU or GPU."""

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from arraybench.backends.base import Backend, Unavailable, to_host_tree

# What `import tensorflow` loads of Keras at once, only to register Keras's optimizers for loading
# SavedModels: about 0.5 s of a worker's 3 s start, which no case uses. Blocked during the import
# (TensorFlow catches the ImportError), Keras still loads on first use: tf.keras, tf.optimizers.
EAGER_KERAS = ("keras.src.optimizers", "tf_keras.src.optimizers")


class TensorflowBackend(Backend):
    name = "tensorflow"
    module = "tensorflow"
    distribution = "tensorflow-cpu"
    extra = "tensorflow"
    devices_supported = ("cpu", "gpu")
    jit_modes = ("jit",)
    jit_name = "tf.function(jit_compile=True)"

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
        if self.device == "cpu":
            env["CUDA_VISIBLE_DEVICES"] = "-1"
        return env

    def load(self) -> None:
        blocked = [m for m in EAGER_KERAS if m not in sys.modules]
        for m in blocked:  # None in sys.modules: importing that name raises ImportError
            sys.modules[m] = None  # type: ignore[assignment]
        try:
            import tensorflow as tf
        except ImportError as e:
            raise Unavailable(f"{e} (pip install 'arraybench[tensorflow]')") from e
        finally:
            for m in blocked:
                del sys.modules[m]
        tf.get_logger().setLevel("ERROR")
        # Must happen before the first op creates the runtime.
        tf.config.threading.set_intra_op_parallelism_threads(self.threads)
        tf.config.threading.set_inter_op_parallelism_threads(1)
        tf.config.experimental.enable_tensor_float_32_execution(False)
        if self.device == "gpu":
            gpus = tf.config.list_physical_devices("GPU")
            if not gpus:
                raise Unavailable("TensorFlow sees no GPU")
            tf.config.experimental.set_memory_growth(gpus[0], True)
            self.dev_name = "/GPU:0"
        else:
            self.dev_name = "/CPU:0"
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

    def upload(self, a: np.ndarray) -> Any:
        with self.tf.device(self.dev_name):
            return self.tf.identity(self.tf.convert_to_tensor(a))

    def to_host(self, out: Any) -> Any:
        return to_host_tree(out, lambda t: t.numpy() if hasattr(t, "numpy") else np.asarray(t))

    @property
    def asynchronous(self) -> bool:
        return self.device == "gpu" or not self._synchronous

    def sync(self, out: Any) -> None:
        if self.device == "cpu" and self._synchronous:
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
        if self.device == "cpu":
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

    def peak_memory(self) -> int | None:
        if self.device != "gpu":
            return None
        return self.tf.config.experimental.get_memory_info("GPU:0")["peak"]

    def start_case(self) -> None:
        if self.device == "gpu":
            self.tf.config.experimental.reset_memory_stats("GPU:0")
