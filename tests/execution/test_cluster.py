"""Runs on a real Dask LocalCluster on loopback: same cases and format as locally, pinning, dying workers."""

import functools
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import dask
import pytest
from distributed import Client, LocalCluster

from arraybench.cli import build_parser
from arraybench.cli.run import settings_from_args
from arraybench.execution import cluster, session
from arraybench.report.table import render_text
from arraybench.results import load_results
from arraybench.results.record import CaseRecord
from tests.helpers.common import TINY, default_sigint, read_jsonl

# Each LocalCluster's scheduler tries port 8787 for its HTTP routes; only the first gets it.
pytestmark = pytest.mark.filterwarnings("ignore:Port 8787 is already in use")
HOST = socket.gethostname()
CORES = len(os.sched_getaffinity(0))
NUMPY_SIZES = ["--workloads", "linreg", "--backends", "numpy", "--sizes", "2,3,4,5", "--threads", "1"]


@pytest.fixture(scope="module", autouse=True)
def stated_peaks():
    """Peaks stated, not measured (seconds per run); Dask workers started from here inherit it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("ARRAYBENCH_PEAKS", '{"bandwidth_gbs": 1.0}')
        yield


def start_cluster(**scheduler_config) -> LocalCluster:
    with dask.config.set(scheduler_config):
        return LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                            dashboard_address=None, resources={cluster.SLOT: 1})


@pytest.fixture(scope="module")
def dask_cluster():
    with start_cluster() as c:
        yield c


def cases(out: Path) -> dict[str, dict]:
    return {r["id"]: r for r in read_jsonl(out / "results.jsonl") if r["type"] == "case"}


def test_cluster_run_has_the_cases_statuses_and_format_of_a_local_run(tmp_path, run_cli):
    args = ["--workloads", "linreg", "--backends", "numpy,numba", "--sizes", "2", "--threads", "1", *TINY]
    code_local, _, _ = run_cli("run", *args, "--output-dir", str(tmp_path / "local"))
    code_dask, stdout, _ = run_cli("run", *args, "--cluster", "local:2", "--output-dir", str(tmp_path / "dask"))
    assert code_local == code_dask == 0
    local, dask_ = cases(tmp_path / "local"), cases(tmp_path / "dask")
    assert set(local) == set(dask_) and len(local) == 2
    for cid, rec in dask_.items():
        assert rec["status"] == local[cid]["status"] == "ok"
        # Same fields; the Dask worker's name is the one addition (a local run's is null).
        assert set(rec) == set(local[cid]) and local[cid]["worker"] is None
        assert rec["machine"] == local[cid]["machine"] == HOST and rec["worker"] in ("0", "1")
        assert rec["backend_info"]["threads_verified"] == 1  # ran in an arraybench worker process
    results = load_results(tmp_path / "dask")
    assert list(results.machines) == [HOST]
    assert results.machines[HOST].versions["numpy"]
    assert "numba·jit" in stdout and "fastest correct" in stdout

    # The same plan from another machine: `report` puts the two side by side.
    other = tmp_path / "other" / "results.jsonl"
    other.parent.mkdir()
    local = (tmp_path / "local" / "results.jsonl").read_text()
    other.write_text(local.replace(f'"machine": "{HOST}"', '"machine": "gpu-node"'))
    code, stdout, _ = run_cli("report", str(tmp_path / "dask"), str(other), "--output-dir", str(tmp_path / "report"))
    assert code == 0 and f"machine {HOST}" in stdout and "machine gpu-node" in stdout

def test_a_cluster_run_measures_each_case_in_fresh_processes_round_by_round(tmp_path, run_cli):
    out = tmp_path / "dask"
    code, _, stderr = run_cli("run", "--workloads", "linreg", "--backends", "numpy", "--sizes", "2,3",
                              "--threads", "1", *TINY, "--processes", "2", "--cluster", "local:1",
                              "--output-dir", str(out))
    assert code == 0, stderr
    lines = read_jsonl(out / "results.jsonl")
    finals = [r for r in lines if r["type"] == "case"]
    assert len(finals) == 2 and all(r["n_processes"] == 2 and len(r["replicates"]) == 2 for r in finals)
    rounds = sorted((r["id"], r["replicate"]) for r in lines if r["type"] == "replicate")
    assert rounds == sorted((r["id"], k) for r in finals for k in (0, 1))
    assert all(r["status"] == "ok" for r in finals)
    # A pool measures a configuration's empty call in the first child it starts, not again: the
    # second round's lines lack it only if their child is a new one (the pool was closed).
    floors = {r["replicate"]: "empty_call_s" in r["backend_info"] for r in lines if r["type"] == "replicate"}
    assert floors == {0: True, 1: False}



def test_on_pins_cases_to_a_named_worker_and_resume_finishes_the_rest(tmp_path, dask_cluster, run_cli):
    address = dask_cluster.scheduler_address
    out = tmp_path / "pinned"
    code, _, _ = run_cli("run", *NUMPY_SIZES, *TINY, "--cluster", address, "--on", "1", "--output-dir", str(out))
    assert code == 0
    first = cases(out)
    assert len(first) == 4 and {r["worker"] for r in first.values()} == {"1"}

    # Keep the header, the machine line and one case, as if the run had been killed there.
    path = out / "results.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:3]))
    code, _, _ = run_cli("run", "--resume", str(out), "--cluster", address, "--on", HOST)  # any worker there
    lines = read_jsonl(path)
    ids = [r["id"] for r in lines if r["type"] == "case"]
    assert code == 0 and sorted(ids) == sorted(first)  # none twice, none lost
    [machine] = [r for r in lines if r["type"] == "machine"]
    assert machine["machine"] == HOST and machine["environment"]["peaks"]["method"] == "stated by ARRAYBENCH_PEAKS"


def test_gpu_cases_without_a_gpu_worker_are_unavailable_with_the_fix(tmp_path, dask_cluster, run_cli):
    code, _, _ = run_cli("run", "--workloads", "linreg", "--backends", "torch", "--modes", "eager",
                         "--devices", "gpu", "--sizes", "2",
                         *TINY, "--cluster", dask_cluster.scheduler_address, "--output-dir", str(tmp_path))
    [rec] = cases(tmp_path).values()
    assert code == 0 and rec["status"] == "unavailable"
    assert "no Dask worker offers arraybench=1,GPU=1" in rec["error"] and "--resources" in rec["error"]


@pytest.mark.parametrize(
    "args, message",
    [
        (["--on", "0"], "--on needs --cluster"),
        (["--cluster", "local:0"], "expected local:N with N at least 1"),
        (["--cluster", "localhost"], "expected local:N"),
        (["--cluster", "{address}", "--on", "nosuchworker"],
         f"--on 'nosuchworker' names no Dask worker; workers: 0 ({HOST}, tcp://127.0.0.1:"),
        (["--cluster", "tcp://127.0.0.1:9"], "cannot reach the Dask scheduler at tcp://127.0.0.1:9"),
        (["--cluster", "local:2", "--threads", str(CORES)], f"that needs {2 * CORES} cores and {CORES} are usable"),
    ],
)
def test_bad_cluster_options_are_one_line_and_exit_2(tmp_path, dask_cluster, run_cli, monkeypatch, args, message):
    monkeypatch.setattr(cluster, "CONNECT_TIMEOUT", 1.0)
    args = [a.format(address=dask_cluster.scheduler_address) for a in args]
    code, _, err = run_cli("run", *NUMPY_SIZES, *TINY, *args, "--output-dir", str(tmp_path))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "results.jsonl").exists()  # refused before anything was written


def kill_a_busy_worker(client: Client) -> str:
    """SIGKILL a Dask worker process while it runs a case (its nanny starts a new one).

    The worker looks and kills itself in one step: looked at from here, a case seen running could end
    before the kill lands, and a finished case is only recomputed, never counted as a failure.
    """

    def kill_if_busy(dask_worker) -> bool:
        if dask_worker.state.executing:
            os.kill(os.getpid(), signal.SIGKILL)
        return False

    for _ in range(200):
        for address in client.scheduler_info()["workers"]:
            answer = client.run(kill_if_busy, workers=[address], on_error="return")
            if isinstance(answer.get(address), Exception):  # the comm closed under it: it died
                return address
        time.sleep(0.05)
    raise AssertionError("no Dask worker ever ran a case")


def run_killing_a_worker(out: Path, *extra: str, **scheduler_config) -> list[dict]:
    """A run of four numpy cases on a fresh 2-worker cluster, one Dask worker killed mid-case."""
    # Cases of about a second, so the kill lands while one runs, not between two.
    args = ["run", *NUMPY_SIZES, *TINY[:2], "--min-time", "0.7", "--max-time", "1", *extra]
    parsed = build_parser().parse_args(args)
    settings = settings_from_args(parsed)
    with start_cluster(**scheduler_config) as c, Client(c) as client:
        killed: list[str] = []
        # After the first record, from another thread, so the run goes on starting cases meanwhile.
        killer = threading.Thread(target=lambda: killed.append(kill_a_busy_worker(client)))

        def on_start(n):
            def on_record(rec):
                if killer.ident is None:
                    killer.start()
            return on_record

        target = cluster.ClusterTarget.parse(c.scheduler_address, parsed.on)
        results = session.execute(settings, out, on_start=on_start,
                                  make_runner=functools.partial(cluster.ClusterRunner, target))
        killer.join()
    assert killed  # a worker did die mid-case
    # Every case once in the plan's rounds (its line after each further round repeats it), none lost.
    ids = [r.id for r in results.records if r.n_processes == 2 or r.status != "ok"]
    assert len(ids) == len(set(ids)) == 4 and len(results.latest()) == 4
    return list(results.latest().values())


@pytest.mark.parametrize("allowed_failures", [3, 0])
def test_a_dying_worker_loses_only_its_case_which_is_retried_or_marked(tmp_path, allowed_failures):
    records = run_killing_a_worker(tmp_path, **{"distributed.scheduler.allowed-failures": allowed_failures})
    statuses = sorted(r.status for r in records)
    if allowed_failures:
        assert statuses == ["ok"] * 4  # the killed worker's case ran again elsewhere
    else:
        assert statuses == ["crashed", "ok", "ok", "ok"]
        [crashed] = [r for r in records if r.status == "crashed"]
        assert "Dask workers died running it 1 times" in crashed.error


def test_cases_pinned_to_a_worker_that_died_are_marked_not_waited_for(tmp_path):
    records = run_killing_a_worker(tmp_path, "--on", "0")
    statuses = [r.status for r in records]
    assert statuses[0] == "ok" and "crashed" in statuses  # in the order they finished
    left = "the Dask worker it was pinned to with --on left the cluster"
    for r in records:  # with several processes a case, the reason also says in which one it left
        assert r.status == "ok" or r.error.startswith(left)


def test_report_puts_machines_side_by_side_with_speedups_per_machine():
    def rec(machine, backend, mode, median):
        return {"id": f"{machine}{backend}", "workload": "linreg", "params": {"d": 2}, "size": 2, "dtype": "float32",
                "backend": backend, "mode": mode, "status": "ok", "median_s": median, "iqr_s": 0.0,
                "first_call_s": None, "machine": machine, "error": ""}

    text = render_text([CaseRecord.from_json(rec("cpu-node", "numpy", "eager", 4e-3)),
                        CaseRecord.from_json(rec("cpu-node", "jax", "jit", 1e-3)),
                        CaseRecord.from_json(rec("gpu-node", "numpy", "eager", 2e-3)),
                        CaseRecord.from_json(rec("gpu-node", "jax", "jit", 1e-4))])
    rows = {line.split("  ")[0]: line for line in text.splitlines()}
    assert "4.00×" in rows["jax·jit @cpu-node"] and "20.00×" in rows["jax·jit @gpu-node"]
    assert "1.00×" in rows["numpy·eager @gpu-node"]


def test_ctrl_c_on_a_local_cluster_keeps_finished_cases_and_leaves_no_process(tmp_path):
    import psutil

    env = {**os.environ, "PYTHONPATH": str(Path(cluster.__file__).parent.parent)}
    # One process a case: the progress line "[1/…" then marks a finished case, not a first process of
    # three (the rounds run every case's first process before any case's second).
    cmd = [sys.executable, "-m", "arraybench", "run", "--cluster", "local:2", *NUMPY_SIZES, *TINY[:2],
           "--processes", "1", "--min-time", "0.5", "--max-time", "0.5", "--output-dir", str(tmp_path)]
    # Its own process group, as in a terminal, where Ctrl-C reaches every process of the group.
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True,
                            preexec_fn=default_sigint)
    seen = []
    for line in proc.stderr:
        if line.startswith("[1/"):
            break
        seen.append(line)
    else:
        pytest.fail(f"the run ended (exit {proc.wait()}) before its first case was told: {''.join(seen)[-2000:]}")
    family = psutil.Process(proc.pid).children(recursive=True)
    os.killpg(proc.pid, signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=60) == 130
    assert "Traceback" not in rest and f"resume with: arraybench run --resume {tmp_path}" in rest
    assert load_results(tmp_path).records  # the finished cases, in a valid file
    _, alive = psutil.wait_procs(family, timeout=10)
    assert not alive  # Dask workers and their arraybench worker processes are all gone


def test_a_local_clusters_workers_keep_a_closed_connections_traceback_off_stderr():
    import logging

    from distributed.comm.core import CommClosedError

    from arraybench.execution.dask_worker import closed_connections

    def record(exc):
        try:
            raise exc
        except Exception:
            return logging.LogRecord("distributed.worker", logging.ERROR, __file__, 1, "heartbeat failed", (),
                                     sys.exc_info())

    assert not closed_connections(record(CommClosedError("in <TCP (closed)>")))
    assert closed_connections(record(ValueError("a real failure")))
    assert closed_connections(logging.LogRecord("distributed", logging.WARNING, __file__, 1, "plain", (), None))
