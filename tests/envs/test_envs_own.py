"""Environments of the user's own package (`--env NAME:SPEC` as pip takes it, `git:REF`): every spelling
read with its origin, each git ref pinned to its commit and each local path to its content, what the
header records of every package, and the outputs naming the packages that differ. A workload file that
imports the package at its top plans in the arraybench process, which lacks it."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from arraybench.envs import build as envbuild
from arraybench.envs import parse_envs, prepare
from arraybench.envs.prepared import PreparedEnv, packages
from arraybench.envs.sources import Pinned, content_hash, pin, pin_all
from arraybench.errors import ENV_VARIABLE, UsageError, install_hint
from arraybench.execution import session
from arraybench.machine.packages import Package, changes
from arraybench.planning.settings import run_settings
from arraybench.workloads import userfile
from tests.envs.test_envs_run import _two_env_run

PYPROJECT = '[build-system]\nrequires = ["setuptools>=61"]\nbuild-backend = "setuptools.build_meta"\n\n' \
            '[project]\nname = "mykern"\nversion = "{version}"\n'
GIT = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT}).stdout.strip()


def project(path: Path, version: str = "0.1.0", body: str = "def kernel(x):\n    return x\n") -> Path:
    (path / "mykern").mkdir(parents=True, exist_ok=True)
    (path / "pyproject.toml").write_text(PYPROJECT.format(version=version))
    (path / "mykern" / "__init__.py").write_text(body)
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """mykern in a git repository: tag v1 (0.1.0), then main one commit further (0.2.0)."""
    path = project(tmp_path / "mykern")
    (path / ".gitignore").write_text("*.log\n")
    git(path, "init", "-q", "-b", "main")
    git(path, "add", "-A")
    git(path, "commit", "-qm", "v1")
    git(path, "tag", "v1")
    project(path, "0.2.0")
    git(path, "commit", "-qam", "v2")
    return path


def one_line(envs: list[str]) -> str:
    with pytest.raises(UsageError) as raised:
        parse_envs(envs)
    assert "\n" not in str(raised.value)
    return str(raised.value)


def pinned_error(spec: str, copies: Path) -> str:
    (parsed,) = parse_envs([spec])
    with pytest.raises(UsageError) as raised:
        pin_all(parsed.name, parsed.requirements, copies)
    assert "\n" not in str(raised.value)
    return str(raised.value)


# --- every spelling pip takes ----------------------------------------------------------------------------------


def test_every_spelling_pip_takes_is_read_with_where_it_comes_from(tmp_path, monkeypatch):
    project(tmp_path / "mykern")
    (tmp_path / "dist").mkdir()
    (tmp_path / "dist" / "mykern-0.1.0-py3-none-any.whl").write_bytes(b"wheel")
    (tmp_path / "reqs").mkdir()
    (tmp_path / "reqs" / "base.txt").write_text(
        "# what every environment gets\n"
        "numpy >= 2, < 3  # spaces, as pip takes them\n"
        "-e ../mykern\n"
        "scipy \\\n"
        "  ; python_version >= '3.11'\n")
    monkeypatch.chdir(tmp_path)
    (spec,) = parse_envs(["t:mykern @ git+file:///r/mykern@v1 numba ./mykern dist/mykern-0.1.0-py3-none-any.whl "
                          "-r reqs/base.txt git+https://example.com/x.git#subdirectory=py git:main git:mykern@v2"])
    got = [(r.origin, r.target, r.ref, r.name, r.fragment) for r in spec.requirements]
    assert got == [
        ("git", "file:///r/mykern", "v1", "mykern", ""),
        ("index", "numba", "", "", ""),
        ("path", str(tmp_path / "mykern"), "", "", ""),
        ("path", str(tmp_path / "dist" / "mykern-0.1.0-py3-none-any.whl"), "", "", ""),
        ("index", "numpy >= 2, < 3", "", "", ""),
        ("editable", str(tmp_path / "mykern"), "", "", ""),  # relative to the file, as uv reads it
        ("index", "scipy ; python_version >= '3.11'", "", "", ""),
        ("git", "https://example.com/x.git", "", "", "subdirectory=py"),
        ("commit", str(tmp_path), "main", "", ""),
        ("commit", str(tmp_path / "mykern"), "v2", "", ""),
    ]
    assert spec.describe().startswith("mykern @ git+file:///r/mykern@v1 numba ./mykern")  # as written


@pytest.mark.parametrize("spec, says", [
    ("t:./nowhere", "there is no './nowhere'"),
    ("t:./empty", "'./empty' is not a Python project: "),
    ("t:./notes.txt", "'./notes.txt' is neither a project directory nor a wheel or source archive"),
    ("t:-e ./mykern-0.1.0-py3-none-any.whl", "-e takes a project directory"),
    ("t:-e", "-e needs a path after it"),
    ("t:-r missing.txt", "cannot read the requirements file 'missing.txt'"),
    ("t:-r loop.txt", "loop.txt:1: -r loop.txt includes itself"),
    ("t:-r bad.txt", "bad.txt:2: cannot read the requirement '>='"),
    ("t:--index-url https://x numpy", "'--index-url' is not supported here; an environment takes requirements, "
                                      "local paths, git URLs, git:REF, -e PATH and -r FILE"),
    ("t:git:", "'git:' names no ref"),
    ("t:git+/no/scheme", "is not a git URL"),
])
def test_a_spelling_that_names_nothing_installable_is_one_line(tmp_path, monkeypatch, spec, says):
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes.txt").write_text("x")
    (tmp_path / "mykern-0.1.0-py3-none-any.whl").write_bytes(b"wheel")
    (tmp_path / "loop.txt").write_text("-r loop.txt\n")
    (tmp_path / "bad.txt").write_text("numpy\n>=\n")
    monkeypatch.chdir(tmp_path)
    assert says in one_line([spec])


# --- pinned when built: a ref to its commit, a path to its content -------------------------------------------


def test_git_ref_is_pinned_to_its_commit_so_a_moved_branch_is_another_environment(repo, tmp_path, monkeypatch):
    monkeypatch.chdir(repo)
    (spec,) = parse_envs(["t:git:main"])
    first = pin_all("t", spec.requirements, tmp_path)
    assert first[0].commit == git(repo, "rev-parse", "main")
    assert first[0].install == (f"git+{repo.as_uri()}@{first[0].commit}",)
    source = envbuild.Source(("-e", "/src/arraybench[user]"), "x", None)
    before = envbuild.recipe(first, source, cuda=False).key()
    project(repo, "0.3.0")
    git(repo, "commit", "-qam", "v3")
    moved = pin_all("t", spec.requirements, tmp_path)
    assert moved[0].commit == git(repo, "rev-parse", "main") != first[0].commit
    assert envbuild.recipe(moved, source, cuda=False).key() != before
    # The same commit named by a tag, by a git URL, by its hash: one commit, whatever the spelling.
    tag = git(repo, "rev-parse", "v1")
    assert pin_all("t", parse_envs(["t:git:v1"])[0].requirements, tmp_path)[0].commit == tag
    (url,) = pin_all("t", parse_envs([f"t:mykern @ git+{repo.as_uri()}@v1"])[0].requirements, tmp_path)
    assert url.commit == tag and url.install == (f"mykern @ git+{repo.as_uri()}@{tag}",)
    assert pin_all("t", parse_envs([f"t:git:{tag[:7]}"])[0].requirements, tmp_path)[0].commit == tag


def test_a_project_in_a_subdirectory_is_built_from_there(repo, tmp_path, monkeypatch):
    sub = project(repo / "python")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "python/")
    monkeypatch.chdir(sub)
    (pinned,) = pin_all("t", parse_envs(["t:git:HEAD"])[0].requirements, tmp_path)
    assert pinned.install[0].endswith("#subdirectory=python")


def test_a_ref_that_does_not_exist_or_names_no_project_is_one_line(repo, tmp_path, monkeypatch):
    monkeypatch.chdir(repo)
    assert "there is no branch, tag or commit 'nope' in " in pinned_error("t:git:nope", tmp_path)
    assert "there is no branch, tag or commit 'nope' in file://" in pinned_error(
        f"t:mykern @ git+{repo.as_uri()}@nope", tmp_path)
    (repo / "docs").mkdir()
    (repo / "docs" / "a.md").write_text("a")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "docs")
    monkeypatch.chdir(repo / "docs")
    assert "holds no pyproject.toml or setup.py in docs: no Python project to build" in pinned_error(
        "t:git:HEAD", tmp_path)
    monkeypatch.chdir(tmp_path)
    assert f"{tmp_path} is not in a git repository" in pinned_error("t:git:main", tmp_path)


def test_a_dirty_tree_is_refused_where_its_commit_is_asked_for(repo, tmp_path, monkeypatch):
    monkeypatch.chdir(repo)
    (repo / "mykern" / "__init__.py").write_text("def kernel(x):\n    return x + 0\n")
    (repo / "run.log").write_text("ignored, and untracked files never count")
    said = pinned_error("pr:git:HEAD", tmp_path)
    assert said.startswith(f"--env pr: 'git:HEAD' is {git(repo, 'rev-parse', '--short=7', 'HEAD')}, the commit "
                           f"checked out in {repo}, whose files have uncommitted changes (mykern/__init__.py)")
    assert f"pr:'-e {repo}'" in said
    # Another commit is what it was, whatever the working tree holds.
    assert pin_all("base", parse_envs(["base:git:v1"])[0].requirements, tmp_path)[0].commit == \
        git(repo, "rev-parse", "v1")


def test_a_local_project_is_known_by_its_content_and_built_from_a_copy_of_it(repo, tmp_path, monkeypatch):
    monkeypatch.chdir(repo)
    copies = tmp_path / "copies"
    (spec,) = parse_envs(["t:."])
    (first,) = pin_all("t", spec.requirements, copies)
    assert first.digest == content_hash(repo) and first.identity == f"{repo} {first.digest}"
    assert Path(first.copy) == copies / first.digest.partition(":")[2] / repo.name
    assert (Path(first.copy) / "mykern" / "__init__.py").read_text() == (repo / "mykern" / "__init__.py").read_text()
    (repo / "run.log").write_text("ignored by git: no part of the project")
    assert pin_all("t", spec.requirements, copies)[0] == first
    (repo / "mykern" / "__init__.py").write_text("def kernel(x):\n    return 2 * x\n")
    (edited,) = pin_all("t", spec.requirements, copies)
    assert edited.digest != first.digest and edited.copy != first.copy
    # Editable: its workers import the files as they are, so its path is the key and its content recorded.
    (editable,) = pin_all("t", parse_envs(["t:-e ."])[0].requirements, copies)
    assert editable.install == ("-e", str(repo)) and editable.identity == f"-e {repo}"
    assert editable.digest == edited.digest
    # Outside a git work tree every file counts but caches, builds and environments.
    plain = project(tmp_path / "plain")
    before = content_hash(plain)
    (plain / "mykern" / "__pycache__").mkdir()
    (plain / "mykern" / "__pycache__" / "x.pyc").write_bytes(b"x")
    assert content_hash(plain) == before
    (plain / "README").write_text("x")
    assert content_hash(plain) != before


def test_an_index_requirement_is_pinned_to_its_normalised_spelling(tmp_path):
    (spec,) = parse_envs(["t:NumPy >= 2"])
    assert pin("t", spec.requirements[0], tmp_path).identity == "numpy>=2"


# --- what the header records of each package -----------------------------------------------------------------


def test_each_package_is_recorded_with_where_it_came_from(tmp_path):
    """What the installer recorded (PEP 610), read back as the spec named it: the ref for a commit, the
    user's path (not the copy uv built from) with its content hash."""
    project(tmp_path / "mykern")
    (spec,) = parse_envs([f"t:git+file:///r@v1 {tmp_path / 'mykern'}"])
    pins = (Pinned(spec.requirements[0], (), "", commit="c" * 40), pin("t", spec.requirements[1], tmp_path / "copies"))
    raw = [
        {"name": "numpy", "version": "2.4.6", "direct_url": None},
        {"name": "kern", "version": "0.1.0", "direct_url": {"url": "file:///r", "vcs_info": {
            "vcs": "git", "commit_id": "c" * 40, "requested_revision": "c" * 40}}},
        {"name": "mykern", "version": "0.1.0", "direct_url": {"url": Path(pins[1].copy).as_uri(), "dir_info": {}}},
        {"name": "arraybench", "version": "0.1.0", "direct_url": {"url": (tmp_path / "mykern").as_uri(),
                                                                  "dir_info": {"editable": True}}},
        {"name": "wheel", "version": "1.0", "direct_url": {"url": "https://h/wheel-1.0-py3-none-any.whl",
                                                           "archive_info": {"hash": "sha256=abc"}}},
    ]
    numpy, kern, mykern, editable, wheel = packages(raw, pins)
    assert numpy == Package("numpy", "2.4.6") and numpy.describe() == "2.4.6"
    assert kern == Package("kern", "0.1.0", "git", url="file:///r", commit="c" * 40, ref="v1")
    assert mykern == Package("mykern", "0.1.0", "path", path=str(tmp_path / "mykern"), digest=pins[1].digest)
    assert editable.editable and editable.digest == pins[1].digest
    assert editable.describe() == f"0.1.0 (-e mykern, {pins[1].digest[7:14]})"
    assert wheel.describe() == "1.0 (wheel-1.0-py3-none-any.whl)" and wheel.digest == "sha256:abc"
    assert Package.from_json(json.loads(json.dumps(kern.to_json()))) == kern


