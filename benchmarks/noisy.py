"""Is the answer decided on a noisy machine? A default subset run twice beside a noisy neighbour.

    python benchmarks/noisy.py run --out DIR [--quiet] [--repeat 2] [-- RUN ARGS...]
    python benchmarks/noisy.py figures RUN_DIR [RUN_DIR]    # the figures of runs made before
    python benchmarks/noisy.py neighbour --seconds S        # the neighbour alone (a busy loop)

`run` starts its own noisy neighbour (unless --quiet): a busy loop pinned to one CPU, in bursts of
0.2-0.5 s every 1-2 s, which stops by itself when the benchmark ends or its deadline passes. Beside
it, it runs a default subset (five workloads: elementwise_add, matmul, grad, fft, sort; four
frameworks: numpy, numba, jax, torch; the small and large presets, refinement and the default
budget; the default suite's sampling) `--repeat` times, each in a fresh output directory, and prints
per run and between the first two (issue 41, item 5):

- pairs of cases of one size at least 1.25× apart (by their medians) that the answer orders: the
  decision rule every claim of the report uses (`stats.bracket.order`);
- the sizes with a winner: where the fastest backend·mode is ahead of the runner-up beyond noise
  (the answer's `leads`, as `benchmarks/decided.py` counts them);
- the pairs at least 2× apart that are left unordered, and how many of those only a case's reach holds
  (`unordered_2x_pools`: a thread pool the host kept waiting, stats/pools.py, or a spell that covered every
  process of a case, results.reading.spell_reach);
- the verdicts `compare` gives between the two identical runs (`slower` or `faster`: none is right),
  and the pairs of one size both runs order, of which how many opposite ways (`opposite`: none is right);
- the wall time of each run.

`figures` prints the same for runs made before (by whatever arraybench is on the import path: read
old runs with the old code, `PYTHONPATH=OLD/src`, to say what that code's report said).
Targets beside the neighbour: ≥ 90 % of pairs 1.25× apart ordered, a winner at ≥ 60 % of sizes, no
pair 2× apart unordered, no verdict between the two runs, wall ≤ 1.5× main's beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import time
from itertools import combinations
from pathlib import Path

SUBSET = ["--workloads", "elementwise_add,matmul,grad,fft,sort", "--backends", "numpy,numba,jax,torch",
          # The default suite's sampling (planning.suites.SUITE_TIMER), which --workloads would replace.
          "--min-time", "0.03", "--max-time", "0.1", "--no-store"]
BURST_S = (0.2, 0.5)  # a burst of the busy loop lasts this long...
EVERY_S = (1.0, 2.0)  # ...and one starts this often


def neighbour(seconds: float, cpu: int, seed: int = 0) -> None:
    """A busy loop on `cpu`, in bursts, for at most `seconds` (or until its parent is gone)."""
    os.sched_setaffinity(0, {cpu})
    rng = random.Random(seed)
    parent, end = os.getppid(), time.monotonic() + seconds
    while time.monotonic() < end and os.getppid() == parent:
        stop = time.monotonic() + rng.uniform(*BURST_S)
        x = 0
        while time.monotonic() < stop:
            x += 1
        time.sleep(max(0.0, rng.uniform(*EVERY_S) - rng.uniform(*BURST_S)))


def start_neighbour(seconds: float) -> subprocess.Popen:
    cpu = max(os.sched_getaffinity(0))
    return subprocess.Popen([sys.executable, __file__, "neighbour", "--seconds", str(seconds), "--cpu", str(cpu)])


def pairs_and_sizes(path: Path) -> dict:
    """The pairs and sizes of one run, read as the report reads them."""
    from arraybench.report.answer import leads
    from arraybench.report.data import ReportData
    from arraybench.results import load_results
    from arraybench.stats import bracket

    res = load_results(path)
    data = ReportData.from_results([res])
    apart, ordered, wide, open_wide, sizes, won, held = 0, 0, 0, [], 0, 0, 0
    for recs in data.problems(data.records).values():
        for rivals in sizes_of(recs).values():
            for a, b in combinations(rivals, 2):
                ratio = max(a.median_s, b.median_s) / min(a.median_s, b.median_s)
                if ratio < 1.25:
                    continue
                apart += 1
                decided = bracket.order(a, b) != 0
                ordered += decided
                if ratio >= 2:
                    wide += 1
                    if not decided:
                        open_wide.append(f"{a.workload}[{a.size}] {data.label(a)} / {data.label(b)} ×{ratio:.2f}")
                        held += bracket.held(bracket.point(a), bracket.point(b))  # a reach: a pool's or a spell's
        for lead in leads(data, recs):
            if lead.margin == "the only correct backend·mode":
                continue
            sizes += 1
            won += not lead.tied
    latest = res.latest().values()
    spell = res.header.analysis.to_json() if res.header.analysis is not None else {}
    return {"run": str(path), "pairs_1.25x": apart, "ordered": ordered,
            "ordered_share": round(ordered / apart, 3) if apart else None,
            "sizes": sizes, "with_winner": won, "winner_share": round(won / sizes, 3) if sizes else None,
            "pairs_2x": wide, "unordered_2x": len(open_wide), "unordered_2x_pools": held,
            "unordered_2x_pairs": open_wide[:20],
            "cases": len(latest), "processes": sum(r.n_processes or 1 for r in latest if r.status == "ok"),
            **({"analysis": spell} if spell else {})}


def sizes_of(recs: list) -> dict:
    """A problem's measured cases (those ok, with a median) by size, in the order given."""
    out: dict = {}
    for r in recs:
        if r.status == "ok" and r.median_s:
            out.setdefault(r.size, []).append(r)
    return out


