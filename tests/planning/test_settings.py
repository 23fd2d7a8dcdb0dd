"""Settings made in one place: the CLI and the Python API give the same options the same meaning,
and each kind of run (plain, suite, --quick, chosen workloads) samples as its help says."""

import ast
import dataclasses
from pathlib import Path

import pytest

import arraybench
from arraybench.backends import BACKENDS
from arraybench.cli import build_parser
from arraybench.cli.run import settings_from_args
from arraybench.errors import UsageError
from arraybench.execution import session
from arraybench.measure.timing import TimerConfig
from arraybench.planning.plan import build_plan, planned_devices
from arraybench.planning.settings import (
    DEFAULT_WORKLOADS,
    RunSettings,
    default_threads,
    run_settings,
    sampling,
)
from arraybench.planning.suites import QUICK_TIMER, SUITE_TIMER
from arraybench.units import memory_size
from tests.helpers.common import FIXTURES

SRC = Path(arraybench.__file__).parent
USER_FILE = FIXTURES / "user_workloads.py"


def cli_settings(*argv: str) -> RunSettings:
    return settings_from_args(build_parser().parse_args(["run", *argv]))


def api_settings(monkeypatch, *workloads, **options) -> RunSettings:
    """The settings `arraybench.run()` would run with (nothing is run)."""
    seen = []
    monkeypatch.setattr(session, "execute", lambda settings, *a, **k: seen.append(settings))
    arraybench.run(*workloads, progress=False, output_dir="unused", **options)
    return seen[0]


def test_nothing_given_is_the_default_suite_sampled_with_the_suite_timer(monkeypatch):
    for settings in (run_settings(), cli_settings(), api_settings(monkeypatch)):
        assert settings.workloads == list(DEFAULT_WORKLOADS) and settings.suite is None
        assert settings.backends == list(BACKENDS) and settings.devices == ["cpu"]
        assert settings.threads == default_threads() and settings.timer == SUITE_TIMER


def test_cli_and_python_api_make_the_same_settings_from_the_same_options(monkeypatch):
    cli = cli_settings("--workloads", "linreg,sort", "--backends", "numpy", "--modes", "eager", "--sizes", "small,5",
                       "--params", "iters=7", "--dtype", "float64", "--threads", "1", "--seed", "3",
                       "--min-time", "0.5", "--processes", "2")
    api = api_settings(monkeypatch, "linreg", "sort", backends=["numpy"], modes=["eager"], sizes=["small", 5],
                       params={"iters": 7}, dtype="float64", threads=1, seed=3, min_time=0.5, processes=2)
    assert cli == api
    assert cli.timer == dataclasses.replace(TimerConfig(), min_time=0.5, processes=2)  # chosen workloads: no suite


def test_the_spell_wait_is_a_sampling_option_of_every_kind_of_run(monkeypatch):
    """--spell-wait goes to the timer that samples (the suite's, or the plain one), as --max-time does; 0 stops
    each process at its rule however a spell covers its samples."""
    assert SUITE_TIMER.spell_wait == QUICK_TIMER.spell_wait == TimerConfig().spell_wait > 0
    assert cli_settings("--spell-wait", "0").timer == dataclasses.replace(SUITE_TIMER, spell_wait=0.0)
    assert cli_settings("--quick", "--spell-wait", "2").timer == dataclasses.replace(QUICK_TIMER, spell_wait=2.0)
    assert (cli_settings("--workloads", "sort", "--spell-wait", "0.25")
            == api_settings(monkeypatch, "sort", spell_wait=0.25))
    with pytest.raises(UsageError, match="--spell-wait must be 0 or more seconds, and finite, not nan"):
        run_settings(spell_wait=float("nan")).validate()


def test_a_workload_file_alone_runs_its_workloads_with_the_plain_timer(monkeypatch):
    cli = cli_settings("--workload-file", str(USER_FILE))
    api = api_settings(monkeypatch, str(USER_FILE))
    assert cli == api and cli.workload_file == str(USER_FILE.resolve())
    assert cli.workloads and set(cli.workloads).isdisjoint(DEFAULT_WORKLOADS) and cli.timer == TimerConfig()


