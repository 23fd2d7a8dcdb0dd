"""Environments a run measures in: `--env`/`--env-var` and their errors, the cache and its reuse, real uv builds."""

import os
import sys
import threading
import tomllib
import venv
from pathlib import Path

import pytest

from arraybench.core.env_spec import EnvRequirement
from arraybench.envs import EnvSpec, parse_envs, prepare
from arraybench.envs import build as envbuild
from arraybench.envs.sources import pin_all
from arraybench.envs.spec import MIN_PYTHON
from arraybench.errors import UsageError
from arraybench.machine import host
from tests.helpers.common import ROOT, at_once


def one_line_error(envs, env_vars=()) -> str:
    with pytest.raises(UsageError) as raised:
        parse_envs(envs, env_vars)
    message = str(raised.value)
    assert "\n" not in message
    return message


def script(path: Path, body: str, mode: int = 0o755) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(mode)
    return path


# --- --env and --env-var -------------------------------------------------------------------------------------


def test_each_form_of_env_reads_as_its_kind_with_its_own_variables():
    old, np23, base, mine = parse_envs(
        ["old:jax==0.9.2", "np23:numpy==2.3.5  numba", "base:", f"mine:@{sys.executable}"],
        ["old:JAX_ENABLE_X64=1", "old:XLA_FLAGS=--a=b", "mine:EMPTY="])
    assert old == EnvSpec("old", "requirements", (EnvRequirement("jax==0.9.2", "index", "jax==0.9.2"),),
                          env_vars=(("JAX_ENABLE_X64", "1"), ("XLA_FLAGS", "--a=b")), text="jax==0.9.2")
    assert [r.text for r in np23.requirements] == ["numpy==2.3.5", "numba"] and np23.env_vars == ()
    assert np23.describe() == "numpy==2.3.5 numba"
    assert base == EnvSpec("base", "current")
    assert mine.kind == "interpreter" and mine.python == Path(sys.executable) and mine.env_vars == (("EMPTY", ""),)


@pytest.mark.parametrize("arg, says", [
    ("old", "write NAME:SPEC"),
    (":six", "needs a name before ':'"),
    ("a b:six", "a name is letters, digits"),
    ("-x:six", "a name is letters, digits"),
    ("t:numpy==0.0.0.nonexistent", "cannot read the requirement 'numpy==0.0.0.nonexistent'"),
    ("t:numpy >=", "cannot read the requirement '>='"),
    ("mine:@", "write the interpreter after '@'"),
    ("mine:@/no/such/python", "there is no interpreter at '/no/such/python'"),
    ("mine:@no-such-python-arraybench", "there is no 'no-such-python-arraybench' on PATH"),
    ("mine:@/", "is not an executable file"),
])
def test_a_bad_env_is_one_line_naming_what_is_wrong(arg, says):
    assert says in one_line_error([arg])


def test_two_environments_cannot_share_a_name():
    assert "the name 'a' is given to two environments" in one_line_error(["a:six", "a:"])


@pytest.mark.parametrize("arg, says", [
    ("old", "write NAME:VAR=VALUE"),
    ("old:X", "write NAME:VAR=VALUE"),
    ("olx:X=1", "unknown environment 'olx'; did you mean 'old'?"),
    ("old:1X=1", "'1X' is not a variable name"),
    ("old:=1", "'' is not a variable name"),
])
def test_a_bad_env_var_is_one_line_naming_what_is_wrong(arg, says):
    assert says in one_line_error(["old:six", "new:"], [arg])


def test_an_env_var_is_set_once_per_environment_and_needs_an_env():
    assert "X is set twice for the environment 'old'" in one_line_error(["old:six"], ["old:X=1", "old:X=2"])
    assert "no --env NAME:SPEC defines an environment 'old'" in one_line_error([], ["old:X=1"])


