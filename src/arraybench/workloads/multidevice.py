"""One computation over several devices (device tokens such as cpu:4, gpu:2; devices.py).

- `dp_matmul`: data parallel, no communication: a batch of n×n matrices times one shared matrix,
  the batch split over the devices (the shared matrix copied to each).
- `dp_grad`: data parallel with an all-reduce: the gradient of linear least squares, each device's
  rows giving a partial gradient, summed over the devices (what a data-parallel training step does).
- `allreduce`: the all-reduce alone: each device sums its rows of a (8, d) array, then the d-vectors
  are summed over the devices. At `dp_grad`'s d it is the communication of a `dp_grad` call, so the
  report puts the two side by side as the share spent communicating.
- `dp_grad_pmap`: `dp_grad` through JAX's `pmap` (the older API; the same psum).
- `device_copy`: an n×n array copied from the first device to the second, beside the host↔device
  copies of transfer.py (document 004).

On one device each is the plain single-device computation: the baseline its scaling is measured
against. Per framework: JAX shards over a Mesh (NamedSharding; eager: op by op on sharded arrays,
collectives inserted by XLA; jit: shard_map with an explicit psum), TensorFlow runs one replica per
device under a MirroredStrategy, PyTorch runs one process per device under torch.distributed (gloo
on the CPU; the worker is rank 0 and drives its peers, TorchBackend.spread), CuPy queues each GPU's
share from one process and all-reduces with NCCL (CupyBackend.allreduce).
"""

from collections.abc import Callable
from typing import Any

import numpy as np

from arraybench.backends.backend import Unavailable
from arraybench.workloads.common import exact_check
from arraybench.workloads.sizes import log_sweep
from arraybench.workloads.workload import COPY, FIRST, SPLIT, Spread, Workload

BATCH = 8  # dp_matmul's matrices; splits evenly over 1, 2, 4 and 8 devices
ROWS = 8  # allreduce's rows: one or more per device up to 8 devices
D = 256  # dp_grad's features, and allreduce's `small` d: the same vector is all-reduced

dp_matmul = Workload(
    name="dp_matmul",
    description=f"{BATCH} n×n matrices times one n×n matrix, the batch split over the devices (no communication)",
    defaults={"n": 128, "batch": BATCH},
    size_param="n",
    presets={"small": {"n": 128}, "large": {"n": 512}, "sweep": log_sweep("n", 16, 1024)},
    flops=lambda n, batch: 2.0 * batch * n**3,
    bytes=lambda n, batch, itemsize: float((2 * batch + 1) * n * n * itemsize),
    spread=Spread((SPLIT, COPY), SPLIT),
    in_default_suite=False,
)
dp_grad = Workload(
    name="dp_grad",
    description="least-squares gradient 2/m·Xᵀ(Xw − y), X's m rows split over the devices, summed by an all-reduce",
    defaults={"m": 8192, "d": D},
    size_param="m",
    presets={"small": {"m": 8192}, "large": {"m": 131_072}, "sweep": log_sweep("m", 1024, 262_144)},
    flops=lambda m, d: 4.0 * m * d,
    bytes=lambda m, d, itemsize: float((m * d + m + 2 * d) * itemsize),
    spread=Spread((SPLIT, SPLIT, COPY), COPY),
    in_default_suite=False,
)
dp_grad_pmap = Workload(
    name="dp_grad_pmap",
    description="dp_grad through jax.pmap and lax.psum (the reshapes to a leading device axis are in the call)",
    defaults=dict(dp_grad.defaults),
    size_param="m",
    presets=dict(dp_grad.presets),
    flops=dp_grad.flops,
    bytes=dp_grad.bytes,
    spread=dp_grad.spread,
    in_default_suite=False,
)
allreduce = Workload(
    name="allreduce",
    description=f"the all-reduce alone: each device sums its rows of a ({ROWS}, d) array, then the d-vectors "
                "are summed over the devices",
    defaults={"d": D},
    size_param="d",
    presets={"small": {"d": D}, "large": {"d": 1 << 20}, "sweep": log_sweep("d", 256, 1 << 22, 9)},
    flops=lambda d: float(ROWS * d),
    bytes=lambda d, itemsize: float(ROWS * d * itemsize),
    spread=Spread((SPLIT,), COPY),
    in_default_suite=False,
)
device_copy = Workload(
    name="device_copy",
    description="an n×n array copied from the first device to the second (beside transfer_to_host/_to_device)",
    defaults={"n": 1_000},
    size_param="n",
    presets={"small": {"n": 1_000}, "large": {"n": 3_000}, "sweep": log_sweep("n", 64, 4096)},
    bytes=lambda n, itemsize: float(n * n * itemsize),
    spread=Spread((FIRST,), FIRST),
    in_default_suite=False,
)
ALL = (dp_matmul, dp_grad, dp_grad_pmap, allreduce, device_copy)
NEEDS_TWO = "a copy between devices needs two of them (transfer_to_host and transfer_to_device are the host's)"


