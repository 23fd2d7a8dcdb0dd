"""Replication across worker processes: statistics over processes, rounds, resume, allocator state."""

import json
import math
import random
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from arraybench.core.case import Case
from arraybench.execution.parent import Progress, RunConfig, Runner, merge_processes
from arraybench.measure.timing import TimerConfig
from arraybench.report.table import cell
from arraybench.report.view import CaseView
from arraybench.results import ResultsWriter, load_results, measured
from arraybench.results.header import Peaks
from arraybench.results.record import CaseRecord
from arraybench.stats.measurement import Measurement, Replicated, fault_dominated, median_variance_factor
from arraybench.workloads import blank_record
from tests.helpers.common import FIXTURES, SRC


def process(level: float, n: int = 20, spread: float = 0.02, seed: int = 0) -> Measurement:
    rng = random.Random(seed)
    return Measurement(tuple(level * (1 + spread * rng.random()) for _ in range(n)))


def test_point_is_the_median_of_process_medians():
    # Two processes: the geometric mean of the middle two, i.e. of both.
    r = Replicated((Measurement((1.0, 1.0, 1.0)), Measurement((4.0, 4.0, 4.0))))
    assert r.point == pytest.approx(2.0)
    assert r.spread == pytest.approx(3.0)
    assert r.noisy
    four = Replicated(tuple(Measurement((x,) * 3) for x in (1.0, 2.0, 8.0, 100.0)))
    assert four.point == pytest.approx(4.0)


def test_one_process_in_a_slow_state_does_not_move_the_point():
    """Issue 23's misses between identical runs: two processes at the first run's time, one 1.6×
    slower (elementwise_add n = 1000, jax·eager: 9.3-10 µs and one process at 41 µs). The
    geometric mean moved 17 %; the median stays with the typical process."""
    first = Replicated(tuple(Measurement((x,) * 5) for x in (9.91, 9.52, 9.34)))
    second = Replicated(tuple(Measurement((x,) * 5) for x in (41.2, 10.03, 10.02)))
    assert second.point == pytest.approx(10.03)
    lo, hi = first.ci95
    assert lo <= second.point <= hi


def test_median_variance_factor_matches_simulation():
    """The median's standard error is the mean's times √factor; the table against 20 000 draws."""
    import numpy as np

    rng = np.random.default_rng(5)
    for r in (3, 4, 5, 8):
        x = rng.standard_normal((20_000, r))
        ratio = np.median(x, axis=1).var() / x.mean(axis=1).var()
        assert median_variance_factor(r) == pytest.approx(ratio, rel=0.04)
    assert median_variance_factor(1) == median_variance_factor(2) == 1.0
    assert median_variance_factor(40) == pytest.approx(math.pi / 2)


def test_disagreeing_processes_widen_the_interval():
    agree = Replicated(tuple(process(1.0, seed=i) for i in range(3)))
    disagree = Replicated(tuple(process(level, seed=i) for i, level in enumerate((0.9, 1.0, 1.1))))
    lo_a, hi_a = agree.ci95
    lo_d, hi_d = disagree.ci95
    assert lo_d < 0.9 and hi_d > 1.1  # covers where a repeat run's processes may land
    assert hi_a / lo_a < hi_d / lo_d
    # One process alone: its own interval, and a warning that it knows nothing of other processes.
    one = Replicated((process(1.0),))
    assert one.ci95 == one.runs[0].ci95
    assert any("one process" in w for w in one.warnings)


def test_interval_covers_the_median_of_a_repeat_run():
    """The A/A promise in simulation: process levels vary ±10 %, samples ±2 % inside a process."""
    rng = random.Random(7)

    def run(seed: int) -> Replicated:
        return Replicated(tuple(process(1.0 + 0.1 * (2 * rng.random() - 1), n=15, seed=seed * 10 + i)
                                for i in range(3)))

    inside = 0
    for k in range(200):
        first, second = run(2 * k), run(2 * k + 1)
        lo, hi = first.ci95
        inside += lo <= second.point <= hi
    assert inside >= 180  # at least 90 %


def test_pooled_samples_split_back_into_their_processes():
    r = Replicated.from_counts([1.0, 2.0, 3.0, 10.0, 20.0], [3, 2], [1, 4])
    assert [m.samples for m in r.runs] == [(1.0, 2.0, 3.0), (10.0, 20.0)]
    assert [m.loops for m in r.runs] == [1, 4]
    with pytest.raises(ValueError, match="do not add up"):
        Replicated.from_counts([1.0, 2.0], [3], [1])


