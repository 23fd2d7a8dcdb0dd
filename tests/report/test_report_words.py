"""The report's words match the facts: a wrong case says why, a speedup needs numpy, each case's error is
beside its tolerance, an empty answer says so, a partial results file says how much of the plan it holds."""

import dataclasses

import pytest

from arraybench.report import write_all
from arraybench.results import ResultsWriter, load_results
from arraybench.results.record import CaseRecord
from tests.report.test_report import record, results_of

SHAPE = "wrong result: shape (128,), expected (256,)"

pytestmark = pytest.mark.usefixtures("undrawn_plots")  # words only: no test here reads a plot


def linreg(d, backend, mode, median, **extra):
    return record("linreg", d, backend, mode, median, **extra)


def test_a_wrong_shape_is_named_in_its_cell_and_in_the_correctness_table(tmp_path):
    recs = [linreg(1, "numpy", "eager", 1e-3),
            linreg(1, "jax", "jit", 1e-4, status="wrong", rel_err=None, correct=False, error=SHAPE)]
    rep = write_all([results_of(recs)], tmp_path)
    row = next(line for line in rep.summary.splitlines() if line.startswith("jax·jit"))
    assert "WRONG (shape (128,), expected (256,))" in row and "not finite" not in row
    md = (tmp_path / "report.md").read_text()
    checks = md.split("## Correctness: each case's error against its tolerance")[1].split("\n## ")[0]
    assert "| jax·jit | shape (128,), expected (256,) |" in checks


def test_report_md_shows_each_cases_error_against_its_tolerance(tmp_path):
    recs = [linreg(d, "numpy", "eager", 1e-3 * d) for d in (1, 2)]
    recs.append(linreg(2, "numba", "jit", 1e-4, status="wrong", rel_err=0.3, correct=False,
                       error="wrong result: relative error 0.3 > tolerance 0.0001"))
    rep = write_all([results_of(recs)], tmp_path)
    md = (tmp_path / "report.md").read_text()
    checks = md.split("## Correctness: each case's error against its tolerance")[1].split("\n## ")[0]
    assert "| backend·mode | d=1 | d=2 |" in checks
    assert "| numpy·eager | 1.0e-07 ≤ 1.0e-04 | 1.0e-07 ≤ 1.0e-04 |" in checks
    assert "| numba·jit |  | 3.0e-01 > 1.0e-04 |" in checks
    assert "WRONG (rel err 3.0e-01 > 1.0e-04)" in rep.summary


def test_a_speedup_over_numpy_is_promised_only_where_numpy_ran(tmp_path):
    recs = [linreg(1, "jax", "jit", 1e-4), linreg(1, "torch", "eager", 2e-4)]
    rep = write_all([results_of(recs)], tmp_path / "without")
    assert "speedup vs numpy" not in rep.summary
    assert "speedup vs numpy" not in (tmp_path / "without" / "report.md").read_text()
    assert '<th scope="col">speedup</th>' not in (tmp_path / "without" / "report.html").read_text()
    rep = write_all([results_of([*recs, linreg(1, "numpy", "eager", 1e-3)])], tmp_path / "with")
    assert "speedup vs numpy" in rep.summary
    assert '<th scope="col">speedup</th>' in (tmp_path / "with" / "report.html").read_text()


def test_no_correct_case_gives_no_empty_answer_heading(tmp_path):
    recs = [linreg(1, "numpy", "eager", None, status="error", error="RuntimeError: boom")]
    rep = write_all([results_of(recs)], tmp_path)
    last = rep.summary.rstrip().splitlines()[-1]  # the glance's row names what went wrong, never a blank
    assert last.startswith("linreg") and "no correct case: ERROR (d = 1)" in last
    assert "None: no case was correct" in (tmp_path / "report.md").read_text()


def test_a_torn_results_file_says_how_many_of_the_planned_cases_it_holds(tmp_path):
    res = results_of([linreg(d, "numpy", "eager", 1e-3 * d) for d in (1, 2, 4)])
    path = tmp_path / "run" / "results.jsonl"
    writer = ResultsWriter(path, dataclasses.replace(res.header, plan_size=10))
    for r in res.records:
        writer.append(r)
    writer.close()
    with path.open("a") as f:
        f.write('{"type": "case", "id": "linreg[d=8]/numpy-e')  # the run was killed mid-line
    torn = load_results(path)
    assert len(torn.records) == 3 and any("torn" in w for w in torn.warnings)
    rep = write_all([torn], tmp_path / "report")
    said = f"{path} holds 3 of its 10 planned cases: the run stopped early"
    assert any(w.startswith(said) for w in rep.warnings)
    assert f"`arraybench run --resume {path.parent}` measures the rest" in rep.warnings[0]
    assert f"**Partial:** {said}" in (tmp_path / "report" / "report.md").read_text()
    assert said in (tmp_path / "report" / "report.html").read_text()


def test_a_whole_run_is_not_called_partial(tmp_path):
    res = results_of([linreg(d, "numpy", "eager", 1e-3 * d) for d in (1, 2)])
    res.header = dataclasses.replace(res.header, plan_size=2)
    res.records.append(CaseRecord.from_json(linreg(4, "numpy", "eager", 4e-3)))  # refinement adds cases
    rep = write_all([res], tmp_path)
    assert not any("planned cases" in w for w in rep.warnings)
    assert "Partial" not in (tmp_path / "report.md").read_text()


def processes_of(workload, size, backend, mode, medians):
    """A case measured in one process per round, each at its own median."""
    samples = [m * f for m in medians for f in (0.99, 1.0, 1.01)]
    return record(workload, size, backend, mode, sorted(medians)[len(medians) // 2], samples_s=samples,
                  replicates=[{"n_samples": 3, "loops": 1, "round": k} for k in range(len(medians))])


def read_back(path, recs):
    """The records as a run reads them: written to a results file and loaded (its Reading pairs rounds)."""
    res = results_of(recs)
    writer = ResultsWriter(path, res.header)
    for r in res.records:
        writer.append(r)
    writer.close()
    return load_results(path)


def test_a_tie_left_by_processes_in_two_speeds_says_so(tmp_path):
    """jax·jit's processes at 5 µs in four rounds and 28 µs in two: against numpy's steady 8 µs it is
    ahead in some rounds and behind in others, and the answer says why the size is open."""
    recs = [processes_of("linreg", 1, "jax", "jit", [5e-6, 5.1e-6, 28e-6, 5e-6, 29e-6, 5.2e-6]),
            processes_of("linreg", 1, "numpy", "eager", [8e-6, 8.1e-6, 8e-6, 7.9e-6, 8e-6, 8.1e-6])]
    write_all([read_back(tmp_path / "a.jsonl", recs)], tmp_path)
    md = (tmp_path / "report.md").read_text()
    assert ("the processes of jax·jit fell into two speeds, 5-5.2 µs in 4 processes and 28-29 µs in 2 "
            "processes, which leaves its place open") in md
    steady = [processes_of("linreg", 1, "jax", "jit", [5e-6, 5.1e-6, 5.3e-6, 5e-6, 5.4e-6, 5.2e-6]), recs[1]]
    write_all([read_back(tmp_path / "b.jsonl", steady)], tmp_path / "steady")
    assert "two speeds" not in (tmp_path / "steady" / "report.md").read_text()
