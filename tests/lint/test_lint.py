"""`arraybench lint`: each timing mistake of the source documents found at its line, none in correct code."""

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from arraybench.cli import main
from arraybench.errors import UsageError
from arraybench.lint import RULES, check_file
from arraybench.lint.source import read_source
from tests.helpers.common import FIXTURES, ROOT

LINT_FIXTURES = FIXTURES / "lint"
EXPECT = re.compile(r"#\s*expect:\s*((?:ABL\d{3}\s*)+)")

# Every mistake each source document's code makes, at the document's own line (a notebook cell's
# metadata says which lines of the document it holds). Document 001 prints no code: its
# benchmark lives in a notebook it links to, so there is nothing of it to lint.
DOCUMENTS = {
    "seed_002.ipynb": {  # 5: %timeit jax.jit(f)(jnp.array(x)); np.dot in float64 against jnp.dot in float32
        ("ABL001", 94), ("ABL003", 94), ("ABL004", 94), ("ABL005", 94), ("ABL005", 114),
    },
    "seed_003.py": {  # 3: the lambda the document calls BAD, as its prose says it is timed
        ("ABL001", 172), ("ABL002", 172), ("ABL004", 172),
    },
    "seed_004.ipynb": {  # 8: %time of an unsynchronised first call; copies back in the GPU timings; jit rebuilt
        ("ABL001", 148), ("ABL002", 148), ("ABL006", 148), ("ABL004", 202), ("ABL004", 210), ("ABL004", 217),
        ("ABL004", 244), ("ABL003", 274),
    },
}
SYNTHETIC = sorted(LINT_FIXTURES.glob("synthetic_*"))


def _document_line(path: Path, cell: int | None, line: int) -> int:
    if cell is None:
        return line
    first = json.loads(path.read_text())["cells"][cell - 1]["metadata"]["document_lines"][0]
    return first + line - 1


def _marked(path: Path) -> set[tuple[str, int | None, int]]:
    """(rule, cell, line) of every `# expect: ABL00N` marker in a script or notebook."""
    if path.suffix == ".ipynb":
        cells = [(n, "".join(c["source"])) for n, c in enumerate(json.loads(path.read_text())["cells"], 1)
                 if c["cell_type"] == "code"]
    else:
        cells = [(None, path.read_text())]
    return {(rule, cell, i) for cell, text in cells for i, line in enumerate(text.splitlines(), 1)
            if (m := EXPECT.search(line)) for rule in m[1].split()}


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_each_mistake_of_each_source_document_is_found_at_its_line(name):
    path = LINT_FIXTURES / name
    found = {(f.rule, _document_line(path, f.cell, f.line)) for f in check_file(path).findings}
    assert found == DOCUMENTS[name]


@pytest.mark.parametrize("path", SYNTHETIC, ids=lambda p: p.name)
def test_a_synthetic_file_gives_exactly_its_marked_findings(path):
    found = {(f.rule, f.cell, f.line) for f in check_file(path).findings}
    assert found == _marked(path)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_every_rule_has_a_faulty_and_a_correct_synthetic_form(rule):
    path = LINT_FIXTURES / f"synthetic_{rule.id.lower()}.py"
    assert any(r == rule.id for r, _, _ in _marked(path))
    faulty, correct = path.read_text().split("# ---- correct")
    assert EXPECT.search(correct) is None and len(correct.strip().splitlines()) > 5


def test_arraybench_own_code_workloads_and_examples_give_no_finding():
    files = [*sorted((ROOT / "src" / "arraybench").rglob("*.py")), *sorted((ROOT / "examples").glob("*.py")),
             *sorted((ROOT / "examples").glob("*.ipynb"))]
    assert len(files) > 100
    found = [f"{f.location}: {f.rule} {f.what}" for path in files for f in check_file(path).findings]
    assert found == []


def test_in_the_harness_checks_it_finds_only_the_dispatch_timed_on_purpose():
    # benchmarks/jax_matmul_sync.py times a jitted matmul without waiting, to show what that reports.
    path = ROOT / "benchmarks" / "jax_matmul_sync.py"
    dispatch_only = next(n for n in ast.walk(ast.parse(path.read_text()))
                         if isinstance(n, ast.FunctionDef) and n.name == "dispatch_only")
    found = [(f.rule, dispatch_only.lineno <= f.line <= dispatch_only.end_lineno)
             for p in sorted((ROOT / "benchmarks").glob("*.py")) for f in check_file(p).findings]
    assert found == [("ABL001", True)]


def test_a_finding_says_what_why_and_how_to_fix_it():
    finding = next(f for f in check_file(LINT_FIXTURES / "seed_004.ipynb").findings if f.rule == "ABL003")
    assert finding.location == f"{LINT_FIXTURES / 'seed_004.ipynb'}:cell 27:1"
    assert "jax.jit(selu)" in finding.what
    assert finding.why.endswith(".") and "slow path" in finding.why
    assert "once, outside the timed code" in finding.fix


def test_the_timed_code_of_document_002_becomes_workloads_arraybench_can_run(tmp_path):
    from arraybench.workloads.userfile import load_workload_file

    checked = check_file(LINT_FIXTURES / "seed_002.ipynb")
    assert checked.workloads is not None
    assert "def f_cell4(xp, x):\n    return -4 * x * x * x + 9 * x * x + 6 * x - 3" in checked.workloads
    assert "def dot_cell5(xp, x):\n    return xp.matmul(x, x.T)" in checked.workloads
    assert 'presets={"script": {"n": 10000}}' in checked.workloads
    path = tmp_path / "workloads.py"
    path.write_text(checked.workloads)
    assert check_file(path).findings == ()
    loaded = load_workload_file(str(path))
    assert sorted(loaded) == ["dot_cell5", "f_cell4"]
    assert loaded["f_cell4"].presets == {"script": {"n": 10000}}


