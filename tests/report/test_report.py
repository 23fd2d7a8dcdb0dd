"""The report: plots that show what the results hold, crossovers, CSV, Markdown and an HTML page that escapes
everything."""

import csv
import dataclasses
import json
import re
from pathlib import Path

import pytest

from arraybench.report import write_all
from arraybench.report.crossovers import crossovers
from arraybench.report.data import ReportData
from arraybench.results import Results, load_results
from arraybench.results.record import CaseRecord
from tests.helpers.common import TINY

PEAKS = {"matmul_gflops": {"float32": 80.0, "float64": 40.0}, "bandwidth_gbs": 20.0, "method": "test"}
EVIL = "<img src=x onerror=alert(1)>"


def record(workload, size, backend, mode, median, status="ok", **extra):
    samples = [median * f for f in (0.97, 0.99, 1.0, 1.01, 1.05)] if status in ("ok", "wrong") else []
    rec = {
        "id": f"{workload}[d={size}]/{backend}-{mode}/float32/cpu/t1/x", "workload": workload,
        "params": {"d": size, "n": 100}, "size": size, "backend": backend, "mode": mode,
        "dtype": "float32", "device": "cpu", "threads": 1, "status": status, "error": "",
        "first_call_s": median * 50 if status == "ok" else None, "transfer_s": 1e-5,
        "samples_s": samples, "median_s": median if samples else None,
        "iqr_s": 0.02 * median if samples else None, "noisy": False,
        "flops": 1e6 * size, "bytes": 4e5 * size, "rel_err": 1e-7 if status == "ok" else None,
        "tolerance": 1e-4, "correct": status == "ok" if status in ("ok", "wrong") else None,
    }
    return {**rec, **extra}


def results_of(records, hostname="alpha", peaks=PEAKS):
    header = {"type": "header", "schema": 1, "arraybench_version": "0.1.0", "started": "2026-01-01T00:00:00",
              "settings": {"dtype": "float32", "threads": 1, "devices": ["cpu"], "seed": 0, "timeout": 600.0,
                           "timer": {"min_time": 1.0}},
              "environment": {"hostname": hostname, "cpu_model": "Test CPU", "cpu_logical": 2, "versions":
                              {"numpy": "2.4"}, "gpus": [], "peaks": peaks}}
    return Results(header=header, records=[CaseRecord.from_json(r) for r in records])


def sweep_records():
    """numpy grows with d (1 ms · d); jax·jit is flat at 4 ms, so it overtakes numpy at d = 4 exactly."""
    recs = []
    for d in (1, 2, 8):
        recs.append(record("linreg", d, "numpy", "eager", 1e-3 * d))
        recs.append(record("linreg", d, "jax", "jit", 4e-3))
        recs.append(record("linreg", d, "torch", "eager", 2e-3 * d, noisy=True))
    recs.append(record("linreg", 8, "numba", "jit", 1e-4, status="wrong", correct=False, rel_err=0.3,
                       error="wrong result: relative error 0.3 > tolerance 0.0001"))
    for d in (1, 2):
        recs.append(record("linreg", d, "numba", "jit", 5e-4))
    recs.append(record("linreg", 8, "tensorflow", "jit", None, status="error", error="RuntimeError: boom"))
    recs.append(record("linreg", 1, "cupy", "eager", None, status="unavailable", error="cupy is not installed"))
    return recs


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    return write_all([results_of(sweep_records())], out), out


def svg_texts(path: Path) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", path.read_text())


def test_crossover_is_interpolated_on_the_log_log_curve_and_says_it_is_not_bracketed():
    found = crossovers(ReportData.from_results([results_of(sweep_records())]))
    jax_numpy = [c for c in found if {c.faster_below, c.faster_above} == {"numpy·eager", "jax·jit"}]
    assert len(jax_numpy) == 1
    c = jax_numpy[0]
    assert c.faster_below == "numpy·eager" and c.faster_above == "jax·jit"
    assert c.size == pytest.approx(4.0) and c.time_s == pytest.approx(4e-3)
    assert c.size_param == "d"
    # d = 2 and d = 8 are 4× apart: the crossover is open, and d = 4 would narrow it
    assert (c.lo, c.hi, c.state, c.next_size) == (2, 8, "open", 4)
    # numba is wrong at d = 8, so its only sizes are 1 and 2 where it always wins: no crossover
    assert not [c for c in found if "numba·jit" in (c.faster_below, c.faster_above)]