def test_the_packages_that_differ_are_named_with_their_versions_and_commits():
    v1 = {"numpy": Package("numpy", "2.4.6"),
          "mykern": Package("mykern", "0.1.0", "git", url="file:///r", commit="3fa2c1e" + "0" * 33, ref="v1")}
    v2 = {"numpy": Package("numpy", "2.4.6"), "numba": Package("numba", "0.61.0"),
          "mykern": Package("mykern", "0.2.0", "git", url="file:///r", commit="1582951" + "0" * 33, ref="v2")}
    assert changes(v1, v2) == ["mykern 0.1.0 (v1, 3fa2c1e) → 0.2.0 (v2, 1582951)", "numba absent → 0.61.0"]
    # One commit named by two refs is one and the same code.
    main = {"mykern": Package("mykern", "0.1.0", "git", url="file:///r", commit="3fa2c1e" + "0" * 33, ref="main")}
    assert changes({"mykern": v1["mykern"]}, main) == []


def mykern_run(path: Path) -> Path:
    """A two-environment results file whose header records each environment's packages: v2 8 % slower."""
    def env(version: str, ref: str, commit: str) -> dict:
        return {"spec": f"git:{ref}", "versions": {"numpy": "2.4.6"},
                "packages": [Package("mykern", version, "git", url="file:///r", commit=commit, ref=ref).to_json(),
                             Package("numpy", "2.4.6").to_json()]}

    return _two_env_run(path, 1.08, [1.0, 1.15, 0.87, 1.1], environments={
        "old": env("0.1.0", "v1", "3fa2c1e" + "0" * 33), "new": env("0.2.0", "v2", "1582951" + "0" * 33)})


