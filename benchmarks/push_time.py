"""How long `arraybench push` takes for a run of 10 000 case records, to a PostgreSQL store on this machine.

A synthetic run (each record a real record's shape: 3 processes x 10 samples, backend info, layout)
is imported into a local SQLite store (which derives and stores each case's figures), then pushed
with the CLI into a new database of a throwaway server (tests/helpers/pg_server.py: default settings, fsync
on), pushed again (nothing to add) and pulled into a new SQLite store. Each is timed `ROUNDS` times,
each round on new databases; the medians are printed. A URL argument pushes into that database
instead (one new run a round; the password from PGPASSWORD or ~/.pgpass).

    .venv/bin/python benchmarks/push_time.py [postgresql://USER@HOST/DB] [--records N]
"""

import argparse
import contextlib
import os
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))

from pg_server import throwaway_server  # noqa: E402

from arraybench.cli import main as arraybench  # noqa: E402
from arraybench.core.case import Case  # noqa: E402
from arraybench.results import ResultsWriter  # noqa: E402
from arraybench.results.record import ProcessRecord  # noqa: E402
from arraybench.workloads import blank_record  # noqa: E402

ROUNDS = 3


def synthetic_run(path: Path, n: int) -> Path:
    """A results file of `n` ok records, 3 processes of 10 samples each."""
    header = {"schema": 2, "run_id": f"20260101-000000-{secrets.token_hex(3)}", "arraybench_version": "0.1.0",
              "started": "2026-01-01T00:00:00Z", "settings": {"dtype": "float32", "threads": 1, "seed": 0},
              "environment": {"hostname": "bench", "cpu_model": "cpu", "cpu_logical": 2, "gpus": []}}
    writer = ResultsWriter(path, header)
    for i in range(n):
        case = Case("elementwise", (("n", 1000 + i),), ("numpy", "jax", "torch")[i % 3], "eager", "float32", 1)
        samples = tuple(1e-4 * (1 + 0.01 * ((i * 7 + k) % 13)) for k in range(30))
        writer.append(replace(blank_record(case, "ok"), samples_s=samples, median_s=samples[15], iqr_s=1e-6,
                              replicates=tuple(ProcessRecord(n_samples=10, loops=100) for _ in range(3)),
                              backend_info={"version": "1", "threads_verified": 1}))
    writer.close()
    return path


def timed(*args: str) -> float:
    with open(os.devnull, "w") as null, contextlib.redirect_stdout(null):
        start = time.perf_counter()
        code = arraybench(list(args))
        elapsed = time.perf_counter() - start
    if code != 0:
        raise SystemExit(f"arraybench {' '.join(args[:1])} failed (exit {code})")
    return elapsed


def measure(url_of: Callable[[int], str], n: int, tmp: Path) -> None:
    """Each round: a new run (its own id), imported locally, pushed to `url_of(round)` twice, pulled back."""
    imported, first, again, pull = [], [], [], []
    for k in range(ROUNDS):
        results = synthetic_run(tmp / f"results{k}.jsonl", n)
        size = results.stat().st_size / n
        local = tmp / f"local{k}.db"
        imported.append(timed("import", str(results), "--store", str(local)))
        url = url_of(k)
        first.append(timed("push", "--to", url, "--store", str(local)))
        again.append(timed("push", "--to", url, "--store", str(local)))
        pull.append(timed("pull", "--from", url, "--store", str(tmp / f"pulled{k}.db")))
    print(f"{n} case records ({size / 1024:.1f} KiB each in the results file), median of {ROUNDS} rounds:")
    print(f"  import into a new SQLite store   {statistics.median(imported):6.2f} s   (figures derived and stored)")
    print(f"  push to a new PostgreSQL store   {statistics.median(first):6.2f} s   (rounds: "
          + ", ".join(f"{t:.2f}" for t in first) + ")")
    print(f"  push again (nothing to add)      {statistics.median(again):6.2f} s")
    print(f"  pull into a new SQLite store     {statistics.median(pull):6.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", nargs="?", help="a PostgreSQL database to push into (default: a throwaway server)")
    parser.add_argument("--records", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.url:
            measure(lambda k: args.url, args.records, Path(tmp))
            return
        import psycopg

        with throwaway_server() as server:
            os.environ["PGPASSWORD"] = server.password

            def fresh(k: int) -> str:
                with psycopg.connect(server.url(), autocommit=True) as conn:
                    conn.execute(f"CREATE DATABASE push{k}")
                return server.url(f"push{k}")

            measure(fresh, args.records, Path(tmp))


if __name__ == "__main__":
    main()
