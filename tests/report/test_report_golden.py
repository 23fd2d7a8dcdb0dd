"""A fixed results file renders byte for byte as it did when its golden outputs were committed.

The fixture (tests/fixtures/golden/results.jsonl) is a real run: `double` from wrong_workload.py
(numpy right, numba·jit wrong, torch raising) and `elementwise_add`, numpy, numba and torch in both
modes, two sizes, two processes each, in two environments `@old` and `@new`. A refactor of the
report may not change a byte of what it shows; a change meant to show something else regenerates
the goldens with ARRAYBENCH_UPDATE_GOLDEN=1 and commits them, so the diff is reviewed.
"""

import os
import re
from pathlib import Path

import pytest

from arraybench.cli import main
from arraybench.report import write_all
from arraybench.report.exports import EXPORT_FORMATS
from arraybench.results import load_results
from tests.helpers.common import FIXTURES

GOLDEN = FIXTURES / "golden"
RESULTS = GOLDEN / "results.jsonl"
UPDATE = os.environ.get("ARRAYBENCH_UPDATE_GOLDEN") == "1"
# The one inherently variable line: when the page was generated (the run's own date is the fixture's).
GENERATED = re.compile(r"generated \d{4}-\d\d-\d\d \d\d:\d\d \w*")


def check(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text)
    assert text == path.read_text(), f"{name} differs from its golden copy in {GOLDEN}"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    # The plots' pixels are matplotlib's, not ours: each is built as the report builds it (so
    # report.md names the same files) and written empty.
    import matplotlib.figure

    out = tmp_path_factory.mktemp("report")
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(matplotlib.figure.Figure, "savefig", lambda self, path, **kw: Path(path).write_bytes(b""))
        return write_all([load_results(RESULTS)], out)


@pytest.mark.parametrize("name", ["report.md", "results.csv", "crossovers.csv"])
def test_report_files_are_unchanged(report, name):
    check(name, (report.markdown.parent / name).read_text())


def test_html_page_is_unchanged_but_for_when_it_was_generated(report):
    check("report.html", GENERATED.sub("generated (time)", report.html.read_text()))


def test_terminal_summary_and_warnings_are_unchanged(report):
    check("summary.txt", "\n".join([report.summary, "", *report.warnings, ""]))


@pytest.mark.parametrize("fmt", EXPORT_FORMATS)  # each is deterministic
def test_each_export_format_is_unchanged(fmt, tmp_path):
    out = tmp_path / f"export.{fmt}"
    assert main(["export", str(RESULTS), "--format", fmt, "-o", str(out), "--store", str(tmp_path / "db")]) == 0
    check(f"export.{fmt}", out.read_text())
