"""The results store: runs land in it record by record, and history, show, export, import read it back."""

import json
import sqlite3
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import arraybench
from arraybench.core.case import Case
from arraybench.machine.host import fingerprint
from arraybench.report.data import run_views
from arraybench.results import Planned, ResultsWriter, load_results
from arraybench.results.record import CaseRecord
from arraybench.site import across, answer_text, load_store
from arraybench.site.site_data import run_list, shown_runs
from arraybench.store import SCHEMA, Recording, Store
from arraybench.workloads import blank_record
from tests.comparison.test_compare import processes, record, results_file
from tests.helpers.common import FIXTURES, SRC, TINY, at_once, read_jsonl


@pytest.fixture(scope="module")
def stored_run(tmp_path_factory):
    """A tiny real run of numpy and numba (JIT), stored in a fresh store."""
    from arraybench.cli import main

    tmp = tmp_path_factory.mktemp("stored")
    db = tmp / "results.db"
    code = main(["run", "--workloads", "linreg", "--backends", "numpy,numba", "--sizes", "2", "--threads", "1",
                 "--output-dir", str(tmp / "out"), "--store", str(db), *TINY])
    assert code == 0
    return db, tmp / "out" / "results.jsonl"


def test_run_is_stored_with_every_record_and_raw_samples(stored_run):
    db, results_file = stored_run
    on_disk = read_jsonl(results_file)
    with Store(db) as st:
        [run] = st.runs()
        stored = st.load(run.id)
    assert run.id == on_disk[0]["run_id"]
    assert run.backends == ("numba", "numpy") and run.cases == 2 and run.failed == 0
    assert run.machine == fingerprint(on_disk[0]["environment"])
    assert stored.header.to_json() == on_disk[0]
    # replicate lines serve --resume; a stored run reads as its file does (statistics recomputed)
    assert stored.records == load_results(results_file).records
    assert [r.samples_s for r in stored.records] == [tuple(r["samples_s"]) for r in on_disk[1:] if r["type"] == "case"]
    assert all(len(r.samples_s) >= 3 for r in stored.records)


def stored_figures(st, rid):
    """Run `rid`'s figures column, by case id, as JSON objects (rows without figures left out)."""
    return {cid: json.loads(f) for cid, f in st.conn.execute(
        "SELECT case_id, figures FROM cases WHERE run_id = ? AND figures IS NOT NULL", (rid,))}


def test_a_completed_run_stores_the_figures_the_report_derives(stored_run):
    db, results_file = stored_run
    with Store(db) as st:
        [run] = st.runs()
        figures = stored_figures(st, run.id)
    views = run_views(load_results(results_file))
    assert figures == {cid: json.loads(json.dumps(v.figures())) for cid, v in views.items()}
    assert {f["speedup"] is not None and f["bound"] is not None for f in figures.values()} == {True}


def test_history_show_and_unknown_run(stored_run, run_cli):
    db, results_file = stored_run
    rid = read_jsonl(results_file)[0]["run_id"]
    code, out, _ = run_cli("history", "--store", str(db))
    assert code == 0 and rid in out and "numba,numpy" in out
    code, out, _ = run_cli("show", rid[:12], "--store", str(db))
    assert code == 0 and f"run {rid}" in out and "numba·jit" in out and "numpy·eager" in out
    code, _, err = run_cli("show", "nosuchrun", "--store", str(db))
    assert code == 2 and "no run 'nosuchrun'" in err and len(err.strip().splitlines()) == 1


def test_export_gives_a_results_file_and_import_adds_it_once(stored_run, run_cli, tmp_path):
    db, results_file = stored_run
    exported = tmp_path / "run.jsonl"
    code, _, _ = run_cli("export", "latest", "-o", str(exported), "--store", str(db))
    assert code == 0
    original, copy = load_results(results_file), load_results(exported)
    assert copy.header == original.header and copy.records == original.records
    other = tmp_path / "other.db"
    code, out, _ = run_cli("import", str(exported), "--store", str(other))
    assert code == 0 and "2 of 2 cases added" in out
    code, out, _ = run_cli("import", str(results_file.parent), "--store", str(other))
    assert code == 0 and "0 of 2 cases added" in out
    with Store(other) as st:
        assert len(st.runs()) == 1 and st.load("latest").records == original.records
    code, _, err = run_cli("export", "latest", "-o", str(exported), "--store", str(db))
    assert code == 2 and "already exists" in err


