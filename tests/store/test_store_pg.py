"""The shared store: one schema on SQLite and PostgreSQL, concurrent writers, push and pull, and credentials.

Against a real PostgreSQL server that the module starts itself (tests/helpers/pg_server.py); where none can start
(no initdb, no psycopg, root without a `postgres` user), those tests skip and say why.
"""

import re
import secrets
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import arraybench
from arraybench.errors import UsageError
from arraybench.results import load_results
from arraybench.store import MIGRATIONS, SCHEMA, Recording, Store
from arraybench.store.history import changes
from arraybench.store.postgres import redact
from tests.comparison.test_compare import processes, record, results_file
from tests.helpers.common import FIXTURES, SRC, TINY, at_once
from tests.helpers.pg_server import Unavailable, free_port, throwaway_server
from tests.store.test_changes import stored_history


# A test that asks for the server (pg_server, pg) is in the integration tier (conftest.INTEGRATION_FIXTURES).
@pytest.fixture(scope="module")
def pg_server():
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'arraybench[postgres]')")
    try:
        with throwaway_server("fsync=off") as server:
            yield server
    except Unavailable as e:
        pytest.skip(f"no PostgreSQL server to test against: {e}")


@pytest.fixture
def pg(pg_server, monkeypatch) -> str:
    """A new, empty database's URL on the test server; its password in PGPASSWORD, as libpq reads it."""
    import psycopg

    monkeypatch.setenv("PGPASSWORD", pg_server.password)
    monkeypatch.delenv("ARRAYBENCH_STORE", raising=False)
    name = f"t{secrets.token_hex(6)}"
    with psycopg.connect(pg_server.url(), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return pg_server.url(name)


def two_machines(tmp_path: Path) -> tuple[str, str]:
    """Two results files of the same cases, from machines `box` and `gpu-box`; the second 30 % slower."""
    cases = [(2, 1e-3), (3, 2e-3)]
    a = results_file(tmp_path / "20260101-000000-aaaaaa.jsonl",
                     [record("numpy", "eager", n, processes(t)) for n, t in cases], hostname="box")
    b = results_file(tmp_path / "20260102-000000-bbbbbb.jsonl",
                     [record("numpy", "eager", n, processes(1.3 * t, seed=1)) for n, t in cases], hostname="gpu-box")
    return a, b


def columns(st: Store, table: str) -> list[str]:
    if st.db.dialect == "sqlite":
        return [r[1] for r in st.conn.execute(f"PRAGMA table_info({table})")]
    return [r[0] for r in st.conn.execute("SELECT column_name FROM information_schema.columns WHERE table_name = %s "
                                          "ORDER BY ordinal_position", (table,))]


def indexes(st: Store) -> set[str]:
    if st.db.dialect == "sqlite":
        return {r[0] for r in st.conn.execute("SELECT name FROM sqlite_master WHERE type = 'index' "
                                              "AND sql IS NOT NULL")}
    return {r[0] for r in st.conn.execute("SELECT indexname FROM pg_indexes WHERE schemaname = 'public' "
                                          "AND indexname NOT LIKE '%_pkey'")}


def test_one_schema_and_the_same_runs_on_both_engines(pg, tmp_path):
    files = two_machines(tmp_path)
    with Store(tmp_path / "local.db") as lite, Store(pg) as shared:
        assert lite.version() == shared.version() == SCHEMA
        for table in ("runs", "cases"):
            assert columns(lite, table) == columns(shared, table)
        assert indexes(lite) == indexes(shared) == {"cases_run_seq", "cases_summary", "runs_machine"}
        for path in files:
            assert lite.add_results(load_results(path)) == shared.add_results(load_results(path))
        assert lite.runs() == shared.runs()
        for run in lite.runs():
            assert lite.load(run.id).header == shared.load(run.id).header
            assert lite.load(run.id).records == shared.load(run.id).records
        assert shared.resolve("latest") == lite.resolve("latest") == "20260102-000000-bbbbbb"
        machine = lite.runs()[0].machine
        assert [r.header for r in lite.runs_on(machine, [])] == [r.header for r in shared.runs_on(machine, [])]


def test_machines_opening_a_new_store_at_once_migrate_it_once(pg):

    def open_it():
        with Store(pg) as st:
            assert st.version() == SCHEMA

    errors = at_once(open_it, 6)
    assert not errors, errors
    with Store(pg) as st:
        assert st.conn.execute("SELECT COUNT(*), MIN(version) FROM arraybench_schema").fetchone() == (1, SCHEMA)


WRITER = """
import sys
from pathlib import Path
from arraybench.results.record import CaseRecord
from arraybench.results import ResultsWriter
from arraybench.store import Recording
url, out, rid, n = sys.argv[1], Path(sys.argv[2]), sys.argv[3], int(sys.argv[4])
w = ResultsWriter(out, {"schema": 1, "run_id": rid, "started": "x", "settings": {}, "environment": {"hostname": rid}})
w.close()
on_record = Recording(url, out, lambda r: None)
for i in range(n):
    on_record(CaseRecord.from_json({"id": f"{rid}-{i}", "workload": "w", "params": {}, "backend": "numpy",
                                    "mode": "eager", "dtype": "float64", "status": "ok", "samples_s": [float(i)]}))
"""


def test_machines_writing_runs_at_once_lose_nothing(pg, pg_server, tmp_path):
    """Four runs store their records one by one into one PostgreSQL store at the same time."""
    rids, n = [f"run{k}" for k in range(4)], 60
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "PGPASSWORD": pg_server.password}
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, pg, str(tmp_path / f"{rid}.jsonl"), rid, str(n)],
                              env=env, stderr=subprocess.PIPE, text=True) for rid in rids]
    for p in procs:
        _, err = p.communicate(timeout=240)
        assert p.returncode == 0, err
        assert "warning" not in err, err
    with Store(pg) as st:
        assert [r.id for r in st.runs()] == rids
        for rid in rids:
            assert [r.id for r in st.load(rid).records] == [f"{rid}-{i}" for i in range(n)]
            assert st.runs_on(f"{rid} · None ×None · no GPU", [])[0].header.run_id == rid


