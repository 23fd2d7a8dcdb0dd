"""A series is one problem at several sizes: cases that differ in another parameter are never strung into one."""

import csv
import re

from arraybench.cli import main
from arraybench.report import devices as devices_section
from arraybench.report import winners, write_all
from arraybench.report.answer import answers
from arraybench.report.crossovers import crossovers
from arraybench.report.data import ReportData
from arraybench.report.plots import write_plots
from arraybench.site import across, load_store
from arraybench.site.pages import framework_page, workload_page
from tests.report.test_report import record, results_of, svg_texts
from tests.site.test_publish import CPU_ENV, GPU_ENV, write_run


def matvec(n, m, backend, mode, median, **extra):
    return record("matvec", n, backend, mode, median, params={"n": n, "m": m},
                  id=f"matvec[m={m},n={n}]/{backend}-{mode}/float32/cpu/t1/x", **extra)


def two_presets():
    """Presets that change n and m together: numpy wins {n: 64, m: 128}, jax·jit {n: 512, m: 1024}."""
    return [matvec(64, 128, "numpy", "eager", 1e-6), matvec(64, 128, "jax", "jit", 4e-5),
            matvec(512, 1024, "numpy", "eager", 8e-3), matvec(512, 1024, "jax", "jit", 8e-5)]


def test_presets_that_change_two_parameters_are_two_problems_not_one_series(tmp_path):
    data = ReportData.from_results([results_of(two_presets())])
    found = crossovers(data)
    said = answers(data, found)
    assert found == []
    assert [a.title for a in said] == ["matvec (float32; m=128)", "matvec (float32; m=1024)"]
    assert said[0].verdict.startswith("At n = 64, numpy·eager is fastest")
    assert said[1].verdict.startswith("At n = 512, jax·jit is fastest")
    rep = write_all([results_of(two_presets())], tmp_path)
    # The table names both parameters of each column and says why they are not one series.
    header = next(line for line in rep.summary.splitlines() if line.startswith("backend·mode"))
    assert "n=64, m=128" in header and "n=512, m=1024" in header and "size 64" not in header
    apart = "its cases differ in m as well as n: a case with another m is another problem"
    assert apart in rep.summary.split("Crossovers")[0]
    # The crossovers line agrees with the table and the answer: no series, and why.
    line = next(line for line in rep.summary.splitlines() if line.startswith("Crossovers"))
    assert "no workload was measured at two or more sizes of one problem; matvec: " + apart in line
    assert "up to n = 64" not in rep.summary and "from n = 512" not in rep.summary
    md = (tmp_path / "report.md").read_text()
    assert "**matvec (float32; m=128).** At n = 64" in md and "**matvec (float32; m=1024).** At n = 512" in md


def test_a_sweep_beside_a_preset_that_changes_another_parameter_is_a_series_of_its_own(tmp_path):
    # At m = 128, numpy grows with n and jax·jit is flat: jax·jit overtakes between n = 128 and 256.
    recs = [r for n in (64, 128, 256) for r in (matvec(n, 128, "numpy", "eager", 1e-6 * n / 64),
                                                matvec(n, 128, "jax", "jit", 3e-6))]
    recs += [matvec(512, 1024, "numpy", "eager", 1e-6), matvec(512, 1024, "jax", "jit", 5e-6)]
    rep = write_all([results_of(recs)], tmp_path)
    data = ReportData.from_results([results_of(recs)])
    found = crossovers(data)
    assert [(c.problem, c.faster_below, c.faster_above, c.lo, c.hi) for c in found] == [
        ("m=128", "numpy·eager", "jax·jit", 128, 256)]
    assert found[0].describe().startswith("matvec (float32; m=128): jax·jit overtakes numpy·eager at n ≈ ")
    said = {a.problem: a.text() for a in answers(data, found)}
    assert said["m=128"].startswith("numpy·eager is fastest below n ≈ ")
    # n = 512 at m = 1024 is not the end of the m = 128 series, where jax·jit leads.
    assert said["m=1024"].startswith("At n = 512, numpy·eager is fastest")
    rows = list(csv.DictReader((tmp_path / "crossovers.csv").open()))
    assert [(r["params"], r["bracket_lo"], r["bracket_hi"]) for r in rows] == [("m=128", "128", "256")]
    html = (tmp_path / "report.html").read_text()
    assert "<td>matvec (m=128)</td>" in html and "<th scope=\"col\">other parameters</th>" in html
    assert "matvec (float32; m=1024)" in rep.markdown.read_text()


