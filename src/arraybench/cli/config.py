"""Project defaults: `[tool.arraybench]` in the nearest pyproject.toml becomes `arraybench run`'s defaults."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from arraybench.errors import UsageError, unknown
from arraybench.planning.project import project_config

__all__ = ["apply_config", "project_config"]


def apply_config(run: argparse.ArgumentParser, config: tuple[Path | None, dict[str, Any]]) -> None:
    """Make `[tool.arraybench]` keys the defaults of `arraybench run` (the command line still wins).

    Keys are run's option names (`backends = ["numpy", "jax"]`, `min-time = 0.5`); lists become
    comma-separated values, and every value is checked as the option's own value would be.
    """
    path, table = config
    if not table:
        return
    options = {a.dest: a for a in run._actions if a.option_strings and a.dest != "help"}
    defaults: dict[str, Any] = {}
    for key, value in table.items():
        dest = key.replace("-", "_")
        action = options.get(dest)
        if action is None or dest == "resume":
            raise unknown(f"key in {path} [tool.arraybench]", key,
                          [d.replace("_", "-") for d in options if d != "resume"])
        if isinstance(value, bool) != (action.nargs == 0):
            raise UsageError(f"{path} [tool.arraybench]: {key} = {value!r} must be "
                             + ("true or false" if action.nargs == 0 else "a value, not true or false"))
        if isinstance(value, list):
            value = ",".join(str(v) for v in value)
        # A string default goes through the option's type (argparse does that), so it is checked.
        defaults[dest] = value if isinstance(value, bool) else str(value)
        action.help = f"{action.help}; here {value} from {path}"
    run.set_defaults(**defaults)