MYKERN = "mykern 0.1.0 (v1, 3fa2c1e) → 0.2.0 (v2, 1582951)"
SENTENCE = "mykern 0.2.0 (v2, 1582951) against 0.1.0 (v1, 3fa2c1e): faster in 0 of 4 cases, slower in 4"


def test_compare_names_the_packages_that_differ_and_their_commits(tmp_path, run_cli):
    path = mykern_run(tmp_path / "run.jsonl")
    code, out, err = run_cli("compare", f"{path}@old", f"{path}@new", "--format", "json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["differences"] == [MYKERN]  # not also versions.*: the packages say it, and where from
    assert shown["note"] == "The two environments differ in mykern:"
    code, out, _ = run_cli("compare", f"{path}@old", f"{path}@new", "--format", "markdown")
    assert f"> **The two environments differ in mykern:**\n>\n> - `{MYKERN}`" in out


def test_show_and_the_report_name_the_packages_that_differ(tmp_path, run_cli, undrawn_plots):
    from arraybench.report import write_all
    from arraybench.results import load_results

    path = mykern_run(tmp_path / "run.jsonl")
    db = str(tmp_path / "a.db")
    assert run_cli("import", str(path), "--store", db)[0] == 0
    code, out, err = run_cli("show", "r1", "--store", db)
    assert code == 0, err
    assert SENTENCE in out
    rep = write_all([load_results(path)], tmp_path / "report")
    md = rep.markdown.read_text()
    assert SENTENCE in md
    # The frameworks line gives each environment's, with the package it got from git.
    assert "**frameworks [old]**: numpy 2.4.6, mykern 0.1.0 (v1, 3fa2c1e)" in md
    assert "**frameworks [new]**: numpy 2.4.6, mykern 0.2.0 (v2, 1582951)" in md


def test_a_run_is_not_resumed_over_other_code_than_it_measured():
    """A branch that moved between the interruption and --resume would mix two commits in one run."""
    def env(commit: str, harness: str) -> PreparedEnv:
        return PreparedEnv("pr", Path(sys.executable), {}, {}, (
            Package("mykern", "0.1.0", "git", url="file:///r", commit=commit, ref="main"),
            Package("arraybench", "0.1.0", "path", path="/src", digest=harness, editable=True)))

    measured = {"pr": {"packages": [p.to_json() for p in env("a" * 40, "sha256:1").packages]}}
    session.check_same_code(measured, {"pr": env("a" * 40, "sha256:2")})  # the harness may have changed
    session.check_same_code({"pr": {"spec": "x"}}, {"pr": env("b" * 40, "sha256:1")})  # a file before packages
    with pytest.raises(UsageError) as raised:
        session.check_same_code(measured, {"pr": env("b" * 40, "sha256:1")})
    assert str(raised.value) == ("--resume: environment pr now installs other code than the run measured "
                                 "(mykern 0.1.0 (main, aaaaaaa) → 0.1.0 (main, bbbbbbb)); start a new run")


# --- a workload file that imports the package at its top ----------------------------------------------------

BENCH = """\
import arraybench as ab
import mykern_not_here
from mykern_not_here.core import smooth as smoothed

@ab.workload(presets={"small": {"n": 100}})
def smooth(xp, x):
    return smoothed(x)

@smooth.inputs
def _(rng, n, dtype):
    return (rng.standard_normal(n).astype(dtype),)
"""


def test_a_workload_file_may_import_a_package_only_the_environments_have(tmp_path):
    path = tmp_path / "bench.py"
    path.write_text(BENCH)
    found = userfile.load_workload_file(str(path))
    assert list(found) == ["smooth"] and found["smooth"].size_param == "n"
    assert userfile.stand_ins(str(path)) == ("mykern_not_here",)
    assert "mykern_not_here" not in sys.modules and "mykern_not_here.core" not in sys.modules
    # A worker whose environment lacks it says which environment to fix.
    call = found["smooth"].compute.__globals__["smoothed"]
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV_VARIABLE, "v1")
        with pytest.raises(UsageError, match=r"the workload calls mykern_not_here.core.smooth\(\), and "
                                             r"mykern_not_here cannot be imported by .*environment v1 lacks it"):
            call(1)


