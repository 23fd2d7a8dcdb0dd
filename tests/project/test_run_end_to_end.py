"""A tiny real run through every installed backend: records, checks, threads, tables, errors."""


import pytest

from arraybench.backends import BACKENDS
from tests.helpers.common import FIXTURES, TINY, read_jsonl

INSTALLED = [name for name, cls in BACKENDS.items() if cls.installed()[0] and name != "cupy"]


@pytest.fixture(scope="module")
def linreg_run(tmp_path_factory):
    from arraybench.cli import main

    out = tmp_path_factory.mktemp("run")
    # One size: every backend·mode's path end to end, at half the cost (a torch.compile a size); the
    # runs of several sizes are the report's and the cluster's tests.
    code = main(["run", "--workloads", "linreg,linreg_autodiff", "--sizes", "3", "--dtype", "float64",
                 "--threads", "1", "--output-dir", str(out), *TINY])
    return code, out, read_jsonl(out / "results.jsonl")


def test_every_installed_backend_and_mode_runs_and_is_correct(linreg_run):
    code, out, lines = linreg_run
    header, records = lines[0], lines[1:]
    assert code == 0
    assert header["type"] == "header" and header["schema"] == 3
    assert header["settings"]["dtype"] == "float64"
    assert header["environment"]["versions"]["numpy"]
    ran = {(r["workload"], r["backend"], r["mode"]) for r in records if r["status"] == "ok"}
    expected = {("linreg", "numpy", "eager"), ("linreg", "numba", "jit")}
    for b in ("jax", "tensorflow", "torch"):
        for m in ("eager", "jit"):
            expected |= {("linreg", b, m), ("linreg_autodiff", b, m)}
    assert {t for t in expected if t[1] in INSTALLED} <= ran
    for r in records:
        if r["status"] == "ok":
            assert r["correct"] is True and r["rel_err"] <= r["tolerance"]
            assert r["samples_s"] and min(r["samples_s"]) <= r["median_s"] <= max(r["samples_s"])
            assert r["first_call_s"] > 0 and r["transfer_s"] >= 0
            assert r["flops"] > 0 and r["bytes"] > 0
            assert r["dtype"] == "float64" and r["size"] == 3


def test_numpy_and_numba_say_why_they_have_no_autodiff(linreg_run):
    _, _, lines = linreg_run
    reasons = {r["backend"]: r["error"] for r in lines[1:]
               if r["workload"] == "linreg_autodiff" and r["status"] == "unsupported"}
    assert "no autodiff" in reasons["numpy"] and "no autodiff" in reasons["numba"]


def test_threads_are_verified_in_every_backend(linreg_run):
    _, _, lines = linreg_run
    for r in lines[1:]:
        if r["status"] == "ok":
            info = r["backend_info"]
            assert info["threads_verified"] == 1, (r["backend"], info)
            assert info["cpu_affinity"] == 1
            for pool in info["blas"]:
                assert pool["num_threads"] == 1, (r["backend"], pool)


def test_jax_computes_float64_in_float64(linreg_run):
    _, _, lines = linreg_run
    jax = [r for r in lines[1:] if r["backend"] == "jax" and r["status"] == "ok"]
    if "jax" in INSTALLED:
        assert jax and all(r["backend_info"]["x64"] for r in jax)
        # Every call is synced on the CPU: it runs on the caller's thread, not handed to XLA's pool.
        assert all(r["backend_info"]["cpu_async_dispatch"] is False for r in jax)
        assert all(r["rel_err"] < 1e-10 for r in jax)  # float32 arithmetic could not get here


def test_report_files_and_tables(linreg_run):
    _, out, _ = linreg_run
    md = (out / "report.md").read_text()
    assert "linreg" in md and "numpy·eager" in md and "1.00×" in md


def test_float32_run_and_wrong_and_failing_cases(tmp_path, run_cli):
    code, stdout, stderr = run_cli(
        "run", "--workload-file", str(FIXTURES / "wrong_workload.py"), "--workloads", "double",
        "--backends", "numpy,numba,torch", "--sizes", "small", "--threads", "1",
        "--output-dir", str(tmp_path), *TINY[2:],
    )
    records = {r["backend"]: r for r in read_jsonl(tmp_path / "results.jsonl")[1:]}
    assert code == 1  # some cases failed
    assert records["numpy"]["status"] == "ok" and records["numpy"]["dtype"] == "float32"
    assert records["numba"]["status"] == "wrong" and records["numba"]["correct"] is False
    assert records["torch"]["status"] == "error"
    assert records["torch"]["error"] == "RuntimeError: deliberate failure"
    assert "WRONG" in stdout and "fastest correct is numpy·eager" in stdout
    assert "numba·jit" not in stdout.split("fastest correct is")[1].splitlines()[0]


@pytest.mark.parametrize(
    "args, message",
    [
        (["run", "--backends", "jaxx"], "unknown backend 'jaxx'; did you mean 'jax'?"),
        (["run", "--workloads", "linreg2"], "unknown workload 'linreg2'; did you mean 'linreg'?"),
        (["run", "--sizes", "0"], "sizes must be positive"),
        (["run", "--threads", "0"], "--threads must be at least 1"),
        (["run", "--dtype", "float16"], "unknown dtype 'float16'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run_cli, tmp_path, args, message):
    code, out, err = run_cli(*args, *(["--output-dir", str(tmp_path)] if args[0] == "run" else []))
    assert code == 2
    assert message in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_tables_keep_dtypes_apart():
    from arraybench.report.table import render_text
    from arraybench.results.record import CaseRecord

    def rec(dtype, median):
        return {"id": f"x/{dtype}", "workload": "w", "params": {"n": 1}, "size": 1, "backend": "numpy",
                "mode": "eager", "dtype": dtype, "status": "ok", "median_s": median, "iqr_s": 0.0,
                "error": ""}

    text = render_text([CaseRecord.from_json(rec("float32", 1e-3)), CaseRecord.from_json(rec("float64", 2e-3))])
    assert "w (float32;" in text and "w (float64;" in text
    assert "1 ms" in text.split("w (float64;")[0] and "2 ms" in text.split("w (float64;")[1]
