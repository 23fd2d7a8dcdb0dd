"""The report's answer: a paragraph per workload, a bound per case, no fake rates, bracketed crossovers, a roofline."""

import csv
import dataclasses
import re

import pytest

from arraybench.report import write_all
from arraybench.report.answer import answers
from arraybench.report.crossovers import crossovers
from arraybench.report.data import ReportData
from tests.helpers.common import FIXTURES
from tests.helpers.report_data import PEAKS, bisected_records
from tests.report.test_report import record, results_of
from tests.report.test_report import results_of as report_results_of


def by_case(data, workload, label, size):
    return next(r for r in data.records if r.workload == workload and data.label(r) == label and r.size == size)


def test_the_answer_opens_report_md_and_names_who_wins_where_by_how_much_and_the_per_call_costs(bisected_report):
    rep, out = bisected_report
    md = (out / "report.md").read_text()
    assert md.index("## The answer") < md.index("![speedup-heatmap]") < md.index("## alpha") < md.index("## Crossovers")
    add = next(line for line in md.splitlines() if line.startswith("**elementwise_add (float64).**"))
    # numpy's 0.5 µs call wins small arrays; torch's 0.6 ns per element wins from ~3·10³ on
    assert "numpy·eager is fastest below n ≈ 3100" in add
    assert "above, torch·eager, 1.2× ahead of jax·jit and 2.3× ahead of numpy·eager at n = 10⁶" in add
    assert "jax·jit ~7.07 µs, torch·eager ~3.06 µs" in add  # the dispatch-bound backends' per-call cost
    assert "Why: dispatch-bound at n = 100" in add and "memory-bound at n = 10⁶" in add
    matmul = next(line for line in md.splitlines() if line.startswith("**matmul (float64).**"))
    # numpy's median is the lowest at every n, but from n = 256 torch's is within 5 %, inside the noise
    assert "numpy·eager is fastest up to n = 128; from n = 256, numpy·eager and torch·eager are within noise " \
           "of each other." in matmul
    assert "compute-bound at n = 2048" in matmul
    # The terminal ends on the same answer as a table, a row per workload, not the paragraphs.
    glance = rep.summary.rsplit("The answer at a glance", 1)[1]
    assert "numpy·eager 4.8× (n = 100)" in glance and "torch·eager 1.17× (n = 10⁶)" in glance and "Why" not in glance


def test_bisected_crossovers_are_bracketed_by_close_measured_sizes_in_crossovers_csv(bisected_report):
    _, out = bisected_report
    rows = list(csv.DictReader((out / "crossovers.csv").open()))
    assert list(rows[0])[:7] == ["workload", "dtype", "faster_below", "faster_above", "estimate",
                                 "bracket_lo", "bracket_hi"]
    assert rows and all(r["state"] in ("bracketed", "tie") for r in rows)  # nothing left open
    for r in rows:
        lo, hi, est = float(r["bracket_lo"]), float(r["bracket_hi"]), float(r["estimate"])
        assert lo < est < hi
        if r["state"] == "bracketed":
            assert hi / lo <= 2.0
    sort = next(r for r in rows if r["workload"] == "sort")
    assert (sort["faster_below"], sort["faster_above"], sort["state"]) == ("numpy·eager", "torch·eager", "bracketed")
    # where the two lines cross: 1 µs + 4 ns·n·log₂n = 5 µs + 2 ns·n·log₂n
    assert float(sort["estimate"]) == pytest.approx(255, rel=0.05)


def test_an_unbisected_sweep_says_which_size_to_measure_next(synthetic_report):
    _, out = synthetic_report
    rows = list(csv.DictReader((out / "crossovers.csv").open()))
    sort = next(r for r in rows if r["workload"] == "sort")
    assert (sort["bracket_lo"], sort["bracket_hi"], sort["state"], sort["next_size"]) == ("100", "316", "open", "178")
    assert "measure n = 178 to narrow it" in (out / "report.md").read_text()


def test_each_case_gets_a_bound_from_what_was_measured():
    data = ReportData.from_results([results_of(bisected_records(), peaks=PEAKS)])
    # jax·jit's 7 µs call at n = 100 and n = 316: the time hardly grows with 3× the work
    assert by_case(data, "elementwise_add", "jax·jit", 100).bound == "dispatch"
    assert by_case(data, "elementwise_add", "numpy·eager", 1_000_000).bound == "memory"  # 1/24 FLOP/byte
    assert by_case(data, "matmul", "numpy·eager", 16).bound == "dispatch"
    assert by_case(data, "matmul", "numpy·eager", 2048).bound == "compute"  # 85 FLOP/byte, ridge 2.5
    assert by_case(data, "sort", "torch·eager", 1_000_000).bound == "compute"  # streams 1 % of the roof
    assert by_case(data, "transfer_to_host", "jax·eager", 4096).bound == "memory"  # a host copy