def test_a_package_no_worker_can_import_stops_the_run_in_one_line_naming_where(tmp_path):
    path = tmp_path / "bench.py"
    path.write_text(BENCH)
    settings = run_settings(workload_file=path, backends=["numpy"])
    with pytest.raises(UsageError, match=r"imports mykern_not_here, which this Python \(.*\) cannot import, and "
                                         r"the workers run here: install it here, or measure it in environments "
                                         r"that have it \(--env NAME:SPEC"):
        session.check_imports(settings, {})
    here = PreparedEnv("v1", Path(sys.executable), {}, {})
    with pytest.raises(UsageError, match=r"^--env v1: the workload file .* imports mykern_not_here, which this "
                                         r"environment cannot import: add what provides it to the spec of --env v1"):
        session.check_imports(settings, {"v1": here})


def test_an_import_the_file_guards_itself_gets_no_stand_in(tmp_path):
    path = tmp_path / "bench.py"
    guarded = "try:\n    import mykern_not_here\nexcept ImportError:\n    mykern_not_here = None\n"
    path.write_text(BENCH.replace("import mykern_not_here\nfrom mykern_not_here.core import smooth as smoothed\n",
                                  guarded + "smoothed = None\n"))
    found = userfile.load_workload_file(str(path))
    assert userfile.stand_ins(str(path)) == ()
    assert found["smooth"].compute.__globals__["mykern_not_here"] is None


