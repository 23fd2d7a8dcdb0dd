"""The answer at a glance: the winners map the report opens with, a line per workload, the terminal's table."""

import re
from pathlib import Path

import pytest

from arraybench.report import winners, write_all
from arraybench.report.answer import answers
from arraybench.report.crossovers import crossovers
from arraybench.report.data import ReportData
from arraybench.results import load_results
from tests.helpers.common import ROOT
from tests.helpers.report_data import PEAKS, bisected_records, synthetic_records
from tests.report.test_report import record, results_of, sweep_records

REAL = ROOT / "docs" / "gpu" / "float32" / "results.jsonl"  # 20 workloads, CPU and GPU


def glance(res):
    data = ReportData.from_results([res])
    found = crossovers(data)
    return data, found, {row.workload: row for row in winners.rows(data)}


def svg_texts(path: Path) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())


def words(row, found) -> int:
    return len(f"{row.title} — {winners.line(row, found)}".split())


def test_each_cell_is_the_fastest_correct_case_or_a_tie_where_the_answer_says_within_noise():
    data, found, rows = glance(results_of(bisected_records(), peaks=PEAKS))
    sort = rows["sort"]
    # 1 µs + 4 ns·n·log₂n against 5 µs + 2 ns·n·log₂n: numpy leads up to n = 178, torch from 316 on
    assert [c.best for c in sort.cells[:3]] == ["numpy·eager", "numpy·eager", "torch·eager"]
    assert sort.cells[-1].lead_text() == "2×" and not sort.cells[-1].tied
    assert winners.line(sort, found).startswith("numpy·eager below n ≈ 250, then torch·eager (2× at 10⁶)")
    # At n = 3162 torch and numpy are within noise of each other: both named, neither the winner.
    cell = next(c for c in rows["elementwise_add"].cells if c.size == 3162)
    assert set(cell.labels()) == {"numpy·eager", "torch·eager"} and cell.tied and cell.lead is None
    assert "tied with torch·eager at 3162" in winners.line(rows["elementwise_add"], found)
    # The map and the written answer make the same claim at each workload's largest size.
    for said in answers(data, found):
        last = rows[said.workload].cells[-1]
        claim = said.verdict.split(". Per call")[0].rsplit(";", 1)[-1]  # the claim at the largest sizes
        assert ("within noise" in claim or "tied with" in claim) == bool(last.tied), (said.verdict, last)


@pytest.mark.parametrize("res", [results_of(bisected_records(), peaks=PEAKS),
                                 results_of(synthetic_records(), peaks=PEAKS),
                                 results_of(sweep_records()), load_results(REAL)])
def test_a_line_under_the_map_is_at_most_25_words(res):
    _, found, rows = glance(res)
    assert rows and all(words(row, found) <= winners.MAX_WORDS for row in rows.values())


def test_a_lead_that_changes_many_times_is_counted_not_spelled_out():
    recs = []
    for i, d in enumerate((1, 2, 4, 8, 16, 32)):  # numpy and torch take turns, 2× apart each time
        recs += [record("zig", d, "numpy", "eager", 1e-3 * (1 if i % 2 else 2)),
                 record("zig", d, "torch", "eager", 1e-3 * (2 if i % 2 else 1))]
    _, found, rows = glance(results_of(recs))
    text = winners.line(rows["zig"], found)
    assert "3 more changes" in text and words(rows["zig"], found) <= winners.MAX_WORDS, text


def test_a_run_of_one_backend_draws_a_map_of_that_backend(tmp_path):
    recs = [record("linreg", d, "numpy", "eager", 1e-3 * d) for d in (1, 2, 8)]
    rep = write_all([results_of(recs)], tmp_path)
    texts = svg_texts(tmp_path / "plots" / "winners.svg")
    assert [t for t in texts if t.startswith("d = ")] == ["d = 1", "d = 2", "d = 8"]
    assert texts.count("numpy·eager") == 4  # three cells and the legend
    assert "no rival" in texts and not any(t.endswith("×") for t in texts)  # nothing to lead
    assert "numpy·eager at every d" in (tmp_path / "report.md").read_text()
    assert "numpy·eager no rival (d = 8)" in rep.summary