CASE = Case("sort", (("n", 8),), "numpy", "eager", "float64", 1)


def proc_record(median: float, status: str = "ok", n: int = 4, **extra) -> CaseRecord:
    rec = blank_record(CASE, status, "" if status == "ok" else "RuntimeError: boom")
    if status in ("ok", "wrong"):
        rec = replace(rec, samples_s=(median,) * n, loops=2, median_s=median, first_call_s=10 * median,
                      minor_faults_per_call=5.0, stop="target", half_width=0.0, peak_memory_bytes=None)
    return replace(rec, **extra)


def test_case_record_keeps_each_process_and_gives_statistics_over_them():
    rec = merge_processes([proc_record(1.0), proc_record(2.0, n=3), proc_record(4.0)])
    assert rec.n_processes == 3
    assert rec.samples_s == (1.0,) * 4 + (2.0,) * 3 + (4.0,) * 4
    assert [r.n_samples for r in rec.replicates] == [4, 3, 4]
    assert [r.median_s for r in rec.replicates] == [1.0, 2.0, 4.0]
    assert rec.median_s == pytest.approx(2.0)
    assert rec.first_call_s == 20.0  # the median process's
    assert rec.loops is None and rec.replicates[0].loops == 2  # a process's own figure stays with it
    assert measured(rec).medians == [1.0, 2.0, 4.0]


def test_one_wrong_or_failed_process_makes_the_case_so():
    assert merge_processes([proc_record(1.0), proc_record(1.0, "wrong")]).status == "wrong"
    failed = merge_processes([proc_record(1.0), proc_record(1.0, "error")])
    assert failed.status == "error" and "in process 2 of 2" in failed.error


class FakePool:
    """WorkerPool's interface; records which case ran in which 'worker generation'."""

    def __init__(self, statuses: dict[str, str] | None = None) -> None:
        self.generation, self.log, self.statuses = 0, [], statuses or {}

    def run_one(self, case: Case) -> CaseRecord:
        self.log.append((self.generation, case.workload))
        status = self.statuses.get(case.workload, "ok")
        rec = blank_record(case, status, "" if status == "ok" else "no such thing")
        if status == "ok":
            rec = replace(rec, samples_s=(1e-3 * (1 + self.generation),) * 3, loops=1,
                          median_s=1e-3 * (1 + self.generation))
        return rec

    def expect(self, cases: list[Case]) -> None:
        pass

    def in_flight(self) -> list[str]:
        return []  # its cases run in the caller's thread: none is in flight when Ctrl-C lands

    def close(self) -> None:
        self.generation += 1


def plan(n: int = 6) -> list[Case]:
    return [Case(f"w{i}", (("n", 1),), "numpy", "eager", "float64", 1) for i in range(n)]


def runner(tmp_path: Path, processes: int, pool: FakePool, partial=None, header=True, **kw) -> Runner:
    writer = ResultsWriter(tmp_path / "results.jsonl", {"schema": 2, "settings": {}} if header else None)
    r = Runner(writer, RunConfig(TimerConfig(processes=processes), 0, 10.0, tmp_path / "logs"), partial=partial, **kw)
    r.pool = pool  # type: ignore[assignment]
    return r


def test_each_case_runs_in_fresh_workers_once_per_round_in_a_new_order(tmp_path):
    pool = FakePool()
    records = runner(tmp_path, 3, pool).run(plan())
    assert len(records) == 6 and all(r.n_processes == 3 for r in records)
    orders = [[w for g, w in pool.log if g == k] for k in range(3)]
    assert all(sorted(o) == sorted(orders[0]) for o in orders)
    assert len({tuple(o) for o in orders}) == 3  # each round shuffled anew
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sum(x["type"] == "replicate" for x in lines) == 18
    # A case line follows its last process, so a reader never sees a half-replicated case.
    for i, x in enumerate(lines):
        if x["type"] == "case":
            assert sum(y["type"] == "replicate" and y["id"] == x["id"] for y in lines[:i]) == 3


def test_a_case_that_fails_or_cannot_run_is_not_run_again(tmp_path):
    pool = FakePool({"w1": "error", "w2": "unavailable"})
    records = {r.workload: r for r in runner(tmp_path, 3, pool).run(plan(3))}
    ran = [w for _, w in pool.log]
    assert ran.count("w1") == ran.count("w2") == 1 and ran.count("w0") == 3
    assert records["w1"].status == "error" and records["w2"].status == "unavailable"