def test_a_stand_in_called_as_the_file_is_imported_is_one_line(tmp_path):
    path = tmp_path / "bench.py"
    path.write_text("import mykern_not_here\nmykern_not_here.register()\n")
    with pytest.raises(UsageError, match=r"calls mykern_not_here.register\(\) as it is imported, .* call "
                                         r"mykern_not_here only inside the workload's functions"):
        userfile.load_workload_file(str(path))


def test_a_hint_in_a_worker_names_the_environment_to_fix(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VARIABLE, raising=False)
    assert install_hint("'arraybench[jax]'") == "pip install 'arraybench[jax]'"
    monkeypatch.setenv(ENV_VARIABLE, "v1")
    assert install_hint("'arraybench[jax]'") == f"environment v1 lacks it: {sys.executable} -m pip install " \
                                                "'arraybench[jax]'"
    (tmp_path / envbuild.ENV_FILE).write_text("{}")
    monkeypatch.setattr(sys, "prefix", str(tmp_path))
    assert install_hint("'arraybench[jax]'") == "environment v1 lacks it: add 'arraybench[jax]' to the spec of " \
                                                "--env v1"


def test_a_worker_knows_its_environment_and_the_environments_keep_one_stack_layout():
    from arraybench.core.case import Case
    from arraybench.execution.parent import WorkerLaunch, worker_env

    sizes = []
    for name in ("base", "pr"):
        case = Case("elementwise_add", (("n", 10),), "numpy", "eager", "float32", 1, env=name)
        env = worker_env(case, launch=WorkerLaunch(sys.executable), layout=7)
        assert env[ENV_VARIABLE] == name and env["PYTHONSAFEPATH"] == "1"  # not the working directory's files
        sizes.append(sum(len(k) + len(v) for k, v in env.items()))
    assert sizes[0] == sizes[1]


