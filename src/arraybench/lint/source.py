"""Reads a script or a notebook into one Python module, each line mapped back to where it came from.

A notebook's code cells are joined in order, as a kernel that ran them top to bottom would see
them. IPython syntax is rewritten into plain Python that keeps its meaning for the linter: a
timing magic (`%timeit`, `%time`, `%%timeit`, `%%time`) becomes a `with` block on the marker
`MAGIC` around the code it times; other magics and shell escapes (`!pip ...`) become `pass`; a
cell magic that does not run Python (`%%bash`, `%%writefile`) drops its cell. A script is read
as plain Python first and rewritten only if it does not parse, so the rewriting cannot change
what a valid script means.
"""

from __future__ import annotations

import ast
import json
import re
from dataclasses import dataclass
from pathlib import Path

from arraybench.errors import UsageError

# The call a timing magic becomes: `with __arraybench_magic__("timeit", "-n 10"):`.
MAGIC = "__arraybench_magic__"
TIMING_MAGICS = ("timeit", "time")
# Cell magics that run their cell as Python; any other cell magic (bash, writefile, html...) does not.
PYTHON_CELL_MAGICS = ("time", "timeit", "capture", "prun")
SUFFIXES = (".py", ".ipy", ".ipynb")

_LINE_MAGIC = re.compile(r"^(?P<indent>[ \t]*)(?:[\w.\[\], ]+=[ \t]*)?(?P<sigil>%|!)(?P<rest>.*)$")
_HELP = re.compile(r"^[ \t]*\??[\w.]+\?\??[ \t]*$")  # `np.dot?`, `??f`: IPython's help
_CELL_MAGIC = re.compile(r"^%%(?P<name>\w+)(?P<args>.*)$")


@dataclass(frozen=True)
class Origin:
    """Where a line of the joined code came from: a line of the script, or a line of a cell."""

    line: int
    cell: int | None = None  # 1-based, counting every cell (markdown too), as Jupyter and ruff show it


@dataclass(frozen=True)
class Source:
    """A script or notebook as the linter reads it: one module of Python, lines mapped back."""

    path: Path
    code: str
    origins: tuple[Origin, ...]  # origins[i] is where line i + 1 of `code` came from

    @property
    def notebook(self) -> bool:
        return self.path.suffix == ".ipynb"

    def origin(self, line: int) -> Origin:
        return self.origins[min(max(line, 1), len(self.origins)) - 1] if self.origins else Origin(line)

    def where(self, line: int) -> str:
        """A line as a sentence refers to it: "line 12", or "cell 4, line 2" in a notebook."""
        at = self.origin(line)
        return f"line {at.line}" if at.cell is None else f"cell {at.cell}, line {at.line}"

    def parse(self) -> ast.Module:
        return ast.parse(self.code, filename=str(self.path))


def read_source(path: str | Path) -> Source:
    """The script or notebook at `path`, ready to parse; a UsageError says why it cannot be read."""
    p = Path(path)
    if p.suffix not in SUFFIXES:
        raise UsageError(f"{p}: not a Python script or notebook (expected {', '.join(SUFFIXES)})")
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{p}: no such file") from None
    except (OSError, UnicodeDecodeError) as e:
        raise UsageError(f"{p}: cannot be read ({e})") from None
    if p.suffix == ".ipynb":
        return _notebook(p, text)
    return _script(p, text)


def _script(path: Path, text: str) -> Source:
    lines = text.splitlines()
    plain = Source(path, text, tuple(Origin(i + 1) for i in range(len(lines))))
    try:
        ast.parse(text)
        return plain
    except SyntaxError:
        pass
    code, origins = _rewrite([(Origin(i + 1), line) for i, line in enumerate(lines)])
    source = Source(path, code, tuple(origins))
    _check_syntax(source, path)
    return source


def _notebook(path: Path, text: str) -> Source:
    try:
        cells = json.loads(text)["cells"]
    except (ValueError, KeyError, TypeError):
        raise UsageError(f"{path}: not a Jupyter notebook (no JSON object with a list of cells; "
                         "nbformat 4 is read)") from None
    code: list[str] = []
    origins: list[Origin] = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        raw = cell.get("source", "")
        lines = ("".join(raw) if isinstance(raw, list) else str(raw)).splitlines()
        cell_code, cell_origins = _rewrite_cell([(Origin(i + 1, number), line) for i, line in enumerate(lines)])
        cell_source = Source(path, cell_code, tuple(cell_origins))
        _check_syntax(cell_source, path)
        code.append(cell_code)
        origins.extend(cell_origins)
    return Source(path, "".join(code), tuple(origins))


