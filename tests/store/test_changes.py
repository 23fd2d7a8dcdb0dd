"""Changes over time: lasting steps found at the right run, none in noise or in a host's slow spell, and
`arraybench history --changes` with its formats and exit codes."""

import json
import math
import random
import re
import sqlite3
from dataclasses import replace

import numpy as np
import pytest

from arraybench.cli.exits import EXIT_OK, EXIT_REGRESSION, EXIT_USAGE
from arraybench.core.case import Case
from arraybench.results import Results
from arraybench.site import RULE, across, load_store
from arraybench.site.history_pages import SiteHistory
from arraybench.site.pages import index_page
from arraybench.stats.changes import Series, steps
from arraybench.store import Store
from arraybench.store.history import changes, read_history
from arraybench.workloads import blank_record
from tests.helpers.common import FIXTURES

RUNS = 120


def noisy_series(rng: np.random.Generator, count: int, runs: int = RUNS, sd: float = 0.03) -> np.ndarray:
    """`count` series of lognormal noise `sd` around levels from 10 µs to 1 s."""
    levels = np.exp(rng.uniform(math.log(1e-5), 0, count))[:, None]
    return levels * rng.lognormal(0, sd, (count, runs))


def as_series(y: np.ndarray) -> list[Series]:
    return [Series(f"s{i}", [None if np.isnan(v) else float(v) for v in row]) for i, row in enumerate(y)]


def test_planted_steps_are_found_at_their_run_with_their_size():
    rng = np.random.default_rng(0)
    y = noisy_series(rng, 40)
    planted = {3: (30, 1.10), 7: (90, 0.85), 11: (60, 1.25), 12: (113, 1.5)}  # s12: 7 runs at its new level
    for s, (at, factor) in planted.items():
        y[s, at:] *= factor
    y[3, 50] = np.nan  # a run that did not measure it
    y[7, 45] *= 3  # one wild night is no step
    found = {(s.key, s.at): s for s in steps(as_series(y), RUNS)}
    assert set(found) == {(f"s{s}", at) for s, (at, _) in planted.items()}
    for s, (at, factor) in planted.items():
        step = found[(f"s{s}", at)]
        assert step.low < factor < step.high and step.slower == (factor > 1)
        assert step.after_s / step.before_s == pytest.approx(step.ratio)


def test_a_step_shows_once_enough_runs_measured_the_new_level():
    rng = np.random.default_rng(1)
    y = noisy_series(rng, 10)
    y[2, RUNS - 3:] *= 1.5  # three runs at the new level: not yet lasting
    assert steps(as_series(y), RUNS) == []


@pytest.mark.parametrize("seed", range(5))
def test_pure_noise_shows_no_change(seed):
    rng = np.random.default_rng(seed)
    sd = rng.uniform(0.01, 0.08, (200, 1))  # each series its own noise
    y = np.exp(rng.uniform(-10, 0, (200, 1))) * rng.lognormal(0, 1, (200, RUNS)) ** sd
    assert steps(as_series(y), RUNS) == []


def test_a_slow_spell_of_the_host_over_every_series_is_no_change():
    rng = np.random.default_rng(2)
    y = noisy_series(rng, 50)
    y[:, 40:70] *= 1.4  # a month of a slow host: every case of those runs
    y[:, 100:103] *= 1.6
    assert steps(as_series(y), RUNS) == []
    y[5, 80:] *= 1.2  # ...and a real step during normal times is still found
    assert [(s.key, s.at) for s in steps(as_series(y), RUNS)] == [("s5", 80)]


def test_a_step_beyond_noise_but_smaller_than_five_percent_is_not_reported():
    rng = np.random.default_rng(3)
    y = noisy_series(rng, 20, sd=0.002)
    y[4, 60:] *= 1.03
    assert steps(as_series(y), RUNS) == []
    assert [s.at for s in steps(as_series(y), RUNS, min_step=0.02)] == [60]


# The store: a few runs of one machine, written as runs are.

