"""An environment made ready for a run's workers: its interpreter, its frameworks' versions, its variables."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from arraybench.envs.build import Progress, own_packages_env, python_for
from arraybench.envs.spec import EnvSpec
from arraybench.errors import UsageError
from arraybench.machine import environment

# environment.versions() run by the other interpreter: the same reading of the same distributions.
VERSIONS_PROBE = "import json; from arraybench.machine.environment import versions; print(json.dumps(versions()))"


@dataclass(frozen=True)
class PreparedEnv:
    """What a worker of one environment is started with, and what that environment has."""

    name: str
    python: Path  # the interpreter its workers run
    versions: dict[str, str | None]  # each framework's version there (None: not installed)
    variables: dict[str, str]  # set for its workers only (--env-var)


def interpreter_versions(python: Path) -> dict[str, str | None]:
    """Each framework's version as `python` sees its own packages (environment.versions() run there)."""
    done = subprocess.run([str(python), "-c", VERSIONS_PROBE], env=own_packages_env(), capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, timeout=120)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise UsageError(f"cannot read the framework versions of {str(python)!r}: {last}")
    versions: dict[str, str | None] = json.loads(done.stdout)
    return versions


def prepare(specs: Sequence[EnvSpec], progress: Progress) -> dict[str, PreparedEnv]:
    """Each environment of `specs` ready to run workers, by name: built or reused, then asked its versions."""
    out: dict[str, PreparedEnv] = {}
    for spec in specs:
        python = python_for(spec, progress)
        versions = environment.versions() if spec.kind == "current" else interpreter_versions(python)
        out[spec.name] = PreparedEnv(spec.name, python, versions, dict(spec.env_vars))
    return out