def orders(path: Path) -> dict[tuple, int]:
    """Every pair of cases of one size that a run orders, as the report orders them (`stats.bracket.order`):
    -1 where the first (by label) is faster, +1 where slower."""
    from arraybench.report.data import ReportData
    from arraybench.results import load_results
    from arraybench.stats import bracket

    data = ReportData.from_results([load_results(path)])
    out = {}
    for recs in data.problems(data.records).values():
        for size, rivals in sizes_of(recs).items():
            for a, b in combinations(sorted(rivals, key=data.label), 2):
                if found := bracket.order(a, b):
                    out[(a.workload, size, data.label(a), data.label(b))] = found
    return out


def opposite(a: Path, b: Path) -> dict:
    """The pairs two identical runs both order, and those they order opposite ways (none is right)."""
    x, y = orders(a), orders(b)
    both = set(x) & set(y)
    wrong = sorted(f"{w}[{n}] {p} / {q}" for w, n, p, q in both if x[(w, n, p, q)] != y[(w, n, p, q)])
    return {"ordered_in_both": len(both), "opposite": len(wrong), "opposite_pairs": wrong[:20]}


def verdicts(a: Path, b: Path) -> dict:
    """What `compare A B` says of two identical runs: its verdicts (slower or faster are false)."""
    out = subprocess.run([sys.executable, "-m", "arraybench", "compare", str(a), str(b), "--format", "json",
                          "--no-history"], capture_output=True, text=True)
    if out.returncode not in (0, 1):
        return {"error": out.stderr.strip()[-500:]}
    cases = json.loads(out.stdout)["cases"]
    counts: dict[str, int] = {}
    for c in cases:
        counts[c["verdict"]] = counts.get(c["verdict"], 0) + 1
    false = [f"{c['case_id']} {c['verdict']} ×{c['ratio']:.2f}" for c in cases if c["verdict"] in ("slower", "faster")]
    return {"verdicts": counts, "false": false}


def run(args: argparse.Namespace, extra: list[str]) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    noisy = None if args.quiet else start_neighbour(args.repeat * 1800.0)
    dirs = []
    try:
        for i in range(args.repeat):
            d = out / f"run{i + 1}"
            t0 = time.monotonic()
            subprocess.run([sys.executable, "-m", "arraybench", "run", "--output-dir", str(d), *SUBSET, *extra],
                           check=True, stdout=subprocess.DEVNULL)
            wall = time.monotonic() - t0
            (d / "wall_s").write_text(f"{wall:.1f}\n")
            dirs.append(d)
            print(json.dumps({**pairs_and_sizes(d), "wall_s": round(wall, 1)}), flush=True)
    finally:
        if noisy is not None:
            noisy.kill()
    if len(dirs) >= 2:
        print(json.dumps({"compare": [str(dirs[0]), str(dirs[1])], **verdicts(dirs[0], dirs[1]),
                          **opposite(dirs[0], dirs[1])}), flush=True)


def figures(paths: list[str]) -> None:
    for p in paths:
        wall = Path(p) / "wall_s"
        print(json.dumps({**pairs_and_sizes(Path(p)),
                          **({"wall_s": float(wall.read_text())} if wall.exists() else {})}))
    if len(paths) >= 2:
        print(json.dumps({"compare": paths[:2], **verdicts(Path(paths[0]), Path(paths[1])),
                          **opposite(Path(paths[0]), Path(paths[1]))}))


def main() -> None:
    argv = sys.argv[1:]
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--repeat", type=int, default=2)
    r.add_argument("--quiet", action="store_true", help="no neighbour: the same figures on a quiet host")
    f = sub.add_parser("figures")
    f.add_argument("paths", nargs="+")
    n = sub.add_parser("neighbour")
    n.add_argument("--seconds", type=float, required=True)
    n.add_argument("--cpu", type=int, default=max(os.sched_getaffinity(0)))
    args = p.parse_args(argv)
    if args.what == "run":
        run(args, extra)
    elif args.what == "figures":
        figures(args.paths)
    else:
        neighbour(args.seconds, args.cpu)


if __name__ == "__main__":
    main()
