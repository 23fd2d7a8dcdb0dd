"""Your own workloads: written once, run and checked on every backend, pitfalls as `unsupported`."""

import os

import pytest

import arraybench as ab
from arraybench.backends import BACKENDS
from arraybench.errors import UsageError
from tests.helpers.common import FIXTURES, ROOT, read_jsonl

EXAMPLES = ROOT / "examples"
INSTALLED = [name for name, cls in BACKENDS.items() if cls.installed()[0] and name != "cupy"]
# One process a case: replication has its own tests (test_replication.py).
TIMER = ["--min-time", "0.01", "--max-time", "0.2", "--min-samples", "3", "--processes", "1"]


@pytest.fixture(scope="module")
def examples_run(tmp_path_factory):
    from arraybench.cli import main

    out = tmp_path_factory.mktemp("examples")
    code = main(["run", "--workload-file", str(FIXTURES / "examples.py"), "--sizes", "small",
                 "--params", "n=24,steps=3", "--threads", "1", "--output-dir", str(out), *TIMER])
    records = read_jsonl(out / "results.jsonl")[1:]
    return code, {(r["workload"], r["backend"], r["mode"]): r for r in records}


@pytest.fixture(scope="module")
def user_run(tmp_path_factory):
    backends = [b for b in ("numpy", "jax", "tensorflow") if b in INSTALLED]
    results = ab.run(FIXTURES / "user_workloads.py", backends=backends, dtype="float64", threads=1,
                     min_time=0.01, max_time=0.2, min_samples=3, processes=1, refine=0, progress=False,
                     output_dir=tmp_path_factory.mktemp("user"))
    return results, {(r.workload, r.backend, r.mode): r for r in results.latest().values()}


@pytest.mark.parametrize("name", ["heat", "pairwise"])
def test_examples_run_correctly_on_every_installed_backend_and_mode(examples_run, name):
    code, records = examples_run
    assert code == 0
    expected = {("numpy", "eager"), ("numba", "jit")}
    expected |= {(b, m) for b in ("jax", "tensorflow", "torch") for m in ("eager", "jit")}
    for backend, mode in expected:
        if backend in INSTALLED:
            r = records[(name, backend, mode)]
            assert r["status"] == "ok", (backend, mode, r["error"])
            assert r["correct"] and r["rel_err"] <= r["tolerance"] == 1e-4  # float32 by default
            assert r["flops"] > 0 and r["bytes"] > 0 and r["first_call_s"] > 0


def test_numba_runs_an_override_compiled_by_the_user_and_says_how_to_add_one(tmp_path, run_cli):
    if "numba" not in INSTALLED:
        pytest.skip("numba is not installed")
    code, _, _ = run_cli("run", "--workload-file", str(FIXTURES / "numba_workloads.py"),
                         "--backends", "numpy,numba", "--output-dir", str(tmp_path), *TIMER)
    records = {(r["workload"], r["backend"]): r for r in read_jsonl(tmp_path / "results.jsonl")[1:]}
    assert code == 0
    assert records[("precompiled", "numba")]["status"] == "ok"
    assert records[("plain", "numba")]["status"] == "unsupported"
    assert "@plain.override('numba', 'jit')" in records[("plain", "numba")]["error"]


@pytest.mark.parametrize("example", ["heat.py", "pairwise.py"])
def test_each_example_runs_from_the_command_line(tmp_path, run_cli, example):
    code, out, _ = run_cli("run", "--workload-file", str(EXAMPLES / example), "--backends", "numpy",
                           "--sizes", "small", "--output-dir", str(tmp_path), *TIMER)
    assert code == 0
    assert example.removesuffix(".py") in (tmp_path / "report.md").read_text()
    assert "fastest correct is numpy·eager" in out


PITFALLS = {
    ("assign", "jax", "eager"): "JAX arrays are immutable: x[i] = v is not allowed; use x = x.at[i].set(v)",
    ("assign", "jax", "jit"): "JAX arrays are immutable: x[i] = v is not allowed; use x = x.at[i].set(v)",
    ("assign", "tensorflow", "eager"): "TensorFlow arrays are immutable: x[i] = v is not allowed",
    ("masked", "jax", "jit"): "under jax.jit an array's shape cannot depend on its values",
    ("branch", "jax", "jit"): "under jax.jit a Python if/while cannot test an array's value",
    ("joined", "tensorflow", "eager"): "TensorFlow's array namespace (tf.experimental.numpy) has no 'concat'",
    ("transposed", "tensorflow", "jit"): "TensorFlow arrays (SymbolicTensor) have no attribute 'T'",
}


@pytest.mark.parametrize("key", PITFALLS)
def test_what_a_framework_cannot_run_is_unsupported_with_the_reason(user_run, key):
    if key[1] not in INSTALLED:
        pytest.skip(f"{key[1]} is not installed")
    _, records = user_run
    assert records[key].status == "unsupported"
    assert records[key].error.startswith(PITFALLS[key])


