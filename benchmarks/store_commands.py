"""How long the store's commands take on a large store: history, show, answer and compare, each run as a
user runs it (a new process), in wall and CPU seconds.

The store is one that benchmarks/thousand_runs.py built, or with --pg one it builds into a new
database of a throwaway PostgreSQL server (tests/helpers/pg_server.py, default settings). compare takes the
two latest runs of the latest run's machine. With --src, every command runs with each source tree
in turn (as PYTHONPATH), e.g. before and after a change; `open` is opening the store, which is
where a newer tree migrates it.

    .venv/bin/python benchmarks/store_commands.py --store /tmp/year.db
    .venv/bin/python benchmarks/store_commands.py --store /tmp/year.db --src /tmp/before/src --src src
    .venv/bin/python benchmarks/store_commands.py --pg --runs 1000 --src /tmp/before/src --src src
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "helpers"))
sys.path.insert(0, str(ROOT / "benchmarks"))

OPEN = "import sys; from arraybench.store import Store; Store(sys.argv[1], create=False).close()"


def timed(command: list[str], src: str, timeout: float) -> tuple[float, float, str]:
    """Wall and CPU seconds of `command` with PYTHONPATH `src` (wall is `timeout` when it ran out), and its stdout."""
    env = {**os.environ, "PYTHONPATH": src}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return timeout, float("nan"), ""
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command[:4])} failed: {done.stderr.strip()}")
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, done.stdout


def commands(store: str, src: str, timeout: float) -> dict[str, list[str]]:
    """Each command as a user types it; compare's two runs from `history --format json`."""
    cli = [sys.executable, "-m", "arraybench"]
    runs = json.loads(timed([*cli, "history", "--format", "json", "--store", store], src, timeout)[2])
    machine = runs[-1]["machine"]
    old, new = [r["id"] for r in runs if r["machine"] == machine][-2:]
    return {"open": [sys.executable, "-c", OPEN, store],
            "history": [*cli, "history", "--store", store],
            f"show {new}": [*cli, "show", new, "--store", store],
            "answer": [*cli, "answer", "--store", store],
            f"compare {old} {new}": [*cli, "compare", old, new, "--store", store],
            "compare --no-history": [*cli, "compare", old, new, "--no-history", "--store", store]}


def measure(store: str, sources: list[str], timeout: float) -> None:
    todo = commands(store, sources[0], timeout)
    # Every command with one tree before the next tree's: a newer tree migrates the store, which an
    # older one then refuses.
    by_src = [{name: timed(command, src, timeout)[:2] for name, command in todo.items()} for src in sources]
    seen = {name: [times[name] for times in by_src] for name in todo}
    print(f"store {store}; seconds wall (CPU), one process per command; a wall of {timeout:g} ran out:")
    print(f"  {'':42s}" + "".join(f"{Path(s).parent.name + '/' + Path(s).name:>24s}" for s in sources))
    for name, times in seen.items():
        print(f"  {name:42s}" + "".join(f"{f'{wall:.2f} ({cpu:.2f})':>24s}" for wall, cpu in times))


@contextmanager
def built_on_server(runs: int) -> Iterator[str]:
    """A throwaway PostgreSQL server's database holding `runs` runs of thousand_runs.py."""
    import psycopg
    from pg_server import throwaway_server
    from thousand_runs import build

    with throwaway_server() as server:
        os.environ["PGPASSWORD"] = server.password
        with psycopg.connect(server.url(), autocommit=True) as conn:
            conn.execute("CREATE DATABASE year")
        start = time.perf_counter()
        build(server.url("year"), runs, 0)
        print(f"{runs} runs built into PostgreSQL in {time.perf_counter() - start:.1f} s")
        yield server.url("year")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--store", help="a store thousand_runs.py built (a SQLite file or a postgresql:// URL)")
    where.add_argument("--pg", action="store_true", help="build one into a throwaway PostgreSQL server")
    parser.add_argument("--runs", type=int, default=1000, help="with --pg: how many runs it builds")
    parser.add_argument("--src", action="append", help="source tree to run the commands with (default: this one's)")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds a command may take")
    args = parser.parse_args()
    sources = [str(Path(s).resolve()) for s in args.src or [ROOT / "src"]]
    if args.store:
        measure(args.store, sources, args.timeout)
        return
    with built_on_server(args.runs) as url:
        measure(url, sources, args.timeout)


if __name__ == "__main__":
    main()