def test_an_interpreter_must_be_executable_and_a_recent_enough_python(tmp_path):
    plain = script(tmp_path / "plain", "exit 0", mode=0o644)
    assert "is not an executable file" in one_line_error([f"mine:@{plain}"])
    old = script(tmp_path / "python3.10", "printf 3.10.4")
    assert "is Python 3.10.4; arraybench needs Python 3.11 or newer" in one_line_error([f"mine:@{old}"])
    assert "is not a Python interpreter" in one_line_error([f"mine:@{script(tmp_path / 'sh', 'exit 1')}"])


def test_an_interpreter_without_a_slash_is_looked_up_on_path(tmp_path, monkeypatch):
    found = script(tmp_path / "py", "printf 3.12.1")
    monkeypatch.setenv("PATH", str(tmp_path))
    assert parse_envs(["mine:@py"])[0].python == found


def test_the_interpreter_check_asks_for_what_arraybench_requires():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=" + ".".join(map(str, MIN_PYTHON))


# --- interpreters and versions -------------------------------------------------------------------------------


def test_prepare_gives_each_environment_its_interpreter_versions_and_variables():
    lines: list[str] = []
    envs = prepare(parse_envs(["base:", f"mine:@{sys.executable}"], ["mine:OMP_NUM_THREADS=1"]), lines.append)
    assert list(envs) == ["base", "mine"] and lines == []
    assert envs["base"].python == Path(sys.executable) and envs["base"].variables == {}
    assert envs["base"].versions == host.versions()
    # The same interpreter asked in a process of its own, its import path its own, reads the same.
    assert envs["mine"].versions == host.versions()
    assert envs["mine"].variables == {"OMP_NUM_THREADS": "1"}


def test_an_interpreter_without_arraybench_is_one_line_saying_how_to_install_it(tmp_path):
    venv.create(tmp_path / "bare", with_pip=False)
    with pytest.raises(UsageError, match=r"cannot import arraybench; install it there with `.*-m pip install -e "):
        prepare(parse_envs([f"bare:@{tmp_path / 'bare' / 'bin' / 'python'}"]), print)


# --- the cache key -------------------------------------------------------------------------------------------

SOURCE = envbuild.Source(("-e", "/src/arraybench"), "/src/arraybench 0123", ROOT)


def pinned(spec: EnvSpec) -> tuple:
    return pin_all(spec.name, spec.requirements, envbuild.copies_dir())


def key(requirements: str, source: envbuild.Source = SOURCE, cuda: bool = False) -> str:
    return envbuild.recipe(pinned(parse_envs([f"t:{requirements}"])[0]), source, cuda).key()


def test_the_same_requirements_in_another_order_or_spelling_are_the_same_environment():
    assert key("numpy==2.3.5 numba") == key("numba numpy==2.3.5") == key("NumPy==2.3.5 Numba")
    assert key("jax[cpu]>=0.4,<0.5") == key("JAX[CPU]<0.5,>=0.4")


def test_another_version_of_a_requirement_python_or_arraybench_is_another_environment(monkeypatch):
    assert key("six==1.16.0") != key("six==1.17.0")
    released = envbuild.Source(("arraybench==0.1.0",), "0.1.0", None)
    assert key("six==1.16.0", released) != key("six==1.16.0", envbuild.Source(("arraybench==0.2.0",), "0.2.0", None))
    before = key("six==1.16.0")
    monkeypatch.setattr(envbuild.platform, "python_version", lambda: "3.12.1")
    assert key("six==1.16.0") != before


def test_without_cuda_torch_comes_from_the_cpu_index_pinned_as_ci_pins_it_unless_the_spec_names_torch():
    pins = tuple(line for line in (ROOT / "constraints.txt").read_text().splitlines() if "+cpu" in line)
    spec = pinned(parse_envs(["t:six"])[0])
    assert envbuild.recipe(spec, SOURCE, cuda=False).constraints == pins
    assert envbuild.recipe(spec, SOURCE, cuda=False).torch_backend == "cpu"
    assert envbuild.recipe(pinned(parse_envs(["t:torch==2.12.0"])[0]), SOURCE, cuda=False).constraints == ()
    assert envbuild.recipe(pinned(parse_envs(["t:torch @ https://h/torch.whl"])[0]), SOURCE,
                           cuda=False).constraints == ()
    assert envbuild.recipe(spec, SOURCE, cuda=True).constraints == ()
    assert envbuild.recipe(spec, SOURCE, cuda=True).torch_backend == "auto"