def test_a_worker_that_could_not_import_the_workload_file_still_gets_its_case_named_by_size(tmp_path):
    """The user's package broken at import in one environment: its worker cannot say the case's size
    (progress read `smooth[None]`), the arraybench process can."""
    from contextlib import contextmanager
    from dataclasses import replace

    from arraybench.core.case import Case
    from arraybench.execution.parent import Rounds, RunConfig
    from arraybench.measure.timing import TimerConfig
    from arraybench.results import ResultsWriter
    from arraybench.workloads import blank_record

    class Broken(Rounds):
        @contextmanager
        def launched(self, cases):
            yield []

        def measure(self, cases, k):
            for case in cases:
                yield replace(blank_record(case, "error", "failed to import"), size=None)

        def fresh(self):
            pass

    seen = []
    writer = ResultsWriter(tmp_path / "results.jsonl", {"schema": 3, "settings": {}})
    runner = Broken(writer, RunConfig(TimerConfig(processes=1), 0, 10.0, tmp_path / "logs"),
                    on_replicate=lambda rec, k: seen.append(rec.size))
    (record,) = runner.run([Case("elementwise_add", (("n", 1000),), "numpy", "eager", "float32", 1, env="b")])
    writer.close()
    assert seen == [1000] and record.size == 1000


# --- real builds with uv (the package index must be reachable) -------------------------------------------------


def test_a_moved_branch_is_rebuilt_and_the_header_records_the_commit_installed(repo, tmp_path, monkeypatch):
    monkeypatch.setenv("ARRAYBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.chdir(repo)
    lines: list[str] = []
    first = prepare(parse_envs(["t:git:main", "e:-e ."]), lines.append)
    main = git(repo, "rev-parse", "main")
    (mykern,) = [p for p in first["t"].packages if p.name == "mykern"]
    assert mykern == Package("mykern", "0.2.0", "git", url=repo.as_uri(), commit=main, ref="main")
    assert f"environment 't' (git:main, commit {main[:7]})" in "\n".join(lines)
    (editable,) = [p for p in first["e"].packages if p.name == "mykern"]
    assert editable.editable and editable.path == str(repo) and editable.digest == content_hash(repo)
    assert {p.name for p in first["t"].packages} >= {"arraybench", "array-api-compat", "numpy"}
    project(repo, "0.3.0")
    git(repo, "commit", "-qam", "v3")
    again = prepare(parse_envs(["t:git:main"]), lines.append)
    assert again["t"].python != first["t"].python
    assert [p.version for p in again["t"].packages if p.name == "mykern"] == ["0.3.0"]