def record(workload: str, backend: str, size: int, seconds: float):
    case = Case(workload, (("n", size),), backend, "eager", "float64", 1)
    return replace(blank_record(case, "ok"), size=size, median_s=seconds, ci95_s=(seconds * 0.97, seconds * 1.03))


def stored_history(path, runs: int = 30, step_at: int = 20, torch_from: int = 20, host: str = "box") -> list[str]:
    """`runs` nightly runs of three cases; torch's sort 20 % slower from run `step_at`, where torch
    goes 2.12 → 2.13 (from run `torch_from`). Returns the run ids, oldest first."""
    rng = random.Random(0)
    ids = []
    with Store(path) as st:
        for r in range(runs):
            slow = 1.2 if r >= step_at else 1.0
            recs = [record("sort", "torch", 10**6, 1e-2 * slow * rng.lognormvariate(0, 0.02)),
                    record("sort", "numpy", 10**6, 2e-2 * rng.lognormvariate(0, 0.02)),
                    record("add", "numpy", 1000, 1e-5 * rng.lognormvariate(0, 0.02))]
            rid = f"202601{r + 1:02d}-000000-{host}"
            header = {"schema": 2, "run_id": rid, "arraybench_version": "0.1.0",
                      "started": f"2026-01-{r + 1:02d}T00:00:00+0000", "settings": {"dtype": "float64", "threads": 1},
                      "environment": {"hostname": host, "cpu_model": "cpu", "cpu_logical": 4, "gpus": [],
                                      "versions": {"numpy": "2.4.0", "torch": "2.13" if r >= torch_from else "2.12"}}}
            st.add_results(Results(header=header, records=recs))
            ids.append(rid)
    return ids


def test_the_store_s_history_names_the_change_its_run_and_the_framework_versions(tmp_path):
    ids = stored_history(tmp_path / "s.db")
    with Store(tmp_path / "s.db") as st:
        (machine,) = read_history(st)
        assert len(machine.runs) == 30 and len(machine.series) == 3
        (change,) = changes(st)
    assert change.run.id == ids[20] and change.slower and change.versions == ("2.12", "2.13")
    assert change.text().startswith("torch·eager sort (float64) at n=10⁶ on the box: 20 % slower (95 %: ")
    assert change.text().endswith(f" from run {ids[20]} (torch 2.12 → 2.13)")


def test_history_changes_formats_and_exit_codes(tmp_path, run_cli):
    ids = stored_history(tmp_path / "s.db")
    code, out, _ = run_cli("history", "--changes", "--store", str(tmp_path / "s.db"))
    assert code == EXIT_REGRESSION and out.startswith("1 slower:\n  torch·eager sort") and "(torch 2.12 → 2.13)" in out
    code, out, _ = run_cli("history", "--changes", "--format", "markdown", "--store", str(tmp_path / "s.db"))
    assert code == EXIT_REGRESSION and out.startswith("## 1 slower\n- torch·eager sort")
    code, out, _ = run_cli("history", "--changes", "--format", "json", "--store", str(tmp_path / "s.db"))
    (row,) = json.loads(out)
    assert code == EXIT_REGRESSION and row["run"] == ids[20] and row["versions"] == ["2.12", "2.13"]
    assert 1.15 < row["ratio_low"] < row["ratio"] < row["ratio_high"] < 1.25
    # CI asks about the runs since the last one it checked: the regression is older, so exit 0.
    code, out, _ = run_cli("history", "--changes", "--since", ids[25], "--store", str(tmp_path / "s.db"))
    assert code == EXIT_OK and out.startswith("no lasting change in ") and f"from run {ids[25]} on" in out
    code, _, _ = run_cli("history", "--changes", "--since", ids[20], "--store", str(tmp_path / "s.db"))
    assert code == EXIT_REGRESSION


