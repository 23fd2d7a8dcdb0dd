"""Memory where people decide: its claims (by the rule of every time claim), the tables, results.csv, plots and
maps, the written answer, compare, history --changes, the store and the exports, and --sizes fit:BYTES."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
import random
import sqlite3
from dataclasses import replace

import pytest

from arraybench.cli.exits import EXIT_OK, EXIT_USAGE
from arraybench.comparison import compare
from arraybench.comparison.memory_change import LESS, MORE
from arraybench.core.case import Case
from arraybench.errors import UsageError
from arraybench.planning import fit
from arraybench.report import exports, fits, memory_section, winners
from arraybench.report.answer import answers
from arraybench.report.data import ReportData
from arraybench.report.files import csv_text
from arraybench.report.table import render_text
from arraybench.results import Results, ResultsWriter
from arraybench.stats import memory_order as claims
from arraybench.store import SCHEMA, Store
from arraybench.store.history import MEMORY, changes
from arraybench.workloads import blank_record
from tests.helpers.common import FIXTURES
from tests.report.test_report import record, results_of

MiB = 2**20


def measured(workload, size, backend, mode, median, per_process, **extra):
    """A case of three processes (rounds 0-2) whose steady call needed `per_process` bytes in each."""
    reps = [{"n_samples": 2, "round": k, "median_s": median, "memory_bytes": m,
             "first_call_memory_bytes": 2 * m} for k, m in enumerate(per_process)]
    middle = sorted(per_process)[len(per_process) // 2]
    return record(workload, size, backend, mode, median, n_processes=len(per_process), replicates=reps,
                  samples_s=[median * 0.99, median * 1.01] * len(per_process),
                  memory_bytes=middle, first_call_memory_bytes=2 * middle, input_bytes=8 * MiB,
                  memory_method="the worker's resident set", **extra)


def views(recs):
    data = ReportData.from_results([results_of(recs)])
    return data, {(r.backend, r.size): r for r in data.records}


def test_memory_is_compared_at_a_mebibyte_and_needs_its_processes_spread():
    assert claims.quantized(300) == MiB and claims.quantized(2.4 * MiB) == 2 * MiB
    one = claims.point(10, {0: 100 * MiB})
    assert one is not None and one.low == 0 and one.high == float("inf")  # one process: the spread is unknown
    a = claims.point(10, {0: 100 * MiB, 1: 101 * MiB, 2: 100 * MiB})
    b = claims.point(10, {0: 300 * MiB, 1: 301 * MiB, 2: 299 * MiB})
    assert a is not None and b is not None
    assert claims.less(a, b) and claims.less(a, b, factor=2.0) and not claims.less(a, b, factor=4.0)
    small = claims.point(10, {0: 1.2 * MiB, 1: 1.2 * MiB})
    smaller = claims.point(10, {0: 0.6 * MiB, 1: 0.6 * MiB})
    assert small is not None and smaller is not None and not claims.less(smaller, small)  # below the resolution
    assert claims.point(10, {}) is None


def test_the_answer_names_the_fastest_s_memory_against_the_runner_up_s_only_past_twice_beyond_noise():
    recs = [measured("matmul", 64, "numpy", "eager", 1e-3, [10 * MiB] * 3),
            measured("matmul", 64, "torch", "eager", 2e-3, [40 * MiB] * 3),
            measured("matmul", 8, "numpy", "eager", 1e-4, [MiB] * 3),
            measured("matmul", 8, "torch", "eager", 2e-4, [MiB] * 3)]
    data, _ = views(recs)
    (said,) = answers(data, [])
    assert ("At d = 64, numpy·eager needs 4× less memory than torch·eager (10 MiB a call against 40 MiB, inputs "
            "included).") in said.why
    close = [replace_memory(r, [15 * MiB] * 3) if r["backend"] == "torch" else r for r in recs]
    (said,) = answers(views(close)[0], [])
    assert "needs" not in said.why  # 1.5×: not worth a sentence
    lone = [replace_memory(r, [r["memory_bytes"]]) for r in recs]
    (said,) = answers(views(lone)[0], [])
    assert "needs" not in said.why  # one process each: memory's spread between processes is unknown


def replace_memory(r, per_process):
    return measured(r["workload"], r["size"], r["backend"], r["mode"], r["median_s"], per_process)


def test_tables_and_results_csv_carry_each_case_s_memory():
    recs = [measured("matmul", 64, "numpy", "eager", 1e-3, [10 * MiB] * 3),
            measured("matmul", 64, "torch", "eager", 2e-3, [40 * MiB] * 3)]
    data, _ = views(recs)
    text = render_text(data.records)
    assert "· memory of a call ·" in text and "10 MiB" in text and "40 MiB" in text
    rows = list(csv.DictReader(io.StringIO(csv_text(data))))
    assert {r["backend"]: r["memory_bytes"] for r in rows} == {"numpy": str(10 * MiB), "torch": str(40 * MiB)}
    assert rows[0]["first_call_memory_bytes"] and "peak_memory_bytes" in rows[0]
    plain = render_text(ReportData.from_results([results_of([record("matmul", 64, "numpy", "eager", 1e-3)])]).records)
    assert "memory of a call" not in plain  # nothing measured, nothing said


def test_the_memory_map_colours_each_size_by_the_case_that_needs_least():
    recs = [measured("matmul", 64, "numpy", "eager", 1e-3, [30 * MiB] * 3),
            measured("matmul", 64, "torch", "eager", 2e-3, [10 * MiB] * 3),
            measured("matmul", 8, "numpy", "eager", 1e-4, [MiB] * 3),
            measured("matmul", 8, "torch", "eager", 2e-4, [MiB] * 3)]
    data, by = views(recs)
    (row,) = winners.memory_rows(data)
    small, large = row.cells
    assert small.tied and large.best == "torch·eager" and large.lead == pytest.approx(3.0)
    assert memory_section.apart(by[("torch", 64)], by[("numpy", 64)], 2.0) == -1
    assert winners.memory_rows(ReportData.from_results([results_of([record("matmul", 8, "numpy", "eager", 1)])])) == []


def test_the_report_draws_memory_beside_time_where_it_was_measured(tmp_path, undrawn_plots):
    from arraybench.report import write_all

    recs = [measured("matmul", n, b, "eager", t * n, [n * MiB] * 3) for n in (8, 64)
            for b, t in (("numpy", 1e-5), ("torch", 2e-5))]
    rep = write_all([results_of(recs)], tmp_path)
    names = {p.stem for p in rep.plots}
    assert {"memory-matmul", "winners-memory"} <= names
    bare = write_all([results_of([record("matmul", n, "numpy", "eager", 1e-5 * n) for n in (8, 64)])], tmp_path / "b")
    assert not {p.stem for p in bare.plots} & {"memory-matmul", "winners-memory"}


def two_runs(base_memory, new_memory, processes=3):
    def run(rid, per):
        recs = [measured("matmul", 64, "numpy", "eager", 1e-3, [per] * processes)]
        res = results_of(recs)
        res.header = dataclasses.replace(res.header, run_id=rid)
        return res

    return run("a", base_memory), run("b", new_memory)


def test_compare_calls_a_memory_change_by_the_rules_of_time():
    (c,) = compare(*two_runs(10 * MiB, 25 * MiB)).cases
    assert c.memory is not None and c.memory.verdict == MORE and c.memory.ratio == pytest.approx(2.5)
    (c,) = compare(*two_runs(25 * MiB, 10 * MiB)).cases
    assert c.memory.verdict == LESS
    (c,) = compare(*two_runs(10 * MiB, 10.2 * MiB)).cases
    assert c.memory.verdict == "same"
    (c,) = compare(*two_runs(10 * MiB, 25 * MiB, processes=1)).cases
    assert c.memory.verdict == "too noisy to say"  # one process a side: no spread between processes known


def test_compare_shows_memory_in_its_table_and_json(tmp_path, run_cli):
    base, new = two_runs(10 * MiB, 25 * MiB)
    for res, name in ((base, "a.jsonl"), (new, "b.jsonl")):
        writer = ResultsWriter(tmp_path / name, res.header)
        for r in res.records:
            writer.append(r)
        writer.close()
    code, out, _ = run_cli("compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--no-history")
    assert code == EXIT_OK and "Memory of a call" in out and "more memory" in out and "25 MiB" in out
    code, out, _ = run_cli("compare", str(tmp_path / "a.jsonl"), str(tmp_path / "b.jsonl"), "--no-history",
                           "--format", "json")
    (row,) = json.loads(out)["cases"]
    assert row["memory_verdict"] == MORE and row["new_memory_bytes"] == 25 * MiB


def stored_memory(path, runs=24, step_at=14):
    """`runs` runs of one machine; numpy's sort needs 40 % more memory from run `step_at`, its time unchanged."""
    rng = random.Random(1)
    with Store(path) as st:
        for r in range(runs):
            case = Case("sort", (("n", 10**6),), "numpy", "eager", "float64", 1)
            t = 1e-2 * rng.lognormvariate(0, 0.02)
            rec = replace(blank_record(case, "ok"), size=10**6, median_s=t, ci95_s=(t * 0.97, t * 1.03),
                          memory_bytes=round((1.4 if r >= step_at else 1.0) * 16 * MiB))
            header = {"schema": 3, "run_id": f"202602{r + 1:02d}-000000-box",
                      "started": f"2026-02-{r + 1:02d}T00:00:00+0000", "settings": {"dtype": "float64", "threads": 1},
                      "environment": {"hostname": "box", "cpu_model": "cpu", "cpu_logical": 4, "gpus": [],
                                      "versions": {"numpy": "2.4.0"}}}
            st.add_results(Results(header=header, records=[rec]))


