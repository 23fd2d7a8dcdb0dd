"""The layout as a rule: the stages' order in docs/architecture.md, and the runtime imports that follow it.

A runtime import (anything outside `if TYPE_CHECKING:`, a function's own imports included) may run
from a stage to its own or a lower one, with no exception. No module imports itself back through others
(no cycle)."""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

from tests.helpers.common import ROOT

PACKAGE = ROOT / "src" / "arraybench"



def stage_order() -> list[str]:
    """The stages, lowest first, as docs/architecture.md states them (its line "Stages, lowest first: …")."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    line = re.search(r"^Stages, lowest first: (.+)$", text, re.M)
    assert line, "docs/architecture.md states no stage order"
    return re.findall(r"`([\w.]+)`", line.group(1))


def module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def is_module(name: str) -> bool:
    rel = Path(*name.split("."))
    return (PACKAGE.parent / rel).with_suffix(".py").exists() or (PACKAGE.parent / rel / "__init__.py").exists()


def runtime_imports() -> dict[str, set[str]]:
    """Each module's imports of arraybench modules, those under `if TYPE_CHECKING:` left out."""
    graph: dict[str, set[str]] = defaultdict(set)
    for path in PACKAGE.rglob("*.py"):
        name, tree = module_name(path), ast.parse(path.read_text())
        typing_only = {id(n) for node in ast.walk(tree)
                       if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
                       for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("arraybench"):
                module = node.module or ""
                subs = [f"{module}.{a.name}" for a in node.names if is_module(f"{module}.{a.name}")]
                graph[name].update(subs or [module])
                if len(subs) < len(node.names):
                    graph[name].add(module)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name.startswith("arraybench"))
        graph[name].discard(name)
    return graph


def stage_of(module: str, stages: list[str]) -> str:
    """The stage a module belongs to: its folder, or the root module itself (`arraybench` is the root's
    `__init__`)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def upward(graph: dict[str, set[str]], stages: list[str]) -> set[str]:
    rank = {s: i for i, s in enumerate(stages)}
    found = set()
    for importer, imported in graph.items():
        for target in imported:
            if rank[stage_of(importer, stages)] < rank[stage_of(target, stages)]:
                found.add(f"{importer} -> {target}")
    return found


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan), each a cycle of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_stage_is_in_the_documented_order_once():
    stages = stage_order()
    assert len(stages) == len(set(stages))
    graph = runtime_imports()
    present = {stage_of(m, stages) for m in graph} | {stage_of(t, stages) for ts in graph.values() for t in ts}
    assert present - {"__main__"} <= set(stages), f"stages missing from docs/architecture.md: {present - set(stages)}"


def test_no_runtime_import_runs_up_a_stage():
    found = upward(runtime_imports(), stage_order())
    assert not found, f"imports that run up a stage: {sorted(found)}"


def test_no_import_cycle():
    assert cycles(runtime_imports()) == []


def test_the_checks_see_an_upward_import_and_a_cycle():
    graph = {"arraybench.stats.a": {"arraybench.report.b"}, "arraybench.report.b": {"arraybench.stats.a"}}
    assert upward(graph, ["stats", "report"]) == {"arraybench.stats.a -> arraybench.report.b"}
    assert cycles(graph) == [["arraybench.report.b", "arraybench.stats.a"]]