def test_document_004s_timings_become_one_workload_per_computation():
    workloads = check_file(LINT_FIXTURES / "seed_004.ipynb").workloads or ""
    names = re.findall(r"^def (\w+)\(xp", workloads, re.M)
    # x·xᵀ (JAX, cells 11, 16, 23), x·x (TensorFlow and PyTorch: one), selu: its defaults kept.
    assert names == ["dot_cell11", "matmul_cell17", "selu_cell27"]
    assert "def selu_cell27(xp, x, alpha=1.67, lmbda=1.05):" in workloads
    assert "xp.where(x > 0, x, alpha * xp.exp(x) - alpha)" in workloads


def test_a_notebooks_lines_map_back_to_their_cells(tmp_path):
    cells = [{"cell_type": "markdown", "source": ["# title"]},
             {"cell_type": "code", "source": ["import jax\n", "x = jax.numpy.ones(3)"]},
             {"cell_type": "code", "source": ["%%timeit -n 5\n", "y = x + 1\n", "z = y * 2"]},
             {"cell_type": "code", "source": ["%%bash\n", "echo not python"]}]
    path = tmp_path / "nb.ipynb"
    path.write_text(json.dumps({"cells": cells, "nbformat": 4, "nbformat_minor": 5, "metadata": {}}))
    source = read_source(path)
    code = source.code.splitlines()
    magic = next(i for i, line in enumerate(code, 1) if "%%timeit" in line)
    assert (source.origin(magic).cell, source.origin(magic).line) == (3, 1)
    assert code[-1] == "    z = y * 2"  # the cell's body, inside the block the magic became
    assert (source.origin(len(code)).cell, source.origin(len(code)).line) == (3, 3)
    assert source.where(len(code)) == "cell 3, line 3"
    assert "echo" not in source.code  # a %%bash cell is not Python: left out


def test_a_script_with_magics_is_read_as_ipython_and_keeps_its_line_numbers(tmp_path):
    path = tmp_path / "bench.py"
    path.write_text("import jax\nx = jax.numpy.ones(3)\nf = jax.jit(lambda a: a)\n\n%timeit f(x)\n")
    (finding,) = check_file(path).findings
    assert (finding.rule, finding.line, finding.cell) == ("ABL001", 5, None)


@pytest.mark.parametrize("content, suffix, message", [
    (None, ".py", "no such file"),
    ("def f(:\n", ".py", "line 1: not valid Python"),
    ("x = 1\n", ".txt", "not a Python script or notebook"),
    ("{not json", ".ipynb", "not a Jupyter notebook"),
    (json.dumps({"cells": [{"cell_type": "code", "source": "x = (\n"}]}), ".ipynb", "cell 1, line 1: not valid"),
])
def test_input_it_cannot_read_is_one_line_and_exit_code_2(tmp_path, capsys, content, suffix, message):
    path = tmp_path / f"script{suffix}"
    if content is not None:
        path.write_text(content)
    with pytest.raises(UsageError, match=message):
        check_file(path)
    assert main(["lint", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message.split(":")[0] in err


def test_the_exit_code_is_1_with_findings_and_0_without(capsys):
    assert main(["lint", str(LINT_FIXTURES / "seed_003.py")]) == 1
    out = capsys.readouterr().out
    assert f"{LINT_FIXTURES / 'seed_003.py'}:172: ABL004 " in out and "\n    why: " in out and "\n    fix: " in out
    assert out.rstrip().endswith("3 findings in 2 timings (ABL001 1, ABL002 1, ABL004 1)")
    assert main(["lint", str(ROOT / "examples" / "heat.py")]) == 0
    assert capsys.readouterr().out.strip().endswith("heat.py: no timing of array code found")


def test_json_output_and_the_workload_file(tmp_path, capsys):
    target = tmp_path / "measured.py"
    assert main(["lint", str(LINT_FIXTURES / "seed_002.ipynb"), "--format", "json", "--write-workload",
                 str(target)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["counts"] == {"ABL001": 1, "ABL003": 1, "ABL004": 1, "ABL005": 2}
    assert {(f["rule"], f["cell"], f["line"]) for f in report["findings"]} >= {("ABL004", 4, 7)}
    assert set(report["findings"][0]) == {"file", "line", "cell", "rule", "what", "why", "fix"}
    assert target.read_text() == report["workloads"]
    opaque = tmp_path / "opaque.py"  # a mistake, but in code whose computation the file does not show
    opaque.write_text("import time\nimport jax\nf = jax.jit(g)\nt0 = time.perf_counter()\nf(load())\n"
                      "print(time.perf_counter() - t0)\n")
    assert main(["lint", str(opaque), "--write-workload", str(tmp_path / "x.py")]) == 2
    assert "no timed computation" in capsys.readouterr().err


def test_linting_imports_no_framework_and_runs_nothing():
    code = ("import sys; from arraybench.lint import check_file; "
            f"check_file({str(LINT_FIXTURES / 'seed_004.ipynb')!r}); "
            "print(sorted(m for m in ('numpy', 'jax', 'torch', 'tensorflow', 'numba', 'cupy') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]"


def test_the_docs_page_states_every_rule():
    page = (ROOT / "docs" / "lint.md").read_text()
    for rule in RULES:
        assert f"## {rule.id}: {rule.title}" in page
