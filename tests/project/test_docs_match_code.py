"""The README and docs say what the code does: the tests they name exist, the sampling they state is the code's."""

import re

import pytest

from arraybench.execution.session import FIRST_ROUNDS
from arraybench.planning.settings import sampling
from tests.helpers.common import ROOT

DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
TEST_SOURCES = "\n".join(p.read_text() for p in (ROOT / "tests").rglob("*.py"))


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_test_file_and_test_a_doc_names_exists(doc):
    text = doc.read_text()
    for path in re.findall(r"\btests/[\w/]+\.\w+", text):
        assert (ROOT / path).exists(), f"{doc.name} names {path}, which does not exist"
    for name in set(re.findall(r"`(test_\w+)`", text)):
        assert f"def {name}(" in TEST_SOURCES, f"{doc.name} names {name}, which no test file defines"


def test_the_readme_states_the_sampling_each_kind_of_run_uses():
    readme = " ".join((ROOT / "README.md").read_text().split())
    plain, quick, chosen = sampling(None, True, {}), sampling("quick", False, {}), sampling(None, False, {})
    span = "{0.min_time:g}–{0.max_time:g} s".format
    assert f"a plain run or a suite {span(plain)}, `--quick` {span(quick)}" in readme
    assert f"`--workload-file` {span(chosen)}" in readme
    assert f"({chosen.min_time:g}–{chosen.max_time:g} s a process; the default suite {span(plain)})" in readme
    bench = " ".join((ROOT / "docs" / "bench.md").read_text().split())
    # docs/bench.md says how many processes each case gets: the first rounds, then the plan's for the open ones.
    assert ({2: "two"}[FIRST_ROUNDS], {3: "third"}[plain.processes]) == ("two", "third")
    assert f"Every case gets two fresh worker processes; the third that `--processes {plain.processes}` plans" in bench
