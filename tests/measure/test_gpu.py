"""GPU code paths that run without a GPU: clocks through a fake NVML, the L2-cold figure through a
fake pipelined backend, CuPy's fused-kernel names through a fake CuPy, GPU peaks' failure path."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from arraybench.backends.backend import Backend
from arraybench.backends.cupy_backend import CupyBackend
from arraybench.core.case import Case
from arraybench.machine import nvidia
from arraybench.measure.case_executor import COLD_SAMPLES, CaseExecutor
from arraybench.measure.timing import TimerConfig


def fake_nvml(monkeypatch, clocks, reasons=0):
    """A pynvml whose SM clock reads `clocks` in turn and whose slowdown mask is `reasons`."""
    reads = iter(clocks)
    nv = types.SimpleNamespace(
        NVML_CLOCK_SM=1,
        nvmlInit=lambda: None,
        nvmlDeviceGetHandleByIndex=lambda i: "gpu0",
        nvmlDeviceGetClockInfo=lambda h, kind: next(reads),
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: reasons,
    )
    monkeypatch.setitem(sys.modules, "pynvml", nv)


def test_clock_watch_flags_a_clock_drop_and_slowdown_reasons(monkeypatch):
    fake_nvml(monkeypatch, [1980, 1980])
    watch = nvidia.ClockWatch()
    watch.start()
    assert watch.stop() == {"sm_mhz_before": 1980, "sm_mhz_after": 1980, "reasons": [], "throttled": False}
    fake_nvml(monkeypatch, [1980, 1500])
    watch = nvidia.ClockWatch()
    watch.start()
    assert watch.stop()["throttled"] is True
    fake_nvml(monkeypatch, [1980, 1980], reasons=0x04 | 0x20)
    watch = nvidia.ClockWatch()
    watch.start()
    state = watch.stop()
    assert state["reasons"] == ["SW power cap", "SW thermal slowdown"] and state["throttled"]


def test_gpu_facts_come_from_nvml_where_nvidia_ml_py_is_installed(monkeypatch):
    clocks = {1: 1755, 2: 2619}
    nv = types.SimpleNamespace(
        NVML_CLOCK_SM=1, NVML_CLOCK_MEM=2,
        nvmlInit=lambda: None,
        nvmlSystemGetDriverVersion=lambda: "580.159.04",
        nvmlSystemGetCudaDriverVersion_v2=lambda: 13000,
        nvmlDeviceGetCount=lambda: 1,
        nvmlDeviceGetHandleByIndex=lambda i: f"gpu{i}",
        nvmlDeviceGetCudaComputeCapability=lambda h: (9, 0),
        nvmlDeviceGetName=lambda h: b"NVIDIA H100 80GB HBM3",
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(total=81559 * 2**20),
        nvmlDeviceGetMaxClockInfo=lambda h, kind: {1: 1980, 2: 2619}[kind],
        nvmlDeviceGetClockInfo=lambda h, kind: clocks[kind],
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700_000,
        nvmlDeviceGetPersistenceMode=lambda h: 1,
        nvmlDeviceGetUUID=lambda h: "GPU-8f3c0d2e",
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=b"00000000:18:00.0"),
    )
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    monkeypatch.setattr(nvidia, "l2_bytes", lambda index=0: 50 * 2**20)
    (dev,) = nvidia.devices()
    assert dev == {
        "index": 0, "uuid": "GPU-8f3c0d2e", "pci_bus_id": "00000000:18:00.0",
        "name": "NVIDIA H100 80GB HBM3", "memory": "81559 MiB", "driver": "580.159.04", "cuda_driver": "13.0",
        "compute_capability": "9.0", "sm_clock_max_mhz": 1980, "mem_clock_max_mhz": 2619, "sm_clock_mhz": 1755,
        "power_limit_w": 700.0, "persistence_mode": True, "l2_bytes": 50 * 2**20, "source": "nvml",
    }


class NvmlError(Exception):
    pass


def test_the_link_between_each_pair_of_gpus_is_nvlink_or_the_pcie_path(monkeypatch):
    """GPUs 0 and 1 share four NVLinks; GPU 2 has none and reaches the others through the host bridge."""
    bus = ["00000000:18:00.0", "00000000:2A:00.0", "00000000:9B:00.0"]
    nvlinks = {(0, k): 1 for k in range(4)} | {(1, k): 0 for k in range(4)}

    def remote(h, link):
        if (h, link) not in nvlinks:
            raise NvmlError("NVML_ERROR_NOT_SUPPORTED")
        return types.SimpleNamespace(busId=bus[nvlinks[(h, link)]].lower().encode())

    def state(h, link):
        if (h, link) not in nvlinks:
            raise NvmlError("NVML_ERROR_INVALID_ARGUMENT")
        return 1

    nv = types.SimpleNamespace(
        NVML_NVLINK_MAX_LINKS=18, nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 3,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=bus[h].encode()),
        nvmlDeviceGetNvLinkState=state, nvmlDeviceGetNvLinkRemotePciInfo=remote,
        nvmlDeviceGetTopologyCommonAncestor=lambda a, b: 30,
    )
    monkeypatch.setitem(sys.modules, "pynvml", nv)
    assert [(link["gpus"], link["text"]) for link in nvidia.links()] == [
        ([0, 1], "NVLink ×4"), ([0, 2], "PCIe, through the host bridge"), ([1, 2], "PCIe, through the host bridge")]


def test_without_nvml_or_nvidia_smi_there_is_no_gpu_and_no_clock(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import fails
    monkeypatch.setattr(nvidia.shutil, "which", lambda name: None)
    assert nvidia.devices() == [] and nvidia.links() == []
    watch = nvidia.ClockWatch()
    watch.start()
    assert watch.stop() is None


class FakeGpu(Backend):
    """A pipelined backend on the CPU: NumPy arrays, a cold call that takes a known time."""

    name = "numpy"

    def __init__(self) -> None:
        super().__init__(threads=1, dtype="float32", device="gpu")
        self.cold_calls = 0

    @property
    def asynchronous(self) -> bool:
        return True

    def load(self) -> None:
        pass

    def time_cold(self, fn, args, l2_bytes):
        self.cold_calls += 1
        fn(*args)
        return 1e-3 + self.cold_calls * 1e-6


def run_case(executor, n):
    case = Case(workload="elementwise_add", params=(("n", n),), backend="numpy", mode="eager",
                dtype="float32", threads=1, device="gpu")
    cfg = TimerConfig(warmup_time=0.0, min_time=0.0, min_samples=3, max_time=0.1)
    return executor.run(case, cfg, run_seed=0)


def test_a_gpu_case_whose_inputs_fit_in_l2_gets_a_cold_figure_beside_the_hot_one(monkeypatch):
    fake_nvml(monkeypatch, [1980] * 10)
    executor = CaseExecutor(FakeGpu())
    executor.l2_bytes = 2**20
    rec = run_case(executor, 1000)  # two float32 inputs of 4 kB
    assert rec.status == "ok"
    assert rec.latency_s > 0 and rec.input_bytes == 8000 and rec.l2_bytes == 2**20
    assert len(rec.cold_samples_s) == COLD_SAMPLES
    assert rec.cold_median_s == pytest.approx(1e-3 + (COLD_SAMPLES // 2 + 1) * 1e-6)
    assert rec.gpu_clock["throttled"] is False
    big = run_case(executor, 200_000)  # 1.6 MB of inputs: over this fake L2
    assert big.status == "ok" and big.cold_median_s is None


def test_a_cpu_case_has_neither_latency_nor_cold_figure():
    from arraybench.backends.numpy_backend import NumpyBackend

    be = NumpyBackend(threads=1, dtype="float32")
    be.load()
    rec = CaseExecutor(be).run(
        Case(workload="elementwise_add", params=(("n", 100),), backend="numpy", mode="eager",
             dtype="float32", threads=1, device="cpu"),
        TimerConfig(warmup_time=0.0, min_time=0.0, min_samples=3, max_time=0.1), run_seed=0,
    )
    assert rec.status == "ok" and rec.latency_s is None
    assert rec.cold_median_s is None and rec.gpu_clock is None


def test_cupy_fused_kernels_get_a_name_nvrtc_accepts():
    names = []

    def fuse(kernel_name=None):
        names.append(kernel_name)
        return lambda fn: fn

    be = CupyBackend(threads=1, dtype="float32", device="gpu")
    be.cupy = types.SimpleNamespace(fuse=fuse)

    def poly(x):
        return x * x

    be.jit(lambda x: x + 1, "jit")  # "<lambda>" is no CUDA identifier: it failed to compile
    be.jit(poly, "jit")
    assert names == ["arraybench_fused", "poly"]


def test_gpu_peaks_on_a_machine_without_a_gpu_say_they_failed(monkeypatch):
    from arraybench.measure import peaks

    monkeypatch.delenv("ARRAYBENCH_PEAKS", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    out = peaks.measure(1, gpu=True)
    assert out["matmul_gflops"]["float64"] > 0  # the CPU's peaks are still measured
    assert out["gpu"]["method"].startswith("failed")


def test_jax_device_to_host_copy_returns_the_data():
    pytest.importorskip("jax")
    import jax

    from arraybench.backends.jax_backend import JaxBackend
    from arraybench.workloads.transfer import to_host

    be = JaxBackend(threads=1, dtype="float32")
    be.load()
    download = to_host.builder("jax", "eager")(be, n=4)
    x = np.arange(16, dtype=np.float32).reshape(4, 4)
    y = jax.device_put(x, be.dev)
    assert np.array_equal(download(y), x) and np.array_equal(download(y), x)


def test_torch_gpu_sync_waits_on_another_gpu_but_not_on_a_host_copy(monkeypatch):
    """Seen on an H200: transfer_to_host's output is a CPU tensor, and syncing its device raised."""
    torch = pytest.importorskip("torch")
    from arraybench.backends.torch_backend import TorchBackend

    synced = []
    monkeypatch.setattr(torch.cuda, "synchronize", lambda device=None: synced.append(str(device)))
    be = TorchBackend(threads=1, dtype="float32")
    be.torch, be.kind, be.dev = torch, "gpu", torch.device("cuda", 0)
    be.sync(torch.zeros(2))  # a host copy: the GPU is synced, the CPU is not asked
    assert synced == ["cuda:0"]
    other = types.SimpleNamespace(device=torch.device("cuda", 1))
    be.sync(other)  # device_copy's output on another GPU: both are synced
    assert synced == ["cuda:0", "cuda:0", "cuda:1"]
