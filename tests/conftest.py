"""Shared test helpers: a fake clock and a tiny end-to-end run."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from arraybench.cli import main
from arraybench.report import write_all

# One process a case unless a test is about replication (test_replication.py).
TINY = ["--params", "n=200,iters=20", "--min-time", "0.01", "--max-time", "0.2", "--min-samples", "3",
        "--processes", "1", "--refine", "0"]


class FakeClock:
    """A clock that moves only when told: each call of the timed function costs `cost` seconds."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def advance(self, dt: float) -> None:
        self.now += dt


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


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


@pytest.fixture(scope="session", autouse=True)
def _scratch_working_directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Module fixtures run in a scratch directory, not the checkout: `arraybench run` and `compare`
    default to the store `.arraybench/results.db` under the working directory (or $ARRAYBENCH_STORE),
    and no test may write into the developer's store or read its history (compare adds earlier
    runs' spread)."""
    old, store = os.getcwd(), os.environ.pop("ARRAYBENCH_STORE", None)
    os.chdir(tmp_path_factory.mktemp("cwd"))
    yield
    os.chdir(old)
    if store is not None:
        os.environ["ARRAYBENCH_STORE"] = store


@pytest.fixture(autouse=True)
def _own_working_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test in its own directory, so no default store carries one test's runs into another's."""
    monkeypatch.chdir(tmp_path)


# Test tiers. `make test-fast` runs the unit tier (-m "not integration"): fake clocks, stub workers,
# synthetic records, no run of a real framework. Integration tests start runs, worker processes,
# clusters, kernels or a browser: a whole module here, or any test that asks for a fixture that runs.
INTEGRATION_MODULES = frozenset({
    "test_workloads", "test_user_workloads", "test_cluster", "test_run_end_to_end", "test_reliability",
    "test_notebook", "test_report_browser", "test_packaging", "test_cli_ecosystem",
})
INTEGRATION_FIXTURES = frozenset({"run_cli", "tiny_run", "dask_cluster", "spread_run", "stored_run"})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        module = item.module.__name__.rpartition(".")[2] if item.module else ""
        if module in INTEGRATION_MODULES or INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.integration)


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


@pytest.fixture
def undrawn_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test of the report's words, tables and files: every figure is still built, and each plot
    file written empty instead of drawn (matplotlib's drawing is most of a report's time). Tests of
    the plots themselves draw them."""
    from matplotlib.figure import Figure

    monkeypatch.setattr(Figure, "savefig", lambda self, path, **kw: Path(path).write_bytes(b""))


# Reports of report_data's synthetic sweeps, written once a session: drawing a report's plots costs
# seconds of CPU (8 s for the bisected sweep's 11 figures), and the tests that share one only read it.
@pytest.fixture(scope="session")
def bisected_report(tmp_path_factory: pytest.TempPathFactory):
    """(Report, its folder) of the bisected sweep with PEAKS; read it, never write into it."""
    from report_data import PEAKS, bisected_records
    from test_report import results_of

    out = tmp_path_factory.mktemp("bisected")
    return write_all([results_of(bisected_records(), peaks=PEAKS)], out), out


@pytest.fixture(scope="session")
def synthetic_report(tmp_path_factory: pytest.TempPathFactory):
    """(Report, its folder) of the unbisected sweep, report_data.synthetic_results(); read it only."""
    from report_data import synthetic_results

    out = tmp_path_factory.mktemp("synthetic")
    return write_all([synthetic_results()], out), out


@pytest.fixture
def run_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """Run `arraybench ARGS` in-process; returns (exit code, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run