def test_page_faults_transfers_and_gpu_launches_are_named():
    gpu_peaks = {**PEAKS, "gpu": {"matmul_gflops": {"float32": 50_000.0}, "bandwidth_gbs": 3000.0}}
    recs = [
        # 20 000 faults per call at ~1 µs each: 20 ms of this 50 ms call, over the 30 % share
        record("poly", 4096, "numpy", "eager", 0.05, params={"n": 4096}, minor_faults_per_call=20_000.0,
               flops=6 * 4096**2, bytes=8 * 4096**2),
        record("poly", 4096, "torch", "eager", 0.03, params={"n": 4096}, minor_faults_per_call=10.0,
               flops=6 * 4096**2, bytes=8 * 4096**2),
        record("transfer_to_device", 4096, "torch", "eager", 0.004, params={"n": 4096}, device="gpu",
               flops=None, bytes=4 * 4096**2),
        # 64 MiB "copied" in 3 µs: 22 TB/s, beyond the GPU's own 3 TB/s, so nothing was copied
        record("transfer_to_host", 4096, "jax", "eager", 3e-6, params={"n": 4096}, device="gpu",
               flops=None, bytes=4 * 4096**2),
        # the device works 2 µs; one synced call costs 20 µs
        record("poly", 64, "torch", "jit", 2e-6, params={"n": 64}, device="gpu", latency_s=20e-6,
               flops=6 * 64**2, bytes=8 * 64**2),
        record("poly", 4096, "torch", "jit", 2e-4, params={"n": 4096}, device="gpu", latency_s=2.1e-4,
               flops=6 * 4096**2, bytes=8 * 4096**2),
    ]
    data = ReportData.from_results([results_of(recs, peaks=gpu_peaks)])
    bounds = {(r.workload, r.size, r.backend, r.mode): r.bound for r in data.records}
    assert bounds[("poly", 4096, "numpy", "eager")] == "page-faults"
    assert bounds[("poly", 4096, "torch", "eager")] == "memory"
    assert bounds[("transfer_to_device", 4096, "torch", "eager")] == "transfer"
    assert bounds[("transfer_to_host", 4096, "jax", "eager")] == "dispatch"
    no_copy = next(r for r in data.records if r.workload == "transfer_to_host")
    assert no_copy.gbs is None and no_copy.no_rate.startswith("no bytes moved: faster than the GPU's own memory")
    copy = next(r for r in data.records if r.workload == "transfer_to_device")
    assert copy.gbs == pytest.approx(4 * 4096**2 / 0.004 / 1e9) and copy.no_rate.startswith("no FLOPs")
    assert bounds[("poly", 64, "torch", "jit")] == "dispatch"
    gpu_big = next(r for r in data.records if r.size == 4096 and r.mode == "jit")
    assert gpu_big.bound == "memory" and gpu_big.pct_bw_peak == pytest.approx(
        100 * 8 * 4096**2 / 2e-4 / 1e9 / 3000.0)  # judged against the GPU's roof, not the CPU's


def test_no_fake_rates_for_views_and_non_flop_work(bisected_report):
    rep, out = bisected_report
    rows = list(csv.DictReader(rep.csv.open()))
    view = next(r for r in rows if r["workload"] == "transfer_to_host" and r["backend"] == "torch")
    assert view["gbs"] == "" and view["pct_bw_peak"] == ""  # 2 µs for 128 MiB would read as 67 TB/s
    sort = next(r for r in rows if r["workload"] == "sort")
    assert sort["gflops"] == "" and float(sort["gbs"]) > 0
    md = (out / "report.md").read_text()
    assert "transfer_to_host (cpu): no rate shown, no bytes moved" in md
    assert "sort (cpu): no rate shown, no FLOPs" in md
    roof = " ".join(re.findall(r"<text[^>]*>([^<]*)</text>", (out / "plots" / "roofline-float64.svg").read_text()))
    assert "CPU memory roof: 20 GB/s" in roof and "CPU compute roof: matmul 50 GFLOP/s" in roof
    assert "CPU cache roof (data ≤ 256 KiB): 80 GB/s" in roof
    assert "Not drawn (no FLOP/s or no bytes moved): sort (no FLOPs); transfer_to_host (no bytes moved)" in roof


