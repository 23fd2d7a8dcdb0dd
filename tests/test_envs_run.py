"""A run over several Python environments (`--env`): the plan in each, workers started from each
environment's interpreter with its own variables, every environment's processes in the same rounds."""

import sys
from pathlib import Path

import pytest
from conftest import TINY, read_jsonl

from arraybench.case import Case, base_id
from arraybench.errors import UsageError
from arraybench.execution.parent import RunConfig, Runner, WorkerEnv, worker_env
from arraybench.plan import build_plan
from arraybench.settings import run_settings
from arraybench.timing import TimerConfig


def test_the_plan_is_measured_in_each_environment_told_apart_by_name():
    one = build_plan(run_settings(workloads=["elementwise_add"], backends=["numpy"], sizes=["small"]))
    two = build_plan(run_settings(workloads=["elementwise_add"], backends=["numpy"], sizes=["small"],
                                  envs=["old:", "new:"]))
    assert len(two) == 2 * len(one)
    assert {c.id for c in two} == {f"{c.id}@{e}" for c in one for e in ("old", "new")}
    assert {base_id(c.id, c.env) for c in two} == {c.id for c in one}
    assert Case.from_dict({**two[0].to_dict()}).id == two[0].id


@pytest.mark.parametrize(("envs", "env_vars", "message"), [
    (["a:", "a:"], [], "the name 'a' is given to two environments"),
    ([], ["a:X=1"], "give the --env it names"),
    (["a:"], ["b:X=1"], "b"),
])
def test_bad_environments_are_one_line(envs, env_vars, message):
    with pytest.raises(UsageError, match=message):
        build_plan(run_settings(workloads=["elementwise_add"], backends=["numpy"], envs=envs, env_vars=env_vars))


def test_another_interpreters_workers_get_its_variables_and_none_of_our_import_path(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere/site-packages")
    case = Case("elementwise_add", (("n", 10),), "numpy", "eager", "float32", 1, env="old")
    foreign = worker_env(case, env=WorkerEnv("/opt/other/bin/python", (("PLANTED", "1.05"),)))
    assert foreign["PLANTED"] == "1.05"
    assert "/somewhere/site-packages" not in foreign.get("PYTHONPATH", "")
    # This arraybench's checkout (the tests run from one) is the harness every environment runs.
    assert foreign["PYTHONPATH"] == str(Path(__file__).resolve().parents[1] / "src")
    same = worker_env(case, env=WorkerEnv(sys.executable, ()))
    assert "/somewhere/site-packages" in same["PYTHONPATH"] and "PLANTED" not in same


def test_every_environments_processes_are_shuffled_into_the_same_rounds():
    cases = [Case("w", (("n", n),), "numpy", "eager", "float32", 1, env=e) for n in range(8) for e in ("a", "b")]
    for k in range(3):
        order = Runner.order(cases, seed=0, round=k)
        envs = "".join(c.env for c in order)
        assert set(order) == set(cases) and envs not in ("a" * 8 + "b" * 8, "b" * 8 + "a" * 8)
    assert Runner.order(cases, 0, 1) != Runner.order(cases, 0, 2)


def test_a_run_config_names_each_environments_interpreter():
    config = RunConfig(TimerConfig(), 0, 10.0, Path("logs"), envs={"old": WorkerEnv("/x/bin/python")})
    assert config.python("old") == "/x/bin/python" and config.python("") == sys.executable


def test_a_run_over_two_environments_records_each_with_its_versions_and_variables(tmp_path, run_cli):
    """Both environments are this interpreter (no build here); the second's workers see its variable,
    which a workload file turns into more work, so its cases are the slower ones."""
    out = tmp_path / "out"
    code, _, err = run_cli("run", "--workloads", "elementwise_add", "--backends", "numpy", "--env", "base:",
                           "--env", "slow:", "--env-var", "slow:ARRAYBENCH_TEST_VAR=yes",
                           "--output-dir", str(out), "--no-store", *TINY[2:], "--sizes", "small")
    assert code == 0, err
    header, *lines = read_jsonl(out / "results.jsonl")
    assert set(header["environments"]) == {"base", "slow"}
    assert header["environments"]["slow"]["variables"] == {"ARRAYBENCH_TEST_VAR": "yes"}
    assert header["environments"]["base"]["versions"]["numpy"]
    cases = [r for r in lines if r.get("type", "case") == "case"]
    assert sorted(r["env"] for r in cases) == ["base", "slow"]
    assert all(r["id"].endswith("@" + r["env"]) and r["status"] == "ok" for r in cases)
    assert "@slow" in err


def test_one_label_names_a_configuration_everywhere_and_keeps_environments_apart():
    from arraybench.case import label

    case = Case("w", (("n", 1),), "jax", "jit", "float32", 1, device="gpu", env="new")
    assert label(case) == "jax·jit [new]"
    assert label({"backend": "jax", "mode": "jit", "device": "gpu", "machine": "h100"}, device=True,
                 machine=True) == "jax·jit·gpu @h100"


def test_the_report_keeps_each_environments_cases_apart(tmp_path):
    from test_report import record, results_of

    from arraybench.report import write_all

    recs = [record("add", 1000, "numpy", "eager", median, env=env, id=f"add[d=1000]/numpy-eager/x@{env}")
            for env, median in (("old", 1e-3), ("new", 0.5e-3))]
    rep = write_all([results_of(recs)], tmp_path)
    rows = [line.split()[:2] for line in rep.summary.splitlines() if line.startswith("numpy·eager")]
    assert ["numpy·eager", "[new]"] in rows and ["numpy·eager", "[old]"] in rows
    assert "numpy·eager [new] is fastest" in rep.markdown.read_text()
