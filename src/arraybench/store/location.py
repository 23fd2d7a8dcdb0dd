"""Which store a command or the Python API means when none is named (default_store), and a run by its
file or its id in a store (load: `arraybench.load`)."""

from __future__ import annotations

import enum
import os
from pathlib import Path

from arraybench.errors import UsageError
from arraybench.planning.project import project_config
from arraybench.results import Results, load_results
from arraybench.store.database import Store
from arraybench.store.postgres import is_url

DEFAULT_PATH = Path(".arraybench") / "results.db"
# The store a command or the Python API uses when none is named: this variable, else `store` of
# [tool.arraybench], else DEFAULT_PATH (default_store).
STORE_ENV = "ARRAYBENCH_STORE"


class Configured(enum.Enum):
    """The Python API's default `store`: the one `arraybench run` would use (default_store())."""

    STORE = "the configured store"


def default_store() -> str:
    """The store when none is named: $ARRAYBENCH_STORE, else `store` of [tool.arraybench] in the
    nearest pyproject.toml, else DEFAULT_PATH."""
    if os.environ.get(STORE_ENV):
        return os.environ[STORE_ENV]
    path, table = project_config(Path.cwd())
    value = table.get("store", str(DEFAULT_PATH))
    if not isinstance(value, str):
        raise UsageError(f"{path} [tool.arraybench]: store = {value!r} must be a path or a URL")
    return value


def load(ref: str | os.PathLike[str], store: str | os.PathLike[str] | None = None) -> Results:
    """A results file (or a directory holding one) or a stored run (id, unique prefix, `latest`) of
    `store` (by default default_store(): $ARRAYBENCH_STORE, [tool.arraybench], .arraybench/results.db)."""
    if Path(ref).exists() or "/" in str(ref) or str(ref).endswith(".jsonl"):
        return load_results(ref)  # a path: its own error (missing, empty...) says more
    location = store if store is not None else default_store()
    if not is_url(location) and not Path(location).exists():
        raise UsageError(f"{str(ref)!r} is neither a results file nor a stored run (no results store at "
                         f"{str(location)!r})")
    with Store(location, create=False) as st:
        return st.load(str(ref))
