"""Faults injected on purpose: bad input, failing cases, Ctrl-C, kill -9, missing frameworks, hostile files."""

from __future__ import annotations

import ast
import fcntl
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from arraybench.backends import BACKENDS
from arraybench.cli import main
from arraybench.cli.exits import (
    EXIT_FAILED_CASES,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_REGRESSION,
    EXIT_TERMINATED,
    EXIT_USAGE,
)
from arraybench.errors import UsageError
from arraybench.execution.parent import Runner
from arraybench.planning.plan import build_plan
from arraybench.planning.settings import RunSettings
from arraybench.results import atomic_write_text, load_results
from tests.helpers.common import FIXTURES, ROOT, SRC, TINY, default_sigint, read_jsonl

FAULTY = str(FIXTURES / "faulty_workload.py")
HEADER = json.dumps({"type": "header", "schema": 1, "settings": {}}) + "\n"
RECORD = {"type": "case", "id": "x", "workload": "w", "params": {"n": 3}, "backend": "numpy", "mode": "eager",
          "dtype": "float64", "status": "error", "error": "ValueError: boom"}

# Files the bad-input cases below point at, by name under the test's tmp dir.
BAD_FILES = {
    "empty.jsonl": "",
    "truncated.jsonl": HEADER[:30],
    "notjson.jsonl": "this is not JSON\n",
    "wrongschema.jsonl": '{"name": "some other tool"}\n',
    "newer.jsonl": '{"type": "header", "schema": 99}\n',
    "badrecord.jsonl": HEADER + '{"type": "case", "id": "x"}\n',
    "badtype.jsonl": HEADER + json.dumps({**RECORD, "params": "n=3"}) + "\n",
    "a_file": "not a directory\n",
    "broken_workload.py": "from no_such_module_xyz import setup\nsetup()\n",
    "no_workload.py": "x = 1\n",
    "done/results.jsonl": HEADER,
    "r_empty/results.jsonl": "",
    "r_notjson/results.jsonl": "this is not JSON\n",
    "r_newer/results.jsonl": '{"type": "header", "schema": 99}\n',
}