def _copy_impl(backend: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register `backend`'s device_copy builder; on one device it is unsupported, with the reason."""

    def register(build: Callable[..., Any]) -> Callable[..., Any]:
        def checked(be: Any, n: int) -> Any:
            if be.n_devices < 2:
                raise Unavailable(NEEDS_TWO)
            return build(be, n)

        device_copy.impl(backend)(checked)
        return build

    return register


@dp_matmul.inputs
def _matmul_inputs(rng: np.random.Generator, dtype: type, n: int, batch: int) -> tuple:
    return rng.standard_normal((batch, n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype)


def _grad_inputs(rng: np.random.Generator, dtype: type, m: int, d: int) -> tuple:
    return (rng.standard_normal((m, d)).astype(dtype), rng.standard_normal(m).astype(dtype),
            rng.standard_normal(d).astype(dtype))


dp_grad.inputs(_grad_inputs)
dp_grad_pmap.inputs(_grad_inputs)


@allreduce.inputs
def _allreduce_inputs(rng: np.random.Generator, dtype: type, d: int) -> tuple:
    return (rng.standard_normal((ROWS, d)).astype(dtype),)


@device_copy.inputs
def _copy_inputs(rng: np.random.Generator, dtype: type, n: int) -> tuple:
    return (rng.standard_normal((n, n)).astype(dtype),)


# Each computation once, as every device runs it on its share (and one device on the whole):
# summing the devices' results gives the whole computation's (dp_grad scales by the global m).
def _matmul(x: Any, w: Any) -> Any:
    return x @ w


def _grad_of(m: int) -> Callable[..., Any]:
    # (Xw − y)ᵀX, not Xᵀ(Xw − y): the same contraction, but XLA on the CPU transposes X for the
    # latter (m = 131 072, d = 256, float32: 111 ms against 33 ms jitted; NumPy 33 ms either way).
    def grad(x: Any, y: Any, w: Any) -> Any:
        return ((x @ w - y) @ x) * (2.0 / m)

    return grad


def _rowsum(p: Any) -> Any:
    return p.sum(0)


dp_matmul.reference(lambda x, w, n, batch: x @ w)
dp_grad.reference(lambda x, y, w, m, d: _grad_of(m)(x, y, w))
dp_grad_pmap.reference(lambda x, y, w, m, d: _grad_of(m)(x, y, w))
allreduce.reference(lambda p, d: p.sum(0))
device_copy.reference(lambda x, n: x)
device_copy.check_with(exact_check)  # a copy changes no bit

# What each workload computes per device, and whether the devices' results are summed (all-reduce).
LOCAL: dict[str, tuple[Callable[[dict[str, Any]], Callable[..., Any]], bool]] = {
    "dp_matmul": (lambda p: _matmul, False),
    "dp_grad": (lambda p: _grad_of(p["m"]), True),
    "allreduce": (lambda p: _rowsum, True),
}


def _register_eager_and_jit(backend: str, build_of: Callable[[Workload, str], Callable[..., Any]]) -> None:
    """`build_of(workload, mode)` as `backend`'s eager and jit builders of the spreading workloads."""
    for wl in (dp_matmul, dp_grad, allreduce):
        for mode in ("eager", "jit"):
            wl.impl(backend, mode)(build_of(wl, mode))


# --- NumPy: one device, the framework-free baseline -----------------------------------------------
for _wl in (dp_matmul, dp_grad, allreduce):
    _local, _ = LOCAL[_wl.name]
    _wl.impl("numpy")(lambda be, _local=_local, **p: _local(p))


# --- CuPy: one process queues each GPU's share in turn (they run at once), NCCL's all-reduce -------
def _cupy(wl: Workload) -> Callable[..., Any]:
    local_of, reduce = LOCAL[wl.name]

    def build(be: Any, **params: Any) -> Any:
        local = local_of(params)
        if be.n_devices == 1:
            return local

        def spmd(*args: Any) -> Any:
            parts = be.on_each(local, args)
            return be.allreduce(parts) if reduce else parts

        return spmd

    return build


for _wl in (dp_matmul, dp_grad, allreduce):
    _wl.impl("cupy")(_cupy(_wl))


@_copy_impl("cupy")
def _cupy_copy(be: Any, n: int) -> Any:
    cupy, second = be.cupy, be.devs[1]

    def copy(x: Any) -> Any:
        with second:
            return cupy.copy(x)  # peer to peer where the GPUs allow it, else staged by the driver

    return copy


# --- JAX: a Mesh over the devices -------------------------------------------------------------------
def _rows_added(p: Any) -> Any:
    """p.sum(0) as one add per row (the row count is known when JAX traces). XLA's CPU reduction
    over the leading axis is slow: a (8, 2²⁰) float32 sum took 84 ms jitted, this 1.0 ms (2 threads,
    EPYC), which an expert who timed it would write; on GPUs XLA's reduction is fine either way."""
    out = p[0]
    for i in range(1, p.shape[0]):
        out = out + p[i]
    return out


def _jax(wl: Workload, mode: str) -> Callable[..., Any]:
    local_of, reduce = LOCAL[wl.name]
    if wl.name == "allreduce":
        local_of = lambda p: _rows_added  # noqa: E731

    def build(be: Any, **params: Any) -> Any:
        local = local_of(params)
        if be.mesh is None:
            return be.jit(local, mode) if mode == "jit" else local
        if mode == "eager":
            # Op by op on the sharded arrays: each op is partitioned over the mesh and XLA adds the
            # all-reduce where a contraction runs over the split rows.
            return local
        jax = be.jax
        from jax.sharding import PartitionSpec

        assert wl.spread is not None
        specs = tuple(PartitionSpec("d") if h == SPLIT else PartitionSpec() for h in wl.spread.inputs)
        out_spec = PartitionSpec("d") if wl.spread.output == SPLIT else PartitionSpec()

        def body(*args: Any) -> Any:
            out = local(*args)
            return jax.lax.psum(out, "d") if reduce else out

        return jax.jit(jax.shard_map(body, mesh=be.mesh, in_specs=specs, out_specs=out_spec))

    return build


_register_eager_and_jit("jax", _jax)


@dp_grad_pmap.impl("jax", "jit")
def _jax_pmap(be: Any, m: int, d: int) -> Any:
    jax, n, grad = be.jax, be.n_devices, _grad_of(m)
    if not hasattr(jax, "pmap"):
        raise Unavailable(f"this JAX ({jax.__version__}) has no pmap")
    summed = jax.pmap(lambda x, y, w: jax.lax.psum(grad(x, y, w), "i"), axis_name="i",
                      in_axes=(0, 0, None), devices=be.devs)
    return jax.jit(lambda x, y, w: summed(x.reshape(n, -1, d), y.reshape(n, -1), w)[0])


@_copy_impl("jax")
def _jax_copy(be: Any, n: int) -> Any:
    jax, second = be.jax, be.devs[1]
    return lambda x: jax.device_put(x, second)  # a new buffer on the second device each call


# --- TensorFlow: one replica per device under a MirroredStrategy ---------------------------------
def _tf_local(be: Any, workload: str, params: dict[str, Any]) -> Callable[..., Any]:
    """LOCAL in TensorFlow's own ops: its tensors have no `.T` or `.sum`, its `@` no vectors."""
    tf = be.tf
    if workload == "dp_grad":
        scale = 2.0 / params["m"]
        return lambda x, y, w: tf.linalg.matvec(x, tf.linalg.matvec(x, w) - y, transpose_a=True) * scale
    if workload == "allreduce":
        return lambda p: tf.reduce_sum(p, 0)
    return _matmul


def _tensorflow(wl: Workload, mode: str) -> Callable[..., Any]:
    _, reduce = LOCAL[wl.name]

    def build(be: Any, **params: Any) -> Any:
        local = _tf_local(be, wl.name, params)
        if be.strategy is None:
            return be.jit(local, mode) if mode == "jit" else be.run_on_device(local)
        tf, strategy = be.tf, be.strategy
        # XLA compiles each replica's share; the all-reduce stays outside it, in the strategy.
        step = tf.function(local, jit_compile=True) if mode == "jit" else local

        def replica(*args: Any) -> Any:
            out = step(*args)
            return tf.distribute.get_replica_context().all_reduce("SUM", out) if reduce else out

        def run(*args: Any) -> Any:
            return strategy.run(replica, args=args)

        return tf.function(run) if mode == "jit" else run

    return build


_register_eager_and_jit("tensorflow", _tensorflow)


@_copy_impl("tensorflow")
def _tf_copy(be: Any, n: int) -> Any:
    if be.kind == "cpu":
        raise Unavailable("TensorFlow's logical CPU devices share one memory: a tensor put on /CPU:1 is the "
                          "same buffer, no copy (measured: 20 µs a call at n = 1000 and at n = 3000); between "
                          "GPUs it is a real copy")
    tf, second = be.tf, be.dev_names[1]

    def copy(x: Any) -> Any:
        with tf.device(second):
            return tf.identity(x)

    return copy


# --- PyTorch: one process per device (torch.distributed), driven by the worker (rank 0) -----------
def _torch(wl: Workload, mode: str) -> Callable[..., Any]:
    local_of, reduce = LOCAL[wl.name]

    def build(be: Any, **params: Any) -> Any:
        def make() -> Any:
            local = local_of(params)
            step = be.jit(local, mode) if mode == "jit" else local
            if be.n_devices == 1:
                return step
            dist = be.torch.distributed

            def spmd(*args: Any) -> Any:
                out = step(*args)
                if reduce:
                    dist.all_reduce(out)  # sum over the ranks, in place
                else:
                    dist.barrier()  # the call ends when every rank has its share
                return out

            return spmd

        return be.built_everywhere(wl.name, mode, params, make)

    return build


_register_eager_and_jit("torch", _torch)


@_copy_impl("torch")
def _torch_copy(be: Any, n: int) -> Any:
    if be.kind != "gpu":
        raise Unavailable("torch's CPU devices here are processes (gloo): a copy between them is a socket send, "
                          "not a device copy")
    second = be.torch.device("cuda", be.ids[1])
    return lambda x: x.to(second)  # the worker (rank 0) holds the input on the first GPU and copies it
