"""What one Python environment of a run (`--env NAME:SPEC`, with its `--env-var NAME:VAR=VALUE`) is, as a
type every stage takes: read once where a run is given (envs.spec.run_envs, called by the CLI, the Python
API and a resumed run's header), planned (planning), built (envs) and measured (execution) after."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

EnvKind = Literal["requirements", "interpreter", "current"]
# Where a requirement comes from: a package index (a PEP 508 line), an archive's URL, a git repository at
# a ref (a git URL), a commit of a local repository (git:REF), a local project or archive, or a project
# installed editable (-e PATH).
Origin = Literal["index", "url", "git", "commit", "path", "editable"]


@dataclass(frozen=True)
class EnvRequirement:
    """One thing an environment installs, read as pip reads it, with where it comes from."""

    text: str  # as written (on the command line or a requirements file's line), for messages
    origin: Origin
    # index, url: the PEP 508 line; git: the repository's URL (no git+, ref or fragment); commit: the
    # directory whose repository's commit is built; path, editable: the absolute path.
    target: str
    ref: str = ""  # git, commit: the ref as written; "" for a git URL without one (its default branch)
    name: str = ""  # git: the distribution (with extras) where the line names it: `mykern @ git+…`
    fragment: str = ""  # git: what follows '#' (`subdirectory=python`), passed on to uv


@dataclass(frozen=True)
class EnvSpec:
    """One `--env`: requirements to build an environment from, an existing interpreter, or this one."""

    name: str
    kind: EnvKind
    requirements: tuple[EnvRequirement, ...] = ()
    python: Path | None = None  # the interpreter of kind "interpreter"
    env_vars: tuple[tuple[str, str], ...] = ()  # (VAR, VALUE) for this environment's workers only
    text: str = ""  # kind "requirements": SPEC as written after NAME:
    # The `--env` option as given (NAME:SPEC), which the results header's settings keep for --resume to
    # read again; two specs read from differently spaced options are the same environment.
    written: str = field(default="", compare=False)

    def describe(self) -> str:
        """What the user wrote after NAME:, for messages and progress."""
        if self.kind == "requirements":
            return self.text
        return f"@{self.python}" if self.kind == "interpreter" else "(this interpreter)"

    @property
    def option(self) -> str:
        """The `--env` option this spec was read from (NAME:SPEC)."""
        if self.written:
            return self.written
        return f"{self.name}:" + {"requirements": self.text, "interpreter": f"@{self.python}", "current": ""}[self.kind]

    @property
    def variable_options(self) -> list[str]:
        """The `--env-var` options that set this environment's variables (NAME:VAR=VALUE each)."""
        return [f"{self.name}:{var}={value}" for var, value in self.env_vars]