def test_everything_else_runs_on(user_run):
    _, records = user_run
    failed_on_purpose = set(PITFALLS) | {("assign", "tensorflow", "jit"), ("joined", "tensorflow", "jit"),
                                         ("transposed", "tensorflow", "eager"), ("doubled", "jax", "eager")}
    rest = {k: r.status for k, r in records.items() if k not in failed_on_purpose and k[0] != "careless"}
    assert len(rest) >= 6 and set(rest.values()) == {"ok"}, rest


def test_inputs_in_another_dtype_than_the_run_are_an_error_saying_so(user_run):
    _, records = user_run
    r = records[("careless", "numpy", "eager")]
    assert r.status == "error"
    assert "careless's input 0 is float32 in a float64 run; make it with .astype(dtype)" in r.error


def test_an_override_replaces_only_its_own_backend_and_mode(user_run):
    _, records = user_run
    if "jax" not in INSTALLED:
        pytest.skip("jax is not installed")
    assert records[("doubled", "jax", "eager")].status == "wrong"  # the override is 3·x on purpose
    assert records[("doubled", "jax", "jit")].status == "ok"


def test_the_default_reference_is_the_function_run_by_numpy_in_float64(user_run):
    _, records = user_run
    numpy = records[("saxpy", "numpy", "eager")]
    assert numpy.status == "ok" and numpy.rel_err == 0.0 and numpy.tolerance == 1e-10
    assert numpy.flops == 100.0


def test_results_become_a_dataframe(user_run):
    results, records = user_run
    df = results.to_dataframe()
    assert len(df) == len(records)
    assert {"workload", "backend", "mode", "status", "median_s", "param.n", "version"} <= set(df.columns)
    ok = df[df.status == "ok"]
    assert (ok.median_s > 0).all() and (ok["param.n"] == 50).all()


def test_a_file_that_fails_to_import_is_one_line_and_exit_2(tmp_path, run_cli):
    code, _, err = run_cli("run", "--workload-file", str(FIXTURES / "broken_import.py"),
                           "--output-dir", str(tmp_path))
    assert code == 2
    assert "broken_import.py' failed to import: NameError: name 'undefined_name' is not defined" in err
    assert len(err.strip().splitlines()) == 1


def _f(xp, x):
    return x


@pytest.mark.parametrize(
    "define, message",
    [
        (lambda: ab.workload(presets={"small": {"n": 1}})(_f).override("numpy", "jit"),
         "override('numpy', ...) needs modes numpy has: eager"),
        (lambda: ab.workload(presets={"small": {"n": 1}, "large": {"m": 2}})(_f),
         "preset 'large' sets 'm', which is not a parameter"),
        (lambda: ab.workload(presets={"small": {"n": 1}}, size="d")(_f), "size='d' is not one of its parameters"),
        (lambda: ab.workload()(_f), "needs presets= or params="),
    ],
)
def test_mistakes_in_a_definition_say_what_to_fix(define, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        define()


def test_a_workload_defined_in_a_notebook_cell_is_refused_with_the_way_out():
    cell: dict = {}
    exec(compile("def f(xp, x):\n    return x\n", "<ipython-input-1>", "exec"), cell)
    wl = ab.workload(presets={"small": {"n": 4}})(cell["f"])
    assert wl(None, 3) == 3  # still callable as the function itself
    with pytest.raises(UsageError, match="%%writefile"):
        ab.run(wl)


def test_an_edited_file_is_read_again(tmp_path):
    from arraybench.workloads.userfile import load_workload_file

    bench = tmp_path / "bench.py"
    source = ("import arraybench as ab\n\n@ab.workload(params={{'n': 4}})\ndef {}(xp, x):\n    return x\n\n"
              "{}.inputs(lambda rng, n: (rng.random(n),))\n")
    bench.write_text(source.format("first", "first"))
    assert list(load_workload_file(str(bench))) == ["first"]
    bench.write_text(source.format("second", "second"))
    os.utime(bench, ns=(0, bench.stat().st_mtime_ns + 1_000_000))
    assert list(load_workload_file(str(bench))) == ["second"]


def test_presets_that_change_two_parameters_are_reported_as_two_problems(tmp_path, run_cli):
    code, out, _ = run_cli("run", "--workload-file", str(FIXTURES / "two_params.py"), "--backends", "numpy",
                           "--output-dir", str(tmp_path), *TIMER)
    assert code == 0
    header = next(line for line in out.splitlines() if line.startswith("backend·mode"))
    assert [c.strip() for c in header.split("  ") if c.strip()][1:] == ["n=8, m=16", "n=32, m=64"]
    crossovers = next(line for line in out.splitlines() if line.startswith("Crossovers"))
    assert "matvec: its cases differ in m as well as n" in crossovers
    glance = out.split("The answer at a glance")[1]  # the terminal's table: a row per problem
    assert "matvec (m=16)" in glance and "matvec (m=64)" in glance
    answer = (tmp_path / "report.md").read_text().split("## The answer")[1]
    assert "**matvec (float32; m=16).** At n = 8, numpy·eager is fastest" in answer
    assert "**matvec (float32; m=64).** At n = 32, numpy·eager is fastest" in answer
    assert "every measured n" not in answer
