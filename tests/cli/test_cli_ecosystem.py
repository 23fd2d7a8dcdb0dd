"""The CLI as other tools' users expect it: run directories, report beside its input, --format,
[tool.arraybench], --suite, local-cluster threads, true help defaults, SIGTERM, exports."""

import csv
import io
import json
import os
import signal
import statistics
import subprocess
from pathlib import Path

import pytest

from arraybench.cli import build_parser, main
from arraybench.cli.exits import EXIT_TERMINATED, Terminated, interrupts_kept
from arraybench.cli.run import runner_from_args, settings_from_args
from arraybench.errors import UsageError
from arraybench.execution import cluster
from arraybench.planning import suites
from arraybench.planning.settings import default_threads
from arraybench.results import ResultsWriter, load_results
from arraybench.results.record import CaseRecord
from tests.helpers.common import TINY, read_jsonl
from tests.project.test_reliability import (
    EXIT_INTERRUPTED,
    assert_all_die,
    assert_resume_completes,
    interrupt_slow_run,
)

NUMPY_RUN = ["run", "--workloads", "linreg", "--backends", "numpy", "--modes", "eager", "--sizes", "2",
             "--threads", "1", *TINY]


def strict_json(text: str):
    """json.loads that refuses NaN and Infinity, as every JSON parser but Python's does."""

    def refuse(token):
        raise ValueError(f"{token} is not JSON")

    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """Two default runs (no --output-dir) in a fresh git checkout: (folder, [run ids], [stderr])."""
    folder = tmp_path_factory.mktemp("project")
    git = ["git", "-C", str(folder), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    (folder / "code.py").write_text("x = 1\n")
    subprocess.run([*git, "add", "code.py"], check=True)
    subprocess.run([*git, "commit", "-qm", "first"], check=True)
    commit = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    old = Path.cwd()
    os.chdir(folder)
    try:
        ids = []
        for _ in range(2):
            assert main(NUMPY_RUN) == 0
            ids.append(os.readlink(folder / "benchmark_results" / "latest"))
    finally:
        os.chdir(old)
    return folder, ids, commit


def test_each_run_gets_its_own_directory_and_latest_points_at_the_newest(project):
    folder, ids, _ = project
    root = folder / "benchmark_results"
    assert len(set(ids)) == 2
    assert sorted(p.name for p in root.iterdir() if not p.is_symlink()) == sorted(ids)
    for rid in ids:
        header = read_jsonl(root / rid / "results.jsonl")[0]
        assert header["run_id"] == rid  # the directory is named after the run id
        assert (root / rid / "report.html").exists()
    assert os.readlink(root / "latest") == ids[1]


def test_the_header_records_utc_start_and_the_git_commit_of_the_working_directory(project):
    folder, ids, commit = project
    header = read_jsonl(folder / "benchmark_results" / ids[0] / "results.jsonl")[0]
    assert header["started"].endswith("Z") and header["started"][:2] == "20"
    assert header["git"] == {"commit": commit, "dirty": False}  # benchmark_results/ is untracked
    env = header["environment"]
    assert "cpu_frequency" in env and "governor" in env["cpu_frequency"]
    assert isinstance(env["cpu_flags"], list)


def test_report_takes_a_run_id_and_writes_beside_its_input(project, run_cli, monkeypatch):
    folder, ids, _ = project
    monkeypatch.chdir(folder)
    run_dir = folder / "benchmark_results" / ids[0]
    (run_dir / "report.md").unlink()
    code, _, err = run_cli("report", ids[0][:18])  # a unique prefix of the stored run
    assert code == 0, err
    assert (run_dir / "report.md").exists()
    copy = folder / "elsewhere"
    copy.mkdir()
    (copy / "results.jsonl").write_bytes((run_dir / "results.jsonl").read_bytes())
    code, _, err = run_cli("report", str(copy / "results.jsonl"))
    assert code == 0, err
    assert (copy / "report.html").exists() and (copy / "report.md").exists()
    code, _, err = run_cli("report", str(copy), ids[1])
    assert code == 2 and "--output-dir" in err and len(err.strip().splitlines()) == 1


def test_resume_takes_a_run_id_under_benchmark_results(project, run_cli, monkeypatch):
    folder, ids, _ = project
    monkeypatch.chdir(folder)
    code, _, err = run_cli("run", "--resume", ids[1])
    assert code == 0, err
    assert f"benchmark_results/{ids[1]}/results.jsonl" in err and "0 cases" in err


@pytest.mark.parametrize("command", [["history"], ["show", "latest"], ["compare", "latest", "latest"]])
def test_format_json_csv_markdown_for_stored_runs(project, run_cli, monkeypatch, command):
    folder, ids, _ = project
    monkeypatch.chdir(folder)
    code, out, err = run_cli(*command, "--format", "json")
    assert code == 0, err
    data = strict_json(out)
    if command[0] == "history":
        assert [r["id"] for r in data] == ids and data[0]["cases"] == 1
    elif command[0] == "show":
        assert data["header"]["run_id"] == ids[1] and data["records"][0]["backend"] == "numpy"
    else:
        assert data["cases"][0]["verdict"] and data["cases"][0]["base_median_s"] > 0
    code, out, _ = run_cli(*command, "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert code == 0 and rows
    key = {"history": "id", "show": "backend", "compare": "verdict"}[command[0]]
    assert all(r[key] for r in rows)
    code, out, _ = run_cli(*command, "--format", "markdown")
    assert code == 0 and "|---|" in out


def test_list_and_env_speak_json_csv_and_markdown(run_cli, monkeypatch):
    # What this test reads is each format; the frameworks are probed once, not once a command (5 × 10 s).
    from arraybench.cli import info

    probed: dict[tuple, dict] = {}

    def probe_once(*args, **kwargs):
        key = (args, tuple(sorted(kwargs.items())))
        if key not in probed:
            probed[key] = real(*args, **kwargs)
        return probed[key]

    real = info.probe
    monkeypatch.setattr(info, "probe", probe_once)
    code, out, _ = run_cli("list", "--format", "json")
    data = strict_json(out)
    assert code == 0 and "linreg" in [w["workload"] for w in data["workloads"]]
    numpy = next(b for b in data["backends"] if b["backend"] == "numpy")
    assert numpy["available"] is True and numpy["version"]
    # Each backend lists the devices of every kind it sees, with ids: here at least the host.
    assert numpy["device_kinds"] == {"cpu": 1} and numpy["devices"][0]["id"] == 0
    code, out, _ = run_cli("list", "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    assert {"workload", "backend", "modes"} <= set(rows[0])
    assert any(r["workload"] == "linreg" and r["backend"] == "numpy" and r["modes"] == "eager" for r in rows)
    code, out, _ = run_cli("env", "--format", "json", "--threads", "1")
    env = strict_json(out)
    assert env["cpu_logical"] >= 1 and env["backends"]["numpy"]["available"]
    code, out, _ = run_cli("env", "--format", "csv", "--threads", "1")
    values = {r["key"]: r["value"] for r in csv.DictReader(io.StringIO(out))}
    assert values["cpu_logical"] == str(env["cpu_logical"]) and "backends.numpy.available" in values
    code, out, _ = run_cli("env", "--format", "markdown", "--threads", "1")
    assert code == 0 and "| cpu_model |" in out


def test_exports_for_dashboards(project, run_cli, monkeypatch):
    folder, ids, commit = project
    monkeypatch.chdir(folder)
    code, _, err = run_cli("export", ids[0], "--format", "pytest-benchmark", "-o", "pb.json")
    assert code == 0, err
    pb = strict_json((folder / "pb.json").read_text())
    [bench] = pb["benchmarks"]
    record = read_jsonl(folder / "benchmark_results" / ids[0] / "results.jsonl")[1]
    assert bench["name"] == record["id"].rsplit("/", 1)[0] and bench["group"] == "linreg"
    assert bench["stats"]["rounds"] == len(record["samples_s"])
    # pytest-benchmark's median is of every sample; the record's is a process's (of its larger mode
    # when its samples split in two, as they may on a loaded host) or the median over processes.
    assert bench["stats"]["median"] == pytest.approx(statistics.median(record["samples_s"]))
    assert bench["stats"]["ops"] == pytest.approx(1 / bench["stats"]["mean"])
    assert pb["commit_info"]["id"] == commit and pb["datetime"].endswith("Z")
    code, _, err = run_cli("export", ids[0], "--format", "bmf", "-o", "bmf.json")
    assert code == 0, err
    bmf = strict_json((folder / "bmf.json").read_text())
    latency = bmf[bench["name"]]["latency"]
    # The exports read the run as everything does (results.reading: a slow spell's samples set aside),
    # so on a loaded host their median may differ from the one the run wrote.
    read = load_results(folder / "benchmark_results" / ids[0] / "results.jsonl").latest()[record["id"]]
    assert latency["value"] == pytest.approx(read.median_s * 1e9)
    assert latency["lower_value"] <= latency["value"] <= latency["upper_value"]


def test_nan_and_infinity_are_written_as_null(tmp_path):
    import numpy as np

    writer = ResultsWriter(tmp_path / "results.jsonl", {"schema": 1, "x": float("nan")})
    writer.append(CaseRecord.from_json({"id": "a", "workload": "w", "params": {}, "backend": "numpy", "mode": "eager",
                                        "dtype": "float32", "status": "wrong", "rel_err": float("inf"),
                                        "samples_s": [1.0, np.float32("nan")],
                                        "ci95_s": np.array([np.nan, 2.0])}))
    writer.close()
    lines = [strict_json(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert lines[0]["x"] is None
    assert lines[1]["rel_err"] is None and lines[1]["samples_s"] == [1.0, None]
    assert lines[1]["ci95_s"] == [None, 2.0]
    assert load_results(tmp_path).records[0].rel_err is None


def test_pyproject_tool_arraybench_sets_run_defaults(tmp_path, monkeypatch):
    (tmp_path / "pyproject.toml").write_text(
        '[tool.arraybench]\nbackends = ["numpy", "jax"]\nthreads = 1\nmin-time = 0.25\ndtype = "float64"\n')
    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path / "sub")  # found from a folder below, as pytest and ruff find theirs
    args = build_parser().parse_args(["run", "--workloads", "linreg"])
    settings = settings_from_args(args)
    assert settings.backends == ["numpy", "jax"] and settings.threads == 1 and settings.dtype == "float64"
    assert settings.timer.min_time == 0.25
    args = build_parser().parse_args(["run", "--workloads", "linreg", "--threads", "2"])
    assert settings_from_args(args).threads == 2  # the command line wins
    run = build_parser()._subparsers._group_actions[0].choices["run"]  # noqa: SLF001
    help_text = "".join(run.format_help().split())  # argparse wraps long paths, even inside words
    assert f"here0.25from{tmp_path / 'pyproject.toml'}".replace(" ", "") in help_text  # the true default


@pytest.mark.parametrize("table, message", [
    ("backend = 'numpy'", "unknown key in"),
    ("threads = 'two'", "argument --threads: invalid int value: 'two'"),
    ("quick = 1", "quick = 1 must be true or false"),
    ("[tool.arraybench", "cannot read"),
])
def test_a_bad_tool_arraybench_table_is_one_line(tmp_path, monkeypatch, run_cli, table, message):
    text = table if table.startswith("[") else f"[tool.arraybench]\n{table}\n"
    (tmp_path / "pyproject.toml").write_text(text)
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli("run", "--workloads", "linreg")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_suite_is_the_option_and_preset_its_old_name():
    for option in ("--suite", "--preset"):
        assert build_parser().parse_args(["run", option, "seeds"]).suite == "seeds"
    args = build_parser().parse_args(["run", "--suite", "seeds"])
    assert settings_from_args(args).suite == "seeds"


def test_local_cluster_shares_the_cores_unless_threads_are_given():
    args = build_parser().parse_args(["run", "--workloads", "linreg", "--cluster", "local:2"])
    assert settings_from_args(args).threads == max(1, default_threads() // 2)
    runner_from_args(args)  # no refusal: local:2 with the default threads fits this machine
    assert cluster.local_threads(None) is None and cluster.local_threads("tcp://h:8786") is None
    if default_threads() >= 2:
        given = build_parser().parse_args(["run", "--cluster", "local:2", "--threads", str(default_threads())])
        with pytest.raises(UsageError, match="lower --threads or N"):
            runner_from_args(given)


def test_help_states_the_defaults_a_plain_run_uses():
    run = build_parser()._subparsers._group_actions[0].choices["run"]  # noqa: SLF001
    text = " ".join(run.format_help().split())
    assert f"{suites.SUITE_TIMER.min_time:g} s in a plain run or a suite" in text
    assert f"{suites.QUICK_TIMER.min_time:g} s with --quick" in text
    assert "benchmark_results/RUN_ID" in text
    assert f"the {default_threads()} usable cores" in text
    assert "default 600" in text and "default float32" in text


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the finaliser's, as meant
@pytest.mark.parametrize("signum, kind", [(signal.SIGINT, KeyboardInterrupt), (signal.SIGTERM, Terminated)])
def test_a_signal_that_code_on_the_way_swallows_still_stops_the_run(signum, kind):
    class Finalised:  # Dask's futures and clients have finalisers: one may be running when Ctrl-C comes
        def __del__(self) -> None:
            os.kill(os.getpid(), signum)  # its exception is raised here, printed as "ignored", and lost

    went_on = False
    # Python's own Ctrl-C handler, as an arraybench started from a shell has (pytest-xdist's workers ignore it).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(kind) as raised, interrupts_kept():
            Finalised()
            went_on = True
    finally:
        signal.signal(signal.SIGINT, previous)
    assert went_on and type(raised.value) is kind  # the block ran to its end, and still ends interrupted


def test_a_ctrl_c_that_the_run_was_started_to_ignore_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # `nohup`, or `cmd &` in a script
    try:
        with interrupts_kept():
            os.kill(os.getpid(), signal.SIGINT)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


def test_sigterm_ends_like_ctrl_c_with_exit_143_and_the_resume_command(tmp_path, run_cli):
    results = tmp_path / "results.jsonl"
    code, err, workers = interrupt_slow_run(tmp_path, signal.SIGTERM)
    assert code == EXIT_TERMINATED == 143 != EXIT_INTERRUPTED
    assert_all_die(workers, within=2)
    kept = load_results(tmp_path)
    assert f"terminated; {len(kept.records)} finished cases kept in {results}" in err
    assert f"resume with: arraybench run --resume {tmp_path}" in err and "Traceback" not in err
    assert_resume_completes(run_cli, tmp_path, results.read_bytes())