# (command line, expected one-line message); {tmp} is the test's tmp dir.
BAD_INPUTS = [
    ("run --workloads linreg2", "unknown workload 'linreg2'; did you mean 'linreg'?"),
    ("run --backends jaxx", "unknown backend 'jaxx'; did you mean 'jax'?"),
    ("run --modes jitt", "unknown mode 'jitt'; did you mean 'jit'?"),
    ("run --sizes smal", "bad size 'smal' for linreg; did you mean 'small'?"),
    ("run --dtype float16", "unknown dtype 'float16'"),
    ("run --devices quantum", "unknown device kind 'quantum'"),
    ("run --sizes 1e3x", "bad size '1e3x' for linreg (give a positive integer or a preset: large, small, sweep)"),
    ("run --sizes=0", "bad size '0' for linreg: sizes must be positive"),
    ("run --sizes=-5", "bad size '-5' for linreg: sizes must be positive"),
    ("run --params n=0", "bad --params item 'n=0': values must be positive"),
    ("run --params n", "bad --params item 'n': expected NAME=VALUE"),
    ("run --workloads linreg --params m=3", "unknown parameter 'm' (valid: d, iters, lr, n)"),
    ("run --params dd=3", "unknown parameter 'dd'; did you mean 'd'?"),
    ("run --threads 0", "--threads must be at least 1, not 0"),
    ("run --threads two", "argument --threads: invalid int value: 'two'"),
    ("run --timeout 0", "argument --timeout: must be positive, not 0"),
    ("run --spell-wait -0.5", "--spell-wait must be 0 or more seconds, and finite, not -0.5"),
    ("run --spell-wait inf", "--spell-wait must be 0 or more seconds, and finite, not inf"),
    ("run --memory-limit 2X", "argument --memory-limit: bad size '2X': expected e.g. 2G, 512M or a byte count"),
    ("run --memory-limit 0", "argument --memory-limit: '0' is below 1M"),
    ("run --output-dir {tmp}/a_file/sub", "cannot write to output directory '{tmp}/a_file/sub': Not a directory"),
    ("report {tmp}/missing.jsonl", "results file '{tmp}/missing.jsonl' does not exist"),
    ("report {tmp}/empty.jsonl", "results file '{tmp}/empty.jsonl' is empty"),
    ("report {tmp}/truncated.jsonl", "results file '{tmp}/truncated.jsonl' is truncated inside its header line"),
    ("report {tmp}/notjson.jsonl", "results file '{tmp}/notjson.jsonl' line 1 is not JSON"),
    ("report {tmp}/wrongschema.jsonl", "results file '{tmp}/wrongschema.jsonl' has no arraybench header on line 1"),
    ("report {tmp}/newer.jsonl", "has schema 99, newer than this arraybench reads (3); upgrade arraybench"),
    ("report {tmp}/badrecord.jsonl", "line 2 lacks workload, params, backend, mode, dtype, status"),
    ("report {tmp}/badtype.jsonl", "line 2 has params 'n=3' of the wrong type"),
    ("run --resume {tmp}/done", "results file '{tmp}/done/results.jsonl' holds no run settings to resume with"),
    ("report {tmp}/done --output-dir {tmp}/a_file/sub", "cannot write the report to '{tmp}/a_file/sub'"),
    ("run --resume {tmp}/nowhere", "nothing to resume in '{tmp}/nowhere': it holds no results.jsonl"),
    ("run --resume {tmp}/r_empty", "results file '{tmp}/r_empty/results.jsonl' is empty"),
    ("run --resume {tmp}/r_notjson", "results file '{tmp}/r_notjson/results.jsonl' line 1 is not JSON"),
    ("run --resume {tmp}/r_newer", "has schema 99, newer than this arraybench reads (3)"),
    ("run --resume {tmp}/done/results.jsonl", "--resume takes the run's output directory, not a file"),
    ("run --resume {tmp}/done --backends jax",
     "--resume {tmp}/done runs with the settings stored there; drop --backends"),
    ("run --workload-file {tmp}/missing.py", "workload file '{tmp}/missing.py' does not exist"),
    ("run --workload-file {tmp}/broken_workload.py",
     "the workload file calls no_such_module_xyz.setup() as it is imported, and no_such_module_xyz cannot be "
     "imported here"),
    ("run --workload-file {tmp}/no_workload.py", "workload file '{tmp}/no_workload.py' defines no workload"),
    (f"run --workload-file {FAULTY} --workloads okk", "'okk'; did you mean 'ok'?"),
    ("rn", "argument command: invalid choice: 'rn'"),
    ("show nosuchrun --store {tmp}/none.db", "no results store at '{tmp}/none.db'"),
    ("compare nosuchrun {tmp}/done --store {tmp}/none.db", "'nosuchrun' is neither a results file nor a stored run"),
]
# An unknown run id in a store that holds runs: tests/store/test_store.py.


@pytest.fixture
def bad_files(tmp_path: Path) -> Path:
    for name, text in BAD_FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.parametrize("command, message", BAD_INPUTS, ids=[c for c, _ in BAD_INPUTS])
def test_bad_input_is_one_line_naming_it_and_exit_2(bad_files, run_cli, command, message):
    args = command.format(tmp=bad_files).split()
    if args[0] == "run" and "--resume" not in args and "--output-dir" not in args:
        args += ["--output-dir", str(bad_files / "out")]  # never the cwd, should a case slip through
    code, out, err = run_cli(*args)
    assert code == EXIT_USAGE
    assert err.startswith("arraybench: error: ")
    assert message.format(tmp=bad_files) in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_at_least_15_bad_inputs_are_checked():
    assert len(BAD_INPUTS) >= 15


def test_debug_shows_the_traceback(tmp_path):
    with pytest.raises(UsageError, match="unknown backend 'jaxx'"):
        main(["--debug", "run", "--backends", "jaxx", "--output-dir", str(tmp_path)])


def faulty_settings(workloads: list[str], **kw) -> RunSettings:
    return RunSettings(workloads=workloads, backends=["numpy"], modes=["eager"], threads=1,
                       workload_file=FAULTY, **kw)