def test_python_api_loads_runs_and_files_as_dataframes(stored_run):
    db, results_file = stored_run
    rid = read_jsonl(results_file)[0]["run_id"]
    by_id, by_file = arraybench.load(rid, store=db), arraybench.load(results_file)
    assert by_id.header == by_file.header and by_id.records == by_file.records
    df = by_id.to_dataframe()
    assert len(df) == 2 and set(df["backend"]) == {"numpy", "numba"}
    assert (df["run_id"] == rid).all() and (df["param.n"] == 200).all()
    assert df["median_s"].gt(0).all() and df["samples_s"].map(len).ge(3).all()


def test_no_store_writes_no_database(tmp_path, run_cli, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, _, _ = run_cli("run", "--workloads", "linreg", "--backends", "numpy", "--modes", "eager", "--sizes", "2",
                         "--threads", "1", "--output-dir", "out", "--no-store", *TINY)
    assert code == 0 and (tmp_path / "out" / "results.jsonl").exists()
    assert not (tmp_path / ".arraybench").exists()


def fake_record(i: int) -> CaseRecord:
    case = Case("linreg", (("n", i),), "numpy", "eager", "float64", 1)
    return replace(blank_record(case, "ok"), id=f"case{i}", samples_s=(1e-3, 2e-3), median_s=1.5e-3, iqr_s=5e-4)


def write_results(path: Path, run_id: str, n_records: int) -> Path:
    w = ResultsWriter(path, {"schema": 1, "run_id": run_id, "started": "2026-01-01T00:00:00+0000",
                             "settings": {}, "environment": {"hostname": "h"}})
    for i in range(n_records):
        w.append(fake_record(i))
    w.close()
    return path


def test_each_record_is_stored_as_it_lands_and_resume_fills_the_gap(tmp_path):
    db, results = tmp_path / "s.db", write_results(tmp_path / "results.jsonl", "r1", 0)
    on_record = Recording(db, results, lambda r: None)
    on_record(fake_record(0))
    # No close, no end of run: a second reader already sees the record (a crash keeps it).
    assert len(Store(db).load("r1").records) == 1
    # The run went on with --no-store for two more cases; resuming with the store adds them.
    write_results(tmp_path / "full.jsonl", "r1", 3)
    on_record = Recording(db, tmp_path / "full.jsonl", lambda r: None)
    assert [r.id for r in Store(db).load("r1").records] == ["case0", "case1", "case2"]
    # The resumed run retried a failed case: history counts it once, by its last record.
    on_record(replace(fake_record(1), status="error"))
    [run] = Store(db).runs()
    assert run.cases == 3 and run.failed == 1
    # Figures sit on each case's latest record only; filling again changes nothing.
    with Store(db) as st:
        st.fill_figures("r1")
        assert st.conn.execute("SELECT seq FROM cases WHERE figures IS NOT NULL ORDER BY seq").fetchall() == [
            (0,), (2,), (3,)]
        assert st.fill_figures("r1") == 0


def test_a_store_failing_mid_run_warns_and_the_run_goes_on(tmp_path, capsys):
    db, results = tmp_path / "s.db", write_results(tmp_path / "results.jsonl", "r1", 0)
    seen = []
    on_record = Recording(db, results, seen.append)
    for suffix in ("", "-wal", "-shm"):
        Path(f"{db}{suffix}").unlink(missing_ok=True)
    db.mkdir()  # the store is gone and cannot be opened again
    on_record(fake_record(0))
    on_record(fake_record(1))
    assert [r.id for r in seen] == ["case0", "case1"]
    err = capsys.readouterr().err
    assert err.count("stopped storing run r1") == 1 and f"arraybench import {results}" in err


def hide(db: Path) -> None:
    """Take the store away, as a full disk or a lost mount would: it cannot be opened until shown again."""
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{db}{suffix}").exists():
            Path(f"{db}{suffix}").rename(f"{db}{suffix}.away")
    db.mkdir()


def show_again(db: Path) -> None:
    db.rmdir()
    for suffix in ("", "-wal", "-shm"):
        if Path(f"{db}{suffix}.away").exists():
            Path(f"{db}{suffix}.away").rename(f"{db}{suffix}")


def running(path: Path, run_id: str) -> ResultsWriter:
    """A run writing `path`, which planned three cases."""
    return ResultsWriter(path, {"schema": 3, "run_id": run_id, "started": "2026-01-01T00:00:00+0000", "settings": {},
                                "environment": {"hostname": "h"}, "plan_size": 3})


def test_a_run_is_marked_incomplete_in_the_store_until_it_holds_the_whole_file(tmp_path, capsys):
    db = tmp_path / "s.db"
    # A run whose store works throughout: marked while it runs, whole and with its figures at its end.
    w = running(tmp_path / "whole.jsonl", "r0")
    recording = Recording(db, w.path, lambda r: None)
    assert Store(db).incomplete("r0") == str(w.path.resolve())
    for i in range(3):
        w.append(fake_record(i))
        recording(fake_record(i))
    w.close()
    stored = recording.finish()
    assert stored.complete and str(stored) == f"stored as run r0 in {db}"
    with Store(db) as st:
        assert st.incomplete("r0") is None and len(stored_figures(st, "r0")) == 3
    # A run whose store fails after its first case: the run goes on, and its end says how much is stored.
    w = running(tmp_path / "results.jsonl", "r1")
    recording = Recording(db, w.path, lambda r: None)
    w.append(fake_record(0))
    recording(fake_record(0))
    hide(db)
    w.append(fake_record(1))
    recording(fake_record(1))
    w.close()
    stored = recording.finish()
    assert not stored.complete and (stored.cases, stored.total) == (1, 2)
    assert str(stored).startswith(f"stored only 1 of 2 cases of run r1 in {db} (cannot use results store")
    assert str(stored).endswith(f"marked incomplete there until `arraybench import {w.path.resolve()} --store {db}` "
                                "stores the rest")
    assert capsys.readouterr().err.count("stopped storing run r1") == 1
    show_again(db)
    with Store(db) as st:
        [r0, r1] = st.runs()
        assert (r0.cases, r0.planned, r0.incomplete) == (3, Planned(3, 3), None)
        assert (r1.cases, r1.planned, r1.incomplete) == (1, Planned(1, 3), str(w.path.resolve()))
        # Importing the file stores the rest and clears the mark; the figures follow the records.
        assert st.add_results(load_results(w.path)) == ("r1", 1)
        assert st.incomplete("r1") is None and len(stored_figures(st, "r1")) == 2
        assert st.runs()[1].planned == Planned(2, 3)


def test_history_shows_a_run_stored_in_part_and_import_completes_it(tmp_path, run_cli):
    db = str(tmp_path / "s.db")
    w = running(tmp_path / "results.jsonl", "r1")
    recording = Recording(db, w.path, lambda r: None)
    w.append(fake_record(0))
    recording(fake_record(0))
    code, out, _ = run_cli("history", "--store", db)
    assert code == 0 and "1 of 3 planned (stored in part)" in out and f"r1: {w.path.resolve()}" in out
    # An import while the run still writes its file cannot make it whole.
    w.append(fake_record(1))
    code, out, _ = run_cli("import", str(w.path), "--store", db)
    assert code == 0 and "1 of 2 cases added; its run is still writing it, so it stays marked incomplete" in out
    w.close()
    code, out, _ = run_cli("import", str(w.path), "--store", db)
    assert code == 0 and "0 of 2 cases added; the run is whole in the store now" in out
    code, out, _ = run_cli("history", "--store", db)
    assert code == 0 and "2 of 3 planned" in out and "stored in part" not in out
    code, out, _ = run_cli("history", "--store", db, "--format", "json")
    assert json.loads(out)[0]["planned"] == {"held": 2, "planned": 3} and json.loads(out)[0]["incomplete"] is None


WRITER = """
import sys
from pathlib import Path
from arraybench.results.record import CaseRecord
from arraybench.report.data import run_views
from arraybench.results import ResultsWriter
from arraybench.store import Recording
db, out, rid, n = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
w = ResultsWriter(out, {"schema": 1, "run_id": rid, "started": "x", "settings": {}, "environment": {}})
w.close()
on_record = Recording(db, out, lambda r: None)
for i in range(n):
    on_record(CaseRecord.from_json({"id": f"{rid}-{i}", "workload": "w", "params": {}, "backend": "numpy",
                                    "mode": "eager", "dtype": "float64", "status": "ok", "samples_s": [float(i)]}))
"""


def test_two_runs_writing_one_store_at_once_both_land_completely(tmp_path):
    db, n = tmp_path / "shared.db", 150
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin"}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(db), str(tmp_path / f"{rid}.jsonl"), rid, str(n)],
                              env=env, stderr=subprocess.PIPE, text=True)
             for rid in ("runA", "runB")]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        assert "warning" not in err, err
    with Store(db) as st:
        for rid in ("runA", "runB"):
            assert [r.id for r in st.load(rid).records] == [f"{rid}-{i}" for i in range(n)]


