"""The Python environments a run measures in, side by side (`--env NAME:SPEC`, `--env-var NAME:VAR=VALUE`).

An environment is requirements as pip takes them, or a commit of the user's repository (`git:REF`),
that uv builds into a virtual environment (cached under the user's cache directory by the hash of
what it is built from, each git ref as its commit and each local project as its content: sources.py,
and reused), an existing interpreter, or the one running arraybench. `run_envs` reads a run's options,
once, where the run is given them, into `EnvSpec`s (core/env_spec.py) with one-line errors; every later
stage takes those. `prepare` turns them into `PreparedEnv`s: the interpreter each
environment's workers run, its frameworks' versions, its packages and where each came from, and the
variables set for its workers only.
"""

from arraybench.core.env_spec import EnvSpec
from arraybench.envs.prepared import PreparedEnv, prepare
from arraybench.envs.spec import parse_envs, run_envs

__all__ = ["EnvSpec", "PreparedEnv", "parse_envs", "prepare", "run_envs"]
