"""The host's state for a pool of threads (stats/pools.py, hostspeed.measure_pool_reference): a state of
the host that moves multi-threaded calls between runs, and the compare that does not call it a change."""

import itertools
from dataclasses import replace

import pytest

from arraybench.comparison import compare
from arraybench.measure import hostspeed
from arraybench.results import load_results
from arraybench.stats import pools
from arraybench.stats.verdicts import FASTER, NOISY, SLOWER
from tests.comparison.test_compare import processes, record, results_file

READY, WOKEN = 14.5e-6, 31.5e-6  # NumPy's 2-thread 100² matmul in the VM's two states


def test_a_shift_of_the_pool_reference_explains_a_change_of_a_call_of_several_threads_in_its_direction():
    assert pools.explains(2.0, 2, READY, WOKEN)
    assert pools.explains(0.85, 2, WOKEN, READY)
    assert pools.explains(1.1, 4, READY, WOKEN)  # a long call splits its work as often as a short one
    assert not pools.explains(0.5, 2, READY, WOKEN)  # faster while the pool slowed: not the host's
    assert not pools.explains(2.0, 1, READY, WOKEN)  # one thread has no pool
    assert not pools.explains(2.0, 2, READY, READY * 1.15)  # one state's scatter
    assert not pools.explains(2.0, 2, None, WOKEN)
    assert pools.level([READY, WOKEN, WOKEN]) == WOKEN
    # A probe that ran while a neighbour held a CPU its pool needed read 16 ms: a stall, no state of the
    # pool's. Set aside in a case's level, and a shift that large is none this rule explains.
    assert pools.level([16e-3, READY, 16e-3, READY * 1.02, 16e-3]) == pytest.approx(READY * 1.01)
    assert not pools.explains(2.0, 2, READY, 16e-3)
    assert not pools.unready(16e-3, READY) and pools.unready(WOKEN, READY)
    assert pools.level([0.0]) is None and pools.level(None) is None


def pooled(rec, reading: float, count: int = 2):
    return replace(rec, pool_ref_s=(reading,) * count)


def test_identical_runs_in_two_pool_states_give_no_verdict_and_say_why(tmp_path):
    """Two runs beside a neighbour: NumPy's 2-thread 100² matmul at 31 µs in every process of one, where each
    worker's pool reference read 31.5 µs, and 15 µs in the other; PyTorch's 2-thread FFT 12 % apart with it,
    a call 20 times as long. Nothing changed. One thread's calls are not the pool's."""
    base = [pooled(record("numpy", "eager", 2, processes(31e-6, count=2, seed=1), threads=2), WOKEN),
            pooled(record("torch", "eager", 2, processes(330e-6, count=2, seed=2), threads=2), WOKEN),
            pooled(record("numba", "jit", 2, processes(20e-6, count=2, seed=3), threads=1), WOKEN)]
    new = [pooled(record("numpy", "eager", 2, processes(15e-6, count=2, seed=11), threads=2), READY),
           pooled(record("torch", "eager", 2, processes(290e-6, count=2, seed=12), threads=2), READY),
           pooled(record("numba", "jit", 2, processes(10e-6, count=2, seed=13), threads=1), READY)]
    a, b = results_file(tmp_path / "a.jsonl", base), results_file(tmp_path / "b.jsonl", new)
    cases = {c.new.backend: c for c in compare(load_results(a), load_results(b)).cases}
    assert cases["numpy"].verdict == cases["torch"].verdict == NOISY
    assert ("NumPy's 100² matmul on 2 threads, timed as each worker started, took 31.5 µs in base's processes "
            "and 14.5 µs in new's") in cases["numpy"].note
    assert cases["numba"].verdict == FASTER