def old_store(tmp_path: Path, version: int) -> Path:
    """A SQLite store of schema `version`, as tests/fixtures keeps it."""
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((FIXTURES / f"store-v{version}.sql").read_text())
    return db


def test_a_version_1_store_is_migrated_and_keeps_its_runs(tmp_path):
    with Store(old_store(tmp_path, 1)) as st:
        assert st.version() == SCHEMA
        [run] = st.runs()
        assert run.backends == ("numba", "numpy") and run.cases == 2
        res = st.load(run.id)
        statuses = st.conn.execute("SELECT DISTINCT status FROM cases").fetchall()
    assert statuses == [("ok",)]
    assert {r.backend for r in res.records} == {"numba", "numpy"}
    assert all(r.samples_s for r in res.records)


def test_a_version_3_store_gets_the_figures_of_its_runs(tmp_path):
    with Store(old_store(tmp_path, 3)) as st:
        assert st.version() == SCHEMA
        [run] = st.runs()
        figures = stored_figures(st, run.id)
        views = run_views(st.load(run.id))
    assert figures and figures == {cid: json.loads(json.dumps(v.figures())) for cid, v in views.items()}
    assert [f["speedup"] for f in figures.values()] == [1.0]


def test_a_version_4_store_keeps_its_runs_whole(tmp_path):
    db = old_store(tmp_path, 4)
    with sqlite3.connect(db) as conn:
        before = conn.execute("SELECT seq, figures FROM cases").fetchall()
    with Store(db) as st:
        assert st.version() == SCHEMA
        [run] = st.runs()
        assert run.cases == 1 and run.incomplete is None and st.incomplete(run.id) is None
        assert st.conn.execute("SELECT seq, figures FROM cases").fetchall() == before


