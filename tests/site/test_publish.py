"""The published site and `arraybench answer`: the answer across machines, each framework's versions, every
run's report linked, every result string escaped; and the report's derived figures in every format."""

import contextlib
import csv
import datetime
import io
import re
import shutil
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from arraybench.cli import main
from arraybench.report import exports
from arraybench.report.data import ReportData
from arraybench.report.files import csv_columns
from arraybench.report.view import FIGURES
from arraybench.results import SCHEMA, ResultsWriter
from arraybench.results.header import MachineEnvironment, model_names, short_name
from arraybench.results.record import CaseRecord
from arraybench.site import across, load_store, write_site
from arraybench.site.pages import LATEST_RUNS
from tests.helpers.report_data import synthetic_results
from tests.report.test_report import record

SCRIPT = "<script>alert(1)</script>"
IMG = "<img src=x onerror=alert(2)>"
GPU_ENV = {"hostname": "vm", "cpu_model": "Intel(R) Xeon(R) Processor", "cpu_logical": 16, "os": "Linux",
           "gpus": [{"name": "NVIDIA H100 80GB HBM3"}], "versions": {"torch": "2.11.0"}, "peaks": {}}
# The same host name as the GPU machine (both are VMs called vm): the fingerprint tells them apart.
CPU_ENV = {"hostname": "vm", "cpu_model": "AMD EPYC", "cpu_logical": 2, "os": IMG, "gpus": [],
           "versions": {"torch": "2.11.0"}, "peaks": {}}


def case(workload, size, backend, median, device="cpu", version="1.0", mode="eager"):
    return record(workload, size, backend, mode, median, device=device, backend_info={"version": version},
                  id=f"{workload}[d={size}]/{backend}-{mode}/float32/{device}/t1/x")


def write_run(path: Path, run_id: str, started: str, env: dict, records: list[dict]) -> Path:
    header = {"type": "header", "schema": SCHEMA, "run_id": run_id, "arraybench_version": "0.1.0",
              "started": started, "environment": env,
              "settings": {"dtype": "float32", "threads": 1, "devices": ["cpu"], "seed": 0, "timeout": 600.0}}
    writer = ResultsWriter(path, header)
    for r in records:
        writer.append(CaseRecord.from_json(r))
    writer.close()
    return path


def gpu_run():
    return [case("sort", 1000, "torch", 20e-6, "gpu", "2.11.0"), case("sort", 10**6, "torch", 50e-6, "gpu", "2.11.0"),
            case("sort", 1000, "cupy", 10e-6, "gpu"), case("sort", 10**6, "cupy", 150e-6, "gpu"),
            case("sort", 1000, "numpy", 5e-6), case("sort", 10**6, "numpy", 40e-3)]


def cpu_run(torch_version, torch_big):
    recs = [case("sort", 1000, "numpy", 10e-6), case("sort", 10**6, "numpy", 30e-3),
            case("sort", 1000, "torch", 40e-6, version=torch_version),
            case("sort", 10**6, "torch", torch_big, version=torch_version)]
    return recs + [case(SCRIPT, 1000, "numpy", 1e-5), case(SCRIPT, 1000, "torch", 3e-5, version=torch_version)]


@pytest.fixture
def cli(capsys):
    def run(*args):
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def two_machine_store(tmp_path: Path) -> Path:
    """Three runs on two machines: an H100 VM, and a 2-core EPYC VM whose torch went from 2.11 to 2.13."""
    db = tmp_path / "s3cret-team-store.db"
    files = [write_run(tmp_path / "gpu.jsonl", "20260101-000000-aaaaaa", "2026-01-01T00:00:00Z", GPU_ENV, gpu_run()),
             write_run(tmp_path / "cpu1.jsonl", "20260102-000000-bbbbbb", "2026-01-02T00:00:00Z", CPU_ENV,
                       cpu_run("2.11.0", 60e-3)),
             write_run(tmp_path / "cpu2.jsonl", "20260103-000000-cccccc", "2026-01-03T00:00:00Z",
                       {**CPU_ENV, "versions": {"torch": "2.13.0"}}, cpu_run("2.13.0", 30.3e-3))]
    assert main(["import", *map(str, files), "--store", str(db)]) == 0
    return db


