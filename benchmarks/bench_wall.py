"""Does `make bench` stay within 1.25× of an older checkout's wall on the same host? Runs in turns.

    python benchmarks/bench_wall.py run --old OLD_CHECKOUT --out DIR [--new NEW_CHECKOUT] [--pairs 2]
    python benchmarks/bench_wall.py figures --old RUN_DIR... --new RUN_DIR...   # runs made before

`run` runs `make bench`'s run (`arraybench run`, default settings) from two checkouts (each run with its
own `src` first on the import path, in its own output directory under DIR) in ABBA turns — new, old,
old, new, … — `--pairs` pairs of runs, and prints, per run and per pair (issue 41, item 3):

- the wall time of the run, and the wall its processes spent in each case's first two rounds (`first`),
  its third (`third`) and any after (`beyond`), summed from the results' process lines;
- per pair, new over old: the walls' ratio, and the same ratio over the runs' first two rounds
  (`drift_corrected`: each run's wall over its first two rounds' process wall, new over old). Both codes
  measure the same cases in those two rounds, so a host that ran slower during one run of a pair moves
  the walls' ratio and not this one: on the 2-core VM two runs of the same code in a row were 15 % apart.

The pairs' geometric mean of each ratio closes the output. Target: the walls' ratio ≤ 1.25× (read it
beside the drift-corrected one: a pair above it with the corrected ratio well under it met a host that
drifted between its runs, and another pair says which it was).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path


def rounds_wall(path: Path) -> dict[str, float]:
    """The process wall of a run's first two rounds, its third, and any after, from its process lines."""
    from arraybench.results import load_results

    per_case: dict[str, list[float]] = {}
    for _, rec in sorted(load_results(path).replicate_lines, key=lambda kr: kr[0]):
        per_case.setdefault(rec.id, []).append(rec.wall_s or 0.0)
    walls = list(per_case.values())
    return {"first": round(sum(sum(w[:2]) for w in walls), 1),
            "third": round(sum(sum(w[2:3]) for w in walls), 1),
            "beyond": round(sum(sum(w[3:]) for w in walls), 1),
            "cases": len(walls), "processes": sum(len(w) for w in walls)}


def one_run(checkout: Path, out: Path) -> float:
    """`arraybench run` from `checkout` (its src first on the import path) into `out`; its wall."""
    env = {**os.environ, "PYTHONPATH": str(checkout.resolve() / "src")}
    t0 = time.monotonic()
    subprocess.run([sys.executable, "-m", "arraybench", "run", "--output-dir", str(out)], cwd=checkout,
                   env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.monotonic() - t0
    (out / "wall_s").write_text(f"{wall:.1f}\n")
    return wall


def describe(path: Path, wall: float | None = None) -> dict:
    if wall is None:
        wall = float((path / "wall_s").read_text())
    return {"run": str(path), "wall_s": round(wall, 1), **rounds_wall(path)}


def pair(new: dict, old: dict) -> dict:
    walls = new["wall_s"] / old["wall_s"]
    corrected = (new["wall_s"] / new["first"]) / (old["wall_s"] / old["first"])
    return {"pair": [new["run"], old["run"]], "walls": round(walls, 3), "drift_corrected": round(corrected, 3),
            "first_rounds": round(new["first"] / old["first"], 3)}


def summary(pairs: list[dict]) -> dict:
    def gmean(key: str) -> float:
        return round(math.exp(sum(math.log(p[key]) for p in pairs) / len(pairs)), 3)

    return {"pairs": len(pairs), "walls_gmean": gmean("walls"), "drift_corrected_gmean": gmean("drift_corrected"),
            "walls_max": max(p["walls"] for p in pairs), "target": 1.25}


def run(args: argparse.Namespace) -> None:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    checkouts = {"new": Path(args.new), "old": Path(args.old)}
    pairs = []
    for i in range(args.pairs):
        order = ("new", "old") if i % 2 == 0 else ("old", "new")
        seen = {}
        for which in order:
            d = out / f"{which}{i + 1}"
            seen[which] = describe(d, one_run(checkouts[which], d))
            print(json.dumps({which: seen[which]}), flush=True)
        pairs.append(pair(seen["new"], seen["old"]))
        print(json.dumps(pairs[-1]), flush=True)
    print(json.dumps(summary(pairs)), flush=True)


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
    f = sub.add_parser("figures")
    f.add_argument("--new", nargs="+", required=True)
    f.add_argument("--old", nargs="+", required=True)
    args = p.parse_args()
    run(args) if args.what == "run" else figures(args)


if __name__ == "__main__":
    main()