def test_history_changes_bad_input_is_one_line_and_exit_2(tmp_path, run_cli):
    stored_history(tmp_path / "s.db", runs=8)
    code, _, err = run_cli("history", "--changes", "--since", "nosuchrun", "--store", str(tmp_path / "s.db"))
    assert code == EXIT_USAGE and err.count("\n") == 1 and "no run 'nosuchrun'" in err
    code, _, err = run_cli("history", "--since", "latest", "--store", str(tmp_path / "s.db"))
    assert code == EXIT_USAGE and "--since goes with --changes" in err
    code, _, err = run_cli("history", "--changes", "--store", str(tmp_path / "none.db"))
    assert code == EXIT_USAGE and "no results store" in err


def test_an_improvement_is_listed_and_exits_0(tmp_path, run_cli):
    ids = stored_history(tmp_path / "s.db")
    with Store(tmp_path / "s.db") as st:  # from run 20 on, torch's sort 1.2 / 1.44 = 0.83 × what it was
        st.db.execute("UPDATE cases SET median_s = median_s / 1.44 WHERE case_id LIKE 'sort%torch%' AND run_id >= ?",
                      (ids[20],))
    code, out, _ = run_cli("history", "--changes", "--store", str(tmp_path / "s.db"))
    assert code == EXIT_OK and out.startswith("1 faster:\n") and "% faster (95 %: " in out


def test_a_version_5_store_gets_its_times_as_columns_and_a_history(tmp_path):
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((FIXTURES / "store-v5.sql").read_text())
        (record,) = [json.loads(r) for (r,) in conn.execute("SELECT record FROM cases")]
    with Store(db) as st:
        assert st.conn.execute("SELECT median_s, ci_low_s, ci_high_s FROM cases").fetchall() == [
            (record["median_s"], *record["ci95_s"])]
        (machine,) = read_history(st)
        (series,) = machine.series.values()
        assert series.medians == [record["median_s"]] and series.spec["workload"] == record["workload"]


def test_the_site_lists_the_change_first_and_plots_each_case_over_time(tmp_path):
    ids = stored_history(tmp_path / "s.db")
    with Store(tmp_path / "s.db", create=False) as st:
        history = SiteHistory.read(st)
    site = load_store(str(tmp_path / "s.db"))
    index = index_page(site, across(site), RULE, history.section())
    assert index.index('id="changes"') < index.index('id="answer"')  # the first thing on the first screen
    assert "torch·eager sort (float64) at n=10⁶ on the box</a>: <b class=\"slower\">20 % slower" in index
    pages = history.pages()
    assert sorted(pages) == ["history/box-add.html", "history/box-sort.html", "history/index.html"]
    sort = pages["history/box-sort.html"]
    assert sort.count("<svg") == 2 and "<script" not in sort  # torch's and numpy's sort
    link = index.split('<li><a href="', 1)[1].split('"', 1)[0]
    assert link.startswith("history/box-sort.html#") and f'id="{link.split("#")[1]}"' in sort
    torch = sort[sort.index(f'id="{link.split("#")[1]}"'):].split("</svg>")[0]
    assert ">2.13</text>" in torch  # the version change, marked where it happened
    assert re.search(f"<title>20 % slower \\(95 %: 1[89]–2[12] %\\) from run {ids[20]}</title>", torch)
    assert "1 lasting changes in 2 workload·machine histories" in pages["history/index.html"]


def test_a_hostile_workload_name_is_text_on_the_history_pages(tmp_path):
    with Store(tmp_path / "s.db") as st:
        for r in range(12):
            header = {"schema": 2, "run_id": f"r{r:02d}", "started": f"2026-01-{r + 1:02d}T00:00:00+0000",
                      "settings": {}, "environment": {"hostname": "<b>box</b>", "versions": {}}}
            st.add_results(Results(header=header, records=[record("<script>x</script>", "numpy", 10, 1e-3)]))
    with Store(tmp_path / "s.db", create=False) as st:
        text = "".join(SiteHistory.read(st).pages().values())
    assert "<script>" not in text and "&lt;script&gt;x&lt;/script&gt;" in text and "<b>box" not in text