def test_failing_cases_are_recorded_and_the_run_goes_on(tmp_path, run_cli):
    names = ["segfault", "oom", "hang", "raises", "ok"]
    plan = build_plan(faulty_settings(names))
    # A seed that runs `ok` last: it must still run, in a worker started after the others died.
    seed = next(s for s in range(1000) if Runner.order(plan, s)[-1].workload == "ok")
    code, out, err = run_cli(
        "run", "--workload-file", FAULTY, "--workloads", ",".join(names), "--backends", "numpy",
        "--modes", "eager", "--threads", "1", "--seed", str(seed), "--timeout", "2",
        "--memory-limit", "256M", "--output-dir", str(tmp_path), *TINY[2:],
    )
    lines = read_jsonl(tmp_path / "results.jsonl")
    records = {r["workload"]: r for r in lines[1:]}
    assert code == EXIT_FAILED_CASES
    assert "4 case(s) failed" in err
    assert lines[0]["settings"]["memory_limit"] == 256 * 2**20
    assert [r["workload"] for r in lines[1:]][-1] == "ok" and records["ok"]["status"] == "ok"
    assert records["segfault"]["status"] == "crashed"
    assert records["segfault"]["error"].startswith("worker died with SIGSEGV")
    assert "Segmentation fault" in records["segfault"]["error"]  # the worker's last words, from its log
    assert records["oom"]["status"] == "error"
    # 1 GiB is free on any machine that runs these tests: only the cap can have refused it.
    assert records["oom"]["error"].startswith("MemoryError: Unable to allocate 1.00 GiB")
    assert records["oom"]["error"].endswith("(over --memory-limit 256 MiB)")
    assert records["hang"]["status"] == "timeout"
    # Before it is killed, the hung worker says where it was: its main thread's innermost frame.
    assert records["hang"]["error"].startswith("no result within --timeout 2 s; worker killed; it was in ")
    assert "faulty_workload.py:" in records["hang"]["error"] and " in forever " in records["hang"]["error"]
    assert records["raises"]["status"] == "error"
    assert records["raises"]["error"] == "ValueError: deliberate failure"
    assert "CRASHED" in out and "TIMEOUT" in out and "deliberate failure" in out


def start_run(out_dir: Path, *args: str) -> subprocess.Popen:
    """`arraybench run` of faulty_workload.py on NumPy, in a process of its own."""
    return subprocess.Popen(
        [sys.executable, "-m", "arraybench", "run", "--workload-file", FAULTY, "--backends", "numpy",
         "--threads", "1", "--output-dir", str(out_dir), *args],
        env={**os.environ, "PYTHONPATH": str(SRC)}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=default_sigint,
    )


def interrupt_slow_run(out_dir: Path, sig: signal.Signals) -> tuple[int, str, list[psutil.Process]]:
    """Start 12 cases of about 0.3 s each, send `sig` once two are on disk: (exit code, stderr, workers)."""
    proc = start_run(out_dir, "--workloads", "slow", "--sizes", ",".join(str(n) for n in range(1, 13)),
                     "--params", "ms=30", "--dtype", "float64", *TINY[2:])
    try:
        wait_for(lambda: finished_cases(out_dir / "results.jsonl") >= 2)
        workers = workers_of(proc)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=10)
    finally:
        proc.kill()
    return proc.returncode, err, workers