def test_a_snapshot_of_a_shared_store_sees_no_run_that_lands_during_it(pg, tmp_path):
    a, b = two_machines(tmp_path)
    with Store(pg) as st:
        st.add_results(load_results(a))
    with Store(pg) as reader, Store(pg) as writer:
        with reader.snapshot():
            assert [r.id for r in reader.runs()] == ["20260101-000000-aaaaaa"]
            writer.add_results(load_results(b))
            assert [r.id for r in reader.runs()] == ["20260101-000000-aaaaaa"]
            assert reader.resolve("latest") == "20260101-000000-aaaaaa"
        assert [r.id for r in reader.runs()] == ["20260101-000000-aaaaaa", "20260102-000000-bbbbbb"]


def test_eight_machines_pushing_at_once_land_every_run_once_and_a_reader_sees_each_whole(pg, pg_server, tmp_path):
    """Eight `arraybench push` processes of 5 runs each into one new database at the same time, while
    a reader takes snapshots as publish does: each snapshot holds whole runs only, and its runs'
    cases add up to the cases it counts; at the end every run is there once, in order."""
    writers, runs, cases = 8, 5, 4
    expected = {}
    for w in range(writers):
        with Store(tmp_path / f"local{w}.db") as st:
            for k in range(runs):
                rid = f"20260101-{w:02d}{k:04d}-{w}{k:05d}"
                recs = [record("numpy", "eager", n + 2, processes(1e-3, n=3, seed=n)) for n in range(cases + k)]
                st.add_results(load_results(results_file(tmp_path / f"{rid}.jsonl", recs, hostname=f"box{w}")))
                expected[rid] = len(recs)
    env = {"PYTHONPATH": str(SRC), "PATH": "/usr/bin:/bin", "PGPASSWORD": pg_server.password}
    procs = [subprocess.Popen([sys.executable, "-m", "arraybench", "push", "--to", pg, "--store",
                               str(tmp_path / f"local{w}.db")], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for w in range(writers)]
    seen, while_pushing = [], 0
    while True:
        pushing = any(p.poll() is None for p in procs)
        with Store(pg) as st, st.snapshot():
            held = st.runs()
            counted = st.conn.execute("SELECT COUNT(*) FROM cases").fetchone()[0]
            loaded = [len(st.load(r.id).records) for r in held[-3:]]
        assert {r.id: r.cases for r in held} == {r.id: expected[r.id] for r in held}
        assert counted == sum(r.cases for r in held) and loaded == [expected[r.id] for r in held[-3:]]
        seen.append(len(held))
        while_pushing += pushing
        if not pushing:
            break
    for p in procs:
        out, err = p.communicate(timeout=240)
        assert p.returncode == 0 and not err, err
        assert out.count(" cases pushed to ") == runs
    assert while_pushing and seen[-1] == writers * runs
    with Store(pg) as st:
        assert {r.id: r.cases for r in st.runs()} == expected
        assert st.conn.execute("SELECT COUNT(*), COUNT(DISTINCT (run_id, seq)) FROM cases").fetchone() == \
            (sum(expected.values()),) * 2


def test_a_shared_store_failing_mid_run_warns_once_and_the_run_goes_on(pg, tmp_path, capsys):
    results = tmp_path / "results.jsonl"
    results_file(results, [])
    seen = []
    on_record = Recording(pg, results, seen.append)
    with Store(pg) as st:
        st.conn.execute("DROP TABLE cases")  # every insert fails from here on
    for n in (2, 3):
        on_record(record("numpy", "eager", n, processes(1e-3, n=3)))
    assert len(seen) == 2
    err = capsys.readouterr().err
    assert err.count(f"stopped storing run results in {pg}: ") == 1, err
    assert f"arraybench import {results} --store {pg}" in err and len(err.strip().splitlines()) == 1


def test_a_run_whose_server_stops_mid_run_is_stored_in_part_until_imported(tmp_path, monkeypatch, run_cli):
    """A real run into a server of its own, stopped for real after the first case landed: the run
    goes on, ends saying how much was stored, and the store marks the run incomplete (history
    says so, and a pull carries it) until an import and a push complete it."""
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'arraybench[postgres]')")
    monkeypatch.delenv("ARRAYBENCH_STORE", raising=False)
    try:
        with throwaway_server("fsync=off") as server:
            monkeypatch.setenv("PGPASSWORD", server.password)
            url, out, local = server.url(), tmp_path / "out", str(tmp_path / "local.db")
            add_record = Store.add_record

            def stop_after_the_first(st, rid, rec):
                add_record(st, rid, rec)
                if st.runs()[0].cases == 1:
                    server.stop()

            monkeypatch.setattr(Store, "add_record", stop_after_the_first)
            code, _, err = run_cli("run", "--workloads", "linreg", "--backends", "numpy", "--modes", "eager",
                                   "--sizes", "2,3", "--threads", "1", "--output-dir", str(out), "--store", url, *TINY)
            monkeypatch.setattr(Store, "add_record", add_record)
            rid = load_results(out).header.run_id
            assert code == 0 and len(load_results(out).records) == 2
            assert err.count(f"stopped storing run {rid} in {url}: cannot connect") == 1
            assert "stored as run" not in err
            assert (f"arraybench: warning: stored only 1 of 2 cases of run {rid} in {url} (cannot connect to results "
                    f"store {url}: ") in err
            assert f"it is marked incomplete there until `arraybench import {out / 'results.jsonl'} --store {url}` " \
                   "stores the rest" in err

            server.start()
            code, shown, _ = run_cli("history", "--store", url)
            assert code == 0 and "1 of 2 planned (stored in part)" in shown
            assert f"{rid}: {out / 'results.jsonl'}" in shown
            # Pulled as it stands, the copy is incomplete too; imported whole there, a push completes the shared one.
            code, shown, _ = run_cli("pull", "--from", url, "--store", local)
            assert code == 0 and f"run {rid}: 1 of 1 cases pulled from {url}; stored in part" in shown
            code, shown, _ = run_cli("import", str(out), "--store", local)
            assert code == 0 and "1 of 2 cases added; the run is whole in the store now" in shown
            code, shown, _ = run_cli("push", "--to", url, "--store", local)
            assert code == 0 and shown.strip() == f"run {rid}: 1 of 2 cases pushed to {url}"
            code, shown, _ = run_cli("history", "--store", url)
            assert code == 0 and "stored in part" not in shown
            with Store(url) as st:
                [run] = st.runs()
                assert run.cases == 2 and run.incomplete is None and st.load(rid).records == load_results(out).records
    except Unavailable as e:
        pytest.skip(f"no PostgreSQL server to test against: {e}")