def test_history_finds_a_lasting_change_of_memory_and_exits_0_for_it(tmp_path, run_cli):
    stored_memory(tmp_path / "s.db")
    with Store(tmp_path / "s.db") as st:
        (change,) = changes(st)
    assert change.kind == MEMORY and change.grew and not change.slower
    assert change.run.id == "20260215-000000-box" and "40 % more memory" in change.text()
    code, out, _ = run_cli("history", "--changes", "--store", str(tmp_path / "s.db"))
    assert code == EXIT_OK and out.startswith("1 with more memory:") and "16 MiB → 22.4 MiB" in out


def test_a_version_6_store_gets_its_memory_as_a_column(tmp_path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((FIXTURES / "store-v6.sql").read_text())
    with Store(db) as st:
        assert st.version() == SCHEMA
        assert st.conn.execute("SELECT memory_bytes FROM cases").fetchall() == [(None,)]  # not measured then
        res = st.load(st.resolve("latest"))
    assert res.records[0].memory_bytes is None and res.records[0].median_s is not None


def test_exports_carry_each_case_s_memory():
    res = results_of([measured("matmul", 64, "numpy", "eager", 1e-3, [10 * MiB] * 3)])
    (bench,) = exports.pytest_benchmark(res)["benchmarks"]
    assert bench["extra_info"]["memory_bytes"] == 10 * MiB
    (measures,) = exports.bmf(res).values()
    assert measures["memory"] == {"value": 10 * MiB} and measures["first-call-memory"] == {"value": 20 * MiB}


def test_fit_takes_one_limit_and_says_what_is_wrong_in_one_line(tmp_path, run_cli):
    assert fit.limit_of(["fit:16G"]) == 16 * 2**30 and fit.limit_of(["small", "100"]) is None
    for bad, words in ((["fit:lots"], "bad --sizes 'fit:lots'"), (["fit:16G", "100"], "stands alone"),
                       (["fit:10"], "below 1M")):
        with pytest.raises(UsageError, match=words):
            fit.limit_of(bad)
    code, _, err = run_cli("run", "--workloads", "sort", "--sizes", "fit:nope", "--no-store")
    assert code == EXIT_USAGE and err.count("\n") == 1 and "fit:nope" in err


def probe(case: Case, limit: int, need_per_n: float, fixed: float = 0.0, fails_from: int | None = None):
    """A measured record of `case`: it needs `fixed + need_per_n · n` bytes, or failed from `fails_from` on."""
    n = case.params_dict["n"]
    failed = fails_from is not None and n >= fails_from
    rec = replace(blank_record(case, "error" if failed else "ok"), size=n, error="MemoryError" if failed else "")
    if not failed:
        m = round(fixed + need_per_n * n)
        rec = replace(rec, memory_bytes=m, first_call_memory_bytes=m)
    return rec


def search(plan, limit, need_per_n, fixed=0.0, fails_from=None):
    records = [probe(c, limit, need_per_n, fixed, fails_from) for c in plan]
    rounds = 0
    while new := fit.probes(plan, records, limit):
        rounds += 1
        records += [probe(c, limit, need_per_n, fixed, fails_from) for c in new]
        assert rounds <= fit.MAX_ROUNDS
    return records, rounds


def test_the_fit_search_finds_the_largest_size_under_the_limit_in_a_few_rounds():
    plan = [Case("sort", (("n", 1000),), "numpy", "eager", "float64", 1)]
    limit = 2**30
    records, rounds = search(plan, limit, need_per_n=24.0, fixed=3 * MiB)
    (found,) = fit.fits(records, limit)
    largest, over = found.fits.size, found.over.size
    assert fit.need(found.fits) <= limit < fit.need(found.over) and over / largest <= fit.CLOSE
    assert rounds <= 6
    records, _ = search(plan, limit, need_per_n=24.0, fails_from=20_000_000)  # a MemoryError before the limit
    (found,) = fit.fits(records, limit)
    assert found.fits.size < 20_000_000 <= found.over.size and found.why_over() == "error: MemoryError"


def test_the_fit_table_says_each_backend_mode_s_largest_size(tmp_path):
    plan = [Case("sort", (("n", 1000),), b, "eager", "float64", 1) for b in ("numpy", "torch")]
    limit = 256 * MiB
    records = []
    for case, per in zip(plan, (24.0, 48.0), strict=True):
        records += search([case], limit, per)[0]
    res = Results(header={"settings": {"sizes": ["fit:256M"]}, "environment": {"hostname": "box"}},
                  records=records)
    data = ReportData.from_results([res])
    text = fits.render(data)
    assert text.startswith("The largest size under 256 MiB (--sizes fit)")
    rows = {row[1]: row for row in fits.rows(data, limit)}
    assert rows["numpy·eager"][2].startswith("n = ") and "needs" in rows["torch·eager"][4]
    assert fits.render(ReportData.from_results([results_of([record("sort", 8, "numpy", "eager", 1)])])) == ""
