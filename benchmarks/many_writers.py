"""Eight machines pushing 125 runs each into one PostgreSQL store at once, while a reader reads it as
publish does: does every run land once, and does the reader see one consistent picture?

The runs come from a SQLite store that benchmarks/thousand_runs.py built (1 000 runs, ~260 records
each), dealt round-robin to the writers; each writer is an `arraybench push RUN... --to URL`
process. Into a new database of a throwaway server (tests/helpers/pg_server.py, default settings, fsync
on), or of the URL given. Meanwhile the reader reads in turn inside Store.snapshot() and outside
it: the runs (`history`), the count of all records, and the newest run whole. A read is consistent
when every run it lists holds all its records and the records it counts are those of the runs it
lists; a snapshot must always be, a read outside one need not.

    .venv/bin/python benchmarks/many_writers.py --source /tmp/year.db [--writers 8] [--runs 125] [URL]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections import Counter
from contextlib import nullcontext
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from pg_server import throwaway_server  # noqa: E402

from arraybench.store import Store  # noqa: E402


def read_once(url: str, expected: dict[str, int], snapshot: bool) -> bool:
    """One publish-style read; whether what it saw was consistent."""
    with Store(url) as st, st.snapshot() if snapshot else nullcontext():
        held = st.runs()
        counted = st.conn.execute("SELECT COUNT(*) FROM cases").fetchone()[0]
        newest = len(st.load(held[-1].id).records) if held else 0
    whole = all(r.cases == expected[r.id] for r in held)
    return whole and counted == sum(r.cases for r in held) and newest == (expected[held[-1].id] if held else 0)


def push_all(source: str, url: str, writers: int, runs: int) -> None:
    with Store(source, create=False) as st:
        expected = {r.id: r.cases for r in st.runs()}
    rids = list(expected)
    groups = [rids[w::writers][:runs] for w in range(writers)]
    if any(len(g) < runs for g in groups):
        raise SystemExit(f"{source} holds {len(rids)} runs, fewer than {writers} x {runs}")
    expected = {rid: expected[rid] for g in groups for rid in g}
    start = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-m", "arraybench", "push", *g, "--to", url, "--store", source],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True) for g in groups]
    reads: Counter[tuple[bool, bool]] = Counter()  # (in a snapshot, consistent) -> reads
    while any(p.poll() is None for p in procs):
        snapshot = sum(reads.values()) % 2 == 0
        reads[(snapshot, read_once(url, expected, snapshot))] += 1
    elapsed = time.perf_counter() - start
    failed = [(p.returncode, p.stderr.read() if p.stderr else "") for p in procs]
    failed = [f for f in failed if f[0] != 0 or f[1]]
    with Store(url) as st:
        landed = {r.id: r.cases for r in st.runs()}
        rows, distinct = st.conn.execute("SELECT COUNT(*), COUNT(DISTINCT (run_id, seq)) FROM cases").fetchone()
    print(f"{writers} writers x {runs} runs ({sum(expected.values())} records) pushed at once in {elapsed:.1f} s; "
          f"{len(failed)} writer(s) failed or wrote to stderr")
    for code, err in failed:
        print(f"  exit {code}: {err.strip()}")
    print(f"landed: {len(landed)} of {len(expected)} runs, "
          f"{'each with all its records' if landed == expected else 'NOT as pushed'}; "
          f"{rows} record rows, {rows - distinct} duplicated")
    for snapshot in (True, False):
        n, bad = reads[(snapshot, True)] + reads[(snapshot, False)], reads[(snapshot, False)]
        print(f"reads {'in Store.snapshot()' if snapshot else 'outside a snapshot'}: {n}, of which {bad} inconsistent")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", help="an empty PostgreSQL database (default: a throwaway server's)")
    parser.add_argument("--source", required=True, help="a SQLite store of thousand_runs.py")
    parser.add_argument("--writers", type=int, default=8)
    parser.add_argument("--runs", type=int, default=125, help="runs each writer pushes")
    args = parser.parse_args()
    if args.url:
        push_all(args.source, args.url, args.writers, args.runs)
        return
    import psycopg

    with throwaway_server() as server:
        os.environ["PGPASSWORD"] = server.password
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE many")
        push_all(args.source, server.url("many"), args.writers, args.runs)


if __name__ == "__main__":
    main()
