"""Notebooks: examples/quickstart.ipynb run by a real Jupyter kernel; Results' repr and HTML."""

import os
import shutil

import pytest

from arraybench.results import Results
from arraybench.results.record import CaseRecord
from arraybench.store import Store
from tests.helpers.common import ROOT

nbformat = pytest.importorskip("nbformat", reason="pip install 'arraybench[notebook]'")
nbclient = pytest.importorskip("nbclient", reason="pip install 'arraybench[notebook]'")


@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    """The quickstart notebook, executed top to bottom in a fresh folder by an IPython kernel."""
    folder = tmp_path_factory.mktemp("notebook")
    shutil.copy(ROOT / "examples" / "quickstart.ipynb", folder)
    nb = nbformat.read(folder / "quickstart.ipynb", as_version=4)
    old = os.environ.get("PYTHONPATH")
    # The kernel imports this checkout's arraybench, installed or not.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT / "src"), old]))
    try:
        nbclient.NotebookClient(nb, timeout=600, kernel_name="python3",
                                resources={"metadata": {"path": str(folder)}}).execute()
    finally:
        if old is None:
            os.environ.pop("PYTHONPATH")
        else:
            os.environ["PYTHONPATH"] = old
    return folder, [c for c in nb.cells if c.cell_type == "code"]


def output(cell, mime: str) -> str:
    return "".join(o["data"][mime] for o in cell.outputs if o.get("output_type") == "execute_result"
                   and mime in o.get("data", {}))


def test_quickstart_shows_results_as_a_table_not_raw_samples(executed):
    _, cells = executed
    html, text = output(cells[0], "text/html"), output(cells[0], "text/plain")
    assert "<table>" in html and "linreg (float64)" in html and "numpy·eager" in html
    assert text.startswith("<Results run ") and "cases (" in text and len(text) < 300


def test_quickstart_compares_two_runs_and_both_are_stored(executed):
    folder, cells = executed
    assert "cases on both sides" in output(cells[2], "text/plain")
    with Store(folder / ".arraybench" / "results.db", create=False) as st:
        runs = st.runs()
    assert len(runs) == 2 and all(r.cases >= 4 for r in runs)
    assert runs[-1].id in output(cells[3], "text/plain")  # ab.load("latest") is the second run


def record(backend: str, status: str, median: float | None, size: int = 2) -> CaseRecord:
    return CaseRecord.from_json({"id": f"w[{size}]/{backend}", "workload": "w", "params": {"n": size}, "size": size,
                                 "backend": backend, "mode": "eager", "dtype": "float32", "status": status,
                                 "median_s": median, "samples_s": [median or 0.0] * 50})


def test_html_colours_fast_green_and_never_a_wrong_case():
    res = Results({"run_id": "r1"}, [record("numpy", "ok", 2e-3), record("torch", "ok", 1e-3),
                                     record("jax", "wrong", 1e-4)])
    html = res._repr_html_()
    torch_row = html.split("torch·eager</th>")[1].split("</tr>")[0]
    jax_row = html.split("jax·eager</th>")[1].split("</tr>")[0]
    assert "2.00×" in torch_row and "rgb(" in torch_row and ",255," in torch_row  # green: faster
    assert "WRONG" in jax_row and "rgb(" not in jax_row and "×" not in jax_row


def test_repr_is_one_short_line_without_samples():
    res = Results({"run_id": "r1"}, [record("numpy", "ok", 2e-3), record("jax", "wrong", 1e-4)])
    text = repr(res)
    assert text == "<Results run r1: 2 cases (1 ok, 1 wrong) of w>"
