"""Fixtures every test folder shares (a fake clock, the tiny end-to-end run, synthetic reports), and the
test tiers: which tests are integration tests, declared here and nowhere else."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from arraybench.cli import main
from arraybench.report import write_all

TESTS = Path(__file__).resolve().parent


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


# Test tiers, declared here and nowhere else (no test file marks itself). `make test-fast` runs the unit
# tier (-m "not integration"): fake clocks, stub workers, synthetic records, no run of a real framework.
# Integration tests start runs, worker processes, clusters, kernels, servers or a browser: every test of a
# module in INTEGRATION_MODULES (by its path under tests/), the tests INTEGRATION_TESTS names of a
# module, and any test that asks for a fixture that runs (INTEGRATION_FIXTURES).
INTEGRATION_MODULES = frozenset({
    "cli/test_cli_ecosystem.py", "execution/test_cluster.py", "project/test_packaging.py",
    "project/test_reliability.py", "project/test_run_end_to_end.py", "report/test_report_browser.py",
    "results/test_notebook.py", "site/test_publish_browser.py", "workloads/test_large_checks.py",
    "workloads/test_user_workloads.py", "workloads/test_workloads.py",
})
INTEGRATION_TESTS = {
    "envs/test_envs.py": {  # real uv builds
        "test_uv_builds_a_small_environment_shows_its_progress_and_the_next_run_reuses_it",
        "test_a_spec_uv_cannot_resolve_is_one_line_and_leaves_nothing",
    },
    "envs/test_envs_own.py": {"test_a_moved_branch_is_rebuilt_and_the_header_records_the_commit_installed"},
    "execution/test_startup.py": {
        "test_the_ready_info_carries_each_phase_of_the_workers_start",  # starts a worker process
        "test_an_eager_only_torch_worker_compiles_no_empty_call",  # starts a torch worker
        "test_tensorflow_loads_without_keras_and_keras_still_loads_when_asked",  # imports TensorFlow
    },
    "measure/test_compile_cache.py": {
        # a cold torch.compile in an empty cache takes 10-15 s (its C++ toolchain checks)
        "test_the_second_process_loads_the_firsts_code_faster_and_stores_nothing",
        "test_a_worker_given_the_runs_cache_compiles_into_it",  # starts a JAX worker
        # torch.compile's set-up: 3 s from a warm set-up cache, 10-15 s from an empty one
        "test_torchs_compiler_set_up_goes_to_the_users_cache_and_a_cases_first_call_stays_cold",
    },
    "measure/test_gpu.py": {
        "test_gpu_peaks_on_a_machine_without_a_gpu_say_they_failed",  # measures the CPU's peaks in a subprocess
        "test_jax_device_to_host_copy_returns_the_data",  # imports JAX
        "test_torch_gpu_sync_waits_on_another_gpu_but_not_on_a_host_copy",  # imports torch
    },
    "measure/test_memory.py": {  # real workers of every framework
        "test_every_cpu_framework_reads_back_a_known_amount_and_an_eager_chain_its_intermediates",
        "test_every_gpu_framework_reads_back_a_known_amount",
    },
    "project/test_ci_example.py": {  # examples/ci/benchmark-pr.sh's real runs
        "test_a_planted_slowdown_of_25_percent_is_found_and_fails_the_check",
        "test_a_change_that_costs_nothing_passes",
        "test_uncommitted_changes_to_the_pull_requests_files_are_one_line_and_exit_2",
    },
    "workloads/test_multidevice.py": {  # JAX's and TensorFlow's devices in real workers
        "test_jax_shard_map_psum_and_pmap_over_two_forced_host_devices",
        "test_tensorflow_mirrored_strategy_under_xla_over_two_logical_devices",
    },
    "workloads/test_tolerance.py": {  # a real 8·10⁶-element float64 reference, twice: seconds
        "test_a_long_float64_kernel_is_calibrated_at_a_size_whose_reference_is_slow",
    },
}
# pg_server and pg (store/test_store_pg.py) start a PostgreSQL server.
INTEGRATION_FIXTURES = frozenset({"run_cli", "tiny_run", "dask_cluster", "spread_run", "stored_run", "pg", "pg_server"})


def is_integration(item: pytest.Item) -> bool:
    """Whether `item` is in the integration tier, by the declaration above."""
    module = module_of(item)
    name = getattr(item, "originalname", item.name)
    return (module in INTEGRATION_MODULES or name in INTEGRATION_TESTS.get(module, ())
            or bool(INTEGRATION_FIXTURES & set(getattr(item, "fixturenames", ()))))


# The modules that take longest under `make test` (each runs every framework's workers, several times for
# some: 85-186 s each on the 2-core VM), started first. `--dist loadfile` runs a module whole on one xdist
# worker, in the order of collection, where tests/workloads/ came last: one of them started last kept the
# other workers idle at the end.
LONGEST_FIRST = (
    "workloads/test_workloads.py", "workloads/test_vmap.py", "execution/test_cluster.py",
    "workloads/test_user_workloads.py", "results/test_notebook.py", "project/test_run_end_to_end.py",
    "workloads/test_multidevice.py", "project/test_ci_example.py", "report/test_report.py",
)


def module_of(item: pytest.Item) -> str:
    """`item`'s module, by its path under tests/ ("" outside it)."""
    path = item.path.resolve()
    return path.relative_to(TESTS).as_posix() if path.is_relative_to(TESTS) else ""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if is_integration(item):
            item.add_marker(pytest.mark.integration)
    rank = {module: i for i, module in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(module_of(item), len(rank)))  # stable: the rest keep their order


@pytest.fixture
def undrawn_plots(monkeypatch: pytest.MonkeyPatch) -> None:
    """For a test of the report's words, tables and files: every figure is still built, and each plot
    file written empty instead of drawn (matplotlib's drawing is most of a report's time). Tests of
    the plots themselves draw them."""
    from matplotlib.figure import Figure

    monkeypatch.setattr(Figure, "savefig", lambda self, path, **kw: Path(path).write_bytes(b""))


# Reports of helpers/report_data's synthetic sweeps, written once a session: drawing a report's plots costs
# seconds of CPU (8 s for the bisected sweep's 11 figures), and the tests that share one only read it.
@pytest.fixture(scope="session")
def bisected_report(tmp_path_factory: pytest.TempPathFactory):
    """(Report, its folder) of the bisected sweep with PEAKS; read it, never write into it."""
    from tests.helpers.report_data import PEAKS, bisected_records
    from tests.report.test_report import results_of

    out = tmp_path_factory.mktemp("bisected")
    return write_all([results_of(bisected_records(), peaks=PEAKS)], out), out


@pytest.fixture(scope="session")
def synthetic_report(tmp_path_factory: pytest.TempPathFactory):
    """(Report, its folder) of the unbisected sweep, report_data.synthetic_results(); read it only."""
    from tests.helpers.report_data import synthetic_results

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
