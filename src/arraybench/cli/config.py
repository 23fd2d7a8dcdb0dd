"""Project defaults: `[tool.arraybench]` in the nearest pyproject.toml becomes `arraybench run`'s defaults."""

from __future__ import annotations

import argparse
import tomllib
from pathlib import Path
from typing import Any

from arraybench.errors import UsageError, unknown


def project_config(start: Path) -> tuple[Path | None, dict[str, Any]]:
    """`[tool.arraybench]` of the nearest pyproject.toml at or above `start`, and that file.

    The nearest pyproject.toml decides, as for pytest and ruff: a project's own settings are
    never mixed with those of a directory above it.
    """
    for folder in (start, *start.parents):
        path = folder / "pyproject.toml"
        if path.is_file():
            try:
                data = tomllib.loads(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
                raise UsageError(f"cannot read {str(path)!r}: {e}") from None
            table = data.get("tool", {}).get("arraybench", {})
            if not isinstance(table, dict):
                raise UsageError(f"{path}: [tool.arraybench] must be a table")
            return path, table
    return None, {}


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
