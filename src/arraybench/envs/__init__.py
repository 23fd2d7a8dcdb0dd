"""The Python environments a run measures in, side by side (`--env NAME:SPEC`, `--env-var NAME:VAR=VALUE`).

An environment is requirements that uv builds into a virtual environment (cached under the user's
cache directory by the hash of what it is built from, and reused), an existing interpreter, or the
one running arraybench. `parse_envs` reads the options into `EnvSpec`s with one-line errors;
`prepare` turns them into `PreparedEnv`s: the interpreter each environment's workers run, its
frameworks' versions, and the variables set for its workers only.
"""

from arraybench.envs.prepared import PreparedEnv, prepare
from arraybench.envs.spec import EnvSpec, parse_envs

__all__ = ["EnvSpec", "PreparedEnv", "parse_envs", "prepare"]