def test_a_workload_whose_cases_differ_only_in_the_size_keeps_its_plain_titles(tmp_path):
    recs = [matvec(n, 128, "numpy", "eager", 1e-6 * n) for n in (64, 512)]
    rep = write_all([results_of(recs)], tmp_path)
    assert "**matvec (float32).** numpy·eager is fastest at every measured n (64 to 512)" in rep.markdown.read_text()
    header = next(line for line in rep.summary.splitlines() if line.startswith("backend·mode"))
    assert header.split() == ["backend·mode", "n=64", "n=512"]
    assert "as well as" not in rep.summary


def shared_sizes():
    """Two problems at the same sizes of n: at m = 128 numpy grows with n and jax·jit, flat, overtakes
    it between n = 128 and 256; at m = 256 numpy·eager leads at both n."""
    recs = [r for n in (64, 128, 256) for r in (matvec(n, 128, "numpy", "eager", 1e-6 * n / 64),
                                                matvec(n, 128, "jax", "jit", 3e-6))]
    return recs + [r for n in (64, 256) for r in (matvec(n, 256, "numpy", "eager", 1e-6),
                                                  matvec(n, 256, "jax", "jit", 5e-6))]


def test_the_winners_map_has_a_row_per_problem_never_one_mixing_them(tmp_path):
    data = ReportData.from_results([results_of(shared_sizes())])
    found = crossovers(data)
    rows = winners.rows(data)
    assert [r.title for r in rows] == ["matvec (m=128)", "matvec (m=256)"]
    assert [(c.size, c.best) for c in rows[0].cells] == [(64, "numpy·eager"), (128, "numpy·eager"), (256, "jax·jit")]
    assert [(c.size, c.best) for c in rows[1].cells] == [(64, "numpy·eager"), (256, "numpy·eager")]
    # Each line is its own problem's story: m = 128's crossover, and none at m = 256.
    assert winners.line(rows[0], found).startswith("numpy·eager below n ≈ 1")
    assert winners.line(rows[0], found).split(";")[0].endswith("then jax·jit (1.33× at 256)")
    assert winners.line(rows[1], found).startswith("numpy·eager at every n (5× at 256)")
    rep = write_all([results_of(shared_sizes())], tmp_path)
    assert "matvec (m=128)" in svg_texts(tmp_path / "plots" / "winners.svg")
    glance = rep.summary.split("The answer at a glance")[1]
    assert "matvec (m=128)" in glance and "matvec (m=256)" in glance
    # Each line under the map links to its own problem's paragraph: two problems, two distinct ids.
    html = rep.html.read_text()
    links = re.findall(r'<li><a href="#(answer-[^"]+)"><b>matvec', html)
    assert len(set(links)) == 2 and all(f'id="{a}"' in html for a in links)
    # The two presets of the issue: a row each, one size each, never "numpy up to 64, then jax·jit".
    two = winners.rows(ReportData.from_results([results_of(two_presets())]))
    assert [(r.title, [c.best for c in r.cells]) for r in two] == [("matvec (m=128)", ["numpy·eager"]),
                                                                   ("matvec (m=1024)", ["jax·jit"])]


def test_plots_label_each_problem_and_never_join_two_into_one_series(tmp_path):
    data = ReportData.from_results([results_of(shared_sizes())])
    made = {p.name: p for p in write_plots(data, crossovers(data), tmp_path)}
    # The heatmap's rows and the bars' panels name the problem: two share n = 64, neither hides the other.
    heat = svg_texts(made["speedup-heatmap"].svg)
    assert {"matvec · n=64, m=128", "matvec · n=64, m=256", "matvec · n=256, m=128", "matvec · n=256, m=256"} \
        <= set(heat) and "matvec · n=64" not in heat
    bars = svg_texts(made["bars-matvec"].svg)
    assert [t for t in bars if t.startswith("n = ")] == ["n = 64 (m=128)", "n = 64 (m=256)", "n = 256 (m=128)",
                                                        "n = 256 (m=256)"]
    # A scaling plot per problem, titled by it; the crossover is drawn on m = 128's only.
    scaling = sorted(name for name in made if name.startswith("scaling-"))
    assert scaling == ["scaling-matvec-alpha-float32-m-128", "scaling-matvec-alpha-float32-m-256"]
    assert made[scaling[0]].title == "matvec (m=128): scaling with n"
    assert any(t.startswith("1: jax·jit overtakes numpy·eager at n ≈ ") for t in svg_texts(made[scaling[0]].svg))
    assert not any(t.startswith("1: ") for t in svg_texts(made[scaling[1]].svg))
    # Two presets that change n and m together: no scaling plot at all, each point a problem of its own.
    data = ReportData.from_results([results_of(two_presets())])
    made = {p.name: p for p in write_plots(data, crossovers(data), tmp_path / "two")}
    assert not any(name.startswith("scaling-") for name in made)
    assert {"matvec · n=64, m=128", "matvec · n=512, m=1024"} <= set(svg_texts(made["speedup-heatmap"].svg))


