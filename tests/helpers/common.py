"""What many tests use: the repository's paths, the options of a tiny run, reading its records, racing threads."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

from arraybench.cli import main

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
SRC = ROOT / "src"
FIXTURES = TESTS / "fixtures"
FAKES = TESTS / "fakes"

# One process a case unless a test is about replication (execution/test_replication.py).
TINY = ["--params", "n=200,iters=20", "--min-time", "0.01", "--max-time", "0.2", "--min-samples", "3",
        "--processes", "1", "--refine", "0"]


def at_once(fn: Callable[[], object], threads: int) -> list[Exception]:
    """Run `fn` in `threads` threads released at the same moment; what they raised (any failure is
    the defect a race test looks for), in no particular order."""
    start, errors = threading.Barrier(threads), []

    def run() -> None:
        start.wait()
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - any failure is the defect
            errors.append(e)

    started = [threading.Thread(target=run) for _ in range(threads)]
    for t in started:
        t.start()
    for t in started:
        t.join()
    return errors


def default_sigint() -> None:
    """preexec_fn for a child that a test interrupts: SIGINT back to its default disposition.

    A test run started from a shell that ignores SIGINT (a backgrounded `make test`) passes the
    ignored signal to its children, and a Python started with SIGINT ignored installs no
    KeyboardInterrupt handler: the Ctrl-C under test would do nothing.
    """
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_at_one_size(out: Path, workloads: list[str], size: str, params: str,
                    timer: list[str]) -> tuple[int, list[dict]]:
    """`arraybench run` of `workloads` at one size on one thread, in-process: (exit code, its records)."""
    code = main(["run", "--workloads", ",".join(workloads), "--sizes", size, "--params", params,
                 "--threads", "1", "--output-dir", str(out), *timer])
    return code, read_jsonl(out / "results.jsonl")[1:]


def not_right(records: list[dict]) -> list[tuple]:
    """(workload, backend, mode, error) of every case that ran and failed or was wrong."""
    return [(r["workload"], r["backend"], r["mode"], r["error"]) for r in records
            if r["status"] not in ("ok", "unsupported", "unavailable")]
