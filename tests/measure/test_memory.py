"""Memory beside speed: the phases a case's memory is read in, the counters that read it, and the figures
every CPU framework reads back for workloads whose memory is known (GPUs: skipped where there is none)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from arraybench.backends import BACKENDS
from arraybench.backends.numpy_backend import NumpyBackend
from arraybench.cli import main
from arraybench.execution.parent import merge_processes
from arraybench.machine import nvidia
from arraybench.measure import allocator
from arraybench.measure.call_memory import DeviceCounters, Larger, Phase, Phases, ResidentSet, counter_for, figures
from arraybench.measure.timing import CALL, FIRST_CALL, Timer, TimerConfig
from arraybench.results.record import CaseRecord
from tests.helpers.common import FIXTURES, read_jsonl

MiB = 2**20
FIXTURE = FIXTURES / "memory_workloads.py"
CPU_BACKENDS = [name for name, cls in BACKENDS.items() if cls.installed()[0] and name != "cupy"]
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/clear_refs is Linux's")


class FakeCounter:
    """A counter that reads what the test says is in use, and logs what the phases asked of it."""

    method = "fake"

    def __init__(self) -> None:
        self.in_use, self.high, self.log = 0, 0, []

    def open(self) -> None:
        self.log.append("open")

    def close(self) -> None:
        self.log.append("close")

    def settle(self) -> int | None:
        self.log.append("settle")
        self.high = self.in_use
        return self.in_use

    def peak(self) -> int | None:
        self.log.append("peak")
        return self.high

    def reserved(self) -> int | None:
        return 7

    def allocate(self, n: int) -> None:
        self.in_use += n
        self.high = max(self.high, self.in_use)


def test_each_phase_is_its_peak_above_what_was_in_use_when_it_began():
    counter = FakeCounter()
    counter.in_use = 100
    watch = Phases(counter)
    watch.start()
    counter.allocate(50)  # the first call compiles: it keeps 30 and frees 20
    counter.in_use -= 20
    watch.stop(FIRST_CALL)
    watch.start()
    counter.allocate(8)
    counter.in_use -= 8
    watch.stop(CALL)
    assert watch.seen == {FIRST_CALL: Phase(100, 150), CALL: Phase(130, 138)}
    assert counter.log == ["open", "settle", "peak", "settle", "peak", "close"]
    assert figures(watch, inputs=1000) == {
        "memory_bytes": 1008, "first_call_memory_bytes": 1050, "memory_before_bytes": 100,
        "peak_memory_bytes": 150, "reserved_memory_bytes": 7, "memory_method": "fake"}
    watch.close()  # after the steady call, closing again changes nothing
    assert counter.log.count("close") == 1


def test_a_case_without_a_counter_says_why_and_has_no_figure():
    assert figures("not measured: the computation spans 4 devices", inputs=8) == {
        "memory_method": "not measured: the computation spans 4 devices"}
    assert Phase(None, 5).above is None and Phase(10, 4).above == 0


def make_fn(clock, cost, watch_log):
    """A function of constant cost that notes, at each call, what the memory watch had done so far."""
    calls = []

    def fn(*args):
        calls.append(list(watch_log))
        clock.advance(cost)
        return len(calls)

    return fn, calls


def test_the_timer_reads_the_first_call_and_one_steady_call_before_any_warm_up(fake_clock):
    cfg = TimerConfig(warmup_time=2**-5, min_sample_time=2**-10, min_time=2**-4, min_samples=4, max_time=1.0)
    bare = Timer(make_fn(fake_clock, 2**-7, [])[0], (), config=cfg, clock=fake_clock).run()
    counter = FakeCounter()
    fn, calls = make_fn(fake_clock, 2**-7, counter.log)
    watched = Timer(fn, (), config=cfg, clock=fake_clock, memory=Phases(counter)).run()
    # The first call runs in the first phase, the second in the steady one, each right after its settle;
    # the allocator's steady state is back (close) before the third.
    assert calls[0] == ["open", "settle"] and calls[1] == ["open", "settle", "peak", "settle"]
    assert calls[2][-2:] == ["peak", "close"]
    # The steady call is no warm-up call (it ran the allocator bare), and no sample.
    assert watched.warmup_calls == bare.warmup_calls and watched.measurement.n == bare.measurement.n
    assert len(calls) == 2 + watched.warmup_calls + watched.measurement.n * watched.measurement.loops
    assert watched.first_call_s == 2**-7


def test_a_case_is_read_by_its_frameworks_counter_where_it_keeps_one_else_by_the_resident_set():
    class Counted(NumpyBackend):
        memory_method = "its own"

        def settle_memory(self) -> int | None:
            return 0

    counted = Counted(1, "float64")
    counted.kind = "gpu"
    assert isinstance(counter_for(counted), DeviceCounters) and counter_for(counted).method == "its own"
    if sys.platform.startswith("linux"):  # on the CPU, beside the resident set: the larger of the two
        both = counter_for(Counted(1, "float64"))
        assert isinstance(both, Larger) and isinstance(both.first, ResidentSet)
    spread = NumpyBackend(1, "float64", "cpu:4")
    assert counter_for(spread) == "not measured: the computation spans 4 devices"
    on_gpu = NumpyBackend(1, "float64")
    on_gpu.kind = "gpu"
    assert "keeps no memory counter on gpu" in str(counter_for(on_gpu))
    if sys.platform.startswith("linux"):
        assert isinstance(counter_for(NumpyBackend(1, "float64")), ResidentSet)


@linux_only
def test_two_counters_read_together_give_a_phase_the_larger_need_of_the_two():
    rss, pool = FakeCounter(), FakeCounter()
    rss.in_use, pool.in_use = 1000, 50
    watch = Phases(Larger(rss, pool, [None, None]))
    watch.start()
    rss.allocate(10)  # the pool reused its free blocks: the resident set barely moved
    pool.allocate(300)
    watch.stop(FIRST_CALL)
    assert watch.seen[FIRST_CALL] == Phase(1000, 1300)
    assert figures(watch, inputs=0)["memory_before_bytes"] == 1000  # absolute figures are the resident set's


RESIDENT = """
import numpy as np
from arraybench.measure.call_memory import Phases, ResidentSet
from arraybench.measure.timing import CALL, FIRST_CALL

