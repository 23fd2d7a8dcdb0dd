"""Does a number reproduce? An A/A run (the same plan twice) and a case-order check.

    python benchmarks/reproducibility.py aa [--out DIR] [-- extra `arraybench run` options]
    python benchmarks/reproducibility.py history [--out DIR] [--runs K] [-- extra `arraybench run` options]
    python benchmarks/reproducibility.py order [--out DIR]

`aa` runs one plan twice with `arraybench run` (fresh workers, order seeds 1 and 2) and
reports, per backend and overall: the share of cases whose second median falls inside the
first run's 95 % interval (target ≥ 90 %), the median and worst relative difference of the
medians and the intervals' median width, both as the file holds them and as arraybench reads
them (host-speed corrected, pooled); what `arraybench compare --fail-on-slowdown 10%` says
(target: exit 0, no case called slower or faster); and what it says when every sample of the
second run is made 10 % slower (a real change: how many cases it finds). `--reuse` analyses
the runs already in --out. The default plan is a subset of the default suite with every CPU
backend at a small and a large size.

`history` runs the plan K times (default 4) into one results store, then compares the last two
runs as `arraybench compare` does with the store's earlier runs (the spread between runs added to
every interval, item 4 of issue 23) and with `--no-history`, and a ×1.10 copy of the last run
with history: what a user with a history of this machine gets from compare. Every run has the
same seed, as a user's repeated command does: compare counts an earlier run as history only when
its settings, the seed among them, are the compared runs' (runs with seeds 1..K never did).

`order` measures the long element-wise kernel of benchmarks/long_kernel.py (NumPy, float64,
65 536 elements) as the first case of a fresh worker and right after the same kernel at
1 048 576 elements (8 MiB temporaries), alternating, and
reports the ratio of the two medians (target: within 5 %).

Both drive arraybench only through its command line and worker pool, and read only fields
that every results schema has, so running them with PYTHONPATH pointing at an older checkout
measures that version the same way ("before" and "after").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
AA_PLAN = ["--workloads", "elementwise_add,matmul,selu,sort", "--backends", "numpy,numba,jax,tensorflow,torch",
           "--sizes", "small,large", "--no-store"]


def arraybench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "arraybench", *args], capture_output=True, text=True)


def cases(path: Path) -> dict[str, dict]:
    out = {}
    for line in (path / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "case":
            out[rec["id"]] = rec
    return out


def aa(out: Path, extra: list[str], reuse: bool = False) -> None:
    runs = [out / f"run{seed}" for seed in (1, 2)]
    for seed, d in zip((1, 2), runs, strict=True):
        if reuse and (d / "results.jsonl").exists():
            continue
        t0 = time.monotonic()
        done = arraybench("run", *AA_PLAN, *extra, "--seed", str(seed), "--output-dir", str(d))
        print(f"run {seed}: exit {done.returncode} in {time.monotonic() - t0:.0f} s -> {d}")
        if done.returncode not in (0, 1):
            sys.exit(done.stderr)
    a, b = cases(runs[0]), cases(runs[1])
    coverage("as written (the file's own fields: each case from its own processes, the clock's times)",
             {k: (r["backend"], r["status"], r["median_s"], r["ci95_s"]) for k, r in a.items()},
             {k: (r["backend"], r["status"], r["median_s"], r["ci95_s"]) for k, r in b.items()})
    try:
        from arraybench.results import load_results
    except ImportError:  # an older checkout without a reader of its own
        load_results = None
    if load_results is not None:
        ra, rb = load_results(runs[0]), load_results(runs[1])
        print(f"\nrun 1: full-speed reference {ra.full_speed_s}, prior {ra.prior}")
        coverage("as read (what report and compare see: host speed corrected, intervals pooled over the run)",
                 {r.id: (r.backend, r.status, r.median_s, r.ci95_s) for r in ra.latest().values()},
                 {r.id: (r.backend, r.status, r.median_s, r.ci95_s) for r in rb.latest().values()})
    compare(runs[0], runs[1], "identical runs")
    slower = out / "run2-slower-10pc"
    scaled_copy(runs[1], slower, 1.10)
    compare(runs[0], slower, "run 2 with every sample made 10 % slower (a real change compare should find)")


def history(out: Path, extra: list[str], runs: int, reuse: bool = False) -> None:
    store = out / "store.db"
    dirs = [out / f"run{seed}" for seed in range(1, runs + 1)]
    plan = [a for a in AA_PLAN if a != "--no-store"]
    for k, d in enumerate(dirs, start=1):
        if reuse and (d / "results.jsonl").exists():
            continue
        t0 = time.monotonic()
        done = arraybench("run", *plan, *extra, "--seed", "1", "--output-dir", str(d), "--store", str(store))
        print(f"run {k}: exit {done.returncode} in {time.monotonic() - t0:.0f} s -> {d}")
        if done.returncode not in (0, 1):
            sys.exit(done.stderr)
    base, new = dirs[-2], dirs[-1]
    compare(base, new, f"identical runs, with the {runs - 2} earlier runs' spread", "--store", str(store))
    compare(base, new, "identical runs, --no-history", "--store", str(store), "--no-history")
    slower = out / "last-run-slower-10pc"
    scaled_copy(new, slower, 1.10)
    compare(base, slower, "the last run made 10 % slower, with history", "--store", str(store))


def coverage(title: str, a: dict[str, tuple], b: dict[str, tuple]) -> None:
    """Per backend: share of run 2's medians inside run 1's interval, median and worst |difference|, width."""
    by_backend: dict[str, list[tuple[bool, float, float]]] = defaultdict(list)
    for cid, (backend, status, median, ci) in a.items():
        other = b.get(cid)
        if other is None or status != "ok" or other[1] != "ok" or not ci:
            continue
        lo, hi = ci
        by_backend[backend].append((lo <= other[2] <= hi, other[2] / median - 1, hi / lo))
    print(f"\n{title}\n{'backend':<12} {'cases':>5} {'inside 95%':>10} {'median |diff|':>14} {'worst |diff|':>13} "
          f"{'median hi/lo':>13}")
    every: list[tuple[bool, float, float]] = []
    for backend, rows in [*sorted(by_backend.items()), ("all", [])]:
        rows = rows or every
        if backend != "all":
            every.extend(rows)
        diffs = [abs(d) for _, d, _ in rows]
        print(f"{backend:<12} {len(rows):>5} {100 * sum(i for i, _, _ in rows) / len(rows):>9.0f}% "
              f"{100 * statistics.median(diffs):>13.1f}% {100 * max(diffs):>12.1f}% "
              f"{statistics.median(w for _, _, w in rows):>12.2f}×")


def compare(base: Path, new: Path, what: str, *options: str) -> None:
    cmp = arraybench("compare", str(base), str(new), "--fail-on-slowdown", "10%", *options)
    summary = next((ln for ln in cmp.stdout.splitlines() if "cases on both sides" in ln), cmp.stdout[:300])
    print(f"\ncompare --fail-on-slowdown 10%, {what}: exit {cmp.returncode}\n{summary}")
    for line in cmp.stdout.splitlines():
        if "earlier runs" in line:
            print("  " + line.strip())
    for line in cmp.stdout.splitlines():
        if line.rstrip().endswith(("slower", "faster")) and "·" in line:
            print("  " + line.strip())


def scaled_copy(src: Path, dst: Path, factor: float, workload: str | None = None) -> None:
    """A copy of a run whose every sample (of `workload`, or of every workload) took `factor` times
    as long (the host's reference unchanged)."""
    dst.mkdir(parents=True, exist_ok=True)
    lines = []
    for line in (src / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if (rec.get("type") in ("case", "replicate") and rec.get("samples_s")
                and workload in (None, rec.get("workload"))):
            rec["samples_s"] = [x * factor for x in rec["samples_s"]]
            for key in ("median_s", "min_s", "mean_s", "std_s", "iqr_s"):
                if rec.get(key) is not None:
                    rec[key] *= factor
            rec["ci95_s"] = [x * factor for x in rec["ci95_s"]] if rec.get("ci95_s") else rec.get("ci95_s")
            for p in rec.get("replicates") or []:
                p["median_s"] = p["median_s"] * factor if p.get("median_s") is not None else None
        lines.append(json.dumps(rec))
    (dst / "results.jsonl").write_text("\n".join(lines) + "\n")


def order(out: Path, rounds: int) -> None:
    from arraybench.core.case import Case
    from arraybench.execution.parent import RunConfig, WorkerPool
    from arraybench.measure.timing import TimerConfig

    source = str(HERE / "long_kernel.py")
    kernel = Case("long_kernel", (("n", 65_536),), "numpy", "eager", "float64", 1, source=source)
    # 8 MiB temporaries: a free that glibc's dynamic threshold follows (it ignores blocks over 32 MiB).
    large = Case("long_kernel", (("n", 1_048_576),), "numpy", "eager", "float64", 1, source=source)
    timer = TimerConfig(min_time=0.5, max_time=2.0)
    fresh, after = [], []
    for i in range(rounds):
        for first in (True, False):
            pool = WorkerPool(RunConfig(timer, i, 600.0, out / "logs"))
            try:
                if not first:
                    pool.run_one(large)
                rec = pool.run_one(kernel)
            finally:
                pool.close()
            if rec["status"] != "ok":
                sys.exit(f"{rec['status']}: {rec['error']}")
            (fresh if first else after).append(rec)
    for name, recs in (("first in a fresh worker", fresh), ("after a 1M-element case", after)):
        med = statistics.median(r["median_s"] for r in recs)
        faults = [r.get("minor_faults_per_call") for r in recs]
        f = f"{statistics.median(faults):.0f}" if None not in faults else "not recorded"
        each = ", ".join(f"{1e3 * r['median_s']:.2f}" for r in recs)
        print(f"{name:<26} median {1e3 * med:7.2f} ms/call over {len(recs)} workers; "
              f"per worker {each}; page faults/call {f}")
    ratio = statistics.median(r["median_s"] for r in fresh) / statistics.median(r["median_s"] for r in after)
    print(f"fresh / after: {ratio:.3f} (target within 5 %)")


def scale(argv: list[str]) -> None:
    """`reproducibility.py scale SRC DST FACTOR [WORKLOAD]`: a copy of run SRC with slower samples."""
    src, dst, factor, *workload = argv
    scaled_copy(Path(src), Path(dst), float(factor), workload[0] if workload else None)


def main() -> None:
    if sys.argv[1:2] == ["scale"]:
        scale(sys.argv[2:])
        return
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("check", choices=("aa", "history", "order"))
    p.add_argument("--out", type=Path, help="where the runs go (default: a temporary directory)")
    p.add_argument("--rounds", type=int, default=5, help="order: workers per condition")
    p.add_argument("--runs", type=int, default=4, help="history: runs of the plan (the last two are compared)")
    p.add_argument("--reuse", action="store_true",
                   help="aa, history: analyse the runs already in --out instead of running")
    # aa: more `arraybench run` options, after -- (argparse's nargs="*" refuses options after --)
    args, extra = p.parse_known_args()
    args.extra = [a for a in extra if a != "--"]
    out = args.out or Path(tempfile.mkdtemp(prefix="arraybench-repro-"))
    out.mkdir(parents=True, exist_ok=True)
    if args.check == "aa":
        aa(out, args.extra, args.reuse)
    elif args.check == "history":
        history(out, args.extra, args.runs, args.reuse)
    else:
        order(out, args.rounds)


if __name__ == "__main__":
    main()