def test_a_store_from_a_newer_arraybench_is_refused(tmp_path, run_cli):
    db = tmp_path / "new.db"
    with sqlite3.connect(db) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA + 1}")
    code, _, err = run_cli("history", "--store", str(db))
    assert code == 2 and f"schema {SCHEMA + 1}, newer" in err


def test_ambiguous_prefix_names_the_candidates(tmp_path, run_cli):
    db = tmp_path / "s.db"
    with Store(db) as st:
        for rid in ("20260101-000000-aaaaaa", "20260101-000000-bbbbbb"):
            st.add_results(load_results(write_results(tmp_path / f"{rid}.jsonl", rid, 1)))
    code, _, err = run_cli("show", "20260101", "--store", str(db))
    assert code == 2 and "ambiguous" in err and "aaaaaa" in err and "bbbbbb" in err
    code, out, _ = run_cli("show", "20260101-000000-b", "--store", str(db))
    assert code == 0 and "20260101-000000-bbbbbb" in out


def test_runs_that_create_one_store_at_the_same_moment_all_open_it(tmp_path):
    """SQLite reports "database is locked" at once, without waiting, to a second connection that
    switches a new file to WAL at the same moment as the first (3 of 120 openings failed so)."""

    for k in range(60):
        db = tmp_path / f"s{k}.db"

        def open_it(db=db):
            with Store(db):
                pass

        errors = at_once(open_it, 4)
        assert not errors, errors


def answered_runs(st: Store) -> list[str]:
    """The runs `arraybench answer` loads whole: those holding a machine's latest record of a case."""
    headers, index = st.headers(), st.record_index()
    return shown_runs(run_list(headers, index), headers, index, versions=False)