def test_wrong_and_failed_cases_are_marked_and_never_win(tmp_path):
    recs = [record("add", 1, "numpy", "eager", 1e-3), record("add", 1, "torch", "eager", 2e-3),
            # 10× faster than numpy, and wrong: never the winner
            record("add", 1, "numba", "jit", 1e-4, status="wrong", correct=False, rel_err=0.3),
            record("add", 2, "numpy", "eager", 2e-3, status="wrong", correct=False, rel_err=0.3),
            record("add", 2, "numba", "jit", None, status="error", error="boom"),
            record("bad", 1, "numpy", "eager", 1e-3, status="wrong", correct=False, rel_err=0.3)]
    rep = write_all([results_of(recs)], tmp_path)
    _, found, rows = glance(results_of(recs))
    first, second = rows["add"].cells
    assert (first.best, first.lead_text(), first.failed) == ("numpy·eager", "2×", ("numba·jit WRONG",))
    assert second.best is None and second.lead_text() == "ERROR WRONG"
    assert [c.best for c in rows["bad"].cells] == [None]  # a workload with nothing correct keeps its row
    texts = svg_texts(tmp_path / "plots" / "winners.svg")
    assert "✗" in texts and texts.count("no correct case") == 3  # two cells and the legend
    assert "numba·jit" not in texts  # never coloured as a winner, nor in the legend
    line = winners.line(rows["add"], found)
    assert line.startswith("numpy·eager up to d = 1, then no correct case from 2; 3 cases wrong or failed"), line
    assert "numpy·eager 2× (d = 1, ✗ 1 failed or wrong)" in rep.summary
    assert "no correct case: ERROR WRONG (d = 2)" in rep.summary


def test_where_all_are_tied_no_winner_is_named(tmp_path):
    # Three backend·modes 1 % apart with samples spread -3 % to +5 %: within noise at every size.
    recs = [record("same", d, backend, mode, 1e-3 * d * f) for d in (1, 2, 8)
            for backend, mode, f in (("numpy", "eager", 1.0), ("torch", "eager", 1.01), ("jax", "jit", 1.005))]
    rep = write_all([results_of(recs)], tmp_path)
    _, found, rows = glance(results_of(recs))
    assert all(c.tied and c.lead is None for c in rows["same"].cells)
    line = winners.line(rows["same"], found)
    assert "tied at every d" in line and "×" not in line, line
    texts = svg_texts(tmp_path / "plots" / "winners.svg")
    assert texts.count("numpy·eager ≈") == 3 and not any(t.endswith("×") for t in texts)  # no lead is printed
    assert "≈ tie: within noise" in texts
    assert "numpy·eager ≈ jax·jit (d = 8; no difference larger than 11 % (80 % power))" in \
        rep.summary.rsplit("The answer at a glance", 1)[1]


def test_report_md_and_the_terminal_open_and_end_with_the_answer_at_a_glance(bisected_report):
    rep, out = bisected_report
    md = (out / "report.md").read_text().splitlines()
    assert md[:3] == ["# arraybench report", "", "![The answer at a glance](plots/winners.svg)"]
    lines = md[4:md.index("## The answer")]
    assert [x.split("**")[1] for x in lines if x.startswith("- **")] == ["elementwise_add", "matmul", "sort",
                                                                         "transfer_to_host"]
    assert (out / "plots" / "winners.png").read_bytes()[:4] == b"\x89PNG"
    # The terminal's last block: a row per workload, its two ends and where the answer changes; no paragraphs.
    table = rep.summary.rsplit("\n\n", 1)[1].splitlines()
    assert table[0] == "The answer at a glance (in words: report.md)"
    sort = next(x for x in table if x.startswith("sort "))
    assert re.search(r"numpy·eager 1\.73× \(n = 100\) +torch·eager 2× \(n = 10⁶\) +n ≈ 250$", sort), sort
    assert len(table) == 3 + 4 and "Why" not in rep.summary.rsplit("\n\n", 1)[1]
