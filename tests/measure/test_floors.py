"""floors: a backend's empty call, for the modes the run's cases use (NumPy: nothing to import; workers stubbed)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from arraybench.backends.backend import Backend
from arraybench.backends.numpy_backend import NumpyBackend
from arraybench.core.case import Case
from arraybench.execution import parent
from arraybench.execution.parent import RunConfig, Runner
from arraybench.measure import floors
from arraybench.measure.timing import TimerConfig
from arraybench.results import ResultsWriter
from arraybench.results.record import CaseRecord
from arraybench.workloads import blank_record

FAST = TimerConfig(warmup_time=0.001, min_time=0.001, max_time=0.01, min_samples=3, processes=1)


def test_numpy_records_its_empty_call():
    be = NumpyBackend(1, "float64")
    be.load()
    got = floors.measure(be, ["eager"], FAST)
    assert set(got["empty_call_s"]) == {"eager"}
    assert 0 < got["empty_call_s"]["eager"] < 1e-3
    assert "empty_call_errors" not in got


def test_a_mode_that_fails_is_left_out_with_its_reason():
    class Broken(NumpyBackend):
        jit_modes = ("jit",)

        def jit(self, fn, mode, *, any_shape=False):
            raise RuntimeError("no compiler here")

    be = Broken(1, "float32")
    be.load()
    got = floors.measure(be, ["eager", "jit"], FAST)
    assert set(got["empty_call_s"]) == {"eager"}
    assert got["empty_call_errors"] == {"jit": "RuntimeError: no compiler here"}


def test_only_the_modes_asked_for_are_measured():
    compiled = []

    class Compiling(NumpyBackend):
        jit_modes = ("jit",)

        def jit(self, fn, mode, *, any_shape=False):
            compiled.append(mode)  # torch.compile's first costs 10-30 s of a worker's start-up
            return fn

    be = Compiling(1, "float32")
    be.load()
    eager_only = floors.measure(be, ["eager", "fd"], FAST)
    assert set(eager_only["empty_call_s"]) == {"eager"} and "empty_call_errors" not in eager_only
    assert compiled == []
    assert set(floors.measure(be, ["jit"], FAST)["empty_call_s"]) == {"jit"} and compiled == ["jit"]


class StubWorker:
    """parent.Worker's interface, without a process: notes the floors each worker was asked for."""

    started: list[tuple[str, list[str]]] = []

    def __init__(self, case: Case, config: RunConfig, floors: list[str], layout: int | None = None) -> None:
        self.unavailable = None
        StubWorker.started.append((case.backend, list(floors)))

    def start(self) -> None:
        pass

    def run(self, case: Case, host_level: float | None = None) -> CaseRecord:
        return replace(blank_record(case, "ok"), samples_s=(1e-3,) * 3, loops=1, median_s=1e-3)

    def kill(self) -> None:
        pass

    def freeze(self) -> None:
        pass

    def thaw(self) -> None:
        pass


def test_an_eager_only_worker_measures_no_jit_floor(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(StubWorker, "started", [])
    monkeypatch.setattr(parent, "Worker", StubWorker)
    monkeypatch.setattr(Backend, "installed", classmethod(lambda cls: (True, "")))  # no framework is imported
    cases = [Case("w", (("n", 1),), "torch", "eager", "float32", 1),
             Case("w", (("n", 1),), "numba", "eager", "float32", 1),
             Case("w", (("n", 2),), "numba", "jit", "float32", 1)]
    writer = ResultsWriter(tmp_path / "results.jsonl", {"schema": 2, "settings": {}})
    Runner(writer, RunConfig(TimerConfig(processes=2), 0, 10.0, tmp_path / "logs")).run(cases)
    first_round = dict(StubWorker.started[:2])
    assert first_round == {"torch": ["eager"], "numba": ["eager", "jit"]}
    assert [floors for _, floors in StubWorker.started[2:]] == [[], []]  # measured once a run


def test_the_report_uses_the_measured_empty_call_before_the_cheapest_call():
    from arraybench.report import bound

    def rec(backend, mode, median, empty=None):
        info = {"empty_call_s": {mode: empty}} if empty else {}
        return CaseRecord(machine="m", backend=backend, mode=mode, status="ok", median_s=median, backend_info=info)

    records = [rec("jax", "jit", 9e-6, empty=4e-6), rec("jax", "jit", 2e-5), rec("torch", "eager", 3e-6)]
    floors_ = bound.dispatch_floors(records, lambda r: f"{r.backend}·{r.mode}")
    assert floors_ == {("m", "jax·jit"): 4e-6, ("m", "torch·eager"): 3e-6}  # measured; else the proxy


def test_the_report_lists_each_backend_modes_empty_call_cheapest_first():
    from arraybench.report.data import environment_rows
    from arraybench.results.header import RunHeader

    records = [CaseRecord(backend="jax", backend_info={"empty_call_s": {"eager": 8.8e-6, "jit": 9.5e-6}}),
               CaseRecord(backend="numpy", backend_info={"empty_call_s": {"eager": 3.5e-7}})]
    rows = dict(environment_rows(RunHeader(), records))
    assert rows["empty call (x + x, one element)"] == "numpy·eager 350 ns, jax·eager 8.8 µs, jax·jit 9.5 µs"