def test_unavailable_backends_are_one_line_not_a_row_per_case(bisected_report):
    rep, out = bisected_report
    line = "Not available here: cupy (cupy is not installed (pip install 'arraybench[cupy]'))"
    assert rep.summary.count("cupy is not installed") == 1 and line in rep.summary
    md = (out / "report.md").read_text()
    assert md.count("cupy is not installed") == 1 and md.index(line) < md.index("## The answer")
    assert "cupy" not in " ".join(re.findall(r"<text[^>]*>([^<]*)</text>",
                                             (out / "plots" / "speedup-heatmap.svg").read_text()))


def test_the_harness_call_is_shown_beside_sub_microsecond_cases_only(bisected_report):
    rep, _ = bisected_report
    table = rep.summary.split("elementwise_add (float64;")[1].split("\n\n")[0]
    numpy_row = next(line for line in table.splitlines() if line.startswith("numpy·eager"))
    assert numpy_row.count("(harness 55 ns)") == 2  # 640 ns at n = 100 and 943 ns at n = 316
    assert "harness" not in next(line for line in table.splitlines() if line.startswith("jax·jit"))


def test_scaling_plot_labels_only_the_changes_of_the_lead(tmp_path):
    """Six backend·modes whose lines all cross: fifteen crossovers, but the lead changes once."""
    recs = []
    for k in range(6):
        for n in (10, 100, 1000, 10_000):
            recs.append(record("matmul", n, f"b{k}", "eager", (1 + k) * 1e-6 + 1e-9 * n / (1 + k),
                               params={"n": n}, id=f"matmul[n={n}]/b{k}"))
    write_all([results_of(recs)], tmp_path)
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", (tmp_path / "plots" / "scaling-matmul.svg").read_text())
    numbered = [t for t in texts if re.match(r"\d+: ", t)]
    # b0 pays 1 µs per call and 1 ns per element, b2 3 µs and 0.33 ns: b2 leads at n = 10⁴
    assert len(numbered) == 1 and numbered[0].startswith("1: b2·eager overtakes b0·eager")
    assert any(re.match(r"\d+ more crossovers between slower backend·modes", t) for t in texts)
    assert len(list(csv.DictReader((tmp_path / "crossovers.csv").open()))) > 5


def test_heatmap_shows_each_sweep_at_its_ends_so_the_roofline_stays_near_the_top(bisected_report):
    _, out = bisected_report
    rows = re.findall(r"<text[^>]*>([^<]*)</text>", (out / "plots" / "speedup-heatmap.svg").read_text())
    assert "elementwise_add · n=100" in rows and "elementwise_add · n=1000000" in rows
    assert not any(t.startswith("elementwise_add · n=3162") for t in rows)
    assert sum(t.startswith(("elementwise_add ·", "matmul ·", "sort ·")) for t in rows) == 6


def test_peaks_without_a_compute_roof_leave_the_bound_open_instead_of_guessing(tmp_path, undrawn_plots):
    recs = [record("linreg", d, "numpy", "eager", 1e-3 * d) for d in (1, 2)]
    rep = write_all([results_of(recs, peaks={"bandwidth_gbs": 1.0, "method": "stated"})], tmp_path)
    data = ReportData.from_results([results_of(recs, peaks={"bandwidth_gbs": 1.0, "method": "stated"})])
    assert [r.bound for r in data.records] == [None, None]
    said = next(x for x in (tmp_path / "report.md").read_text().splitlines() if x.startswith("**linreg (float32).**"))
    assert "numpy·eager is fastest" in said and "Why" not in said and "-bound" not in rep.summary


def test_a_gpu_backends_cost_per_call_is_its_synced_latency(tmp_path, undrawn_plots):
    def gpu(backend, mode, n, median, latency):
        return record("poly", n, backend, mode, median, params={"n": n}, device="gpu", latency_s=latency,
                      flops=6 * n * n, bytes=8 * n * n, id=f"poly[n={n}]/{backend}-{mode}/gpu")

    recs = [gpu("torch", "jit", 64, 2e-6, 40e-6), gpu("cupy", "eager", 64, 3e-6, 8e-6),
            gpu("torch", "jit", 4096, 2e-4, 2.1e-4), gpu("cupy", "eager", 4096, 4e-4, 4.1e-4)]
    write_all([results_of(recs, peaks=PEAKS)], tmp_path)
    # torch·jit's 2 µs median is the device's time in a pipelined block; alone, a call costs 40 µs
    assert "Per call at n = 64: torch·jit ~40 µs, against 8 µs for cupy·eager." in (tmp_path / "report.md").read_text()


