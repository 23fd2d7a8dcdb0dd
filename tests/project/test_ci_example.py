"""examples/ci/benchmark-pr.sh end to end: a tiny package in a git repository, a pull request benchmarked
against its base in one run (built with uv from each commit: the package index must be reachable), a
planted 25 % slowdown found and failed, no change passed."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.common import ROOT

SCRIPT = ROOT / "examples" / "ci" / "benchmark-pr.sh"

PYPROJECT = """\
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "mykern"
version = "0.1.0"
dependencies = ["numpy"]

[tool.setuptools]
packages = ["mykern"]
"""
# REPEATS passes over the data: 5 where the base makes 4 is 25 % more work, in a call of about 1.5-2 ms
# (800 000 float32 on the 2-core VM), long enough for the verdict not to hang on the host's noise. The
# passes work in place: a pass that allocated its result would add page faults and allocator time that
# do not grow with the passes, and a host whose memory system ran 2x slow read 5 passes as only 10 %
# slower than 4 (CI, 2026-11-29). In place, the time is the passes' arithmetic on data in cache.
KERNEL = '''\
"""mykern: {note}"""

import numpy as np

REPEATS = {repeats}


def kernel(x):
    out = np.abs(x)
    for _ in range(REPEATS):
        out += 1.0
        np.sqrt(out, out=out)
    return out
'''
# Imports the package at its top: the arraybench process, which lacks it, plans with a stand-in.
BENCH = """\
import arraybench as ab
import mykern


@ab.workload(presets={"small": {"n": 800_000}})
def kernel(xp, x):
    return mykern.kernel(x)


@kernel.inputs
def _(rng, n, dtype):
    return (rng.standard_normal(n).astype(dtype),)
"""
GIT = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=True,
                          env={**os.environ, **GIT})
    return done.stdout.strip()


def commit(repo: Path, repeats: int, note: str, message: str) -> None:
    (repo / "mykern" / "__init__.py").write_text(KERNEL.format(repeats=repeats, note=note))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", message)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """mykern on main, and two pull requests: `slow` (5 passes where main makes 4) and `same` (a comment).
    The package sits at the repository's top, where the script runs: the workers must import each
    environment's commit, never the checked-out files."""
    repo = tmp_path_factory.mktemp("mykern")
    (repo / "mykern").mkdir()
    (repo / "benchmarks").mkdir()
    (repo / "pyproject.toml").write_text(PYPROJECT)
    (repo / "benchmarks" / "bench.py").write_text(BENCH)
    (repo / ".gitignore").write_text("benchmark_results/\n")
    git(repo, "init", "-q", "-b", "main")
    commit(repo, 4, "a kernel of four passes", "mykern")
    git(repo, "checkout", "-q", "-b", "slow")
    commit(repo, 5, "a kernel of four passes", "one more pass")
    git(repo, "checkout", "-q", "-b", "same", "main")
    commit(repo, 4, "a kernel of four passes over the data", "a better docstring")
    return repo


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One environment cache for the module: main's environment is built once."""
    return tmp_path_factory.mktemp("cache")


def benchmark_pr(repo: Path, branch: str, cache: Path, summary: Path) -> subprocess.CompletedProcess[str]:
    """The script as a pull request's check runs it: the pull request checked out, its base named."""
    git(repo, "checkout", "-q", branch)
    env = {**os.environ, "ARRAYBENCH": f"{sys.executable} -m arraybench", "ARRAYBENCH_CACHE": str(cache),
           "GITHUB_STEP_SUMMARY": str(summary)}
    env.pop("ARRAYBENCH_STORE", None)
    return subprocess.run(["bash", str(SCRIPT), "main", "--", "--backends", "numpy", "--modes", "eager",
                           "--threads", "1", "--budget", "30"],
                          cwd=repo, env=env, capture_output=True, text=True, timeout=600)


def test_a_planted_slowdown_of_25_percent_is_found_and_fails_the_check(package, cache, tmp_path):
    summary = tmp_path / "summary.md"
    done = benchmark_pr(package, "slow", cache, summary)
    assert done.returncode == 1, done.stderr[-3000:]
    assert "slower by more than 10%" in done.stderr
    shown = summary.read_text()
    assert shown.startswith("## arraybench compare")
    row = next(line for line in shown.splitlines() if line.startswith("| kernel[n=800000]"))
    # The verdict, with or without a note on how it was read (a host in spells leaves some processes
    # without a partner: "slower (paired over 2 rounds (6 processes without a partner left out))").
    verdict = row.rstrip(" |").rsplit("|", 1)[1].strip()
    assert verdict == "slower" or verdict.startswith("slower ("), row
    # The summary says which commits were measured.
    main, slow = git(package, "rev-parse", "--short=7", "main"), git(package, "rev-parse", "--short=7", "slow")
    assert f"mykern 0.1.0 (main, {main}) → 0.1.0 (HEAD, {slow})" in shown


def test_a_change_that_costs_nothing_passes(package, cache, tmp_path):
    summary = tmp_path / "summary.md"
    done = benchmark_pr(package, "same", cache, summary)
    assert done.returncode == 0, done.stderr[-3000:]
    assert summary.read_text().startswith("## arraybench compare")


def test_uncommitted_changes_to_the_pull_requests_files_are_one_line_and_exit_2(package, cache, tmp_path):
    git(package, "checkout", "-q", "same")
    kernel = package / "mykern" / "__init__.py"
    kernel.write_text(kernel.read_text() + "\n# an edit not committed\n")
    try:
        done = benchmark_pr(package, "same", cache, tmp_path / "summary.md")
    finally:
        git(package, "checkout", "-q", "--", ".")
    assert done.returncode == 2
    error = done.stderr.strip().splitlines()[-1]
    assert error.startswith("arraybench: error: --env pr: 'git:HEAD' is ") and "uncommitted changes" in error
    assert "mykern/__init__.py" in error and not (tmp_path / "summary.md").exists()


def test_the_workflow_fetches_both_commits_and_runs_the_script_against_the_base():
    workflow = (ROOT / "examples" / "ci" / "benchmark.yml").read_text()
    assert "pull_request:" in workflow and "fetch-depth: 0" in workflow
    assert 'bash .github/benchmark-pr.sh "origin/${{ github.base_ref }}" HEAD' in workflow


def test_the_script_without_a_base_says_how_to_call_it(tmp_path):
    done = subprocess.run(["bash", str(SCRIPT)], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr.startswith("usage: benchmark-pr.sh BASE_REF [PR_REF]")