def wait_for(condition, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def finished_cases(path: Path) -> int:
    return path.read_bytes().count(b'"type": "case"') if path.exists() else 0


def workers_of(proc: subprocess.Popen) -> list[psutil.Process]:
    workers = psutil.Process(proc.pid).children(recursive=True)
    assert workers, "the run has no worker to check"
    return workers


def assert_all_die(workers: list[psutil.Process], within: float = 10.0) -> None:
    _, alive = psutil.wait_procs(workers, timeout=within)
    for p in alive:
        p.kill()  # don't leave it behind, then fail
    assert not alive, f"workers survived their runner: {[p.pid for p in alive]}"


def assert_resume_completes(run_cli, out_dir: Path, before: bytes) -> None:
    """`run --resume` runs exactly the missing cases with the stored settings: none twice, none lost."""
    header = {"type": "header", **load_results(out_dir).header.to_json()}
    code, _, err = run_cli("run", "--resume", str(out_dir))
    assert code == EXIT_OK, err
    after = (out_dir / "results.jsonl").read_bytes()
    assert after.startswith(before)  # nothing finished was lost or rewritten
    lines = [r for r in read_jsonl(out_dir / "results.jsonl") if r["type"] != "replicate"]
    assert lines[0] == header
    ids = [r["id"] for r in lines[1:]]
    plan = build_plan(RunSettings.from_dict(header["settings"]))
    assert len(ids) == len(set(ids)) == len(plan) == 12
    assert set(ids) == {c.id for c in plan}
    assert all(r["status"] == "ok" and r["dtype"] == "float64" and r["threads"] == 1 for r in lines[1:])
    assert {r["params"]["ms"] for r in lines[1:]} == {30}


def test_ctrl_c_stops_kills_workers_keeps_cases_and_says_how_to_resume(tmp_path, run_cli):
    results = tmp_path / "results.jsonl"
    code, err, workers = interrupt_slow_run(tmp_path, signal.SIGINT)
    assert code == EXIT_INTERRUPTED
    assert_all_die(workers, within=2)
    kept = load_results(tmp_path)
    assert not kept.warnings and 2 <= len(kept.records) < 12
    assert f"interrupted; {len(kept.records)} finished cases kept in {results}" in err
    assert f"resume with: arraybench run --resume {tmp_path}" in err
    assert "Traceback" not in err
    assert_resume_completes(run_cli, tmp_path, results.read_bytes())


def test_kill_9_keeps_finished_cases_drops_a_torn_line_and_resumes(tmp_path, run_cli):
    results = tmp_path / "results.jsonl"
    code, _, workers = interrupt_slow_run(tmp_path, signal.SIGKILL)
    assert code == -signal.SIGKILL
    assert_all_die(workers)
    before = results.read_bytes()
    n = finished_cases(results)
    assert n < 12
    # What a kill in the middle of a write leaves: a record without its end.
    with results.open("ab") as f:
        f.write(b'{"type": "case", "id": "slow[n=99')
    code, out, err = run_cli("report", str(tmp_path), "--output-dir", str(tmp_path / "report"))
    assert code == EXIT_OK
    assert "dropped a torn last line" in err
    assert f"holds {n} of its 12 planned cases: the run stopped early" in err
    assert len(load_results(tmp_path).records) == n
    assert_resume_completes(run_cli, tmp_path, before)


def test_a_worker_stuck_in_a_case_dies_with_its_killed_runner(tmp_path):
    proc = start_run(tmp_path, "--workloads", "hang", "--timeout", "600")
    try:
        logs = tmp_path / "logs"
        wait_for(lambda: any("hang: sleeping" in p.read_text() for p in logs.glob("*.log")))
        workers = workers_of(proc)
        proc.kill()  # the worker sleeps for an hour and reads no stdin: only the kernel can stop it
        proc.wait(timeout=10)
    finally:
        proc.kill()
    assert_all_die(workers, within=5)


def test_ctrl_c_says_what_the_worker_in_flight_was_doing_and_where(tmp_path):
    proc = start_run(tmp_path, "--workloads", "hang", "--timeout", "600")
    try:
        wait_for(lambda: any("hang: sleeping" in p.read_text() for p in (tmp_path / "logs").glob("*.log")))
        workers = workers_of(proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED
    assert_all_die(workers, within=5)
    said = [line for line in err.splitlines() if line.startswith("arraybench: stopped while ")]
    assert len(said) == 1, err
    assert said[0].startswith("arraybench: stopped while measuring hang[")
    assert "numpy·eager·cpu, after " in said[0] and ", in fixtures/faulty_workload.py:" in said[0]
    log = said[0].split("every thread's stack: ")[1].removesuffix(")")
    assert "Current thread" in (tmp_path / "logs" / Path(log).name).read_text()


def test_a_second_run_into_a_directory_being_written_is_refused(tmp_path, run_cli):
    results = tmp_path / "results.jsonl"
    results.write_text(HEADER.replace("{}", json.dumps(RunSettings(backends=["numpy"]).to_dict())))
    with results.open("a") as running:
        fcntl.flock(running, fcntl.LOCK_EX)  # what a run holds while it writes
        for args in (["--resume", str(tmp_path)], ["--output-dir", str(tmp_path), "--backends", "numpy"]):
            code, _, err = run_cli("run", *args)
            assert code == EXIT_USAGE
            assert f"another arraybench run is writing {results}; wait for it" in err
    assert results.read_text().count("\n") == 1  # nothing was added by the refused runs


def test_a_valid_json_record_on_a_torn_last_line_is_not_data(tmp_path):
    results = tmp_path / "results.jsonl"
    results.write_text(HEADER + json.dumps(RECORD) + "\n" + json.dumps({**RECORD, "id": "y"}))
    loaded = load_results(results)
    assert [r.id for r in loaded.records] == ["x"]
    assert loaded.warnings == [f"{results}: dropped a torn last line (the run was interrupted while writing it)"]


def test_missing_frameworks_are_unavailable_with_the_fix_not_errors(tmp_path, run_cli, monkeypatch):
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "torch" else find_spec(name, *a))
    # numba looks installed to the runner but cannot be imported in its worker.
    shadow = tmp_path / "shadow" / "numba"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('numba is broken here')\n")
    monkeypatch.setenv("PYTHONPATH", str(shadow.parent))
    code, out, err = run_cli("run", "--workloads", "linreg", "--backends", "numpy,numba,torch", "--sizes", "2",
                             "--dtype", "float64", "--threads", "1", "--output-dir", str(tmp_path / "out"), *TINY)
    records = {(r["backend"], r["mode"]): r for r in read_jsonl(tmp_path / "out" / "results.jsonl")[1:]}
    assert code == EXIT_OK
    assert records[("numpy", "eager")]["status"] == "ok"
    assert records[("torch", "eager")]["status"] == records[("torch", "jit")]["status"] == "unavailable"
    assert records[("torch", "jit")]["error"] == "torch is not installed (pip install 'arraybench[torch]')"
    assert records[("numba", "jit")]["status"] == "unavailable"
    assert records[("numba", "jit")]["error"] == "numba is broken here (pip install 'arraybench[numba]')"


def test_results_files_are_data_never_code(tmp_path, run_cli):
    marker = tmp_path / "executed"
    payloads = {
        "__reduce__": ["os.system", [f"touch {marker}"]],
        "py/object": "os.system",
        "yaml": f"!!python/object/apply:os.system ['touch {marker}']",
        "pickle": "cos\nsystem\n(S'touch executed'\ntR.",
    }
    record = {**RECORD, "error": json.dumps(payloads), **payloads}
    (tmp_path / "results.jsonl").write_text(HEADER + json.dumps(record) + "\n")
    loaded = load_results(tmp_path)
    # The payloads stay plain data: as text in a field the record has, dropped (and named) where it has none.
    assert loaded.records[0].error == json.dumps(payloads)
    assert all(name in loaded.warnings[0] for name in payloads)
    code, _, _ = run_cli("report", str(tmp_path), "--output-dir", str(tmp_path / "report"))
    assert code == EXIT_OK and not marker.exists()


def test_no_module_can_unpickle_or_eval():
    """Loading results is JSON only; a pickle (or eval) anywhere would make a results file code."""
    banned_modules = {"pickle", "cPickle", "marshal", "shelve", "dill", "cloudpickle", "joblib"}
    offenders = []
    for path in (SRC / "arraybench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                names = {(node.module or "").split(".")[0]}
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                names = {node.func.id} & {"eval", "exec"}
            else:
                continue
            offenders += [f"{path.name}: {n}" for n in names & (banned_modules | {"eval", "exec"})]
    assert not offenders


def test_an_atomic_write_that_fails_leaves_the_old_file_whole(tmp_path, monkeypatch):
    report = tmp_path / "report.md"
    report.write_text("old report\n")

    def disk_full(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", disk_full)
    with pytest.raises(OSError, match="No space left"):
        atomic_write_text(report, "new report\n" * 1000)
    assert report.read_text() == "old report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left behind


def test_rewriting_a_report_replaces_the_file_instead_of_writing_into_it(tmp_path, run_cli):
    (tmp_path / "results.jsonl").write_text(HEADER)
    assert run_cli("report", str(tmp_path), "--output-dir", str(tmp_path))[0] == EXIT_OK
    first = (tmp_path / "report.md").stat().st_ino
    assert run_cli("report", str(tmp_path), "--output-dir", str(tmp_path))[0] == EXIT_OK
    # A new inode: a reader holding the old report kept a whole one, as a crash would.
    assert (tmp_path / "report.md").stat().st_ino != first


def test_the_readme_documents_every_exit_code():
    readme = (ROOT / "README.md").read_text()
    table = readme.split("## Exit codes")[1].split("\n## ")[0]
    documented = {int(c) for c in re.findall(r"^\| (\d+) \|", table, re.MULTILINE)}
    assert documented == {EXIT_OK, EXIT_FAILED_CASES, EXIT_USAGE, EXIT_REGRESSION, EXIT_INTERRUPTED, EXIT_TERMINATED}


def test_the_install_hint_of_every_framework_names_a_real_extra():
    import tomllib

    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    for cls in BACKENDS.values():
        if cls.name != "numpy":  # a core dependency, never missing
            assert cls.extra in extras, cls.name
