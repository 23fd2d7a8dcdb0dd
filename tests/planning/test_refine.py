"""refine.proposals: which sizes to measure next so a change of winner gets bracketed (fake records)."""

from __future__ import annotations

from dataclasses import replace

from arraybench.core.case import Case
from arraybench.execution.session import refine_crossovers
from arraybench.planning import refine
from arraybench.results import SCHEMA, ResultsWriter, load_results
from arraybench.results.record import CaseRecord
from arraybench.stats import bracket
from arraybench.workloads import blank_record


def case(backend: str, n: int, mode: str = "eager") -> Case:
    return Case("elementwise_add", (("n", n),), backend, mode, "float32", 2)


def record(c: Case, median: float, spread: float = 0.01) -> CaseRecord:
    return replace(blank_record(c, "ok"), median_s=median, ci95_s=(median * (1 - spread), median * (1 + spread)))


def timings(n: int) -> dict[str, float]:
    """numpy costs 1 µs + 1 ns/element, torch 10 µs + 0.1 ns/element: torch wins above n = 10 000."""
    return {"numpy": 1e-6 + 1e-9 * n, "torch": 1e-5 + 1e-10 * n, "jax": 1e-4 + 1e-9 * n}


def measure(cases: list[Case]) -> list[CaseRecord]:
    return [record(c, timings(c.params_dict["n"])[c.backend]) for c in cases]


def test_the_two_rivals_are_measured_on_a_grid_of_at_most_4x_steps():
    plan = [case(b, n) for b in ("numpy", "torch", "jax") for n in (1_000, 1_000_000)]
    new = refine.proposals(plan, [], measure(plan))
    grid = [3981, 15849, 63096, 251189]  # 1000 · 1000^(i/5): five steps of 3.98×
    assert sorted((c.backend, c.params_dict["n"]) for c in new) == [(b, n) for b in ("numpy", "torch") for n in grid]


def test_a_size_refined_in_one_environment_is_measured_in_every_one():
    # Only `new` changes winner (its torch got faster); `old`'s torch never wins. The sizes `new`
    # needs are measured in `old` too, or compare RUN@old RUN@new could not pair them.
    plan = [replace(case(b, n), env=env) for env in ("old", "new") for b in ("numpy", "torch")
            for n in (1_000, 1_000_000)]
    slow = [record(c, 1.0) if c.env == "old" and c.backend == "torch" else measure([c])[0] for c in plan]
    new = refine.proposals(plan, [], slow)
    by_env = {env: sorted((c.backend, c.params_dict["n"]) for c in new if c.env == env) for env in ("old", "new")}
    assert by_env["new"] and by_env["old"] == by_env["new"]


def test_a_narrow_gap_is_bisected():
    assert refine.grid([1000, 3000]) == [1732]
    assert refine.grid([1000, 2000]) == []


def test_rounds_end_with_a_bracket_at_most_twice_wide():
    plan = [case(b, n) for b in ("numpy", "torch", "jax") for n in (1_000, 1_000_000)]
    extra: list[Case] = []
    records = measure(plan)
    rounds = 0
    for _ in range(12):
        new = refine.proposals(plan, extra, records)
        if not new:
            break
        rounds += 1
        extra += new
        records += measure(new)
    else:
        raise AssertionError("refinement did not finish")
    series = {b: {c.params_dict["n"]: bracket.Point(c.params_dict["n"], r.median_s, *r.ci95_s)
                  for c, r in zip(plan + extra, records, strict=True) if c.backend == b} for b in ("numpy", "torch")}
    (br,) = bracket.brackets("numpy", series["numpy"], "torch", series["torch"])
    assert br.state == bracket.BRACKETED and br.hi / br.lo <= bracket.MAX_RATIO
    assert br.lo <= 10_000 <= br.hi
    assert {c.backend for c in extra} == {"numpy", "torch"}  # jax never wins: never refined
    assert rounds <= 2  # a grid, then one bisection
    assert len(extra) <= 2 * 5


def test_no_change_of_winner_asks_for_nothing():
    plan = [case(b, n) for b in ("numpy", "jax") for n in (1_000, 1_000_000)]
    assert refine.proposals(plan, [], measure(plan)) == []


def test_a_change_of_winner_within_noise_at_both_ends_is_not_refined():
    plan = [case(b, n) for b in ("numpy", "torch") for n in (1_000, 1_000_000)]
    records = measure(plan)
    # numpy ahead at 10³ and torch at 10⁶, but torch's intervals reach over numpy's at both.
    records[2] = record(plan[2], timings(1_000)["torch"], spread=10.0)
    records[3] = record(plan[3], timings(1_000_000)["torch"], spread=10.0)
    assert refine.proposals(plan, [], records) == []
    records[2] = record(plan[2], timings(1_000)["torch"])  # separated at one end: worth finding
    assert refine.proposals(plan, [], records) != []


def test_failed_or_untimed_records_are_not_points():
    plan = [case(b, n) for b in ("numpy", "torch") for n in (1_000, 1_000_000)]
    records = measure(plan)
    records[1] = replace(records[1], status="wrong")
    assert refine.proposals(plan, [], records) == []


def test_a_workload_without_an_integer_size_is_not_refined():
    plan = [Case("elementwise_add", (("n", "big"),), b, "eager", "float32", 2) for b in ("numpy", "torch")]
    assert refine.proposals(plan, [], []) == []


class FakeRunner:
    """Writes each case's record as the timings above would measure it."""

    def __init__(self, writer: ResultsWriter) -> None:
        self.writer, self.calls = writer, []

    def run(self, cases: list[Case]) -> list[dict]:
        self.calls.append(cases)
        for r in measure(cases):
            self.writer.append(replace(r, iqr_s=0.0))
        return []


def test_the_session_runs_rounds_until_bracketed_and_a_resumed_run_does_not_repeat_them(tmp_path):
    plan = [case(b, n) for b in ("numpy", "torch", "jax") for n in (1_000, 1_000_000)]
    writer = ResultsWriter(tmp_path / "results.jsonl", {"schema": SCHEMA})
    runner = FakeRunner(writer)
    runner.run(plan)
    refine_crossovers(runner, plan, writer.path, None, rounds=4)
    assert [len(c) for c in runner.calls] == [6, 8, 2]  # the plan, a grid of 4 sizes × 2, one bisection
    again = FakeRunner(writer)
    refine_crossovers(again, plan, writer.path, None, rounds=4)
    assert again.calls == []
    writer.close()
    assert len(load_results(tmp_path).records) == 16


def test_rounds_zero_measures_nothing_more(tmp_path):
    plan = [case(b, n) for b in ("numpy", "torch") for n in (1_000, 1_000_000)]
    writer = ResultsWriter(tmp_path / "results.jsonl", {"schema": SCHEMA})
    runner = FakeRunner(writer)
    runner.run(plan)
    refine_crossovers(runner, plan, writer.path, None, rounds=0)
    assert len(runner.calls) == 1