def test_this_checkout_is_installed_editable_with_what_user_workloads_need_and_its_pyproject_is_part_of_the_key():
    source = envbuild.arraybench_source()
    assert source.install == ("-e", f"{ROOT}[user]") and source.root == ROOT
    assert f"{ROOT}[user]" in source.identity
    user = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["user"]
    assert [r.split(">")[0] for r in user] == ["array-api-compat"]


def test_an_installed_arraybench_is_installed_again_from_its_commit_else_its_release(monkeypatch):
    """arraybench is not on PyPI: one installed from its git URL gives each environment that commit."""
    class Installed:
        def __init__(self, direct_url):
            self.direct_url = direct_url

        def read_text(self, name):
            return self.direct_url

    url = '{"url": "https://host/arraybench", "vcs_info": {"vcs": "git", "commit_id": "' + "c" * 40 + '"}}'
    monkeypatch.setattr(envbuild.importlib.metadata, "distribution", lambda name: Installed(url))
    assert envbuild.installed_from() == f"arraybench[user] @ git+https://host/arraybench@{'c' * 40}"
    monkeypatch.setattr(envbuild.importlib.metadata, "distribution", lambda name: Installed(None))
    assert envbuild.installed_from() == f"arraybench[user]=={envbuild.__version__}"


@pytest.mark.parametrize("variables, where", [
    ({"ARRAYBENCH_CACHE": "/c", "XDG_CACHE_HOME": "/x"}, "/c/envs"),
    ({"XDG_CACHE_HOME": "/x"}, "/x/arraybench/envs"),
    ({"HOME": "/h"}, "/h/.cache/arraybench/envs"),
])
def test_the_cache_is_under_arraybench_cache_else_the_users_cache_directory(monkeypatch, variables, where):
    for name in ("ARRAYBENCH_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    assert envbuild.cache_dir() == Path(where)


# --- building and reusing, with a stand-in for uv ---------------------------------------------------------------


class FakeUv:
    """Stands in for uv: `venv` makes an interpreter link, `pip install` prints progress or fails."""

    def __init__(self, fail: str | None = None, pause: threading.Event | None = None) -> None:
        self.calls: list[list[str]] = []
        self.fail, self.pause = fail, pause

    def __call__(self, spec, cmd, progress):
        self.calls.append(list(cmd))
        if cmd[1] == "venv":
            (Path(cmd[-1]) / "bin").mkdir()
            (Path(cmd[-1]) / "bin" / "python").symlink_to(sys.executable)
            return
        if self.pause is not None:
            self.pause.wait(5)
        progress("Resolved 1 package in 0.01s")
        if self.fail:
            raise UsageError(f"--env {spec.name}: cannot build: {self.fail}")
        progress("Installed 1 package in 1ms")


def python_for(spec: EnvSpec, progress) -> Path:
    return envbuild.python_for(spec, pinned(spec), progress)


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv("ARRAYBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(envbuild.nvidia, "devices", list)  # no CUDA, whatever this machine has
    monkeypatch.setattr(envbuild, "uv_binary", lambda name: "uv")
    return tmp_path / "cache" / "envs"


def test_a_built_environment_is_reused_without_running_uv(cache, monkeypatch):
    uv, lines = FakeUv(), []
    monkeypatch.setattr(envbuild, "run_uv", uv)
    spec = parse_envs(["t:six==1.16.0"])[0]
    python = python_for(spec, lines.append)
    assert [c[1] for c in uv.calls] == ["venv", "pip"] and "Installed 1 package in 1ms" in lines
    assert python.parent.parent.parent == cache and (python.parent.parent / envbuild.ENV_FILE).is_file()
    assert sorted(p.name for p in cache.iterdir()) == [".lock", python.parent.parent.name]  # nothing half-built
    lines.clear()
    assert python_for(parse_envs(["again:SIX==1.16.0"])[0], lines.append) == python
    assert len(uv.calls) == 2 and not any("building" in line for line in lines)


def test_a_failed_build_leaves_no_directory_and_a_killed_ones_leftovers_are_cleared(cache, monkeypatch):
    monkeypatch.setattr(envbuild, "run_uv", FakeUv(fail="no solution"))
    with pytest.raises(UsageError, match="no solution"):
        python_for(parse_envs(["t:six==0.0.1"])[0], print)
    assert [p for p in cache.iterdir() if p.is_dir()] == []
    (cache / ".build-0123456789abcdef-dead").mkdir()  # a run killed mid-build
    monkeypatch.setattr(envbuild, "run_uv", FakeUv())
    python = python_for(parse_envs(["t:six"])[0], print)
    assert [p for p in cache.iterdir() if p.is_dir()] == [python.parent.parent]


def test_two_runs_wanting_one_environment_at_once_build_it_once(cache, monkeypatch):
    release = threading.Event()
    uv = FakeUv(pause=release)
    monkeypatch.setattr(envbuild, "run_uv", uv)
    spec, seen = parse_envs(["t:six"])[0], []

    def want():
        seen.append(python_for(spec, lambda line: line.startswith("waiting") and release.set()))

    assert at_once(want, 2) == []
    assert len(seen) == 2 and seen[0] == seen[1]
    assert [c[1] for c in uv.calls] == ["venv", "pip"]


@pytest.mark.parametrize("output, reason", [
    (["Using Python 3.11.7 environment at: /e", "error: No solution found when resolving dependencies",
      "  cause: Because only arraybench==0.1.0 is available and arraybench==0.1.0 depends on numpy>=1.26, ...",
      "         And because you require numpy==0.0.1 and arraybench, we can conclude that ... unsatisfiable.",
      "  hint: Pre-releases are available for `numpy`"],
     "Because only arraybench==0.1.0 is available and arraybench==0.1.0 depends on numpy>=1.26, ... "
     "And because you require numpy==0.0.1 and arraybench, we can conclude that ... unsatisfiable."),
    (["Resolved 3 packages", "error: Failed to fetch: `https://pypi.org/simple/six/`"],
     "Failed to fetch: `https://pypi.org/simple/six/`"),
    (["something went wrong"], "something went wrong"),
])
def test_uvs_reason_for_a_failure_is_its_last_cause_on_one_line(output, reason):
    assert envbuild.uv_reason(output) == reason


# --- real builds with uv (the package index must be reachable) ---------------------------------------------------


def test_uv_builds_a_small_environment_shows_its_progress_and_the_next_run_reuses_it(tmp_path, monkeypatch):
    monkeypatch.setenv("ARRAYBENCH_CACHE", str(tmp_path))
    lines: list[str] = []
    envs = prepare(parse_envs(["t:six==1.16.0"], ["t:OMP_NUM_THREADS=1"]), lines.append)
    assert any(line.startswith("Resolved") for line in lines) and any("six==1.16.0" in line for line in lines)
    python = envs["t"].python
    assert python.is_relative_to(tmp_path / "envs") and envs["t"].variables == {"OMP_NUM_THREADS": "1"}
    assert envs["t"].versions["numpy"] is not None and envs["t"].versions["jax"] is None

    def no_uv(*args):
        raise AssertionError("uv ran for a cached environment")

    monkeypatch.setattr(envbuild, "run_uv", no_uv)
    assert python_for(parse_envs(["again:six==1.16.0"])[0], print) == python
    assert os.access(python, os.X_OK)


def test_a_spec_uv_cannot_resolve_is_one_line_and_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("ARRAYBENCH_CACHE", str(tmp_path))
    with pytest.raises(UsageError) as raised:
        prepare(parse_envs(["t:numpy==0.0.1"]), print)
    message = str(raised.value)
    assert "\n" not in message and message.startswith("--env t: cannot build 'numpy==0.0.1': ")
    assert "numpy==0.0.1" in message.partition(": ")[2] and "unsatisfiable" in message
    assert [p for p in (tmp_path / "envs").iterdir() if p.is_dir()] == []