def _check_syntax(source: Source, path: Path) -> None:
    try:
        source.parse()
    except SyntaxError as e:
        at = source.where(e.lineno or 1)
        raise UsageError(f"{path}: {at}: not valid Python: {e.msg}") from None


def _rewrite_cell(lines: list[tuple[Origin, str]]) -> tuple[str, list[Origin]]:
    """A cell, its cell magic (on the first line) applied, then its line magics."""
    first = next((i for i, (_, text) in enumerate(lines) if text.strip()), None)
    m = _CELL_MAGIC.match(lines[first][1].strip()) if first is not None else None
    if m is None or first is None:
        return _rewrite(lines)
    name, args = m["name"], m["args"].strip()
    if name not in PYTHON_CELL_MAGICS:
        return "", []
    head, body = lines[first], lines[first + 1:]
    if name not in TIMING_MAGICS:
        return _rewrite(body)
    options, setup = split_options(args) if name == "timeit" else ("", "")
    out: list[tuple[Origin, str]] = [(head[0], setup)] if setup else []
    out.append((head[0], f"with {MAGIC}({'%%' + name!r}, {options!r}):"))
    code, origins = _rewrite(body)
    indented = [(o, "    " + text) for o, text in zip(origins, code.splitlines(), strict=True)]
    out.extend(indented or [(head[0], "    pass")])
    return "".join(text + "\n" for _, text in out), [o for o, _ in out]


def _rewrite(lines: list[tuple[Origin, str]]) -> tuple[str, list[Origin]]:
    """Line magics and shell escapes made Python; every other line kept as it is."""
    out: list[tuple[Origin, str]] = []
    for origin, text in lines:
        m = _LINE_MAGIC.match(text)
        if _HELP.match(text) and not _continues(out):
            out.append((origin, text[: len(text) - len(text.lstrip())] + "pass"))
            continue
        if m is None or _continues(out):
            out.append((origin, text))
            continue
        indent, rest = m["indent"], m["rest"]
        name, _, args = rest.partition(" ")
        if m["sigil"] == "%" and name in TIMING_MAGICS:
            options, stmt = split_options(args) if name == "timeit" else ("", args.strip())
            out.append((origin, f"{indent}with {MAGIC}({'%' + name!r}, {options!r}):"))
            out.append((origin, f"{indent}    {stmt or 'pass'}"))
        else:
            out.append((origin, f"{indent}pass"))
    return "".join(text + "\n" for _, text in out), [o for o, _ in out]


def _continues(previous: list[tuple[Origin, str]]) -> bool:
    # A line ending in a backslash carries the statement on: `x = a \` then `% b` is arithmetic.
    return bool(previous) and previous[-1][1].rstrip().endswith("\\")


def split_options(args: str) -> tuple[str, str]:
    """`-n 10 -r 3 f(x)` -> ("-n 10 -r 3", "f(x)"): %timeit's options, then the code it times."""
    words = args.split()
    taken = 0
    while taken < len(words) and re.fullmatch(r"-[nrptcqo]\S*", words[taken]):
        flag = words[taken]
        taken += 1
        if flag in ("-n", "-r", "-p") and taken < len(words):
            taken += 1  # the option's value is the next word
    options = " ".join(words[:taken])
    rest = args.strip()
    for word in words[:taken]:
        rest = rest[rest.index(word) + len(word):].lstrip()
    return options, rest


def timeit_counts(options: str) -> tuple[int | None, int | None]:
    """%timeit's -n (loops per run) and -r (runs) from its options; None where not given."""
    found: dict[str, int | None] = {"n": None, "r": None}
    words = options.split()
    for i, word in enumerate(words):
        for flag in found:
            if word.startswith(f"-{flag}"):
                value = word[2:] or (words[i + 1] if i + 1 < len(words) else "")
                found[flag] = int(value) if value.isdigit() else None
    return found["n"], found["r"]