def test_the_answer_says_no_gpu_was_measured_when_every_gpu_case_was_unavailable(tmp_path, undrawn_plots):
    def gpu(backend, why):
        return record("linreg", 1, backend, "eager", None, status="unavailable", error=why, device="gpu",
                      id=f"linreg[d=1]/{backend}-eager/gpu")

    def results_of(recs, devices=("cpu", "gpu")):  # a run that asked for a GPU
        res = report_results_of(recs)
        res.header = dataclasses.replace(res.header, settings=dataclasses.replace(res.settings, devices=list(devices)))
        return res

    missing = [gpu("jax", "jax sees no gpu here: cpu ×1"), gpu("numpy", "numpy runs on cpu only, not gpu")]
    said = ("No GPU was measured: every gpu case was unavailable (jax sees no gpu here: cpu ×1; "
            "numpy runs on cpu only, not gpu).")
    # A run that asked for the CPU alone: CuPy's cases sit on its GPU, and its absence is no answer.
    cupy = gpu("cupy", "cupy is not installed (pip install 'arraybench[cupy]')")
    rep = write_all([results_of([cupy, record("linreg", 1, "numpy", "eager", 1e-3)], ("cpu",))], tmp_path / "cpu")
    assert "No GPU was measured" not in rep.summary + rep.markdown.read_text()
    # Nothing measured at all: the answer still says what is missing, never nothing.
    rep = write_all([results_of(missing)], tmp_path / "gpu-only")
    assert f"linreg (float32): {said}" in rep.summary and said in rep.markdown.read_text()
    # The CPU measured beside them: its verdict stands, and the missing GPU is said after it.
    rep = write_all([results_of([*missing, record("linreg", 1, "numpy", "eager", 1e-3)])], tmp_path / "both")
    md = rep.markdown.read_text()
    assert "numpy·eager·cpu is fastest" in md and said in md and said in rep.summary
    # One GPU case measured: the GPU was measured, the others' absence is the one line atop the report.
    ran = record("linreg", 1, "torch", "eager", 2e-3, device="gpu", id="linreg[d=1]/torch-eager/gpu")
    rep = write_all([results_of([*missing, ran])], tmp_path / "one")
    assert "No GPU was measured" not in rep.summary and "Not available here: jax" in rep.summary


def test_sizes_that_refinement_added_for_two_rivals_do_not_make_the_answer_zigzag(tmp_path, undrawn_plots):
    """Five backend·modes at two planned sizes, then eight bisection sizes where only numpy and
    numba ran and took turns within noise: the answer names one change of lead, not eight."""
    recs = []
    for size in (1000, 1_000_000):
        for backend, mode, t in (("numpy", "eager", 1.0), ("numba", "jit", 1.2), ("torch", "eager", 3.0),
                                 ("jax", "jit", 5.0), ("tensorflow", "eager", 9.0)):
            recs.append(record("add", size, backend, mode, t * (1e-6 if size == 1000 else (0.8e-3 if backend ==
                                                                                             "numba" else 1e-3))))
    for i, size in enumerate((1778, 3162, 5623, 10000, 31623, 100000, 316228, 562341)):
        recs.append(record("add", size, "numpy", "eager", 1e-6 * size / 1000 * (1.02 if i % 2 else 0.98)))
        recs.append(record("add", size, "numba", "jit", 1e-6 * size / 1000 * (0.98 if i % 2 else 1.02)))
    rep = write_all([results_of(recs, peaks=PEAKS)], tmp_path)
    line = next(x for x in (tmp_path / "report.md").read_text().splitlines() if x.startswith("**add (float32).**"))
    assert line.count("numba·jit") <= 3 and line.count(" above") <= 1, line
    assert line.split("** ", 1)[1].startswith("numpy·eager is fastest"), line
    # 0.96 ms against 1 ms, but five samples each spread -3 % to +5 %: their intervals overlap
    assert "from d = 10⁶, numba·jit and numpy·eager are within noise of each other." in line, line
    # the terminal's table: a tie, no winner, and what the tie could have seen
    assert "numba·jit ≈ numpy·eager (d = 10⁶; no difference larger than 11 % (80 % power))" in rep.summary