def test_a_change_against_the_pool_state_is_still_found_and_one_state_hides_nothing(tmp_path):
    base = [pooled(record("numpy", "eager", 2, processes(15e-6, count=2, seed=1), threads=2), WOKEN)]
    new = [pooled(record("numpy", "eager", 2, processes(30e-6, count=2, seed=3), threads=2), READY)]
    a, b = results_file(tmp_path / "a.jsonl", base), results_file(tmp_path / "b.jsonl", new)
    assert compare(load_results(a), load_results(b)).cases[0].verdict == SLOWER
    base = [pooled(record("torch", "eager", 2, processes(100e-6, count=2, seed=2), threads=2), READY)]
    new = [pooled(record("torch", "eager", 2, processes(200e-6, count=2, seed=4), threads=2), READY * 1.05)]
    a, b = results_file(tmp_path / "c.jsonl", base), results_file(tmp_path / "d.jsonl", new)
    assert compare(load_results(a), load_results(b)).cases[0].verdict == SLOWER


def test_within_a_run_every_process_is_read_whatever_its_pool_reference_said(tmp_path):
    """NumPy's 2-thread 100² matmul in four processes, two of them where the host kept its pool waiting: the
    run reads all four. Setting those two aside, as a spell's, left runs beside the neighbour fewer sizes
    with a winner (3 of 10 where 8 were) and 16-25 pairs 2× apart unordered, since a case so read pairs
    with its rivals in fewer rounds; between runs, compare tells the states apart (pools.explains)."""
    groups = processes(31e-6, count=2, seed=5) + processes(15e-6, count=2, seed=6)
    rec = replace(record("numpy", "eager", 2, groups, threads=2), pool_ref_s=(WOKEN, WOKEN, READY, READY))
    res = load_results(results_file(tmp_path / "a.jsonl", [rec]))
    assert len(res.reading.kept(next(iter(res.latest().values())))) == 4


def test_results_without_the_pool_reference_compare_as_before(tmp_path):
    base = [record("numpy", "eager", 2, processes(31e-6, count=2, seed=1), threads=2)]
    new = [record("numpy", "eager", 2, processes(15e-6, count=2, seed=2), threads=2)]
    a, b = results_file(tmp_path / "a.jsonl", base), results_file(tmp_path / "b.jsonl", new)
    assert next(iter(load_results(a).latest().values())).pool_ref_s is None
    assert compare(load_results(a), load_results(b)).cases[0].verdict == FASTER


def test_the_pool_reference_is_the_median_call_and_none_for_one_thread():
    ticks = itertools.count()
    clock = lambda: next(ticks) * 1e-6  # noqa: E731 - each reading 1 µs after the last: every call 1 µs
    assert hostspeed.measure_pool_reference(2, calls=5, clock=clock) == pytest.approx(1e-6)
    assert hostspeed.measure_pool_reference(1) is None
    # A stalled pool (16 ms a call on the VM beside a busy CPU) is read from fewer calls: the budget's.
    reads = itertools.count()
    stalled = lambda: next(reads) * 8e-3  # noqa: E731 - each reading 8 ms after the last: every call 8 ms
    assert hostspeed.measure_pool_reference(2, clock=stalled) == pytest.approx(8e-3)
    assert next(reads) < 40  # a few calls past POOL_MIN_CALLS, not 200


def test_settling_waits_while_other_threads_spin_and_no_longer():
    """On a fake clock: the process's CPU time grows a poll's worth while its pool spins (three polls), then
    stops; settle_pool returns after the first quiet poll, and gives up at its longest wait."""
    now = [0.0]
    spinning = iter([0.01, 0.01, 0.01, 0.0005, 0.0])
    cpu = [0.0]

    def sleep(s: float) -> None:
        now[0] += s
        cpu[0] += next(spinning, 0.0)

    assert hostspeed.settle_pool(0.01, 0.5, cpu=lambda: cpu[0], sleep=sleep) == pytest.approx(0.04)
    always = [0.0]

    def busy(s: float) -> None:
        always[0] += s

    assert hostspeed.settle_pool(0.01, 0.05, cpu=lambda: always[0], sleep=busy) == pytest.approx(0.05)