def test_bar_and_scaling_plots_name_every_backend_and_mark_crossovers(report):
    rep, out = report
    names = {p.name for p in rep.plots}
    assert {"bars-linreg.svg", "bars-linreg.png", "scaling-linreg.svg", "speedup-heatmap.svg",
            "roofline-float32.svg", "roofline-float32.png"} <= names
    assert not any(n.startswith("efficiency") for n in names)  # the roofline replaced the bars
    bars = svg_texts(out / "plots" / "bars-linreg.svg")
    for label in ("numpy·eager", "jax·jit", "torch·eager", "numba·jit", "tensorflow·jit"):
        assert label in bars
    assert "cupy·eager" not in bars  # unavailable here: one line at the top, not a bar
    assert "WRONG" in bars and "ERROR" in bars and "noisy" in bars
    assert "d = 1" in bars and "d = 8" in bars  # smallest and largest side by side
    # The lead passes from numba (wrong at d = 8) to jax: no crossover between the two to mark,
    # and the crossovers between slower pairs are counted, not drawn.
    scaling = svg_texts(out / "plots" / "scaling-linreg.svg")
    assert "2 more crossovers between slower backend·modes: crossovers.csv" in scaling
    assert (out / "plots" / "bars-linreg.png").read_bytes()[:4] == b"\x89PNG"


def test_heatmap_has_a_column_per_backend_mode_and_marks_wrong_cells(report):
    _, out = report
    svg = (out / "plots" / "speedup-heatmap.svg").read_text()
    texts = svg_texts(out / "plots" / "speedup-heatmap.svg")
    columns = ["numpy·eager", "numba·jit", "jax·jit", "tensorflow·jit", "torch·eager"]  # not cupy: unavailable
    assert len(re.findall(r'<g id="xtick_\d+">', svg)) == len(columns)
    assert all(c in texts for c in columns)
    assert "geometric mean (correct cases)" in texts
    assert "WRONG" in texts and "ERROR" in texts and "<pattern" in svg  # hatched, with a word
    # The wrong numba case at d = 8 ran 10× faster than numpy; it must not show as a speedup.
    assert "80×" not in texts
    assert "2×" in texts  # numba at d = 1 and d = 2, and in its geometric mean


def test_csv_has_one_row_per_case_with_derived_numbers(report):
    _, out = report
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert len(rows) == len(sweep_records())
    numpy8 = next(r for r in rows if r["backend"] == "numpy" and r["size"] == "8")
    assert float(numpy8["median_s"]) == pytest.approx(8e-3)
    assert float(numpy8["gflops"]) == pytest.approx(1e6 * 8 / 8e-3 / 1e9)
    assert float(numpy8["pct_bw_peak"]) == pytest.approx(100 * 4e5 * 8 / 8e-3 / 1e9 / 20.0)
    jax8 = next(r for r in rows if r["backend"] == "jax" and r["size"] == "8")
    assert float(jax8["speedup"]) == pytest.approx(2.0)
    assert next(r for r in rows if r["backend"] == "tensorflow")["error"] == "RuntimeError: boom"


def test_markdown_has_tables_crossovers_plots_and_environment(report):
    rep, out = report
    md = (out / "report.md").read_text()
    assert "jax·jit overtakes numpy·eager at d ≈ 4" in md
    assert "![speedup-heatmap](plots/speedup-heatmap.svg)" in md
    assert "matmul float32 80 GFLOP/s" in md and "WRONG" in md
    assert "jax·jit overtakes numpy·eager at d ≈ 4" in rep.summary


