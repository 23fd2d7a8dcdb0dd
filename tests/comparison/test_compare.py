"""Compare: verdicts from raw samples, failed cases, environment differences and the CI exit code."""

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from arraybench.comparison import compare, render_as
from arraybench.core.case import Case
from arraybench.results import ResultsWriter, load_results
from arraybench.results.record import CaseRecord, ProcessRecord
from arraybench.stats.measurement import Measurement, Replicated
from arraybench.stats.two_sample import compare_samples
from arraybench.stats.verdicts import FASTER, NOISY, SAME, SLOWER
from arraybench.workloads import blank_record


def samples(center: float, n: int = 30, spread: float = 0.02, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [center * (1 + spread * rng.random()) for _ in range(n)]


def processes(center: float, n: int = 30, spread: float = 0.02, seed: int = 0, between: float = 0.0,
              count: int = 3) -> list[list[float]]:
    """`count` processes' samples; each process's level is off by up to ±`between` (its allocator, layout...)."""
    rng = random.Random(1000 + seed)
    return [samples(center * (1 + between * (2 * rng.random() - 1)), n, spread, seed=seed * 100 + i)
            for i in range(count)]


def rep(groups: list[list[float]]) -> Replicated:
    return Replicated(tuple(Measurement(tuple(g)) for g in groups))


@pytest.mark.parametrize(
    "base, new, verdict",
    [
        (processes(1.0), processes(1.3, seed=1), SLOWER),
        (processes(1.0), processes(0.7, seed=1), FASTER),
        (processes(1.0), processes(1.0, seed=1), SAME),
        # A 30 % change seen in only 3 samples of one process a side cannot be significant.
        (processes(1.0, n=3, count=1), processes(1.3, n=3, seed=1, count=1), NOISY),
        # Samples spread over a factor of two: the interval admits large changes either way.
        (processes(1.0, spread=1.0), processes(1.0, spread=1.0, seed=1), NOISY),
        # Tight samples, but processes that disagree by ±15 %: a 20 % change is not shown.
        (processes(1.0, between=0.15), processes(1.2, between=0.15, seed=1), NOISY),
    ],
)
def test_verdicts_from_processes_and_samples(base, new, verdict):
    result = compare_samples(rep(base), rep(new))
    assert result.verdict == verdict, result
    lo, hi = result.ci95
    assert lo <= result.ratio <= hi


def test_samples_of_one_process_cannot_show_a_change_between_processes():
    # Inside each process the samples are tight (2 %), so pooled samples "show" the 8 % gap
    # between these two runs; the processes, which differ by 8 % among themselves, do not.
    base = [samples(level, seed=i) for i, level in enumerate((0.92, 1.0, 1.08))]
    new = [samples(level, seed=10 + i) for i, level in enumerate((1.0, 1.08, 1.16))]
    assert compare_samples(rep(base), rep(new)).verdict == NOISY
    pooled = compare_samples(rep([sum(base, [])]), rep([sum(new, [])]))
    assert pooled.verdict == SLOWER


def test_too_few_samples_say_what_to_do(tmp_path, run_cli):
    base = results_file(tmp_path / "a.jsonl", [record("numpy", "eager", 2, processes(1e-3, n=3, between=0.2))])
    new = results_file(tmp_path / "b.jsonl", [record("numpy", "eager", 2, processes(1.3e-3, n=3, seed=1, between=0.2))])
    code, out, _ = run_cli("compare", base, new, "--fail-on-slowdown", "10%")
    assert code == 0 and f"{NOISY} (no change larger than " in out and "% power); few samples; raise --min-time)" in out


def test_one_process_a_side_says_its_verdict_ignores_between_process_variation(tmp_path, run_cli):
    base = results_file(tmp_path / "a.jsonl", [record("numpy", "eager", 2, samples(1e-3))])
    new = results_file(tmp_path / "b.jsonl", [record("numpy", "eager", 2, samples(1.3e-3, seed=1))])
    code, out, _ = run_cli("compare", base, new)
    assert code == 0 and "one process a side" in out


def test_a_significant_change_below_the_threshold_is_same():
    base, new = rep(processes(1.0)), rep(processes(1.02, seed=1))
    assert compare_samples(base, new, threshold=0.05).verdict == SAME
    assert compare_samples(base, new, threshold=0.005).verdict == SLOWER


def test_verdicts_are_deterministic():
    base, new = rep(processes(1.0, spread=0.5)), rep(processes(1.1, spread=0.5, seed=3))
    assert compare_samples(base, new) == compare_samples(base, new)


def test_fdr_control_keeps_identical_runs_free_of_verdicts(tmp_path):
    """300 unchanged cases: tested one by one at p < 0.05 about 15 would be called changed."""
    base, new = [], []
    for i in range(300):
        base.append(record("numpy", "eager", i + 1, processes(1e-3, n=10, spread=0.05, seed=2 * i, between=0.1)))
        new.append(record("numpy", "eager", i + 1, processes(1e-3, n=10, spread=0.05, seed=2 * i + 1, between=0.1)))
    cmp = compare(load_results(results_file(tmp_path / "a.jsonl", base)),
                  load_results(results_file(tmp_path / "b.jsonl", new)))
    raw = sum(c.result.p_value < 0.05 for c in cmp.cases)
    assert raw >= 5  # what an uncorrected test would call changes
    counts = cmp.counts()
    assert counts[SLOWER] == counts[FASTER] == 0, counts


def scaled(groups: list[list[float]], factor: float) -> list[list[float]]:
    return [[x * factor for x in g] for g in groups]


def record(backend: str, mode: str, size: int, times: list, status: str = "ok", threads: int = 1,
           dtype: str = "float64") -> CaseRecord:
    """A case record; `times` is one process's samples, or a list of processes' samples."""
    case = Case("linreg", (("d", size), ("n", 200)), backend, mode, dtype, threads)
    rec = blank_record(case, status, "" if status == "ok" else "wrong result: relative error 1 > tolerance 1e-9")
    if status in ("ok", "wrong"):
        groups = times if isinstance(times[0], list) else [times]
        flat = tuple(x for g in groups for x in g)
        rec = replace(rec, samples_s=flat, median_s=rep(groups).point, iqr_s=0.0,
                      replicates=tuple(ProcessRecord(n_samples=len(g), loops=1) for g in groups))
    return replace(rec, backend_info={"version": "1", "threads_verified": threads, "blas": [{"num_threads": threads}]})


def results_file(path: Path, records: list[CaseRecord], hostname: str = "box", numpy: str = "2.4.0",
                 threads: int = 1) -> str:
    header = {"schema": 2, "run_id": path.stem, "arraybench_version": "0.1.0", "started": "2026-01-01T00:00:00+0000",
              "settings": {"dtype": "float64", "threads": threads, "seed": 0},
              "environment": {"hostname": hostname, "cpu_model": "cpu", "cpu_logical": 4, "gpus": [],
                              "versions": {"numpy": numpy, "jax": "0.10"}}}
    w = ResultsWriter(path, header)
    for r in records:
        w.append(r)
    w.close()
    return str(path)


@pytest.fixture
def two_runs(tmp_path):
    """numpy 20 % slower at both sizes; jax·jit 30 % faster at size 2 and WRONG at size 3."""
    base = [record("numpy", "eager", 2, processes(1e-3)), record("numpy", "eager", 3, processes(2e-3)),
            record("jax", "jit", 2, processes(1e-3)), record("jax", "jit", 3, processes(1e-3)),
            record("torch", "eager", 2, processes(1e-3))]
    new = [record("numpy", "eager", 2, scaled(processes(1e-3), 1.2)),
           record("numpy", "eager", 3, scaled(processes(2e-3), 1.2)),
           record("jax", "jit", 2, scaled(processes(1e-3), 0.7)),
           record("jax", "jit", 3, processes(1e-5, seed=1), "wrong"),
           record("numba", "jit", 2, processes(1e-3))]
    return results_file(tmp_path / "base.jsonl", base), results_file(tmp_path / "new.jsonl", new)


def test_compare_table_geomeans_and_one_sided_cases(two_runs, run_cli):
    code, out, _ = run_cli("compare", *two_runs)
    assert code == 0
    rows = {line.split()[1] + " " + line.split()[0]: line for line in out.splitlines() if line.startswith("linreg[")}
    assert rows["numpy·eager linreg[d=2,n=200]"].endswith(SLOWER)
    assert rows["jax·jit linreg[d=2,n=200]"].endswith(FASTER)
    # The wrong result is a hundred times "faster" but is never counted as faster.
    assert "broken: new is wrong" in rows["jax·jit linreg[d=3,n=200]"]
    geo = {line.split()[0]: line.split()[1] for line in out.split("geometric mean")[1].splitlines()[2:] if line.strip()
           and not line.startswith(("only", " "))}
    assert geo == {"jax·jit": "0.700", "numpy·eager": "1.200"}
    only_base, only_new = out.split(f"only in {two_runs[0]} (run base):")[1].split(f"only in {two_runs[1]} (run new):")
    assert only_base.split() == ["linreg[d=2,n=200]", "torch·eager"]
    assert only_new.split() == ["linreg[d=2,n=200]", "numba·jit"]
    assert "different" not in out  # same machine, versions and settings


@pytest.mark.parametrize("limit, code", [("10%", 1), ("25", 1), (None, 0)])
def test_fail_on_slowdown_exit_code(two_runs, run_cli, limit, code):
    args = ["--fail-on-slowdown", limit] if limit else []
    got, _, err = run_cli("compare", *two_runs, *args)
    assert got == code
    if limit == "10%":
        assert "numpy·eager: 1.200× the time" in err and "jax·jit: new is wrong" in err
    if limit == "25":  # the 20 % slowdowns pass; the broken case still fails
        assert "numpy·eager" not in err and "jax·jit: new is wrong" in err


def test_only_slowdowns_beyond_the_limit_fail(tmp_path, run_cli):
    base = results_file(tmp_path / "a.jsonl", [record("numpy", "eager", 2, processes(1e-3))])
    new = results_file(tmp_path / "b.jsonl", [record("numpy", "eager", 2, processes(1.2e-3, seed=1))])
    assert run_cli("compare", base, new, "--fail-on-slowdown", "10%")[0] == 1
    assert run_cli("compare", base, new, "--fail-on-slowdown", "25%")[0] == 0
    assert run_cli("compare", new, base, "--fail-on-slowdown", "0%")[0] == 0  # faster never fails


def test_markdown_output_for_a_pull_request(two_runs, run_cli, tmp_path):
    md = tmp_path / "compare.md"
    code, out, _ = run_cli("compare", *two_runs, "--markdown", "-o", str(md))
    assert code == 0 and out == md.read_text()
    assert out.startswith("## arraybench compare")
    assert "| linreg[d=2,n=200] | numpy·eager |" in out and "| numpy·eager | 1.200 | 2 |" in out


def test_runs_from_different_machines_and_versions_say_so(tmp_path, run_cli):
    base = results_file(tmp_path / "a.jsonl", [record("numpy", "eager", 2, processes(1e-3))])
    new = results_file(tmp_path / "b.jsonl", [record("numpy", "eager", 2, processes(1e-3, seed=1), threads=4)],
                       hostname="ci-runner", numpy="2.5.0", threads=4)
    code, out, _ = run_cli("compare", base, new)
    assert code == 0
    assert "on different machines" in out and "different framework versions" in out and "(threads)" in out
    for line in ("hostname: box → ci-runner", "versions.numpy: 2.4.0 → 2.5.0", "settings.threads: 1 → 4",
                 "backend_info.numpy.threads_verified: 1 → 4"):
        assert line in out
    assert "versions.jax" not in out
    # Different thread counts give different case ids, yet the cases are still paired.
    assert "cases on both sides: 1" in out and f"{SAME}" in out


def test_unknown_side_and_bad_percentage_are_usage_errors(two_runs, run_cli, tmp_path):
    code, _, err = run_cli("compare", two_runs[0], "nosuchrun", "--store", str(tmp_path / "none.db"))
    assert code == 2 and "'nosuchrun' is neither a results file nor a stored run" in err
    code, _, err = run_cli("compare", *two_runs, "--fail-on-slowdown", "ten")
    assert code == 2 and "not a percentage" in err


def test_compare_stored_runs_by_id(two_runs, run_cli, tmp_path):
    db = str(tmp_path / "s.db")
    assert run_cli("import", *two_runs, "--store", db)[0] == 0
    code, out, _ = run_cli("compare", "base", "latest", "--store", db)
    assert code == 0 and "run new vs run base" in out


def test_what_a_worker_measured_of_itself_is_no_setting_difference():
    from arraybench.comparison import backend_infos
    from arraybench.results import Results

    rec = replace(record("numpy", "eager", 2, processes(1e-3)),
                  backend_info={"version": "2.4.0", "threads_verified": 1, "startup": {"total_s": 0.2},
                                "empty_call_s": {"eager": 3e-7}, "devices": ["cpu"]})
    assert backend_infos(Results(header={}, records=[rec])) == {"numpy": {"threads_verified": 1}}


def test_only_real_differences_are_named(tmp_path, run_cli):
    """Two runs of one machine: the same BLAS libraries listed in another order, the peaks and clock
    measured anew, a Terraform variable set in one shell are no differences; a new numpy is."""
    blas = [{"internal_api": "openblas", "num_threads": 2}, {"internal_api": "openmp", "num_threads": 2}]

    def run(name: str, numpy: str, order: list, peak: float, mhz: int, env: dict) -> str:
        rec = replace(record("torch", "eager", 2, processes(1e-3)),
                      backend_info={"version": "2", "threads_verified": 2, "blas": [blas[i] for i in order]})
        header = {"schema": 3, "run_id": name, "started": "2026-01-01T00:00:00+0000",
                  "settings": {"dtype": "float64", "threads": 2, "seed": 0,
                               "devices": [["cpu", "cpu:2"][i] for i in order]},
                  "environment": {"hostname": "box", "cpu_model": "cpu", "cpu_logical": 2, "gpus": [],
                                  "versions": {"numpy": numpy}, "env": env,
                                  "cpu_frequency": {"governor": "performance", "current_mhz": mhz},
                                  "peaks": {"matmul_gflops": {"float64": peak}, "bandwidth_gbs": peak / 3}}}
        w = ResultsWriter(tmp_path / f"{name}.jsonl", header)
        w.append(rec)
        w.close()
        return str(tmp_path / f"{name}.jsonl")

    base = run("a", "2.4.0", [0, 1], 51.123456789012345, 2400, {"OMP_NUM_THREADS": "2"})
    new = run("b", "2.5.0", [1, 0], 49.87654321098765, 2901,
              {"OMP_NUM_THREADS": "2", "TF_CLI_CONFIG_FILE": "/root/.terraformrc"})
    code, out, _ = run_cli("compare", base, new, "--format", "json")
    assert code == 0
    shown = json.loads(out)
    assert shown["differences"] == ["versions.numpy: 2.4.0 → 2.5.0"]
    assert shown["note"].startswith("The two runs ran with different framework versions:")
    # A real difference inside a list still shows.
    blas[1] = {"internal_api": "openmp", "num_threads": 1}
    new = run("c", "2.4.0", [1, 0], 50.0, 2400, {"OMP_NUM_THREADS": "2"})
    shown = json.loads(run_cli("compare", base, new, "--format", "json")[1])
    assert shown["note"] is None
    assert [d for d in shown["differences"] if "blas" in d] == [
        'backend_info.torch.blas.1.num_threads: 2 → 1']


def test_a_partial_or_torn_side_says_how_many_planned_cases_it_holds(tmp_path, run_cli):
    cases = [record("numpy", "eager", n, processes(1e-3, seed=n)) for n in (2, 3, 4)]
    full, part = tmp_path / "full.jsonl", tmp_path / "part.jsonl"
    results_file(full, cases)
    results_file(part, cases[:2])
    for path in (full, part):  # both runs planned three cases
        lines = path.read_text().splitlines(keepends=True)
        path.write_text(json.dumps({**json.loads(lines[0]), "plan_size": 3}) + "\n" + "".join(lines[1:]))
    with part.open("rb+") as f:  # killed while writing its second case
        f.truncate(part.stat().st_size - 40)
    assert str(load_results(part).planned()) == "1 of 3 planned cases"
    code, out, err = run_cli("compare", str(full), str(part))
    assert code == 0 and "dropped a torn last line" in err
    assert out.count("planned cases") == 1
    assert f"{part} (run part) holds only 1 of 3 planned cases (its run was interrupted" in out
    shown = json.loads(run_cli("compare", str(full), str(part), "--format", "json")[1])
    assert shown["planned"] == [{"held": 3, "planned": 3}, {"held": 1, "planned": 3}]
    # A retried case counts once; refinement's extra cases come after the plan, which is complete.
    resumed = replace(load_results(full), records=[*cases, cases[0], record("numpy", "eager", 9, processes(1e-3))])
    assert resumed.planned().complete and str(resumed.planned()) == "3 of 3 planned cases"
    assert load_results(results_file(tmp_path / "old.jsonl", cases)).planned() is None


def test_too_noisy_says_the_smallest_change_it_could_have_seen(tmp_path):
    base = results_file(tmp_path / "a.jsonl", [record("numpy", "eager", 2, processes(1e-3, between=0.15))])
    new = results_file(tmp_path / "b.jsonl", [record("numpy", "eager", 2, processes(1.2e-3, seed=1, between=0.15))])
    cmp = compare(load_results(base), load_results(new))
    (case,) = cmp.cases
    assert case.verdict == NOISY and case.note.startswith("no change larger than ")
    figure = float(case.note.removeprefix("no change larger than ").split(" %")[0])
    lo, hi = case.result.ci95
    assert 100 * cmp.threshold < figure < 100 * (hi / lo - 1)  # beyond the threshold, within what the interval spans
    assert case.note.endswith("(80 % power)")
    assert json.loads(render_as(cmp, None, "json"))["cases"][0]["note"] == case.note
    assert f"{NOISY} ({case.note})" in render_as(cmp, None, "text")


def test_a_side_a_spell_covered_in_most_processes_shows_no_change(tmp_path):
    """Beside the neighbour, with spells in 41-43 % of processes, PyTorch's 2-thread add of 10⁶ floats kept
    one process of four at 179 µs (its others in a spell, up to 7.7 ms), where an identical run read it at
    97-99 µs: ×0.52 faster, by the one process its readings missed. A side whose processes a spell covered
    in most of them (Reading.outnumbered), as in all, shows no change; one covered of four leaves three
    that decide."""
    def run(name: str, torch: list[list[float]], waits: tuple[float, ...]):
        others = [record("numpy", "eager", d, processes(1e-3 * d, count=4, seed=d)) for d in range(2, 8)]
        t = record("torch", "eager", 2, torch, threads=2)
        t = replace(t, cpu_wait=tuple(w for g, w in zip(torch, waits, strict=True) for _ in g))
        return load_results(results_file(tmp_path / f"{name}.jsonl", [*others, t]))

    def verdict(torch: list[list[float]], waits: tuple[float, ...]):
        k = len(list(tmp_path.iterdir()))
        base, new = run(f"base{k}", torch, waits), run(f"new{k}", processes(1e-3, count=4, seed=9), (0.0,) * 4)
        return next(c for c in compare(base, new).cases if c.base.backend == "torch")

    missed = [samples(1.8e-3, seed=1)] + [samples(1e-2, seed=k) for k in (2, 3, 4)]
    mostly = verdict(missed, (0.0, 1.0, 1.0, 1.0))
    assert mostly.verdict == NOISY and "3 of base's 4 processes ran in a slow spell" in mostly.note
    slower = [samples(1.8e-3, seed=k) for k in (1, 2, 3)] + [samples(1e-2, seed=4)]
    assert verdict(slower, (0.0, 0.0, 0.0, 1.0)).verdict == FASTER
    everywhere = verdict([samples(1e-2, seed=k) for k in range(4)], (1.0,) * 4)
    assert everywhere.verdict == NOISY and "every process of base ran in a slow spell" in everywhere.note


def test_a_case_the_host_ran_slower_beside_in_one_run_shows_no_change(tmp_path):
    """Spells are read within a window, so a host slow for minutes sets nothing aside in a run. Of two
    identical runs beside the neighbour, NumPy's add of 7943 floats read 1.33-1.38 µs in every process of
    one and 1.80-1.89 µs in every process of the other, beside a host reference of 5.9-6.1 µs against
    9.2-10.0 µs: ×1.38 "slower". A side whose reference ran SPELL_FACTOR× slower, the way the case moved,
    shows no change; the same change beside one host speed, or against the host's move, still decides."""
    def run(name: str, center: float, ref: float):
        others = [record("numpy", "eager", d, processes(1e-3 * d, count=3, seed=d)) for d in range(2, 6)]
        add = record("numpy", "eager", 7, processes(center, count=3, seed=7))
        add = replace(add, host_ref_s=(ref,) * len(add.samples_s))
        return load_results(results_file(tmp_path / f"{name}.jsonl", [*others, add]))

    def verdict(new_center: float, new_ref: float):
        k = len(list(tmp_path.iterdir()))
        cases = compare(run(f"base{k}", 1.36e-6, 6.0e-6), run(f"new{k}", new_center, new_ref)).cases
        return next(c for c in cases if c.base.size == 7)

    hosted = verdict(1.88e-6, 9.7e-6)
    assert hosted.verdict == NOISY and "×1.62" in hosted.note and "another speed in one run" in hosted.note
    assert verdict(1.88e-6, 6.1e-6).verdict == SLOWER  # one host speed: the change is the case's
    assert verdict(1.88e-6, 4.0e-6).verdict == SLOWER  # the host ran faster, the case slower anyway


def test_the_hosts_speed_beside_a_case_is_read_over_its_processes_as_its_time_is(tmp_path):
    """Beside the neighbour NumPy's finite-difference gradient at n = 100 read 1.97, 1.03 and 2.04 ms in the
    processes of one run, beside references of 13.2, 7.6 and 13.4 µs, and 0.94, 0.99 and 1.72 ms in an
    identical run, beside 7.7, 8.0 and 13.3 µs. Over all their samples (10, 33 and 238; 46, 66 and 117) the
    two runs' references both read about 13 µs, and compare called the second ×0.46 faster; over the
    processes, as the case's time is read, the host ran 1.65× faster beside it, and the change is the host's."""
    def run(name: str, procs: list[tuple[float, int, float]]):
        # Every rival of a round ran beside the same reference: the host slow for that stretch, not a spell.
        def with_refs(r: CaseRecord, counts: list[int]) -> CaseRecord:
            return replace(r, host_ref_s=tuple(ref for (_, _, ref), n in zip(procs, counts, strict=True)
                                               for _ in range(n)))
        others = [with_refs(record("numpy", "eager", d, processes(1e-3 * d, count=3, seed=d)), [30] * 3)
                  for d in range(2, 6)]
        case = record("numpy", "fd", 2, [samples(center, n=n, seed=i) for i, (center, n, _) in enumerate(procs)])
        case = with_refs(case, [n for _, n, _ in procs])
        return load_results(results_file(tmp_path / f"{name}.jsonl", [*others, case]))

    # The processes' times kept close, so that their spread decides nothing: the host's speed alone does.
    base = run("base", [(2.0e-3, 10, 13.2e-6), (1.96e-3, 33, 7.6e-6), (2.04e-3, 238, 13.4e-6)])
    new = run("new", [(0.98e-3, 46, 7.7e-6), (1.0e-3, 66, 8.0e-6), (1.02e-3, 117, 13.3e-6)])
    c = next(c for c in compare(base, new).cases if c.base.mode == "fd")
    assert c.verdict == NOISY and "another speed in one run" in c.note and "×0.61" in c.note
    steady = run("steady", [(0.98e-3, 46, 13.2e-6), (1.0e-3, 66, 13.4e-6), (1.02e-3, 117, 13.3e-6)])
    assert next(c for c in compare(base, steady).cases if c.base.mode == "fd").verdict == FASTER
