"""Errors a user can cause: the CLI prints them on one line and exits with code 2."""

import difflib
import os
import sys
from collections.abc import Iterable
from pathlib import Path

# Set by the parent for the workers of a run's environment (`--env NAME`): its name, so that a hint
# names the environment to fix rather than the interpreter running arraybench.
ENV_VARIABLE = "ARRAYBENCH_ENV"
# At the root of each environment arraybench built (envs/build.py ENV_FILE): the recipe it was built from.
BUILT_MARK = "arraybench-env.json"


class UsageError(Exception):
    """Bad input from the user (name, size, file); shown as one line, exit code 2."""


def did_you_mean(name: str, valid: Iterable[str]) -> str:
    """`; did you mean 'x'?` for the valid name closest to `name`, or "" when none is close."""
    close = difflib.get_close_matches(name, list(valid), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown(kind: str, name: str, valid: Iterable[str]) -> UsageError:
    """A UsageError for an unknown name, suggesting the closest valid one."""
    valid = sorted(valid)
    return UsageError(f"unknown {kind} {name!r}{did_you_mean(name, valid)} (valid: {', '.join(valid)})")


def install_hint(requirement: str) -> str:
    """How to install `requirement` (`'arraybench[jax]'`) where this process runs: `pip install …`, or in
    a worker of a run's environment, what to change there: a built one's spec, another interpreter's
    packages."""
    env = os.environ.get(ENV_VARIABLE)
    if not env:
        return f"pip install {requirement}"
    if (Path(sys.prefix) / BUILT_MARK).is_file():
        return f"environment {env} lacks it: add {requirement} to the spec of --env {env}"
    return f"environment {env} lacks it: {sys.executable} -m pip install {requirement}"


def require_linux() -> None:
    """Refuse other systems in one line: workers are pinned with sched_setaffinity, files locked with fcntl."""
    if not sys.platform.startswith("linux"):
        raise UsageError(f"arraybench runs on Linux only (it pins worker processes to CPUs and locks "
                         f"results files with Linux calls); this system is {sys.platform!r}")


def one_line(e: BaseException) -> str:
    """An exception as a record or message shows it: its type and the first line of its message."""
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0] if text else ''}".strip().rstrip(":")