def test_resume_measures_only_the_missing_processes(tmp_path):
    first = runner(tmp_path, 3, FakePool())
    first.order = lambda cases, seed, round=0: list(cases)  # type: ignore[method-assign]
    first.pool.run_one = lambda case, _run=first.pool.run_one: (  # type: ignore[method-assign]
        _run(case) if first.pool.generation == 0 else (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        first.run(plan(2))
    first.writer.close()
    loaded = load_results(tmp_path)
    assert loaded.records == [] and len(loaded.replicate_lines) == 2
    partial = {r.id: [r] for _, r in loaded.replicate_lines}
    pool = FakePool()
    records = runner(tmp_path, 3, pool, partial=partial, header=False).run(plan(2))
    assert len(pool.log) == 4  # two processes left for each of the two cases
    assert all(r.n_processes == 3 for r in records)


def test_progress_shows_each_process_and_each_case(tmp_path):
    import io

    out = io.StringIO()
    progress = Progress(2, out, processes=2)
    runner(tmp_path, 2, FakePool(), on_record=progress, on_replicate=progress.replicate).run(plan(2))
    lines = out.getvalue().splitlines()
    assert sum("process 1/2" in ln for ln in lines) == 2
    assert lines[-1].startswith("[4/4 processes]") and "processes ±" in lines[-1]


def test_schema_1_results_load_as_one_process_each():
    res = load_results(FIXTURES / "results-schema1.jsonl")
    rec = res.records[0]
    assert rec.n_processes == 1 and rec.replicates[0].n_samples == len(rec.samples_s)
    assert measured(rec).processes == 1


def test_page_fault_dominated_cases_are_marked():
    assert fault_dominated(15_671, 41.8e-3) and not fault_dominated(88, 11.2e-3)
    from arraybench.report import bound

    rec = proc_record(41.8e-3, minor_faults_per_call=15_671.0, iqr_s=0.0)
    view = CaseView.of(rec, bound=bound.classify(rec, None, Peaks()))
    assert view.bound == "page-faults" and "page-faults" in cell(view, None)
    calm = replace(rec, minor_faults_per_call=88.0)
    assert bound.classify(calm, None, Peaks()) != "page-faults"


FAULTS_PER_ROUND = """
import ctypes, resource, sys
sys.path.insert(0, {src!r})
from arraybench.execution.child import steady_allocator
if {steady}:
    print(steady_allocator(), file=sys.stderr)
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
def call():  # what one NumPy expression does: several 1 MiB temporaries, then frees them
    blocks = [libc.malloc(1 << 20) for _ in range(8)]
    for p in blocks:
        ctypes.memset(p, 1, 1 << 20)
    for p in blocks:
        libc.free(p)
call()
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    call()
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_steady_allocator_stops_fresh_page_faults_for_each_temporary():
    src = str(SRC)

    def faults(steady: bool) -> float:
        code = FAULTS_PER_ROUND.format(src=src, steady=steady)
        return float(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                    check=True).stdout)

    # glibc's own state: its thresholds rose to 1 MiB (trim 2 MiB) at the first free, so the
    # 8 MiB freed at the top of the heap go back to the kernel and fault in again every call.
    assert faults(False) > 1000
    assert faults(True) < 50  # the steady state keeps them: reused without a fault


def test_one_process_writes_no_replicate_lines(tmp_path):
    runner(tmp_path, 1, FakePool()).run(plan(2))
    lines = [json.loads(x) for x in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert [x["type"] for x in lines] == ["header", "case", "case"]


def test_a_real_run_measures_each_case_in_fresh_processes(tmp_path, run_cli):
    from tests.helpers.common import read_jsonl

    code, _, err = run_cli("run", "--workloads", "sort,elementwise_add", "--backends", "numpy", "--sizes", "16",
                           "--threads", "1", "--min-time", "0.01", "--max-time", "0.05", "--processes", "2",
                           "--no-store", "--output-dir", str(tmp_path))
    assert code == 0, err
    lines = read_jsonl(tmp_path / "results.jsonl")
    cases = [x for x in lines if x["type"] == "case"]
    assert len(cases) == 2 and sum(x["type"] == "replicate" for x in lines) == 4
    for rec in cases:
        assert rec["n_processes"] == 2 and len(rec["replicates"]) == 2
        assert rec["ci95_s"][0] <= rec["median_s"] <= rec["ci95_s"][1]
        assert rec["backend_info"]["allocator"].startswith("glibc mallopt")
        assert rec["minor_faults_per_call"] is not None
    assert not (tmp_path / "references").exists()  # removed when the run completes
    assert list((tmp_path / "logs").glob("worker-numpy-cpu-*-t1.log"))  # RunConfig.log_dir reached the workers
    assert "process 1/2" in err