def test_a_version_5_store_gets_the_index_that_history_reads_instead_of_the_records(tmp_path):
    with Store(old_store(tmp_path, 5)) as st:
        assert st.version() == SCHEMA
        [run] = st.runs()
        assert run.cases == 1 and answered_runs(st) == [run.id]
        for sql in ("SELECT run_id, case_id, backend, status FROM cases ORDER BY run_id, seq",):
            plan = " ".join(row[-1] for row in st.conn.execute(f"EXPLAIN QUERY PLAN {sql}"))
            assert "COVERING INDEX cases_summary" in plan, plan


def test_a_snapshot_sees_no_run_that_lands_during_it(tmp_path):
    db = tmp_path / "s.db"
    first, second = "20260101-000000-aaaaaa", "20260102-000000-bbbbbb"
    with Store(db) as st:
        st.add_results(load_results(write_results(tmp_path / "a.jsonl", first, 2)))
    with Store(db) as reader, Store(db) as writer:
        with reader.snapshot():
            assert [r.id for r in reader.runs()] == [first]
            writer.add_results(load_results(write_results(tmp_path / "b.jsonl", second, 3)))
            assert [r.id for r in reader.runs()] == [first] and reader.resolve("latest") == first
        assert [r.id for r in reader.runs()] == [first, second] and len(reader.load(second).records) == 3


def test_runs_on_reads_the_records_of_the_runs_kept_only(tmp_path):
    """What compare's history reads: of a machine's runs, those `keep` accepts, with the compared cases."""
    db = tmp_path / "s.db"
    recs = [record("numpy", "eager", n, processes(1e-3, n=3)) for n in (2, 3)]
    with Store(db) as st:
        for rid, numpy in (("20260101-000000-aaaaaa", "2.4.0"), ("20260102-000000-bbbbbb", "2.5.0"),
                           ("20260103-000000-cccccc", "2.4.0")):
            st.add_results(load_results(results_file(tmp_path / f"{rid}.jsonl", recs, numpy=numpy)))
        machine = st.runs()[0].machine
        older = lambda res: res.environment.versions["numpy"] == "2.4.0"  # noqa: E731
        kept = st.runs_on(machine, {recs[1].id}, keep=older)
        [latest] = st.runs_on(machine, {recs[1].id}, keep=older, latest=1)
    assert [r.header.run_id for r in kept] == ["20260101-000000-aaaaaa", "20260103-000000-cccccc"]
    assert [[rec.id for rec in r.records] for r in kept] == [[recs[1].id], [recs[1].id]]
    assert latest.header.run_id == "20260103-000000-cccccc"


def test_answer_reads_the_runs_holding_the_latest_cases_and_counts_every_run(tmp_path, run_cli):
    """A case the newest run of a machine left out is still answered from the run before it; a run
    whose every case a later one measured again is not read, yet counted."""
    db = tmp_path / "s.db"
    runs = [("20251231-000000-zzzzzz", "box", [("numpy", "eager", 2, 1e-3), ("numba", "jit", 2, 2e-3),
                                                ("numpy", "eager", 3, 1e-3), ("numba", "jit", 3, 2e-3)]),
            ("20260101-000000-aaaaaa", "box", [("numpy", "eager", 3, 2e-3), ("numba", "jit", 3, 1e-3)]),
            ("20260102-000000-bbbbbb", "box", [("numpy", "eager", 2, 2e-3), ("numba", "jit", 2, 1e-3)]),
            ("20260103-000000-cccccc", "gpu-box", [("numpy", "eager", 2, 1e-3), ("numba", "jit", 2, 3e-3)])]
    with Store(db) as st:
        for rid, host, cases in runs:
            recs = [record(b, m, n, processes(t, n=5, seed=n)) for b, m, n, t in cases]
            st.add_results(load_results(results_file(tmp_path / f"{rid}.jsonl", recs, hostname=host)))
        assert answered_runs(st) == [rid for rid, _, _ in runs[1:]]
    code, out, _ = run_cli("answer", "--store", str(db))
    full = load_store(str(db))
    assert code == 0 and out == answer_text(across(full), full) + "\n"
    assert "across 2 machine(s) and 4 run(s)" in out and "numba" in out