def test_a_connection_lost_mid_command_is_a_one_line_error(pg, tmp_path):
    import psycopg

    a, _ = two_machines(tmp_path)
    with Store(pg) as st:
        st.add_results(load_results(a))
        pid = st.conn.info.backend_pid
        with psycopg.connect(pg, autocommit=True) as admin:  # as a server restart or a dropped network would
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        with pytest.raises(UsageError, match=f"^lost the connection to results store {re.escape(pg)}: ") as e:
            st.runs()
    assert "\n" not in str(e.value)


def test_one_run_pushed_from_several_places_at_once_lands_once_in_order(pg, tmp_path):
    records = [record("numpy", "eager", n + 2, processes(1e-3, n=5, seed=n)) for n in range(300)]
    local = tmp_path / "local.db"
    with Store(local) as st:
        rid, _ = st.add_results(load_results(results_file(tmp_path / "r.jsonl", records)))
    added = []

    def push():
        with Store(local, create=False) as src, Store(pg) as dst:
            added.append(dst.copy_from(src, rid))

    errors = at_once(push, 4)
    assert not errors, errors
    assert sorted(a for a, _ in added) == [0, 0, 0, 300] and {t for _, t in added} == {300}
    with Store(pg) as st:
        assert [r.id for r in st.load(rid).records] == [r.id for r in records]
        assert [r[0] for r in st.conn.execute("SELECT seq FROM cases ORDER BY seq")] == list(range(300))