def test_the_first_screen_says_what_share_of_the_processes_of_several_threads_found_their_pool_waiting(tmp_path):
    from arraybench.report.data import analysis, pool_clause

    recs = [pooled(record("numpy", "eager", 2, processes(31e-6, count=2, seed=1), threads=2), WOKEN),
            replace(record("torch", "eager", 2, processes(20e-6, count=2, seed=2), threads=2),
                    pool_ref_s=(READY, WOKEN)),
            pooled(record("jax", "jit", 2, processes(15e-6, count=2, seed=3), threads=2), READY),
            # One thread has no pool: its reading, if a file had one, is not counted.
            pooled(record("numba", "jit", 2, processes(15e-6, count=2, seed=4), threads=1), WOKEN),
            # Nor is a stall beside a busy CPU (16 ms a call): a spell's, no state of the pool's.
            pooled(record("torch", "jit", 2, processes(30e-6, count=2, seed=8), threads=2), 16e-3)]
    a = analysis(load_results(results_file(tmp_path / "a.jsonl", recs)))
    assert a.pool_fastest_s == pytest.approx(READY) and a.pool_slow_share == pytest.approx(3 / 6)
    assert pool_clause(a) == (
        "it kept thread pools waiting in 50 % of the processes of several threads (NumPy's 100² matmul, timed "
        "as each worker started, ran 1.3× its fastest 14.5 µs or more): their cases can read slower in one run "
        "than the next, and compare of two runs discounts it")
    calm = analysis(load_results(results_file(tmp_path / "b.jsonl", [recs[2]])))
    assert calm.pool_slow_share == 0 and pool_clause(calm) == ""
    assert pool_clause(analysis(load_results(results_file(tmp_path / "c.jsonl", [recs[3]])))) == ""


def test_a_case_the_host_kept_waiting_may_have_run_faster_by_its_reach_and_no_claim_has_it_behind_by_less():
    """Within a run: a case of several threads whose pool the host kept waiting in half its processes or more
    may have run faster in a run that met it ready, by the wait its call paid (POOL_WAKES excess pool
    references, POOL_REACH at most); one that splits nothing (NumPy's `a + b`) shows it where its processes
    met both states."""
    best = READY
    waiting = [WOKEN, WOKEN, WOKEN]
    cost = pools.POOL_WAKES * (WOKEN - READY)
    assert pools.reach(waiting, best, 2, 31e-6) == pytest.approx(min(pools.POOL_REACH, 31e-6 / max(31e-6 - cost, best)))
    assert pools.reach(waiting, best, 2, 31e-6) > 2  # NumPy's matmul: 14 µs in a run that met its pool ready
    assert pools.reach(waiting, best, 2, 2e-3) == pytest.approx(2e-3 / (2e-3 - cost))  # a long call: a little
    assert pools.reach(waiting, best, 1, 31e-6) == 1  # one thread has no pool
    assert pools.reach(waiting, best, 2, 10e-6) == 1  # shorter than a ready pool's split call: splits nothing
    assert pools.reach(waiting, None, 2, 31e-6) == pools.reach(None, best, 2, 31e-6) == 1
    # The first process of a run often met its pool waiting: a quarter of a case's processes is no state.
    assert pools.reach([WOKEN, READY, READY, READY], best, 2, 31e-6) == 1
    # A stall beside a busy CPU (16 ms) is a spell's, set aside: two of three left read waiting.
    assert pools.reach([16e-3, WOKEN, WOKEN, READY], best, 2, 31e-6) > 2
    # Processes that met both states: those that met it waiting ran no slower (NumPy's add, 28 and 29 µs),
    # so the state is not the case's; PyTorch's matmul, 14 and 20 µs, moved with it.
    assert pools.reach([WOKEN, WOKEN, READY], best, 2, 29e-6, [29e-6, 29e-6, 28e-6]) == 1
    assert pools.reach([WOKEN, WOKEN, READY], best, 2, 20e-6, [20e-6, 20e-6, 14e-6]) > 1


def _matmul_run(tmp_path, numpy_state: float, numpy_s: float):
    """JAX's jitted 2-thread matmul at 15 µs (its own pool) against NumPy's at `numpy_s`, every NumPy worker's
    pool reference at `numpy_state`; a third case's at READY gives the run its fastest."""
    recs = [pooled(record("numpy", "eager", 2, processes(numpy_s, count=4, seed=1), threads=2), numpy_state, 4),
            pooled(record("jax", "jit", 2, processes(15e-6, count=4, seed=2), threads=2), READY, 4),
            pooled(record("torch", "eager", 2, processes(60e-6, count=4, seed=3), threads=2), READY, 4)]
    return load_results(results_file(tmp_path / f"run{numpy_s}.jsonl", recs))