def test_a_given_sampling_value_wins_over_the_suite_even_when_it_equals_the_plain_default():
    # --min-samples 10 is TimerConfig's own default; --quick must still sample 10, not its 3.
    settings = cli_settings("--quick", "--min-samples", str(TimerConfig().min_samples))
    assert settings.suite == "quick" and settings.timer.min_samples == TimerConfig().min_samples
    assert settings.timer.min_time == QUICK_TIMER.min_time and settings.timer.processes == QUICK_TIMER.processes
    assert run_settings(suite="seeds", max_time=2.0).timer == dataclasses.replace(SUITE_TIMER, max_time=2.0)


@pytest.mark.parametrize("argv, message", [
    (["--quick", "--workloads", "sort"], "the quick suite chooses workloads and sizes; leave out --workloads"),
    (["--suite", "seeds", "--sizes", "small"], "the seeds suite chooses workloads and sizes"),
    (["--quick", "--suite", "seeds"], "--quick and --suite seeds are two suites; choose one"),
])
def test_a_suite_refuses_what_it_chooses_itself(argv, message):
    with pytest.raises(UsageError, match=message):
        cli_settings(*argv)


def test_help_gives_each_kind_of_run_its_true_sampling_defaults():
    run = build_parser()._subparsers._group_actions[0].choices["run"]  # noqa: SLF001
    text = " ".join(run.format_help().split())
    plain, quick, chosen = sampling(None, True, {}), sampling("quick", False, {}), sampling(None, False, {})
    assert plain == SUITE_TIMER and quick == QUICK_TIMER and chosen == TimerConfig()
    assert (f"default {plain.min_time:g} s in a plain run or a suite, {quick.min_time:g} s with --quick, "
            f"{chosen.min_time:g} s with --workloads" in text)
    assert f"default {quick.processes} with --quick, {plain.processes} otherwise" in text


def test_settings_are_frozen_and_round_trip_through_the_results_header():
    settings = run_settings(workloads=["linreg"], sizes=[5], memory_limit=2**30)
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.threads = 1  # type: ignore[misc]
    assert RunSettings.from_dict(settings.to_dict()) == settings


def test_a_gpu_only_framework_asked_for_on_the_cpu_is_planned_on_its_gpu():
    assert planned_devices(BACKENDS["cupy"], ["cpu"]) == ["gpu"]
    assert planned_devices(BACKENDS["torch"], ["cpu", "gpu"]) == ["cpu", "gpu"]
    plan = build_plan(run_settings(workloads=["sort"], backends=["numpy", "cupy"], sizes=[10]))
    assert {(c.backend, c.device) for c in plan} == {("numpy", "cpu"), ("cupy", "gpu")}


def test_a_framework_asked_only_for_a_kind_it_does_not_run_on_is_planned_there_never_moved():
    """NumPy asked for a GPU is not measured on the CPU in its place: its case is planned on the GPU, and
    the run records it unavailable with why. Asked for the CPU as well, it runs there alone."""
    assert planned_devices(BACKENDS["numpy"], ["gpu"]) == ["gpu"]
    assert planned_devices(BACKENDS["torch"], ["tpu"]) == ["tpu"]
    assert planned_devices(BACKENDS["numpy"], ["cpu", "gpu"]) == ["cpu"]
    assert BACKENDS["numpy"].runs_on("gpu:2") == (False, "numpy runs on cpu only, not gpu")
    assert BACKENDS["torch"].runs_on("tpu") == (False, "torch runs on cpu or gpu only, not tpu")
    assert BACKENDS["jax"].runs_on("gpu:all") == (True, "")