def device_case(m, n_devices, backend, median):
    device = "cpu" if n_devices == 1 else f"cpu:{n_devices}"
    return record("dp_grad", 256, backend, "jit", median, params={"d": 256, "m": m}, n_devices=n_devices,
                  device=device, backend_info={"cores_shared": 4 if n_devices > 1 else None},
                  id=f"dp_grad[d=256,m={m}]/{backend}-jit/{device}")


def test_a_scaling_over_devices_is_one_problem_and_its_answer_names_only_its_own():
    # At m = 8192 a second device pays; at m = 512, the same d, it does not.
    recs = [device_case(8192, 1, "jax", 1e-3), device_case(8192, 2, "jax", 0.52e-3),
            device_case(512, 1, "jax", 1e-4), device_case(512, 2, "jax", 1.5e-4)]
    data = ReportData.from_results([results_of(recs)])
    text = "\n".join(devices_section.markdown(data))
    assert "dp_grad [256, m=8192] jax·jit on cpu: every device paid, up to 2" in text
    assert "dp_grad [256, m=512] jax·jit on cpu: a second device does not pay" in text
    said = {a.problem: a.text() for a in answers(data, [])}
    assert "Adding devices pays for jax·jit [256, m=8192] on cpu up to 2" in said["m=8192"]
    assert "m=512" not in said["m=8192"] and "8192" not in said["m=512"]
    assert "Adding devices paid for none of its 1 backend·mode·size series" in said["m=512"]


def test_the_site_answers_and_pages_each_problem_apart(tmp_path):
    # The EPYC ran both problems; the H100 only m = 256, which it names all the same.
    gpu = [matvec(n, 256, b, "eager", t, backend_info={"version": "1.0"})
           for n in (64, 256) for b, t in (("numpy", 2e-6), ("torch", 1e-6))]
    files = [write_run(tmp_path / "cpu.jsonl", "20260102-000000-bbbbbb", "2026-01-02T00:00:00Z", CPU_ENV,
                       [{**r, "backend_info": {"version": "1.0"}} for r in shared_sizes()]),
             write_run(tmp_path / "gpu.jsonl", "20260101-000000-aaaaaa", "2026-01-01T00:00:00Z", GPU_ENV, gpu)]
    db = tmp_path / "store.db"
    assert main(["import", *map(str, files), "--store", str(db)]) == 0
    site = load_store(str(db))
    said = {a.title: a.text() for a in across(site)}
    assert list(said) == ["matvec (float32; m=128)", "matvec (float32; m=256)"]
    assert said["matvec (float32; m=128)"].startswith("matvec (float32; m=128) at n = 256: on the 2-core EPYC, "
                                                      "jax·jit (3 µs")
    assert "H100" not in said["matvec (float32; m=128)"]
    assert "on the 2-core EPYC, numpy·eager (1 µs" in said["matvec (float32; m=256)"]
    assert "on the H100, torch·eager (1 µs" in said["matvec (float32; m=256)"]
    page = workload_page(site, "matvec")
    assert [h for h in re.findall(r"<h2>([^<]*)</h2>", page)] == [
        "The answer, machine by machine", "float32; m=128: the fastest correct backend·mode on each machine",
        "float32; m=256: the fastest correct backend·mode on each machine"]
    assert "<b>the H100 (float32; m=256)</b>: torch·eager is fastest at every measured n" in page
    assert "<b>the 2-core EPYC (float32; m=128)</b>: numpy·eager is fastest below n ≈ " in page
    framework = framework_page(site, "numpy")
    assert "matvec 64 (m=128) · eager · cpu · float32" in framework and "matvec 64 (m=256) · eager" in framework
