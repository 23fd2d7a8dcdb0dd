"""Does `make bench` stay within 1.25× of an older checkout's wall on the same host? Runs in turns.

    python benchmarks/bench_wall.py run --old OLD_CHECKOUT --out DIR [--new NEW_CHECKOUT] [--pairs 2] [--noisy]
    python benchmarks/bench_wall.py figures --old RUN_DIR... --new RUN_DIR...   # runs made before

`run` runs `make bench`'s run (`arraybench run`, default settings) from two checkouts (each run with its
own `src` first on the import path, in its own output directory under DIR) in ABBA turns — new, old,
old, new, … — `--pairs` pairs of runs, and prints, per run and per pair (issue 41, item 3):

- the wall time of the run, and the wall its processes spent in each case's first two rounds (`first`),
  its third (`third`) and any after (`beyond`), summed from the results' process lines;
- per pair, new over old: the walls' ratio; the host's speed (`host`: the process wall of the first two
  rounds of the cases both runs measured, new over old: the same work in both codes); and the walls'
  ratio over the host's (`host_corrected`). A host that ran slower during one run of a pair moves the
  walls' ratio and not the corrected one: on the 2-core VM two runs of the same code in a row were 15 %
  apart, and in one pair the new code's first two rounds ran 1.16× slower than the old's.

The pairs close the output: each ratio's geometric mean with its 95 % t interval over the pairs.
Target: ≤ 1.25× (the walls' ratio where the host held still; the corrected one where it drifted: its
interval is the one to read).

`--noisy` runs benchmarks/noisy.py's subset (five workloads, four frameworks) instead of the default run,
beside noisy.py's neighbour, one for all the runs, so that both codes meet the same neighbour in turns:
issue 41 item 5's wall, whose target is ≤ 1.5×.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path


@functools.cache
def process_walls(path: Path) -> dict[str, list[float]]:
    """Each case's process walls, in the order its processes ran, from a run's process lines (read once:
    a finished run's file does not change)."""
    from arraybench.results import load_results

    per_case: dict[str, list[float]] = {}
    for _, rec in sorted(load_results(path).replicate_lines, key=lambda kr: kr[0]):
        per_case.setdefault(rec.id, []).append(rec.wall_s or 0.0)
    return per_case


def rounds_wall(path: Path) -> dict[str, float]:
    """The process wall of a run's first two rounds, its third, and any after, from its process lines."""
    walls = list(process_walls(path).values())
    return {"first": round(sum(sum(w[:2]) for w in walls), 1),
            "third": round(sum(sum(w[2:3]) for w in walls), 1),
            "beyond": round(sum(sum(w[3:]) for w in walls), 1),
            "cases": len(walls), "processes": sum(len(w) for w in walls)}


def one_run(checkout: Path, out: Path, subset: Sequence[str] = ()) -> float:
    """`arraybench run` from `checkout` (its src first on the import path) into `out`, with `subset`'s
    arguments (none: the default run); its wall."""
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve() / "src")}
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "arraybench", "run", "--output-dir", str(out), *subset], cwd=checkout,
                   env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    (out / "wall_s").write_text(f"{wall:.1f}\n")
    return wall


def describe(path: Path, wall: float | None = None) -> dict:
    if wall is None:
        wall = float((path / "wall_s").read_text())
    return {"run": str(path), "wall_s": round(wall, 1), **rounds_wall(path)}


def host_speed(new: Path, old: Path) -> tuple[float, int]:
    """How much slower the host ran `new`'s run than `old`'s: the process wall of the first two rounds of
    the cases both measured twice or more, new over old, and how many cases that is."""
    a, b = process_walls(new), process_walls(old)
    both = [cid for cid in a if len(a[cid]) >= 2 and len(b.get(cid, ())) >= 2]
    return sum(sum(a[cid][:2]) for cid in both) / sum(sum(b[cid][:2]) for cid in both), len(both)


def pair(new: dict, old: dict) -> dict:
    walls = new["wall_s"] / old["wall_s"]
    host, cases = host_speed(Path(new["run"]), Path(old["run"]))
    return {"pair": [new["run"], old["run"]], "walls": round(walls, 3), "host": round(host, 3),
            "host_cases": cases, "host_corrected": round(walls / host, 3)}


def summary(pairs: list[dict], target: float = 1.25) -> dict:
    from arraybench.stats.student import t_isf

    def gmean(key: str) -> list[float]:
        logs = [math.log(p[key]) for p in pairs]
        mean = sum(logs) / len(logs)
        if len(logs) < 2:
            return [round(math.exp(mean), 3)]
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (len(logs) - 1))
        half = t_isf(0.025, len(logs) - 1) * sd / math.sqrt(len(logs))
        return [round(math.exp(mean), 3), round(math.exp(mean - half), 3), round(math.exp(mean + half), 3)]

    return {"pairs": len(pairs), "walls": gmean("walls"), "host": gmean("host"),
            "host_corrected": gmean("host_corrected"), "walls_max": max(p["walls"] for p in pairs),
            "target": target}


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    checkouts = {"new": Path(args.new), "old": Path(args.old)}
    subset: Sequence[str] = ()
    neighbour = None
    if args.noisy:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import noisy

        subset = noisy.SUBSET
        neighbour = noisy.start_neighbour(args.pairs * 2 * 1800.0)
    pairs = []
    try:
        for i in range(args.pairs):
            order = ("new", "old") if i % 2 == 0 else ("old", "new")
            seen = {}
            for which in order:
                d = out / f"{which}{i + 1}"
                seen[which] = describe(d, one_run(checkouts[which], d, subset))
                print(json.dumps({which: seen[which]}), flush=True)
            pairs.append(pair(seen["new"], seen["old"]))
            print(json.dumps(pairs[-1]), flush=True)
    finally:
        if neighbour is not None:
            neighbour.kill()
    print(json.dumps(summary(pairs, 1.5 if args.noisy else 1.25)), flush=True)


def figures(args: argparse.Namespace) -> None:
    if len(args.new) != len(args.old):
        sys.exit("bench_wall.py: as many --new runs as --old ones, in the order of their pairs")
    pairs = [pair(describe(Path(n)), describe(Path(o))) for n, o in zip(args.new, args.old, strict=True)]
    for p in pairs:
        print(json.dumps(p))
    print(json.dumps(summary(pairs)))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="what", required=True)
    r = sub.add_parser("run")
    r.add_argument("--old", required=True, help="the checkout to compare with (its src is put on the path)")
    r.add_argument("--new", default=str(Path(__file__).resolve().parents[1]), help="default: this checkout")
    r.add_argument("--out", required=True)
    r.add_argument("--pairs", type=int, default=2)
    r.add_argument("--noisy", action="store_true",
                   help="noisy.py's subset beside its neighbour, not the default run (target 1.5×)")
    f = sub.add_parser("figures")
    f.add_argument("--new", nargs="+", required=True)
    f.add_argument("--old", nargs="+", required=True)
    args = p.parse_args()
    if args.what == "run" and args.pairs < 1:
        p.error("--pairs: at least 1")
    run(args) if args.what == "run" else figures(args)


if __name__ == "__main__":
    main()
