"""A worker says what its start cost, phase by phase."""

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import pytest

from arraybench.backends import backend_class
from arraybench.backends.backend import child_env
from arraybench.backends.tensorflow_backend import TensorflowBackend
from arraybench.core.case import Case
from arraybench.execution.child import process_age
from arraybench.execution.parent import RunConfig, Worker
from arraybench.measure.timing import TimerConfig

IMPORTED = time.monotonic()


def test_process_age_counts_from_the_process_start_not_from_a_later_moment():
    age = process_age()
    assert age is not None
    assert age >= time.monotonic() - IMPORTED  # this module was imported after the process started
    time.sleep(0.05)
    later = process_age()
    assert later is not None and 0.04 < later - age < 1.0


def ready_info(case: Case, log_dir: Path) -> dict:
    """What a worker for `case`, asked for its mode's floor, says once it has started."""
    worker = Worker(case, RunConfig(TimerConfig(), 0, 60.0, log_dir), floors=(case.mode,))
    try:
        worker.start()
    finally:
        worker.kill()
    assert worker.info is not None
    return worker.info


def test_the_ready_info_carries_each_phase_of_the_workers_start(tmp_path: Path):
    startup = ready_info(Case("sort", (("n", 8),), "numpy", "eager", "float64", 1), tmp_path / "logs")["startup"]
    phases = ("interpreter_s", "harness_s", "import_s", "info_s", "floors_s")
    assert all(startup[p] >= 0 for p in phases)
    # Phases one after another, within the clock ticks (10 ms) the process start is known to.
    assert startup["total_s"] >= sum(startup[p] for p in phases) - 0.011
    assert startup["total_s"] < 60


def test_a_worker_of_several_threads_times_its_pool_once_and_every_record_carries_it(tmp_path: Path):
    config = RunConfig(TimerConfig(min_time=0.001, max_time=0.01), 0, 60.0, tmp_path / "logs")
    records = {}
    for threads in (1, 2):
        worker = Worker(Case("sort", (("n", 8),), "numpy", "eager", "float64", threads), config)
        try:
            worker.start()
            records[threads] = [worker.run(Case("sort", (("n", n),), "numpy", "eager", "float64", threads))
                                for n in (8, 16)]
        finally:
            worker.kill()
        assert records[threads][0].status == "ok", records[threads][0].error
    assert records[1][0].pool_ref_s is None  # one thread: no pool
    first, second = records[2]
    # Any time: beside a busy CPU a stalled 2-thread pool takes 16 ms a call.
    assert first.pool_ref_s is not None and len(first.pool_ref_s) == 1 and first.pool_ref_s[0] > 0
    assert second.pool_ref_s == first.pool_ref_s  # timed once, as the worker started
    assert worker.info is not None and worker.info["startup"]["pool_s"] > 0


def test_an_eager_only_torch_worker_compiles_no_empty_call(tmp_path: Path):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    info = ready_info(Case("elementwise_add", (("n", 8),), "torch", "eager", "float32", 1), tmp_path / "logs")
    # The jit floor's torch.compile cost this worker 10-30 s of start-up before it was asked for modes.
    assert set(info["empty_call_s"]) == {"eager"} and "empty_call_errors" not in info


def test_tensorflow_loads_without_keras_and_keras_still_loads_when_asked():
    if importlib.util.find_spec("tensorflow") is None:
        pytest.skip("tensorflow is not installed")
    be = TensorflowBackend(1, "float32")
    code = ("import sys; from arraybench.backends.tensorflow_backend import TensorflowBackend as T\n"
            "be = T(1, 'float32'); be.load(); print('keras' in sys.modules)\n"
            "print(be.tf.keras.layers.Dense(2)(be.tf.ones((1, 3))).shape)")
    out = subprocess.run([sys.executable, "-c", code], env=child_env(be.env()), capture_output=True, text=True,
                         timeout=120, check=True).stdout.split("\n")
    assert out[:2] == ["False", "(1, 2)"]



def worker_environ(worker: Worker) -> dict[str, str] | None:
    environ = Path(f"/proc/{worker.proc.pid}/environ")
    if not environ.exists():
        return None
    return dict(v.split("=", 1) for v in environ.read_text().split("\0") if "=" in v)


def test_a_framework_that_leaves_temporary_files_gets_a_directory_that_goes_with_its_worker(tmp_path: Path,
                                                                                            monkeypatch):
    # Workers end by SIGKILL, so no exit handler of theirs runs: TensorFlow's autograph left two files in /tmp
    # for each worker of `selu`, 1747 in a day of runs on the 2-core VM.
    assert TensorflowBackend.private_tmp
    monkeypatch.setattr(backend_class("numpy"), "private_tmp", True)
    cache = tmp_path / "cache"
    worker = Worker(Case("sort", (("n", 8),), "numpy", "eager", "float64", 1),
                    RunConfig(TimerConfig(), 0, 60.0, tmp_path / "logs", cache_dir=cache))
    try:
        worker.start()
        assert worker.tmp is not None and worker.tmp.parent == cache and worker.tmp.is_dir()
        environ = worker_environ(worker)
        assert environ is None or environ["TMPDIR"] == str(worker.tmp)
        (worker.tmp / "left-by-a-framework.py").write_text("")
    finally:
        worker.kill()
    assert not worker.tmp.exists()


def test_any_other_framework_keeps_the_machines_temporary_directory(tmp_path: Path, monkeypatch):
    # PyTorch's Inductor builds its precompiled header there once a machine: in a directory of each
    # worker's own it took each jitted worker 8-10 s more on the 2-core VM.
    assert not backend_class("torch").private_tmp
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    worker = Worker(Case("sort", (("n", 8),), "numpy", "eager", "float64", 1),
                    RunConfig(TimerConfig(), 0, 60.0, tmp_path / "logs", cache_dir=tmp_path / "cache"))
    try:
        worker.start()
        environ = worker_environ(worker)
        assert environ is None or environ["TMPDIR"] == str(tmp_path)
    finally:
        worker.kill()
    assert worker.tmp is None