def test_html_is_self_contained_and_lists_problems(report):
    _, out = report
    page = (out / "report.html").read_text()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing fetched from the network
    assert page.count('<figure class="plot"') == 5  # winners map, bars, scaling, heatmap, roofline
    assert page.count("data:image/svg+xml;base64,") == 5
    assert 'class="sortable"' in page
    assert "RuntimeError: boom" in page
    assert page.count("cupy is not installed") == 1  # one line above the answer, no row
    assert "wrong result: relative error 0.3" in page
    assert 'class="status noisy"' in page
    assert "<td>numpy·eager</td><td>jax·jit</td>" in page and "<td>open</td>" in page  # crossover table
    assert "matmul float32 80 GFLOP/s" in page and "Test CPU" in page
    # The answer comes first: its map and lines, then its words, before any other picture or table.
    order = [page.index(f'id="{section}"') for section in ("glance", "answer", "overview", "results")]
    assert order == sorted(order)


def test_every_string_from_results_is_escaped(tmp_path):
    recs = [record(EVIL, d, "numpy", "eager", 1e-3 * d) for d in (1, 2)]
    recs.append(record(EVIL, 2, "jax", "jit", 1e-3, status="error", error="<script>alert(2)</script>"))
    res = results_of(recs, hostname="<b>host</b>")
    write_all([res], tmp_path)
    page = (tmp_path / "report.html").read_text()
    assert EVIL not in page and "<script>alert(2)" not in page and "<b>host</b>" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page and "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    assert page.count("<script>") == 1  # the page's own sorting script, nothing else


def test_several_machines_are_kept_apart(tmp_path):
    a = results_of(sweep_records(), hostname="alpha")
    b = results_of([record("linreg", d, "numpy", "eager", 2e-3 * d) for d in (1, 2, 8)], hostname="beta")
    rep = write_all([a, b], tmp_path)
    rows = list(csv.DictReader((tmp_path / "results.csv").open()))
    assert {r["machine"] for r in rows} == {"alpha", "beta"}
    assert len(rows) == len(sweep_records()) + 3  # same case ids, different machines: both kept
    heat = svg_texts(tmp_path / "plots" / "speedup-heatmap.svg")
    assert "numpy·eager @alpha" in heat and "numpy·eager @beta" in heat
    assert "machine alpha" in rep.summary and "machine beta" in rep.summary
    page = (tmp_path / "report.html").read_text()
    assert "<h3>alpha</h3>" in page and "<h3>beta</h3>" in page


def test_two_hosts_of_one_name_with_other_cpus_are_two_machines():
    """Two VMs both called `vm`: the report tells them apart as the store and the site do, by the
    environment's fingerprint, and names each by it; one host's two runs stay one machine."""
    from arraybench.machine.host import fingerprint

    small, large = results_of(sweep_records(), hostname="vm"), results_of(sweep_records(), hostname="vm")
    large.header = dataclasses.replace(large.header, environment=dataclasses.replace(large.environment,
                                                                                     cpu_model="Big CPU"))
    data = ReportData.from_results([small, large])
    assert data.machines == sorted([fingerprint(small.environment), fingerprint(large.environment)])
    assert len(data.records) == 2 * len(sweep_records())
    assert "numpy·eager @vm · Big CPU ×2 · no GPU" in data.labels()
    assert set(data.headers) == set(data.machines)
    again = ReportData.from_results([small, results_of(sweep_records()[:3], hostname="vm")])
    assert again.machines == ["vm"] and len(again.records) == len(sweep_records())


def test_peaks_are_measured_in_a_subprocess_or_stated(monkeypatch):
    from arraybench.measure import peaks

    monkeypatch.setenv("ARRAYBENCH_PEAKS", "skip")
    assert peaks.measure(1)["method"].startswith("skipped")
    monkeypatch.setenv("ARRAYBENCH_PEAKS", json.dumps({"bandwidth_gbs": 12.5}))
    assert peaks.measure(1) == {"bandwidth_gbs": 12.5, "method": "stated by ARRAYBENCH_PEAKS"}
    monkeypatch.delenv("ARRAYBENCH_PEAKS")
    measured = peaks.measure(1)
    assert measured["threads"] == 1 and "matmul" in measured["method"]
    assert measured["matmul_gflops"]["float32"] > 0 and measured["matmul_gflops"]["float64"] > 0
    assert measured["bandwidth_gbs"] > 0


