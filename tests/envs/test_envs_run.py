"""A run over several Python environments (`--env`): the plan in each, workers started from each
environment's interpreter with its own variables, every environment's processes in the same rounds."""

import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from arraybench.core.case import Case, base_id
from arraybench.envs.spec import run_envs
from arraybench.errors import UsageError
from arraybench.execution.parent import RunConfig, Runner, WorkerLaunch, WorkerPool, turn_groups, worker_env
from arraybench.measure.timing import TimerConfig
from arraybench.planning.plan import build_plan
from arraybench.planning.settings import run_settings
from tests.helpers.common import SRC, TINY, read_jsonl


def test_the_plan_is_measured_in_each_environment_told_apart_by_name():
    one = build_plan(run_settings(workloads=["elementwise_add"], backends=["numpy"], sizes=["small"]))
    two = build_plan(run_settings(workloads=["elementwise_add"], backends=["numpy"], sizes=["small"],
                                  envs=run_envs(["old:", "new:"], [])))
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
        run_envs(envs, env_vars)


def test_another_interpreters_workers_get_its_variables_and_none_of_our_import_path(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/somewhere/site-packages")
    case = Case("elementwise_add", (("n", 10),), "numpy", "eager", "float32", 1, env="old")
    foreign = worker_env(case, launch=WorkerLaunch("/opt/other/bin/python", (("PLANTED", "1.05"),)))
    assert foreign["PLANTED"] == "1.05"
    assert "/somewhere/site-packages" not in foreign.get("PYTHONPATH", "")
    # This arraybench's checkout (the tests run from one) is the harness every environment runs.
    assert foreign["PYTHONPATH"] == str(SRC)
    same = worker_env(case, launch=WorkerLaunch(sys.executable, ()))
    assert "/somewhere/site-packages" in same["PYTHONPATH"] and "PLANTED" not in same


def test_every_environments_processes_are_shuffled_into_the_same_rounds():
    cases = [Case("w", (("n", n),), "numpy", "eager", "float32", 1, env=e) for n in range(8) for e in ("a", "b")]
    for k in range(3):
        order = Runner.order(cases, seed=0, round=k)
        envs = "".join(c.env for c in order)
        assert set(order) == set(cases) and envs not in ("a" * 8 + "b" * 8, "b" * 8 + "a" * 8)
        # A case's two processes run one after the other, so a slow spell of the host reaches both.
        assert all(x.params == y.params for x, y in zip(order[::2], order[1::2], strict=True))
    assert Runner.order(cases, 0, 1) != Runner.order(cases, 0, 2)
    # Which environment goes first is drawn each time: each goes first in about half the pairs.
    firsts = [c.env for k in range(20) for c in Runner.order(cases, 0, k)[::2]]
    assert 0.35 < firsts.count("a") / len(firsts) < 0.65


def test_a_run_config_names_each_environments_interpreter():
    config = RunConfig(TimerConfig(), 0, 10.0, Path("logs"), envs={"old": WorkerLaunch("/x/bin/python")})
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
    assert "numpy·eager·cpu [slow]" in err  # progress names a case as every output does
    # Their processes were measured in turns (a process alone records none). How many turns each took
    # depends on the host's speed; the turns themselves are pinned on a fake clock (test_timing.py).
    assert all(isinstance(r["replicates"][0]["visits"], int) and r["replicates"][0]["visits"] >= 1 for r in cases)


def test_one_label_names_a_configuration_everywhere_and_keeps_environments_apart():
    from arraybench.core.case import label

    case = Case("w", (("n", 1),), "jax", "jit", "float32", 1, device="gpu", env="new")
    assert label(case) == "jax·jit [new]"
    assert label({"backend": "jax", "mode": "jit", "device": "gpu", "machine": "h100"}, device=True,
                 machine=True) == "jax·jit·gpu @h100"


def test_the_report_keeps_each_environments_cases_apart(tmp_path, undrawn_plots):
    from arraybench.report import write_all
    from tests.report.test_report import record, results_of

    recs = [record("add", 1000, "numpy", "eager", median, env=env, id=f"add[d=1000]/numpy-eager/x@{env}")
            for env, median in (("old", 1e-3), ("new", 0.5e-3))]
    rep = write_all([results_of(recs)], tmp_path)
    rows = [line.split()[:2] for line in rep.summary.splitlines() if line.startswith("numpy·eager")]
    assert ["numpy·eager", "[new]"] in rows and ["numpy·eager", "[old]"] in rows
    assert "numpy·eager [new] is fastest" in rep.markdown.read_text()


def _two_env_run(path: Path, slowdown: float, drift: list[float], rounds: int = 4,
                 environments: dict | None = None) -> Path:
    """A results file of one run over environments old and new: each case's process in round k
    took base·drift[k] (old) and base·drift[k]·slowdown (new), a few samples each; `environments`,
    the header's (by default numpy 2.3.5 against 2.4.6, as files before packages were recorded)."""
    from dataclasses import replace

    from arraybench.execution.parent import merge_processes
    from arraybench.results import ResultsWriter
    from arraybench.workloads import blank_record

    header = {"schema": 3, "run_id": "r1", "started": "2026-01-01T00:00:00Z", "plan_size": 8,
              "settings": {"dtype": "float32", "threads": 1, "seed": 0},
              "environment": {"hostname": "box", "cpu_model": "cpu", "cpu_logical": 2, "gpus": [],
                              "versions": {"numpy": "2.4.6"}},
              "environments": environments or {
                  "old": {"spec": "numpy==2.3.5", "versions": {"numpy": "2.3.5"}},
                  "new": {"spec": "numpy==2.4.6", "versions": {"numpy": "2.4.6"},
                          "variables": {"PLANTED": f"{slowdown:g}"}}}}
    w = ResultsWriter(path, header)
    for n in (1000, 2000, 4000, 8000):
        for env, factor in (("old", 1.0), ("new", slowdown)):
            case = Case("elementwise_add", (("n", n),), "numpy", "eager", "float32", 1, env=env)
            procs = []
            for k in range(rounds):
                t = 1e-6 * n * drift[k] * factor
                samples = tuple(t * (1 + 0.002 * j) for j in (-2, -1, 0, 1, 2))
                procs.append(replace(blank_record(case, "ok"), samples_s=samples, median_s=t, round=k, loops=1))
            w.append(merge_processes(procs))
    w.close()
    return path


def test_compare_pairs_two_environments_of_one_run_by_round(tmp_path, run_cli):
    """A 5 % slowdown under a drift of ±15 % between rounds: paired, every case is slower; the same
    two files compared as two runs (unpaired) cannot tell."""
    import json

    drift = [1.0, 1.15, 0.87, 1.1]
    path = _two_env_run(tmp_path / "run.jsonl", 1.05, drift)
    code, out, err = run_cli("compare", f"{path}@old", f"{path}@new", "--format", "json", "--threshold", "2")
    assert code == 0, err
    shown = json.loads(out)
    assert [c["verdict"] for c in shown["cases"]] == ["slower"] * 4
    assert shown["differences"] == ["versions.numpy: 2.3.5 → 2.4.6"]
    assert {c["row"] for c in shown["cases"]} == {"numpy·eager"}  # the sides name the environments
    # The same records, each side a file of its own: no pairing, and the drift hides the change.
    from arraybench.comparison import compare, environment_side
    from arraybench.results import load_results

    res = load_results(path)
    unpaired = compare(environment_side(res, "old"), environment_side(res, "new"), threshold=0.02)
    assert all(c.verdict != "slower" for c in unpaired.cases)


def test_an_unknown_environment_is_one_line(tmp_path, run_cli):
    path = _two_env_run(tmp_path / "run.jsonl", 1.0, [1.0, 1.0, 1.0, 1.0])
    code, _, err = run_cli("compare", f"{path}@old", f"{path}@newer")
    assert code == 2 and "has no environment 'newer' (its environments: new, old)" in err


def test_the_reports_first_screen_says_each_environment_against_the_first(tmp_path, undrawn_plots):
    from arraybench.report import write_all
    from arraybench.results import load_results

    path = _two_env_run(tmp_path / "run.jsonl", 1.08, [1.0, 1.15, 0.87, 1.1])
    rep = write_all([load_results(path)], tmp_path / "report")
    said = ("numpy 2.4.6 against 2.3.5: faster in 0 of 4 cases, slower in 4 (median +8 %), "
            "the same within 5 % in 0, undecided in 0")
    assert said in rep.markdown.read_text() and said in rep.summary
    html = rep.html.read_text()
    assert html.index(said) < html.index("winners")  # above the map, on the first screen


def test_the_environments_processes_of_one_round_share_one_layout():
    """Common random numbers: a round's layout (pads, input offsets) is the same in every
    environment's worker, so the paired difference carries none of its noise; rounds differ."""
    import numpy as np

    from arraybench.execution import child
    from arraybench.execution.parent import layout_seed
    from arraybench.measure.case_executor import CaseExecutor

    a, b = (Case("elementwise_add", (("n", 1000),), "numpy", "eager", "float32", 1, env=e) for e in ("a", "b"))
    assert layout_seed(a, 0, 1) == layout_seed(b, 0, 1) != layout_seed(a, 0, 2)
    pads = {len(worker_env(c, layout=layout_seed(c, 0, 1))["ARRAYBENCH_LAYOUT_PAD"]) for c in (a, b)}
    assert len(pads) == 1
    assert child.perturb_layout(7)["heap_pad_bytes"] == child.perturb_layout(7)["heap_pad_bytes"]

    class Host:
        host_args = False

        def host_inputs(self, seed, dtype, params):
            return (np.ones(1000, dtype), np.ones(1000, dtype))

    class Backend:
        pipelined = False

    def offsets(case, seed):
        return CaseExecutor(Backend(), layout={"seed": seed}).inputs(Host(), case, 0)[2]

    assert offsets(a, 5) == offsets(b, 5)
    assert len({tuple(offsets(a, seed)) for seed in range(8)}) > 1


def test_a_case_in_several_environments_is_one_group_of_the_order():
    cases = [Case("w", (("n", n),), "numpy", "eager", "float32", 1, env=e) for n in range(3) for e in ("a", "b")]
    order = Runner.order(cases, seed=0, round=1)
    groups = turn_groups(order)
    assert [len(g) for g in groups] == [2, 2, 2] and [c for g in groups for c in g] == order
    assert all({c.env for c in g} == {"a", "b"} and len({c.params for c in g}) == 1 for g in groups)
    one = [replace(c, env="") for c in cases[::2]]  # one environment, one backend·mode: every case alone
    assert turn_groups(one) == [[c] for c in one]


def test_the_processes_of_a_group_take_turns_in_their_own_workers(tmp_path):
    """Two environments of one interpreter, and a member that can run nowhere here: the two take
    turns (each paused while the other samples), the third is recorded unavailable, and each
    one's seconds are its own turns, not the others'."""
    config = RunConfig(TimerConfig(min_time=0.2, max_time=0.4, min_samples=3, processes=1), 0, 120.0,
                       tmp_path / "logs", envs={"a": WorkerLaunch(sys.executable), "b": WorkerLaunch(sys.executable)})
    cases = [Case("elementwise_add", (("n", 1000),), "numpy", "eager", "float64", 1, env="a"),
             Case("elementwise_add", (("n", 1000),), "numpy", "eager", "float64", 1, env="b"),
             Case("elementwise_add", (("n", 1000),), "numpy", "eager", "float64", 1, device="gpu", env="c")]
    pool = WorkerPool(config)
    try:
        t0 = time.monotonic()
        (a, a_s), (b, b_s), (c, _) = pool.run_group(cases, visit_s=0.02)
        elapsed = time.monotonic() - t0
    finally:
        pool.close()
    assert a.status == b.status == "ok" and c.status == "unavailable"
    # Each sampled 0.2 s at least, ten turns' worth, so each paused at least once (a count of turns
    # beyond that depends on the host's speed: the fake clock of test_timing.py pins it).
    assert a.visits >= 2 and b.visits >= 2
    assert a.timer_s < a_s and b.timer_s < b_s and a_s + b_s <= elapsed + 0.01