@pytest.fixture
def store(tmp_path, capsys):
    db = two_machine_store(tmp_path)
    capsys.readouterr()  # what the import printed
    return db


@dataclass(frozen=True)
class Published:
    store: Path
    site: Path
    code: int
    err: str


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Published:
    """The two-machine store published once for the tests that only read the site: a publish draws
    every run's report (three reports' plots, 10 s of CPU)."""
    tmp = tmp_path_factory.mktemp("published")
    db = two_machine_store(tmp)
    site, err = tmp / "site", io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        # Each machine's latest two runs keep their full report: what the tests of the reports read.
        code = main(["publish", str(site), "--store", str(db), "--full-reports", "2"])
    return Published(db, site, code, err.getvalue())


def test_answer_names_the_fastest_on_each_machine_and_writes_a_tie_as_a_tie(store, cli):
    code, out, _ = cli("answer", "--store", str(store))
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("sort (float32)"))
    # Both machines measured d = 10⁶: that is the size the sentence compares them at.
    assert line.startswith("sort (float32) at d = 10⁶: on the 2-core EPYC, numpy·eager (30 ms, 95 % interval ")
    assert re.search(r"tied with torch·eager within noise \(no difference larger than \d+ % \(80 % power\)\)\); "
                     r"on the H100, torch·eager·gpu \(50 µs", line)
    assert line.endswith("3× ahead of cupy·eager·gpu).")
    assert "the H100: vm · Intel(R) Xeon(R) Processor ×16 · NVIDIA H100 80GB HBM3" in out
    # The latest run of each case counts: torch 2.11's 60 ms on the EPYC is history, not the answer.
    said = {a.workload: a for a in across(load_store(str(store)))}
    epyc = said["sort"].verdicts[0]
    assert epyc.lead.tied and epyc.lead.best.median_s == pytest.approx(30e-3)


def test_machines_are_named_as_people_call_them_and_kept_apart():
    machine = MachineEnvironment.from_json
    assert short_name(machine(GPU_ENV)) == "H100" and short_name(machine(CPU_ENV)) == "2-core EPYC"
    desktop = machine({"cpu_model": "Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz", "cpu_logical": 12})
    assert short_name(desktop) == "12-core Core i7-8700"
    assert short_name(machine({"gpus": [{"name": "NVIDIA A100-SXM4-40GB"}] * 2})) == "2× A100-SXM4"
    twins = {"a": {**CPU_ENV, "hostname": "ci-1"}, "b": {**CPU_ENV, "hostname": "ci-2"}, "c": GPU_ENV}
    assert model_names({k: machine(env) for k, env in twins.items()}) == {"a": "2-core EPYC (ci-1)",
                                                                         "b": "2-core EPYC (ci-2)", "c": "H100"}