@pytest.mark.parametrize("nbytes", [256 * 2**10, 2**20])
def test_peak_copies_run_between_arrays_that_cannot_4k_alias(nbytes):
    """A copy between arrays that start at the same offset within a page stalls on 4K aliasing
    (a 256 KiB copy measured 5.5 GB/s so, 74 GB/s otherwise): the peaks place them 2 KiB apart."""
    from arraybench.measure import peaks

    src, dst = peaks.copy_pair(nbytes)
    assert src.nbytes == dst.nbytes == nbytes and (src == 1.0).all()
    assert (dst.ctypes.data - src.ctypes.data) % 4096 == 2048
    assert src.ctypes.data % 4096 == 0 and dst.ctypes.data >= src.ctypes.data + nbytes


def test_tiny_real_run_writes_the_whole_report_and_report_rebuilds_it(tmp_path, run_cli, monkeypatch):
    monkeypatch.setenv("ARRAYBENCH_PEAKS", json.dumps(PEAKS))
    run_dir = tmp_path / "run"
    code, stdout, stderr = run_cli("run", "--backends", "numpy,numba", "--sizes", "2,4", "--threads", "1",
                                   "--output-dir", str(run_dir), *TINY)
    assert code == 0, stderr
    for name in ("results.jsonl", "report.md", "results.csv", "report.html", "plots/winners.svg",
                 "plots/bars-linreg.svg", "plots/scaling-linreg.png", "plots/speedup-heatmap.svg",
                 "plots/roofline-float32.svg", "crossovers.csv"):
        assert (run_dir / name).stat().st_size > 0, name
    assert "Crossovers" in stdout and "The answer at a glance" in stdout and "report.html" in stderr
    assert load_results(run_dir).environment.peaks.method == "stated by ARRAYBENCH_PEAKS"
    rebuilt = tmp_path / "rebuilt"
    code, stdout, _ = run_cli("report", str(run_dir / "results.jsonl"), "--output-dir", str(rebuilt))
    assert code == 0 and "numba·jit" in stdout
    assert (rebuilt / "results.csv").read_text() == (run_dir / "results.csv").read_text()
    assert svg_texts(rebuilt / "plots" / "speedup-heatmap.svg") == svg_texts(run_dir / "plots" / "speedup-heatmap.svg")


def test_report_into_an_unwritable_place_is_one_line_and_exit_2(tmp_path, run_cli):
    (tmp_path / "file").write_text("")
    res = tmp_path / "results.jsonl"
    res.write_text(json.dumps({"type": "header", "schema": 1}) + "\n")
    code, _, err = run_cli("report", str(res), "--output-dir", str(tmp_path / "file" / "out"))
    assert code == 2 and "cannot write the report" in err and len(err.strip().splitlines()) == 1


def test_without_matplotlib_the_rest_of_the_report_is_still_written(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails
    rep = write_all([results_of(sweep_records())], tmp_path)
    assert rep.plots == () and "matplotlib is not installed" in rep.warnings[0]
    assert "matplotlib is not installed" in rep.html.read_text()
    assert rep.csv.exists() and "jax·jit overtakes numpy·eager" in rep.markdown.read_text()


def test_two_dtypes_get_their_own_bars_and_heatmap_rows(tmp_path):
    recs = [record("linreg", d, "numpy", "eager", 1e-3 * d) for d in (1, 2)]
    recs += [{**record("linreg", d, "numpy", "eager", 3e-3 * d), "dtype": "float64",
              "id": f"linreg[d={d}]/numpy-eager/float64"} for d in (1, 2)]
    rep = write_all([results_of(recs)], tmp_path)
    names = {p.name for p in rep.plots}
    assert {"bars-linreg-float32.svg", "bars-linreg-float64.svg"} <= names
    heat = svg_texts(tmp_path / "plots" / "speedup-heatmap.svg")
    assert "linreg · d=1 · float32" in heat and "linreg · d=1 · float64" in heat


def test_a_wrong_case_whose_output_was_not_finite_is_shown_not_crashed_on():
    from arraybench.report.table import cell

    assert cell(CaseRecord(status="wrong", rel_err=None), None) == "WRONG (rel err not finite)"
    assert cell(CaseRecord(status="wrong", rel_err=0.25), None) == "WRONG (rel err 2.5e-01)"