def test_push_and_pull_copy_runs_once_with_their_machines(pg, tmp_path, run_cli):
    a, b = two_machines(tmp_path)
    local, other = str(tmp_path / "local.db"), str(tmp_path / "other.db")
    assert run_cli("import", a, b, "--store", local)[0] == 0
    code, out, _ = run_cli("push", "--to", pg, "--store", local)
    assert code == 0 and out.splitlines() == [f"run {Path(f).stem}: 2 of 2 cases pushed to {pg}" for f in (a, b)]
    code, out, _ = run_cli("push", "latest", "20260101", "--to", pg, "--store", local)
    assert code == 0 and out.splitlines() == [f"run {Path(f).stem}: 0 of 2 cases pushed to {pg}" for f in (b, a)]
    code, out, _ = run_cli("pull", "--from", pg, "--store", other)
    assert code == 0 and "2 of 2 cases pulled from" in out
    assert run_cli("pull", "--from", pg, "--store", other)[1].count("0 of 2 cases pulled from") == 2
    with Store(local) as src, Store(pg) as shared, Store(other) as dst:
        assert src.runs() == shared.runs() == dst.runs()
        assert {r.machine for r in dst.runs()} == {"box · cpu ×4 · no GPU", "gpu-box · cpu ×4 · no GPU"}
        for run in src.runs():
            assert src.load(run.id).header == shared.load(run.id).header == dst.load(run.id).header
            assert src.load(run.id).records == dst.load(run.id).records
            figures = "SELECT seq, figures FROM cases WHERE run_id = ? ORDER BY seq"
            assert src.db.execute(figures, (run.id,)).fetchall() == dst.db.execute(figures, (run.id,)).fetchall()
            assert all(f is not None for _, f in shared.db.execute(figures, (run.id,)).fetchall())

    code, out, _ = run_cli("history", "--store", pg)
    assert code == 0 and "aaaaaa" in out and "bbbbbb" in out and "gpu-box" in out
    code, out, _ = run_cli("show", "20260102", "--store", pg)
    assert code == 0 and "run 20260102-000000-bbbbbb" in out and "machine gpu-box" in out
    code, out, _ = run_cli("compare", "20260101", "latest", "--store", pg)
    assert code == 0 and "on different machines" in out and "hostname: box → gpu-box" in out
    code, _, err = run_cli("pull", "nosuchrun", "--from", pg, "--store", other)
    assert code == 2 and "no run 'nosuchrun'" in err