def test_memory_size_says_what_is_wrong_and_the_cli_says_it_in_one_line():
    assert memory_size("1.5G") == 3 * 2**29
    with pytest.raises(ValueError, match="below 1M"):
        memory_size("10k")
    with pytest.raises(UsageError, match="argument --memory-limit: bad size '2X'"):
        build_parser().parse_args(["run", "--memory-limit", "2X"])


# The modules that have their own command line: a run's child process and the peaks probe, started
# by the run, and the developers' generator of docs/results-format.md.
CHILD_ENTRY_POINTS = {"execution/child.py", "execution/torch_peer.py", "measure/peaks.py", "report/fields_doc.py"}


def test_only_the_cli_package_parses_the_command_line():
    importers = set()
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        if rel.parts[0] == "cli" or str(rel) in CHILD_ENTRY_POINTS:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else (
                [node.module] if isinstance(node, ast.ImportFrom) else [])
            if "argparse" in names:
                importers.add(str(rel))
    assert importers == set()


def test_each_run_options_default_is_stated_once_in_run_settings():
    """The CLI, the Python API and run_settings leave every default to RunSettings' fields."""
    import inspect

    from arraybench import api
    from arraybench.planning.options import DEFAULTS
    from arraybench.planning.settings import RunSettings

    defaults = RunSettings()
    given = run_settings()
    for name in ("dtype", "devices", "seed", "timeout", "refine", "cache_limit", "budget", "envs"):
        assert getattr(given, name) == getattr(defaults, name) == getattr(DEFAULTS, name), name
    signature = inspect.signature(api.run).parameters
    assert all(signature[n].default is None for n in ("dtype", "devices", "seed", "timeout", "refine"))
    signature = inspect.signature(run_settings).parameters
    assert all(signature[n].default is None for n in ("dtype", "devices", "seed", "timeout", "refine", "budget"))


def test_each_run_option_is_declared_once_and_the_cli_the_api_and_the_settings_follow_the_table():
    """planning/options.RUN_OPTIONS: every RunSettings field is made by an option of it; every option is a
    flag of `arraybench run` and a keyword of `arraybench.run` (workloads and the workload file: its
    positional workloads) and of `run_settings` (--env-var: within the EnvSpecs of `envs`), not given
    alike in all (None; a flag False), which run_settings turns into RunSettings' own default."""
    import inspect

    from arraybench import api
    from arraybench.cli.arguments import Parser
    from arraybench.cli.run import add_arguments
    from arraybench.planning.options import RUN_OPTIONS

    fields = {f.name for f in dataclasses.fields(RunSettings)}
    assert {o.field for o in RUN_OPTIONS} == fields
    assert len({o.name for o in RUN_OPTIONS}) == len(RUN_OPTIONS)

    parser = Parser(prog="arraybench run")
    add_arguments(parser)
    actions = {a.dest: a for a in parser._actions}  # noqa: SLF001
    keywords = inspect.signature(api.run).parameters
    builder = inspect.signature(run_settings).parameters
    assert keywords["workloads"].kind is inspect.Parameter.VAR_POSITIONAL
    assert {o.name for o in RUN_OPTIONS if not o.keyword} == {"workloads", "workload_file"}
    for o in RUN_OPTIONS:
        action = actions[o.name]
        assert tuple(action.option_strings) == o.flags and action.help == o.help, o.name
        assert action.default == o.default, o.name
        assert action.choices == o.choices and action.metavar == o.metavar, o.name
        if o.keyword:
            assert keywords[o.name].kind is inspect.Parameter.KEYWORD_ONLY, o.name
            assert keywords[o.name].default == o.default, o.name
        if o.name != "env_vars":
            assert o.name in builder, o.name
    assert set(builder) == {o.name for o in RUN_OPTIONS} - {"env_vars"}

    # Nothing given is RunSettings' own default (the sampling: the suite timer of a plain run).
    given = run_settings(**{o.name: o.default for o in RUN_OPTIONS if o.name in builder})
    defaults = RunSettings()
    for name in fields - {"timer"}:
        assert getattr(given, name) == getattr(defaults, name), name
    assert given.timer == sampling(None, True, {})
