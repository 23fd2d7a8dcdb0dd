"""`[tool.arraybench]` of a project's pyproject.toml: read by the CLI (run's defaults, the store) and the
Python API (the store), so it lives below both."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from arraybench.errors import UsageError


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