MiB = 2**20
watch = Phases(ResidentSet())
watch.start()
a = np.ones(64 * MiB // 8)
watch.stop(FIRST_CALL)
del a
watch.start()
b = np.ones(16 * MiB // 8)
watch.stop(CALL)
del b
print(watch.seen[FIRST_CALL].above, watch.seen[CALL].above)
"""


@linux_only
def test_the_resident_set_reads_an_array_made_in_a_phase_to_within_a_mebibyte():
    """In a fresh process, as a worker reads it: the test process's resident set also moves with whatever
    threads earlier tests left running in it (it once read the 64 MiB array more than a MiB off)."""
    done = subprocess.run([sys.executable, "-c", RESIDENT], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    first, steady = map(int, done.stdout.split())
    assert abs(first - 64 * MiB) < MiB
    assert abs(steady - 16 * MiB) < MiB


@linux_only
def test_memory_another_thread_freed_is_not_reused_unseen():
    """A framework's threads allocate in arenas of their own, whose freed top glibc keeps and
    malloc_trim does not return: JAX's 16 MB output read 0 bytes in some processes before the
    phases ran the allocator bare. A block a thread freed before the phases may be reused unseen by
    the first call, but that call's own free (the allocator bare) gives it back: the steady call,
    the figure that is compared, counts it again."""
    allocator.set_thresholds(allocator.STEADY_MMAP_THRESHOLD, allocator.STEADY_TRIM_THRESHOLD)
    first, steady, done = threading.Event(), threading.Event(), threading.Event()
    counter = ResidentSet()

    def worker() -> None:
        kept = np.ones(16 * MiB // 8)  # below the steady mmap threshold: from this thread's arena
        del kept
        first.wait()
        once = np.ones(16 * MiB // 8)  # the first call: may reuse what was kept
        del once
        done.set()
        steady.wait()
        again = np.ones(16 * MiB // 8)  # the steady call
        del again
        done.set()

    t = threading.Thread(target=worker)
    t.start()
    watch = Phases(counter)
    for phase, go in ((FIRST_CALL, first), (CALL, steady)):
        done.clear()
        watch.start()
        go.set()
        done.wait()
        watch.stop(phase)
    t.join()
    # Reused unseen, it reads 0. Seen, it reads the block less what the kernel's per-CPU resident
    # counters have not yet folded in (14.6 to 15.7 MiB of 16 on a 2-core VM, Linux 6.18).
    assert watch.seen[CALL].above > 12 * MiB


def test_memory_over_processes_is_their_median_a_whole_number_of_bytes():
    spec = {"id": "x", "workload": "w", "params": {"n": 1}, "backend": "numpy", "mode": "eager",
            "dtype": "float64", "threads": 1}
    recs = [dataclasses.replace(CaseRecord.blank(spec, "ok"), samples_s=(1e-3,), memory_bytes=m,
                                peak_memory_bytes=m + 10, round=k)
            for k, m in enumerate((100, 301))]
    case = merge_processes(recs)
    assert case.memory_bytes == 200 and isinstance(case.memory_bytes, int)
    assert case.peak_memory_bytes == 210  # the median too, no longer the largest
    assert [p.memory_bytes for p in case.replicates] == [100, 301]


def memory_run(tmp_path: Path, backends: list[str], device: str = "cpu") -> list[dict]:
    """The fixture's workloads at 2²² float64 (32 MiB an array) on `backends`, one process each."""
    code = main(["run", "--workload-file", str(FIXTURE), "--backends", ",".join(backends), "--devices", device,
                 "--sizes", str(2**22), "--dtype", "float64", "--threads", "1", "--processes", "1",
                 "--refine", "0", "--budget", "0", "--min-time", "0.01", "--max-time", "0.05", "--min-samples", "3",
                 "--no-store", "--output-dir", str(tmp_path / "run")])
    assert code == 0
    return [r for r in read_jsonl(tmp_path / "run" / "results.jsonl") if r.get("type") == "case"]


def within(got: int | None, expected: int) -> bool:
    """The issue's bar: within 10 % of the known amount, or 1 MiB."""
    return got is not None and abs(got - expected) <= max(0.1 * expected, MiB)


@linux_only
def test_every_cpu_framework_reads_back_a_known_amount_and_an_eager_chain_its_intermediates(tmp_path):
    array = 2**22 * 8
    records = memory_run(tmp_path, CPU_BACKENDS)
    got = {(r["workload"], r["backend"], r["mode"]): r for r in records if r["status"] == "ok"}
    assert {b for _, b, _ in got} == set(CPU_BACKENDS)
    for (wl, backend, mode), r in got.items():
        # One input and the output; an eager chain also holds its two intermediates at once.
        arrays = 4 if (wl, mode) == ("chain", "eager") else 2
        assert within(r["memory_bytes"], arrays * array), (wl, backend, mode, r["memory_bytes"], r["memory_method"])
        assert r["first_call_memory_bytes"] >= r["memory_bytes"] - MiB
    fused = [k for k in got if k[0] == "chain" and k[2] == "jit"]
    assert fused and all(got[k]["memory_bytes"] * 1.8 < got[("chain", "numpy", "eager")]["memory_bytes"]
                         for k in fused)


@pytest.mark.skipif(not nvidia.devices(), reason="no GPU here")
def test_every_gpu_framework_reads_back_a_known_amount(tmp_path):
    array = 2**22 * 8
    backends = [b for b in ("torch", "cupy", "tensorflow", "jax") if BACKENDS[b].installed()[0]]
    records = memory_run(tmp_path, backends, device="gpu")
    for r in records:
        if r["status"] != "ok":
            continue
        arrays = 4 if (r["workload"], r["mode"]) == ("chain", "eager") else 2
        if r["backend"] == "jax" and r["memory_bytes"] is None:  # its peak cannot be reset: said so
            assert "never reset" in r["memory_method"]
            continue
        assert within(r["memory_bytes"], arrays * array), (r["workload"], r["backend"], r["mode"], r["memory_bytes"])


# The GPU counters, without a GPU: each framework's calls stood in for (the same tests on a GPU run above).

def test_torch_reads_what_is_allocated_since_its_peak_was_reset_and_its_pool_apart():
    from types import SimpleNamespace

    from arraybench.backends.torch_backend import TorchBackend

    calls = []
    cuda = SimpleNamespace(reset_peak_memory_stats=lambda d: calls.append("reset"),
                           memory_allocated=lambda d: 100, max_memory_allocated=lambda d: 164,
                           max_memory_reserved=lambda d: 256)
    be = TorchBackend(1, "float32", "gpu")
    be.torch, be.dev = SimpleNamespace(cuda=cuda), "cuda:0"
    watch = Phases(DeviceCounters(be))
    watch.start()
    watch.stop(CALL)
    assert calls == ["reset"] and watch.seen[CALL] == Phase(100, 164)
    assert figures(watch, inputs=40)["memory_bytes"] == 104 and figures(watch, 40)["reserved_memory_bytes"] == 256
    assert TorchBackend(1, "float32", "cpu").settle_memory() is None  # on the CPU: the resident set


def test_jax_whose_peak_cannot_be_reset_holds_a_block_up_to_it_so_a_phase_sets_a_new_high():
    from types import SimpleNamespace

    from arraybench.backends.jax_backend import JaxBackend

    stats = {"bytes_in_use": 100, "peak_bytes_in_use": 500, "pool_bytes": 1024}
    be = JaxBackend(1, "float32", "gpu")
    be.dev = SimpleNamespace(memory_stats=lambda: dict(stats))
    held: list[int] = []

    class Block:
        def __init__(self, size: int) -> None:
            self.size = size

        def delete(self) -> None:
            stats["bytes_in_use"] -= self.size

    def hold(nbytes: int) -> Block:  # the device's allocator rounds the block up to 256 B
        size = -(-nbytes // 256) * 256
        stats["bytes_in_use"] += size
        stats["peak_bytes_in_use"] = max(stats["peak_bytes_in_use"], stats["bytes_in_use"])
        held.append(size)
        return Block(size)

    be._hold = hold
    assert be.settle_memory() == 100 and held == [512]  # 400 asked for, 512 held: in use 612
    stats["peak_bytes_in_use"] = 612 + 300  # the phase needed 300 beyond what it began with
    assert be.peak_memory() == 100 + 300 and be._floor is None and be.reserved_memory() == 1024
    assert stats["bytes_in_use"] == 100  # the block given back
    be.settle_memory()
    assert be.peak_memory() == 100  # held up to the peak and no new high: it needed nothing more
    assert be.settle_memory() == 100 and be.settle_memory() == 100  # a settle gives back the last one's block
    be.peak_memory()

    def full(nbytes: int) -> None:
        raise MemoryError("RESOURCE_EXHAUSTED")

    be._hold = full
    stats.update(bytes_in_use=100, peak_bytes_in_use=912)
    assert be.settle_memory() == 100
    assert be.peak_memory() is None  # no block and no new high: under an earlier peak, unknown
    be.settle_memory()
    stats["peak_bytes_in_use"] = 1200
    assert be.peak_memory() == 1200


def test_cupy_s_pool_emptied_before_a_phase_grows_to_the_phase_s_peak():
    from types import SimpleNamespace

    from arraybench.backends.cupy_backend import CupyBackend

    pool = SimpleNamespace(total=512, used=100)
    pool.free_all_blocks = lambda: setattr(pool, "total", pool.used)
    pool.used_bytes, pool.total_bytes = (lambda: pool.used), (lambda: pool.total)
    be = CupyBackend(1, "float32", "gpu")
    be.cupy = SimpleNamespace(get_default_memory_pool=lambda: pool)
    assert be.settle_memory() == 100 and pool.total == 100  # the free blocks of earlier calls are gone
    pool.total = 356
    assert be.peak_memory() == 356 and be.reserved_memory() == 356


def test_tensorflow_reads_its_allocator_where_it_keeps_a_count_and_leaves_the_rest_to_the_resident_set():
    from types import SimpleNamespace

    from arraybench.backends.tensorflow_backend import TensorflowBackend

    info = {"current": 64, "peak": 96}
    resets = []

    def memory_info(device):
        if device == "gpu:0":
            return dict(info)
        raise ValueError(f"Allocator stats not available for device '{device}'")

    experimental = SimpleNamespace(get_memory_info=memory_info, reset_memory_stats=resets.append)
    for kind, name, expected in (("gpu", "/gpu:0", 64), ("cpu", "/cpu:0", None)):
        be = TensorflowBackend(1, "float32", kind)
        be.tf, be.dev_name = SimpleNamespace(config=SimpleNamespace(experimental=experimental)), name
        assert be.settle_memory() == expected
    assert resets == ["gpu:0"]
