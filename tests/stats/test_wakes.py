"""The host's thread wake-ups (stats/wakes.py, hostspeed.measure_wake_reference): a state of the host that
moves small multi-threaded calls between runs, and the compare that does not call it a change."""

import itertools
import os
from dataclasses import replace

import pytest

from arraybench.comparison import compare
from arraybench.measure import hostspeed
from arraybench.results import load_results
from arraybench.stats import wakes
from arraybench.stats.verdicts import FASTER, NOISY, SLOWER
from tests.comparison.test_compare import processes, record, results_file

SLOW, FAST = 51e-6, 40e-6  # a round trip in the VM's two states


def test_a_shift_of_the_wake_ups_explains_a_change_of_a_short_call_of_several_threads_in_its_direction():
    assert wakes.explains(2.0, 2, 15e-6, FAST, SLOW)
    assert wakes.explains(0.5, 2, 32e-6, SLOW, FAST)
    assert not wakes.explains(0.5, 2, 32e-6, FAST, SLOW)  # faster while the wake-ups slowed: not theirs
    assert not wakes.explains(2.0, 1, 15e-6, FAST, SLOW)  # one thread wakes no pool
    assert not wakes.explains(2.0, 2, 10e-3, FAST, SLOW)  # 200 round trips a call: a wake-up is lost in it
    assert not wakes.explains(2.0, 2, 15e-6, FAST, FAST * 1.05)  # one state's scatter
    assert not wakes.explains(2.0, 2, 15e-6, None, SLOW)
    # Each process's faster reading (a spinning pool slows one), the median over processes.
    assert wakes.level([SLOW, FAST, FAST, FAST, SLOW, SLOW]) == FAST
    assert wakes.level([2 * SLOW, SLOW, SLOW, 2 * SLOW]) == SLOW
    assert wakes.level([FAST, 0.0]) is None
    assert wakes.level(None) is None


def woke(rec, wake: float, count: int = 2):
    return replace(rec, wake_ref_s=(wake,) * (2 * count))


def test_identical_runs_in_two_wake_up_states_give_no_verdict_and_say_why(tmp_path):
    """Two quiet runs: NumPy's 2-thread 100² matmul at 32 µs in every process of one, where the host's
    wake-ups took 51 µs, and 15 µs in the other, at 40 µs. Nothing changed."""
    base = [woke(record("numpy", "eager", 2, processes(32e-6, count=2, seed=1), threads=2), SLOW),
            woke(record("torch", "eager", 2, processes(20e-6, count=2, seed=2), threads=2), SLOW),
            woke(record("numba", "jit", 2, processes(15e-6, count=2, seed=3), threads=1), SLOW),
            woke(record("jax", "jit", 2, processes(10e-3, count=2, seed=4), threads=2), SLOW)]
    new = [woke(record("numpy", "eager", 2, processes(15e-6, count=2, seed=11), threads=2), FAST),
           woke(record("torch", "eager", 2, processes(15e-6, count=2, seed=12), threads=2), FAST),
           # One thread, and a 10 ms call: the wake-ups are no reason for their changes.
           woke(record("numba", "jit", 2, processes(10e-6, count=2, seed=13), threads=1), FAST),
           woke(record("jax", "jit", 2, processes(7e-3, count=2, seed=14), threads=2), FAST)]
    a, b = results_file(tmp_path / "a.jsonl", base), results_file(tmp_path / "b.jsonl", new)
    cases = {c.new.backend: c for c in compare(load_results(a), load_results(b)).cases}
    assert cases["numpy"].verdict == cases["torch"].verdict == NOISY
    assert "woke a thread on another CPU in 51 µs a round trip in base's processes and 40 µs in new's" in \
        cases["numpy"].note
    assert cases["numba"].verdict == FASTER and cases["jax"].verdict == FASTER


def test_a_change_against_the_wake_ups_is_still_found(tmp_path):
    base = [woke(record("numpy", "eager", 2, processes(15e-6, count=2, seed=1), threads=2), SLOW)]
    new = [woke(record("numpy", "eager", 2, processes(30e-6, count=2, seed=2), threads=2), FAST)]
    a, b = results_file(tmp_path / "a.jsonl", base), results_file(tmp_path / "b.jsonl", new)
    assert compare(load_results(a), load_results(b)).cases[0].verdict == SLOWER


def test_the_wake_reference_is_the_median_round_trip_between_two_cpus(monkeypatch):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("one CPU: no other to wake a thread on")
    ticks = itertools.count()
    clock = lambda: next(ticks) * 1e-6  # noqa: E731 - each reading 1 µs after the last: every trip 1 µs
    cpus = os.sched_getaffinity(0)
    assert hostspeed.measure_wake_reference(trips=5, clock=clock) == pytest.approx(1e-6)
    assert os.sched_getaffinity(0) == cpus  # this thread runs on all its CPUs again
    monkeypatch.setattr(hostspeed.os, "sched_getaffinity", lambda pid: {0})
    assert hostspeed.measure_wake_reference() is None