def lead_at_the_largest_size(cupy_median, cupy_ci):
    """jax·jit fastest at both sizes of a sweep (1 ms ±0.1 % at n = 1.7·10⁷), cupy·eager the runner-up
    there with the given median and interval, numpy·eager 2.3× behind: the answer's verdict."""
    recs = []
    for n, scale in ((1_000_000, 1 / 17), (17_000_000, 1.0)):
        for backend, mode, median, ci in (("jax", "jit", 1e-3, (0.999e-3, 1.001e-3)),
                                          ("cupy", "eager", cupy_median, cupy_ci),
                                          ("numpy", "eager", 2.3e-3, (2.25e-3, 2.35e-3))):
            recs.append(record("sin", n, backend, mode, scale * median, params={"n": n},
                               ci95_s=[scale * ci[0], scale * ci[1]], id=f"sin[n={n}]/{backend}-{mode}"))
    data = ReportData.from_results([results_of(recs, peaks=PEAKS)])
    (answer,) = answers(data, crossovers(data))
    return answer.verdict


TIED = "No backend·mode is fastest beyond noise at any measured n (10⁶ to 1.7·10⁷): jax·jit and cupy·eager are " \
        "within noise of each other."


@pytest.mark.parametrize("cupy_median, cupy_ci, said", [
    # 0.3 % behind, and the intervals overlap: within noise, and no side is picked
    (1.003e-3, (0.998e-3, 1.008e-3), TIED),
    # 6 % behind by the medians, yet the intervals still overlap
    (1.06e-3, (0.995e-3, 1.12e-3), TIED),
    # 0.3 % behind beyond noise (narrow intervals): fastest, but no "0 % ahead"
    (1.003e-3, (1.002e-3, 1.004e-3), "at n = 1.7·10⁷ it is tied with cupy·eager within 0.5 % and 2.3× ahead of "
                                     "numpy·eager."),
    # clearly apart
    (1.04e-3, (1.03e-3, 1.05e-3), "at n = 1.7·10⁷ it is 4 % ahead of cupy·eager and 2.3× ahead of numpy·eager."),
    (1.9e-3, (1.85e-3, 1.95e-3), "at n = 1.7·10⁷ it is 1.9× ahead of cupy·eager and 2.3× ahead of numpy·eager."),
])
def test_a_lead_within_noise_is_no_lead_and_a_clear_one_is_said_by_how_much(cupy_median, cupy_ci, said):
    verdict = lead_at_the_largest_size(cupy_median, cupy_ci)
    assert said in verdict, verdict
    assert ("jax·jit is fastest" in verdict) == (said != TIED)
    assert "0 % ahead" not in verdict


def spread(workload, cells):
    """Records from {(size, backend): (median, (ci low, ci high))}, each mode eager."""
    return [record(workload, size, backend, "eager", median, ci95_s=list(ci), id=f"{workload}[d={size}]/{backend}")
            for (size, backend), (median, ci) in cells.items()]


@pytest.mark.parametrize("torch_ci, said, table", [
    # 5 % behind by the medians, but the intervals overlap: neither the answer nor the table picks a side
    # and each says what the tie could have seen: intervals ±2 % and −10 to +14 % separate a 23 % gap
    # four times in five (one process each: the intervals' own widths, tests/stats/test_power.py)
    ((0.95e-3, 1.2e-3), "At d = 1000, no backend·mode is fastest beyond noise: numpy·eager (1 ms per call) and "
                        "torch·eager are within noise of each other (no difference larger than 23 % (80 % power)).",
     "d=1000: no fastest correct case beyond noise: numpy·eager (1 ms) and torch·eager are within noise of "
     "each other (no difference larger than 23 % (80 % power))"),
    ((1.04e-3, 1.06e-3), "At d = 1000, numpy·eager is fastest (1 ms per call), 5 % ahead of torch·eager.",
     "d=1000: fastest correct is numpy·eager (1 ms)"),
])
def test_the_fastest_at_one_size_is_named_only_beyond_noise(tmp_path, undrawn_plots, torch_ci, said, table):
    recs = spread("add", {(1000, "numpy"): (1e-3, (0.98e-3, 1.02e-3)), (1000, "torch"): (1.05e-3, torch_ci)})
    rep = write_all([results_of(recs, peaks=PEAKS)], tmp_path)
    assert said in rep.markdown.read_text().split("## The answer")[1]
    assert table in rep.summary.split("The answer at a glance")[0]