class Links(HTMLParser):
    """Every href and src of a page, and every element's tag."""

    def __init__(self):
        super().__init__()
        self.targets, self.tags = [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self.targets += [v for k, v in attrs if k in ("href", "src") and v]


def parsed(page: Path) -> Links:
    p = Links()
    p.feed(page.read_text())
    return p


def test_publish_writes_the_answer_workloads_framework_versions_and_every_runs_report(published):
    site, code, err = published.site, published.code, published.err
    assert code == 0, err
    assert f"site: {site / 'index.html'}" in err
    index = (site / "index.html").read_text()
    assert index.index('id="answer"') < index.index('id="machines"')  # the answer comes first
    assert "on the 2-core EPYC, numpy·eager" in index and "on the H100, torch·eager·gpu" in index
    for run in ("20260101-000000-aaaaaa", "20260102-000000-bbbbbb", "20260103-000000-cccccc"):
        # Each machine's latest runs keep their full report beside their own page.
        assert (site / "runs" / run / "report.html").is_file() and (site / "runs" / run / "results.csv").is_file()
        assert f'href="runs/{run}/index.html"' in index
        assert 'href="report.html"' in (site / "runs" / run / "index.html").read_text()
    # Every link of every page the site itself writes resolves to a file of the site.
    pages = site_pages(site)
    assert len(pages) == 1 + 2 + 3 + 2 + 3  # sort and the hostile workload; cupy, numpy, torch; runs by month
    for page in pages:
        for target in parsed(page).targets:
            assert not urlsplit(target).scheme, f"{page.name} reaches out to {target}"
            path = (page.parent / unquote(urlsplit(target).path)).resolve()
            assert path.is_file() and site.resolve() in path.parents, f"{page.name}: {target} does not resolve"
    # A full report on the site shows its plots from plots/ beside it: embedded, a run's is 3 MB.
    report = site / "runs" / "20260103-000000-cccccc" / "report.html"
    plots = [t for t in parsed(report).targets if t.startswith("plots/") and t.endswith(".svg")]
    assert plots and "data:image" not in report.read_text()
    assert all((report.parent / unquote(t)).is_file() for t in plots)
    # The question after an upgrade: torch 2.11 -> 2.13 on the EPYC, 2× faster at 10⁶, the same at 1000.
    torch = (site / "frameworks" / "torch.html").read_text()
    assert "From torch 2.11.0 to 2.13.0, on the cases measured under both: 1 faster beyond noise, 0 slower, " \
           "2 within noise." in torch
    assert "2× faster" in torch and "Only torch 2.11.0 was run on this machine" in torch  # the H100's one version
    sort = (site / "workloads" / "sort.html").read_text()
    assert 'class="tie"' in sort and "tied with torch·eager within noise" in sort
    assert "memory-bound" in sort or "compute-bound" in sort or "dispatch-bound" in sort  # the report's figures


def site_pages(site: Path) -> list[Path]:
    """Every page the site writes itself (a run's full report is the report's, tested there)."""
    return [site / "index.html", *(site / "workloads").glob("*.html"), *(site / "frameworks").glob("*.html"),
            *(site / "runs").glob("*.html"), *(site / "runs").glob("*/index.html")]


def test_every_result_string_is_escaped_and_the_site_carries_no_store_name(published):
    site = published.site
    assert published.code == 0
    pages = site_pages(site)
    for page in pages:
        text = page.read_text()
        assert "script" not in parsed(page).tags and "<img" not in text, page.name
        assert "default-src 'none'" in text  # and the browser would refuse a script anyway
    index = (site / "index.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in index and "&lt;img src=x onerror=alert(2)&gt;" in index
    hostile = [p for p in (site / "workloads").glob("*.html") if p.name != "sort.html"]
    assert len(hostile) == 1 and re.fullmatch(r"script-alert-1-script-[0-9a-f]{8}\.html", hostile[0].name)
    # Built from records only: the store's own name (a URL's password, for a shared one) is in no file.
    for f in site.rglob("*"):
        if f.is_file():
            assert b"s3cret" not in f.read_bytes(), f


def test_publish_replaces_its_own_site_and_refuses_other_folders_and_stores(published, cli, tmp_path):
    site, store = tmp_path / "site", published.store
    assert published.code == 0
    shutil.copytree(published.site, site)  # a site as the first publish left it
    stale, gone_run = site / "workloads" / "gone.html", site / "runs" / "20250101-000000-dddddd"
    stale.write_text("from an earlier publish")
    gone_run.mkdir()
    report = site / "runs" / "20260101-000000-aaaaaa" / "report.html"
    report.write_text("kept: its run has the same records as when it was published")
    code, _, err = cli("publish", str(site), "--store", str(store), "--full-reports", "2")
    assert code == 0 and "0 runs' pages, 3 runs unchanged" in err
    assert not stale.exists() and not gone_run.exists() and report.read_text().startswith("kept")
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    code, _, err = cli("publish", str(other), "--store", str(store))
    assert code == 2 and err.count("\n") == 1 and "holds no published site" in err
    code, _, err = cli("answer", "--store", str(tmp_path / "none.db"))
    assert code == 2 and "no results store at" in err and not (tmp_path / "none.db").exists()


def test_derived_figures_travel_in_results_csv_json_and_exports_and_agree_with_the_report_tables(synthetic_report):
    res, (_, out) = synthetic_results(), synthetic_report
    rows = list(csv.DictReader((out / "results.csv").open()))
    assert set(FIGURES) <= set(csv_columns()) and set(FIGURES) <= set(rows[0])
    views = {v.record.id: v for v in ReportData.from_results([res]).records}

    def same(text, value):
        return value is None and text == "" or value is not None and float(text) == pytest.approx(value)

    for row in rows:
        view = views[row["id"]]
        assert row["bound"] == (view.bound or "")
        assert all(same(row[name], getattr(view, name)) for name in FIGURES if name != "bound")
    assert {r["bound"] for r in rows} >= {"dispatch", "memory", "compute"}
    # The HTML report's table shows the same bound and speedup for each case.
    html = (out / "report.html").read_text()
    table = html[html.index('<table class="sortable" id="cases">'):]
    table = table[:table.index("</table>")]
    head = re.findall(r'<th scope="col">([^<]*)</th>', table[:table.index("</thead>")])
    shown = 0
    for tr in re.findall(r"<tr>(.*?)</tr>", table[table.index("<tbody>"):], re.S):
        cells = dict(zip(head, (re.sub(r"<[^>]+>", "", c) for c in re.findall(r"<td[^>]*>(.*?)</td>", tr, re.S)),
                         strict=True))
        row = next(r for r in rows if (r["workload"], r["size"], r["backend"], r["mode"])
                   == (cells["workload"], cells["size"], cells["backend"], cells["mode"]))
        assert cells["bound"] == row["bound"]
        assert cells["speedup"] == (f"{float(row['speedup']):.2f}×" if row["speedup"] else "")
        shown += 1
    assert shown == len([r for r in rows if r["status"] != "unavailable"])
    # The JSON formats: `show --format json`'s records, pytest-benchmark's extra_info, BMF's measures.
    by_id = {r["id"]: r for r in rows}
    for rec in exports.records_with_figures(res):
        assert rec["bound"] == views[rec["id"]].bound
        assert all(same(by_id[rec["id"]][name], rec[name]) for name in FIGURES if name != "bound")
    for bench in exports.pytest_benchmark(res)["benchmarks"]:
        info = bench["extra_info"]
        assert {k: info[k] for k in FIGURES} == views[info["case_id"]].figures()
    bmf = exports.bmf(res)
    for r in exports.correct_records(res):
        measures = bmf[exports.benchmark_name(r)]
        for name, measure in exports.BMF_MEASURES.items():
            value = getattr(views[r.id], name)
            assert (measure not in measures) if value is None else measures[measure]["value"] == value


def test_show_prints_every_derived_figure_with_each_record_as_json_and_csv(store, cli):
    import json

    code, out, _ = cli("show", "20260103-000000-cccccc", "--store", str(store), "--format", "json")
    assert code == 0
    records = json.loads(out)["records"]
    assert records and all(set(FIGURES) <= set(r) for r in records)
    assert any(r["bound"] for r in records) and any(r["speedup"] for r in records)
    code, out, _ = cli("show", "20260103-000000-cccccc", "--store", str(store), "--format", "csv")
    assert code == 0 and set(FIGURES) <= set(next(csv.reader(out.splitlines())))


def nightly_store(tmp_path: Path, nights: int) -> Path:
    """`nights` runs of the EPYC, one a night from the first of January: a store whose run list outgrows a page."""
    files = []
    for i in range(nights):
        day = datetime.date(2026, 1, 1) + datetime.timedelta(days=i)
        files.append(write_run(tmp_path / f"night{i}.jsonl", f"{day:%Y%m%d}-020000-{i:06x}", f"{day}T02:00:00Z",
                               CPU_ENV, cpu_run("2.11.0", 60e-3)))
    db = tmp_path / "nightly.db"
    assert main(["import", *map(str, files), "--store", str(db)]) == 0
    return db


def run_ids(db: Path) -> list[str]:
    return [run.id for run in load_store(str(db)).runs]


def test_the_index_stays_small_at_many_runs_each_runs_page_is_a_click_away_and_full_reports_follow_the_rule(
        tmp_path, cli):
    db = nightly_store(tmp_path, 40)
    site = tmp_path / "site"
    code, _, err = cli("publish", str(site), "--store", str(db), "--full-reports", "1")
    assert code == 0 and "40 runs on 1 machines" in err and "1 full reports" in err
    index = (site / "index.html").read_text()
    # The index lists the latest runs only, and every month; each month's page lists its runs.
    linked = set(re.findall(r'href="runs/([^/"]+)/index.html"', index))
    ids = run_ids(db)
    assert linked == set(ids[-LATEST_RUNS:])
    assert 'href="runs/2026-01.html"' in index and 'href="runs/2026-02.html"' in index
    by_month = set()
    for month in ("2026-01", "2026-02"):
        listed = (site / "runs" / f"{month}.html").read_text()
        by_month |= set(re.findall(r'href="../runs/([^/"]+)/index.html"', listed))
    assert by_month == set(ids)
    # The caps a static host and a reader's browser need, whatever the number of runs.
    for f in site.rglob("*"):
        assert not f.is_file() or f.stat().st_size < 2e6, f
    assert (site / "index.html").stat().st_size < 0.5e6
    # Only the latest run keeps its full report; every other run's page says how to build one.
    assert [r for r in ids if (site / "runs" / r / "report.html").exists()] == ids[-1:]
    page = (site / "runs" / ids[0] / "index.html").read_text()
    assert f"arraybench report {ids[0]} --store STORE" in page and "numpy·eager" in page
    assert "full report, with its plots, is kept for each machine" in index


def test_publishing_again_rewrites_only_the_new_run_and_the_one_whose_full_report_it_takes(tmp_path, cli):
    db = nightly_store(tmp_path, 4)
    site = tmp_path / "site"
    assert cli("publish", str(site), "--store", str(db), "--full-reports", "1")[0] == 0
    pages = {p: p.stat().st_mtime_ns for p in site.rglob("*.html")}
    code, _, err = cli("publish", str(site), "--store", str(db), "--full-reports", "1")
    assert code == 0 and "0 runs' pages, 4 runs unchanged" in err
    assert all(p.stat().st_mtime_ns == t for p, t in pages.items() if p.name != "index.html" or p.parent != site)
    day = write_run(tmp_path / "night4.jsonl", "20260105-020000-000004", "2026-01-05T02:00:00Z", CPU_ENV,
                    cpu_run("2.11.0", 60e-3))
    assert main(["import", str(day), "--store", str(db)]) == 0
    code, _, err = cli("publish", str(site), "--store", str(db), "--full-reports", "1")
    # The new run (page and full report) and the run that was latest (its full report removed).
    assert code == 0 and "2 runs' pages, 3 runs unchanged" in err
    ids = run_ids(db)
    assert [r for r in ids if (site / "runs" / r / "report.html").exists()] == ids[-1:]
    assert not (site / "runs" / ids[-2] / "plots").exists()
    assert all(p.stat().st_mtime_ns == t for p, t in pages.items() if p.parent.name in ids[:3])
    # The runs a detected change points at keep their full report too (store.history's changes feed it).
    written = write_site(load_store(str(db)), site, str(db), pointed={ids[0]}, full_reports=1)
    assert written.runs == 1 and written.reports == 2 and (site / "runs" / ids[0] / "report.html").is_file()


def test_by_default_a_nightly_publish_draws_no_report_and_says_how_to_build_one(tmp_path, cli):
    db = nightly_store(tmp_path, 3)
    site = tmp_path / "site"
    code, _, err = cli("publish", str(site), "--store", str(db))
    assert code == 0 and "0 full reports" in err and not list(site.rglob("report.html"))
    assert "kept for the runs a detected change points at" in (site / "index.html").read_text()
    assert cli("publish", str(site), "--store", str(db), "--full-reports", "-1")[0] == 2


def test_versions_measured_side_by_side_in_one_run_are_compared_paired_on_the_framework_page(tmp_path, cli):
    from tests.envs.test_envs_run import _two_env_run

    run = _two_env_run(tmp_path / "run.jsonl", 1.3, [1.0, 1.15, 0.87, 1.1])
    db, site = tmp_path / "envs.db", tmp_path / "site"
    assert cli("import", str(run), "--store", str(db))[0] == 0
    assert cli("publish", str(site), "--store", str(db))[0] == 0
    numpy = (site / "frameworks" / "numpy.html").read_text()
    said = "numpy 2.4.6 against 2.3.5: faster in 0 of 4 cases, slower in 4 (median +30 %)"
    assert "Versions measured side by side in one run" in numpy and said in numpy
    assert 'href="../runs/r1/index.html"' in numpy
    # The run's own page and the index name its environments.
    assert said in (site / "runs" / "r1" / "index.html").read_text()
    assert "<td>old, new</td>" in (site / "index.html").read_text()
