"""A case's record says what happened to it, whichever of the worker's phases failed, and how."""

import pytest

from arraybench.backends.numpy_backend import NumpyBackend
from arraybench.core.case import Case
from arraybench.measure import case_executor
from arraybench.measure.case_executor import CaseExecutor
from arraybench.measure.timing import TimerConfig

TINY = TimerConfig(warmup_time=0.0, min_time=0.0, min_samples=3, max_time=0.05)
CASE = Case("elementwise_sin", (("n", 16),), "numpy", "eager", "float64", 1)


class LosesItsOutput(NumpyBackend):
    def to_host(self, x):
        raise RuntimeError("device lost")


def numpy(cls: type[NumpyBackend] = NumpyBackend) -> NumpyBackend:
    be = cls(1, "float64")
    be.load()
    return be


def test_a_phase_that_raises_leaves_an_error_record_with_its_reason_and_what_came_before():
    rec = CaseExecutor(numpy(LosesItsOutput)).run(CASE, TINY, 0)
    assert rec.status == "error" and rec.error == "RuntimeError: device lost"
    assert "to_host" in rec.traceback
    # The phases before the copy back filled their fields; the copy's own never came.
    assert rec.inputs_s is not None and rec.transfer_s is not None and rec.timer_s is not None
    assert rec.to_host_s is None and rec.median_s is None and rec.correct is None


def test_a_bug_in_the_harness_itself_is_the_cases_error_not_a_dead_worker(monkeypatch):
    def broken(*args):
        raise KeyError("first_call_cache")

    monkeypatch.setattr(case_executor, "first_call_state", broken)
    rec = CaseExecutor(numpy()).run(CASE, TINY, 0)
    assert rec.status == "error" and rec.error == "KeyError: 'first_call_cache'"
    assert rec.build_s is not None and rec.timer_s is None


@pytest.mark.parametrize("mode, status", [("eager", "ok"), ("jit", "unsupported")])
def test_every_phase_fills_its_fields_in_a_finished_record(mode, status):
    rec = CaseExecutor(numpy()).run(Case("elementwise_sin", (("n", 16),), "numpy", mode, "float64", 1), TINY, 0)
    assert rec.status == status and rec.flops is not None and rec.n_devices == 1
    filled = [rec.inputs_s, rec.reference_s, rec.transfer_s, rec.build_s, rec.timer_s, rec.to_host_s,
              rec.check_s, rec.median_s]
    assert all(x is not None for x in filled) if status == "ok" else all(x is None for x in filled)
