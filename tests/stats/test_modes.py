"""Process modes (stats/modes.py): two runs whose processes landed in different modes of a framework
are no change; a change beyond the modes, or of a family or time scale without them, still is."""

import pytest

from arraybench.comparison import compare
from arraybench.results import load_results
from arraybench.stats import modes
from arraybench.stats.verdicts import FASTER, NOISY, SLOWER
from tests.comparison.test_compare import processes, record, rep, results_file, scaled


def test_a_spread_is_the_slowest_process_over_the_fastest():
    # A mode spread is Replicated.spread + 1: the slowest process's median over the fastest's.
    assert 1 + rep([[5e-6] * 3, [28e-6] * 3, [5.2e-6] * 3]).spread == pytest.approx(28e-6 / 5e-6)
    assert 1 + rep([[5e-6] * 3]).spread == 1.0


def test_modes_need_two_neighbours_of_the_case_with_processes_apart():
    family = [(5e-6, 5.6), (20e-6, 2.5), (1e-3, 1.02)]
    assert modes.mode_spread(6e-6, family) == 5.6
    # One case with processes apart is a stall, not a mode.
    assert modes.mode_spread(6e-6, [(5e-6, 5.6), (20e-6, 1.1)]) == 1.0
    # A 1 ms call is no neighbour of microsecond calls: their modes say nothing of it.
    assert modes.mode_spread(1e-3, family) == 1.0


def test_a_change_within_the_modes_is_explained_and_one_beyond_them_is_not():
    assert modes.explained(1 / 5.4, 5.6)
    assert modes.explained(2.8, 5.6)
    assert not modes.explained(8.0, 5.6)
    assert not modes.explained(1.3, 1.0)


def jax(size: int, groups: list[list[float]]):
    return record("jax", "jit", size, groups)


def moded(levels: list[float], seed: int) -> list[list[float]]:
    """One process at each of `levels` (seconds), each with its own tight samples."""
    return [g for i, level in enumerate(levels) for g in processes(level, count=1, seed=seed + i)]


def test_identical_runs_landing_in_different_modes_give_no_verdict(tmp_path):
    fast, slow = 5e-6, 28e-6
    base = [jax(2, moded([fast, slow, fast], 1)), jax(3, moded([fast, fast, slow], 2)),
            jax(4, moded([slow, slow], 3)), jax(5, processes(10e-3, seed=4)),
            record("numpy", "eager", 4, processes(8e-6, seed=5))]
    new = [jax(2, moded([fast, fast, slow], 11)), jax(3, moded([slow, fast, fast], 12)),
           jax(4, moded([fast, fast], 13)),
           # A 10 ms call 30 % faster, and NumPy 30 % slower: no modes at their scale or in their family.
           jax(5, scaled(processes(10e-3, seed=14), 0.7)),
           record("numpy", "eager", 4, scaled(processes(8e-6, seed=15), 1.3))]
    a, b = results_file(tmp_path / "a.jsonl", base), results_file(tmp_path / "b.jsonl", new)
    cases = {(c.new.backend, c.new.params["d"]): c for c in compare(load_results(a), load_results(b)).cases}
    landed = cases[("jax", 4)]
    assert landed.verdict == NOISY
    assert "fell into modes up to ×5.6 apart" in landed.note
    assert cases[("jax", 5)].verdict == FASTER
    assert cases[("numpy", 4)].verdict == SLOWER


def test_a_change_beyond_the_modes_is_still_found(tmp_path):
    fast, slow = 5e-6, 10e-6
    base = [jax(2, moded([fast, slow, fast], 1)), jax(3, moded([fast, fast, slow], 2)),
            jax(4, moded([fast, fast, fast], 3))]
    new = [jax(2, moded([fast, fast, slow], 11)), jax(3, moded([slow, fast, fast], 12)),
           jax(4, moded([8 * fast, 8 * fast, 8 * fast], 13))]
    a, b = results_file(tmp_path / "a.jsonl", base), results_file(tmp_path / "b.jsonl", new)
    cases = {c.new.params["d"]: c for c in compare(load_results(a), load_results(b)).cases}
    assert cases[4].verdict == SLOWER


def test_two_speeds_need_two_processes_each_and_a_stall_is_not_one():
    assert modes.two_modes([5e-6, 28e-6, 5.1e-6, 5.3e-6, 29e-6]) == ([5e-6, 5.1e-6, 5.3e-6], [28e-6, 29e-6])
    assert modes.two_modes([5e-6, 5.1e-6, 5.3e-6, 29e-6]) is None  # one slow process: a stall
    assert modes.two_modes([5e-6, 5.5e-6, 6e-6, 6.5e-6]) is None  # within a process's noise
