"""What one case leaves behind must not change the next, and timed paths pay only for the work."""

import sys
from types import SimpleNamespace

from arraybench.backends.numpy_backend import NumpyBackend
from arraybench.backends.tensorflow_backend import TensorflowBackend
from arraybench.backends.torch_backend import TorchBackend
from arraybench.core.case import Case
from arraybench.measure.case_executor import CaseExecutor
from arraybench.measure.casecache import CaseCache
from arraybench.measure.timing import TimerConfig
from arraybench.workloads import WORKLOADS

TINY = TimerConfig(warmup_time=0.0, min_time=0.0, min_samples=3, max_time=0.05)


class CountingNumpy(NumpyBackend):
    """A framework with a memory counter of its own, whose peak counts its reads since its last reset."""

    starts = 0
    peak = 0

    def start_case(self) -> None:
        self.starts += 1

    def settle_memory(self) -> int | None:
        self.peak = 0
        return 0

    def peak_memory(self) -> int | None:
        self.peak += 1
        return self.peak


def test_each_case_starts_clean_so_its_peak_memory_is_its_own():
    be = CountingNumpy(1, "float64")
    be.load()
    be.kind = "gpu"  # read by its own counter alone, as on a device
    ex = CaseExecutor(be)
    recs = [ex.run(Case("sort", (("n", 8),), "numpy", "eager", "float64", 1), TINY, seed) for seed in (0, 1)]
    assert be.starts == 2
    assert [r.peak_memory_bytes for r in recs] == [1, 1]  # not 1, then 2: the peak since the worker began


def test_torch_forgets_dynamo_state_between_cases_once_something_compiled(monkeypatch):
    resets = []
    be = TorchBackend(1, "float32", "cpu")
    be.torch = SimpleNamespace(_dynamo=SimpleNamespace(reset=lambda: resets.append(1)))
    monkeypatch.delitem(sys.modules, "torch._dynamo", raising=False)
    be.start_case()  # an eager-only worker: importing dynamo to reset it would cost ~1 s
    assert resets == []
    monkeypatch.setitem(sys.modules, "torch._dynamo", be.torch._dynamo)
    be.start_case()
    assert resets == [1]


def test_transfers_time_the_copy_not_the_checks():
    be = SimpleNamespace(upload=object(), to_device=object(), name="torch")
    assert WORKLOADS["transfer_to_device"].builder("torch", "eager")(be, n=1) is be.upload
    assert WORKLOADS["transfer_to_device"].builder("jax", "eager")(be, n=1) is be.upload


def test_tensorflow_on_the_cpu_enters_no_device_scope_per_call():
    def f(x):
        return x

    assert TensorflowBackend(1, "float32", "cpu").run_on_device(f) is f


def test_numba_picks_its_parallel_or_serial_build_when_the_case_is_built():
    import numba

    from arraybench.workloads.common import PARALLEL_MIN_ELEMENTS, numba_compiled

    small = numba_compiled(lambda x: x + 1, 1000)
    big = numba_compiled(lambda x: x + 1, PARALLEL_MIN_ELEMENTS)
    for fn, parallel in ((small, False), (big, True)):
        assert isinstance(fn, numba.core.registry.CPUDispatcher)  # no Python wrapper around the call
        assert fn.targetoptions.get("parallel", False) == parallel


def test_inputs_and_reference_are_made_once_per_run_and_shared_by_its_workers(tmp_path, monkeypatch):
    case = Case("elementwise_sin", (("n", 16),), "numpy", "eager", "float64", 1)
    be = NumpyBackend(1, "float64")
    be.load()
    first = CaseExecutor(be, CaseCache(tmp_path)).run(case, TINY, 0)
    assert first.status == "ok", first.error
    assert (first.inputs_source, first.reference_source) == ("made", "computed")
    assert len(list(tmp_path.glob("in-*"))) == 1 and len(list(tmp_path.glob("ref-*"))) == 1

    def never(*args, **kwargs):
        raise AssertionError("made again")

    wl = WORKLOADS["elementwise_sin"]
    monkeypatch.setattr(wl, "make_reference", never)
    monkeypatch.setattr(wl, "make_inputs", never)
    again = CaseExecutor(be, CaseCache(tmp_path)).run(case, TINY, 0)  # another worker of the same run
    assert again.status == "ok", again.error
    assert (again.inputs_source, again.reference_source) == ("cache", "cache")
    assert again.tolerance_source == first.tolerance_source
    assert again.max_abs_err == first.max_abs_err
