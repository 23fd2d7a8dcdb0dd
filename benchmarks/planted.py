"""A slowdown of known size, planted in one of two environments of one run: is it found, and only it?

    python benchmarks/planted.py detect --out DIR            # PLANTED=1.05 in env slow: found slower?
    python benchmarks/planted.py aa --out DIR --repeat 3     # PLANTED=1.00: no verdict, mostly "same"?
    python benchmarks/planted.py detect --out DIR --budget 240   # any further option goes to `run`

Each run (repeat i with `--seed i`) measures benchmarks/planted_workloads.py (element-wise,
matmul, sort and a dispatch-bound chain; numpy, jax and torch, eager and jit) as `--env base:
--env slow: --env-var slow:PLANTED=X`, its processes interleaved in the same rounds, then
`arraybench compare RUN@base RUN@slow`. It counts the verdicts of the cases of 100 µs or more,
and sets the width of each paired interval beside the width of the same case compared unpaired
(each environment's records as a run of its own, as two runs made at different times would be
compared, without their pairing). Writes DIR/summary.json.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORKLOADS = HERE / "planted_workloads.py"
LONG_ENOUGH_S = 100e-6  # the bar: cases of 100 µs or more


def run(out: Path, planted: float, extra: list[str]) -> Path:
    cmd = [sys.executable, "-m", "arraybench", "run", "--workload-file", str(WORKLOADS), "--backends",
           "numpy,jax,torch", "--sizes", "small", "--env", "base:", "--env", "slow:", "--env-var",
           f"slow:PLANTED={planted}", "--no-store", "--output-dir", str(out), *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return out


def verdicts(out: Path, threshold: float) -> dict:
    from arraybench.comparison import compare, environment_side
    from arraybench.results import load_results

    res = load_results(out)
    base, slow = environment_side(res, "base"), environment_side(res, "slow")
    paired = compare(base, slow, threshold=threshold, paired=True)
    unpaired = {c.base.id: c for c in compare(base, slow, threshold=threshold).cases}
    long = [c for c in paired.cases if c.result and (c.base.median_s or 0) >= LONG_ENOUGH_S]
    counts: dict[str, int] = {}
    for c in long:
        counts[c.verdict] = counts.get(c.verdict, 0) + 1

    def width(c) -> float:
        lo, hi = c.result.ci95
        return hi / lo

    ratio = [width(c) / width(unpaired[c.base.id]) for c in long if unpaired[c.base.id].result]
    return {"run": str(out), "cases_100us": len(long), "verdicts": counts,
            "median_width_paired": statistics.median(width(c) for c in long) if long else None,
            "median_width_unpaired": statistics.median(width(unpaired[c.base.id]) for c in long) if long else None,
            "median_width_ratio_paired_over_unpaired": statistics.median(ratio) if ratio else None,
            "processes": statistics.median(c.base.n_processes or 1 for c in long) if long else None}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("what", choices=["detect", "aa"])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--threshold", type=float, help="compare's threshold, a fraction (detect: 0.02, aa: 0.05)")
    args, run_args = p.parse_known_args()  # the rest: more `arraybench run` options (--budget 240)
    planted = 1.05 if args.what == "detect" else 1.00
    threshold = args.threshold if args.threshold is not None else (0.02 if args.what == "detect" else 0.05)
    # Each repeat with its own seed (its own case order and layouts), unless --seed is given: with one
    # seed every repeat would run the same schedule, and a lean of that schedule would look like a
    # finding three times over.
    seeded = any(a == "--seed" or a.startswith("--seed=") for a in run_args)
    found = [verdicts(run(args.out / f"run-{i + 1}", planted, run_args if seeded else [*run_args, "--seed", str(i)]),
                      threshold) for i in range(args.repeat)]
    summary = {"planted": planted, "threshold": threshold, "runs": found}
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main()
