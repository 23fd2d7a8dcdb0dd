"""Loads workloads defined in a user's Python file."""

from __future__ import annotations

import ast
import importlib.util
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NoReturn

from arraybench.errors import UsageError, install_hint
from arraybench.workloads.workload import Workload

# Per file: its modification time when imported, and its workloads.
_loaded: dict[str, tuple[int, dict[str, Workload]]] = {}
# Per file: the top-level modules it imports that this interpreter could not, which stood in (Elsewhere).
_stood_in: dict[str, tuple[str, ...]] = {}
_importing: list[str] = []  # the workload files being imported now (a stand-in called then is called too early)


class Elsewhere(types.ModuleType):
    """A module the workload file imports at its top that this interpreter cannot import: the user's own
    package, installed in the run's environments (`--env`) only. The arraybench process imports the file
    to plan the run and never calls what it defines, so the module stands in for the time of the import;
    a name read from it is a stand-in too, and calling one says what to do. Workers, in the
    environments, import the real one."""

    def __getattr__(self, attr: str) -> Elsewhere:
        if attr.startswith("__"):
            raise AttributeError(attr)
        return Elsewhere(f"{self.__name__}.{attr}")

    def __call__(self, *args: Any, **kwargs: Any) -> NoReturn:
        top = self.__name__.partition(".")[0]
        if _importing:
            raise UsageError(f"the workload file calls {self.__name__}() as it is imported, and {top} cannot be "
                             f"imported here ({sys.executable}): arraybench imports the file in this interpreter "
                             f"to plan the run; call {top} only inside the workload's functions, or install it "
                             f"here too")
        raise UsageError(f"the workload calls {self.__name__}(), and {top} cannot be imported by {sys.executable}, "
                         f"which runs this case ({install_hint(top)})")


def top_level_imports(source: str, path: str) -> set[str]:
    """The absolute module names the file imports as it is imported (not inside a function: those
    imports run in the workers; nor in a `try:`, whose handlers deal with a missing module as the file
    means to): `import a.b` and `from a.b import c` give a.b."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            return
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
        children: list[ast.AST] = list(ast.iter_child_nodes(node))
        if isinstance(node, ast.Try | ast.TryStar):  # not its body
            children = [*node.handlers, *node.orelse, *node.finalbody]
        for child in children:
            visit(child)

    try:
        visit(ast.parse(source, path))
    except SyntaxError:
        return set()  # the import itself says where
    return found


@contextmanager
def standing_in(names: set[str]) -> Iterator[tuple[str, ...]]:
    """The modules of `names` whose package this interpreter cannot import stand in (Elsewhere) while the
    block runs; yields their packages' names."""
    missing = {n for n in names if importlib.util.find_spec(n.partition(".")[0]) is None}
    placed = {}
    for name in missing:
        parts = name.split(".")
        for k in range(1, len(parts) + 1):
            prefix = ".".join(parts[:k])
            if prefix not in sys.modules:
                placed[prefix] = sys.modules[prefix] = Elsewhere(prefix)
    try:
        yield tuple(sorted({n.partition(".")[0] for n in missing}))
    finally:
        for prefix, module in placed.items():
            if sys.modules.get(prefix) is module:
                del sys.modules[prefix]


def stand_ins(path: str) -> tuple[str, ...]:
    """The packages the workload file at `path` imports at its top that this interpreter lacks (they stood
    in while it was loaded): the run's workers must be able to import them (session.check_imports)."""
    return _stood_in.get(str(Path(path).resolve()), ())


def load_workload_file(path: str) -> dict[str, Workload]:
    """Import `path` and return the Workloads it defines at module level, by name.

    A file is imported again only once it has changed, so a notebook that edits it and runs
    again plans with what the worker processes will import. A package it imports at its top that
    this interpreter lacks stands in (Elsewhere): the workers import it in their environments.
    """
    key = str(Path(path).resolve())
    if not Path(key).is_file():
        raise UsageError(f"workload file {path!r} does not exist")
    mtime = Path(key).stat().st_mtime_ns
    if key in _loaded and _loaded[key][0] == mtime:
        return _loaded[key][1]
    spec = importlib.util.spec_from_file_location(f"arraybench_user_{len(_loaded)}", key)
    if spec is None or spec.loader is None:
        raise UsageError(f"workload file {path!r} is not a Python file")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        source = Path(key).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"workload file {path!r} cannot be read: {e}") from None
    with standing_in(top_level_imports(source, key)) as missing:
        _importing.append(key)
        try:
            spec.loader.exec_module(module)
        except UsageError:  # one of ours, already one line: a stand-in called, @workload without array-api-compat
            raise
        except Exception as e:
            also = (f"; {', '.join(missing)} cannot be imported here and stood in while the file was imported: "
                    "use it only inside the workload's functions") if missing else ""
            raise UsageError(f"workload file {path!r} failed to import: {type(e).__name__}: {e}{also}") from e
        finally:
            _importing.pop()
    found = {}
    for value in vars(module).values():
        if isinstance(value, Workload):
            value.source = key
            found[value.name] = value
    if not found:
        raise UsageError(f"workload file {path!r} defines no workload")
    for wl in found.values():
        if wl.make_inputs is None:
            raise UsageError(f"workload {wl.name!r} in {path!r} has no inputs: add @{wl.name}.inputs")
        if wl.make_reference is None:
            raise UsageError(f"workload {wl.name!r} in {path!r} has no reference: add @{wl.name}.reference")
    _loaded[key] = (mtime, found)
    _stood_in[key] = missing
    return found