def test_the_store_comes_from_the_environment_or_pyproject(pg, tmp_path, monkeypatch, run_cli):
    a, _ = two_machines(tmp_path)
    with Store(pg) as st:
        st.add_results(load_results(a))
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text(f'[tool.arraybench]\nstore = "{pg}"\n')
    code, out, _ = run_cli("history")
    assert code == 0 and "20260101-000000-aaaaaa" in out
    # The environment wins over the project's file, and --store over both.
    (tmp_path / "pyproject.toml").write_text('[tool.arraybench]\nstore = "elsewhere.db"\n')
    assert run_cli("history")[0] == 2
    monkeypatch.setenv("ARRAYBENCH_STORE", pg)
    code, out, _ = run_cli("show", "latest")
    assert code == 0 and "run 20260101-000000-aaaaaa" in out
    code, _, err = run_cli("history", "--store", "none.db")
    assert code == 2 and "no results store at 'none.db'" in err
    # The Python API reads the same store a command would.
    assert arraybench.load("latest").header.run_id == "20260101-000000-aaaaaa"
    assert arraybench.compare("latest", "latest").cases


def test_the_password_is_never_printed_or_stored(pg, pg_server, tmp_path, monkeypatch, run_cli):
    """A real run stores into a password-protected server; every command's output, the results
    directory and both stores are searched for the password."""
    secret = pg_server.password
    outputs = []

    def cli(*args):
        code, out, err = run_cli(*args)
        outputs.append(out + err)
        return code, out, err

    code, _, err = cli("run", "--workloads", "linreg", "--backends", "numpy", "--modes", "eager", "--sizes", "2",
                       "--threads", "1", "--output-dir", str(tmp_path / "out"), "--store", pg, *TINY)
    assert code == 0 and f"in {pg}" in err
    a, b = two_machines(tmp_path)
    local = str(tmp_path / "local.db")
    assert cli("import", a, b, "--store", local)[0] == 0
    assert cli("push", "--to", pg, "--store", local)[0] == 0
    assert cli("pull", "--from", pg, "--store", local)[0] == 0
    assert cli("history", "--store", pg)[0] == 0
    assert cli("show", "latest", "--store", pg, "--format", "json")[0] == 0
    assert cli("compare", "20260101", "20260102", "--store", pg)[0] == 0
    assert cli("export", "latest", "-o", str(tmp_path / "x.jsonl"), "--store", pg)[0] == 0

    # A URL that carries the password is refused, without repeating it.
    with_password = pg.replace("arraybench@", f"arraybench:{secret}@")
    for args in (("history", "--store", with_password), ("push", "--to", with_password, "--store", local),
                 ("history", "--store", f"{pg}?password={secret}")):
        code, _, err = cli(*args)
        assert code == 2 and "PGPASSWORD" in err and len(err.strip().splitlines()) == 1
    # A wrong password: one line, naming the store, and neither password in it.
    monkeypatch.setenv("PGPASSWORD", "wrong-" + secret[::-1])
    code, _, err = cli("history", "--store", pg)
    assert code == 2 and f"cannot connect to results store {pg}" in err and len(err.strip().splitlines()) == 1
    assert secret[::-1] not in err
    monkeypatch.setenv("PGPASSWORD", secret)

    assert all(secret not in text for text in outputs)
    for path in (tmp_path / "out").rglob("*"):
        assert not path.is_file() or secret.encode() not in path.read_bytes(), path
    assert secret.encode() not in Path(local).read_bytes()
    with Store(pg) as st:
        for table in ("runs", "cases", "arraybench_schema"):
            dump = "".join(r[0] for r in st.conn.execute(f"SELECT t::text FROM {table} AS t"))
            assert dump and secret not in dump