def test_a_tie_between_two_leads_is_said_and_no_side_is_picked_there():
    """numpy leads at d = 10, torch at 1000; at 100 they are within noise and 10× gaps leave the
    crossovers open: the answer says so for d = 100 instead of giving it to either."""
    recs = spread("add", {(10, "numpy"): (1e-6, (0.98e-6, 1.02e-6)), (10, "torch"): (5e-6, (4.9e-6, 5.1e-6)),
                          (100, "numpy"): (10e-6, (8e-6, 12e-6)), (100, "torch"): (11e-6, (9e-6, 13e-6)),
                          (1000, "numpy"): (100e-6, (98e-6, 102e-6)), (1000, "torch"): (20e-6, (19e-6, 21e-6))})
    data = ReportData.from_results([results_of(recs, peaks=PEAKS)])
    (said,) = answers(data, crossovers(data))
    assert said.verdict.startswith("numpy·eager is fastest up to d = 10; at d = 100, numpy·eager and torch·eager "
                                   "are within noise of each other; from d = 1000, torch·eager is fastest, 5× "
                                   "ahead of numpy·eager at d = 1000."), said.verdict


@pytest.mark.parametrize("width, verb", [(0.3, "may overtake"), (0.02, "overtakes")])
def test_an_open_crossover_is_claimed_only_where_its_ends_are_apart_beyond_noise(width, verb):
    """numpy and torch swap places by their medians between d = 100 and 10⁴ (6 % apart at each end)."""
    def ci(median):
        return median, (median * (1 - width), median * (1 + width))

    recs = spread("add", {(100, "numpy"): ci(1.0e-3), (100, "torch"): ci(1.06e-3),
                          (10_000, "numpy"): ci(2.0e-3), (10_000, "torch"): ci(1.88e-3)})
    data = ReportData.from_results([results_of(recs, peaks=PEAKS)])
    (c,) = crossovers(data)
    assert c.state == "open" and c.describe().startswith(f"add (float32): torch·eager {verb} numpy·eager at d ≈")
    assert ("not beyond noise" in c.describe()) == (verb == "may overtake")
    (said,) = answers(data, [c])
    if verb == "may overtake":
        assert said.verdict.startswith("No backend·mode is fastest beyond noise at any measured d (100 to 10⁴): "
                                       "numpy·eager and torch·eager are within noise of each other."), said.verdict
    else:
        assert said.verdict.startswith("numpy·eager is fastest up to d = 100; from d = 10⁴ (not bracketed more "
                                       "closely), torch·eager, 6 % ahead of numpy·eager at d = 10⁴."), said.verdict


def test_a_flat_sweep_is_dispatch_bound_only_beyond_noise():
    """4× the work in 2× the time is a fixed cost per call; within intervals that could hold 2.5×, it is not said."""
    def sweep(width):
        return [record("add", d, "numpy", "eager", t, ci95_s=[t * (1 - width), t * (1 + width)], flops=1e3 * d,
                       bytes=None, id=f"add[d={d}]/{width}") for d, t in ((1000, 1e-3), (4000, 2e-3))]

    for width, bound in ((0.02, "dispatch"), (0.4, None)):
        data = ReportData.from_results([results_of(sweep(width), peaks={})])
        assert by_case(data, "add", "numpy·eager", 1000).bound == bound


def test_a_run_of_several_environments_answers_each_environment_apart():
    """The golden run (environments old and new): each environment's backend·modes are ranked among
    themselves, never an environment against another ("numpy·eager [new] and numpy·eager [old] tied"
    hid which backend is fastest); compare RUN@old RUN@new answers that question."""

    from arraybench.report.winners import rows
    from arraybench.results import load_results

    data = ReportData.from_results([load_results(FIXTURES / "golden" / "results.jsonl")])
    said = answers(data, crossovers(data))
    assert {a.env for a in said} == {"old", "new"}
    for a in said:
        other = ({"old", "new"} - {a.env}).pop()
        assert f"[{other}]" not in a.text() and a.title.endswith(f"in environment {a.env}")
    assert sorted((a.workload, a.env) for a in said) == sorted((r.workload, r.env) for r in rows(data))