def test_identical_runs_in_two_pool_states_never_order_a_pair_both_ways(tmp_path):
    """Two identical runs on the VM: NumPy's 2-thread 100² matmul at 14 µs where the host met its pool ready,
    31 µs where it kept it waiting; JAX's 15-16 µs in both. The first run has NumPy ahead; the second does not
    put JAX ahead (it did, ×2.0, before reach), and its answer says why."""
    from arraybench.report.answer import answers
    from arraybench.report.data import ReportData
    from arraybench.stats import bracket

    ready, waiting = _matmul_run(tmp_path, READY, 14e-6), _matmul_run(tmp_path, WOKEN, 31e-6)
    sides = []
    for res in (ready, waiting):
        by = {r.backend: r for r in res.latest().values()}
        sides.append(bracket.side(res.reading.point(by["jax"]), res.reading.point(by["numpy"])))
        # PyTorch's 60 µs is behind JAX in either state: the reach of a case ahead changes nothing.
        assert bracket.side(res.reading.point(by["jax"]), res.reading.point(by["torch"])) == -1
    assert sides == [1, 0]
    by = {r.backend: r for r in waiting.latest().values()}
    assert bracket.held(waiting.reading.point(by["jax"]), waiting.reading.point(by["numpy"]))
    said = " ".join(a.text() for a in answers(ReportData.from_results([waiting]), []))
    assert "while the host kept the thread pool of numpy·eager waiting: in a run that meets it ready it may" in said
    assert "numpy·eager" in said and "jax·jit is fastest" not in said
    assert "thread pool" not in " ".join(a.text() for a in answers(ReportData.from_results([ready]), []))


def test_each_machine_of_a_cluster_run_is_read_against_its_own_fastest_pool(tmp_path):
    """A cluster run's second machine reads its pool reference 2× the first's in every process: its own
    state, not a pool kept waiting, so its cases get no reach; a case of the first machine's kept waiting does."""
    recs = [replace(pooled(record("numpy", "eager", 3, processes(31e-6, count=3, seed=1), threads=2), 2 * READY, 3),
                    machine="slow"),
            replace(pooled(record("jax", "jit", 3, processes(15e-6, count=3, seed=2), threads=2), 2 * READY, 3),
                    machine="slow"),
            replace(pooled(record("numpy", "eager", 2, processes(31e-6, count=3, seed=3), threads=2), WOKEN, 3),
                    machine="fast"),
            replace(pooled(record("jax", "jit", 2, processes(15e-6, count=3, seed=4), threads=2), READY, 3),
                    machine="fast")]
    res = load_results(results_file(tmp_path / "cluster.jsonl", recs))
    reach = {(r.machine, r.backend): res.reading.reach(r) for r in res.latest().values()}
    assert reach[("slow", "numpy")] == reach[("slow", "jax")] == reach[("fast", "jax")] == 1
    assert reach[("fast", "numpy")] > 2


def test_the_first_screen_counts_a_slower_machine_of_a_cluster_run_against_its_own_fastest_pool(tmp_path):
    """The cluster run above: the second machine's every reading is 2× the first's, its own state, not a pool
    kept waiting; of the first machine's processes, the three of NumPy read it waiting, JAX's three did not."""
    from arraybench.report.data import analysis

    recs = [replace(pooled(record("numpy", "eager", 3, processes(31e-6, count=3, seed=1), threads=2), 2 * READY, 3),
                    machine="slow"),
            replace(pooled(record("numpy", "eager", 2, processes(31e-6, count=3, seed=3), threads=2), WOKEN, 3),
                    machine="fast"),
            replace(pooled(record("jax", "jit", 2, processes(15e-6, count=3, seed=4), threads=2), READY, 3),
                    machine="fast")]
    a = analysis(load_results(results_file(tmp_path / "cluster.jsonl", recs)))
    assert a.pool_fastest_s == pytest.approx(READY)
    assert a.pool_slow_share == pytest.approx(3 / 9)  # one fastest for the run called the slow machine's 3 waiting too