def test_a_pgpass_file_gives_the_password(pg, pg_server, tmp_path, monkeypatch, run_cli):
    pgpass = tmp_path / "pgpass"
    pgpass.write_text(f"{pg_server.host}:{pg_server.port}:*:{pg_server.user}:{pg_server.password}\n")
    pgpass.chmod(0o600)
    Store(pg).close()
    monkeypatch.delenv("PGPASSWORD")
    monkeypatch.setenv("PGPASSFILE", str(pgpass))
    code, out, _ = run_cli("history", "--store", pg)
    assert code == 0 and "no runs in" in out


def test_store_errors_a_user_can_cause_are_one_line(tmp_path, run_cli, monkeypatch):
    pytest.importorskip("psycopg", reason="psycopg is not installed (pip install 'arraybench[postgres]')")
    nobody = f"postgresql://someone@127.0.0.1:{free_port()}/results"
    for args, said in [
        (("history", "--store", nobody), f"cannot connect to results store {nobody}: "),
        (("history", "--store", "postgresql://someone@127.0.0.1:notaport/results"), "cannot connect"),
        (("history", "--store", "postgresql://[::1/results"), "not a valid URL"),
        (("pull", "--from", nobody, "--store", str(tmp_path / "s.db")), "cannot connect"),
    ]:
        code, _, err = run_cli(*args)
        assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "s.db").exists()
    monkeypatch.setitem(sys.modules, "psycopg", None)  # as if it were not installed
    code, _, err = run_cli("history", "--store", nobody)
    assert code == 2 and "pip install 'arraybench[postgres]'" in err and len(err.strip().splitlines()) == 1


def test_redact_keeps_everything_but_the_password():
    assert redact("postgresql://me:s3cret@db.example:5433/bench?sslmode=require") == \
        "postgresql://me@db.example:5433/bench?sslmode=require"
    assert redact("postgres://db/bench?password=s3cret&sslmode=require") == "postgres://db/bench?sslmode=require"
    assert redact("postgresql://db/bench") == "postgresql://db/bench"
    assert redact(Path("a/results.db")) == "a/results.db"


def test_a_version_2_sqlite_store_gets_each_records_place_in_its_run(tmp_path):
    """Schema 3 replaces SQLite's rowid order by `seq`: two runs that stored records at the same time
    keep each its own order."""
    db = tmp_path / "old.db"
    with sqlite3.connect(db) as conn:
        conn.executescript((FIXTURES / "store-v2.sql").read_text())
    with Store(db) as st:
        assert st.version() == SCHEMA == len(MIGRATIONS)
        numba, numpy = (f"linreg[d=2,iters=20,lr=0.001,n=200]/{b}/float32/cpu/t1/{h}"
                        for b, h in (("numba-jit", "9616de4222"), ("numpy-eager", "98b79f80c3")))
        assert [r.id for r in st.load("20261122-080000-b").records] == [numba, numpy]
        assert [r.id for r in st.load("20261122-080000-c").records] == [numpy, numba]
        assert st.conn.execute("SELECT run_id, seq FROM cases ORDER BY rowid").fetchall() == [
            ("20261122-075629-9a2f6a", 0), ("20261122-075629-9a2f6a", 1), ("20261122-080000-bbbbbb", 0),
            ("20261122-080000-cccccc", 0), ("20261122-080000-bbbbbb", 1), ("20261122-080000-cccccc", 1)]
        assert [r.cases for r in st.runs()] == [2, 2, 2]


def test_history_finds_the_same_change_in_postgresql_as_in_sqlite(pg, tmp_path):
    """Migration 6's time columns, written on insert and copied by push: the same history on both engines."""
    ids = stored_history(pg)
    stored_history(tmp_path / "s.db")
    with Store(pg) as st:
        (change,) = changes(st)
        with Store(tmp_path / "copy.db") as copy:
            for rid in ids:
                copy.copy_from(st, rid)
            assert [c.text() for c in changes(copy)] == [change.text()]
    with Store(tmp_path / "s.db") as st:
        assert [c.text() for c in changes(st)] == [change.text()]
    assert change.run.id == ids[20] and change.versions == ("2.12", "2.13")
