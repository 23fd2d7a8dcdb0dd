"""What the harness spends around a large case, process by process, against what it measures.

    python benchmarks/harness_cost.py [--out DIR] [--reuse] [--devices cpu|gpu] [--backends LIST]

Runs `arraybench run` on two large cases, each in 3 worker processes (--refine 0, float32):
element-wise sine at 10⁸ elements and a 4096² matmul on the CPU (with `--devices gpu`: the sine at
10⁸ and an 8192² matmul), then prints, for every process, its wall time split into start-up (the
worker's start, where the case was its first), inputs, reference (or sketch), copies (host→device
and back), compile (building the callable and its first call), timing (warm-up and samples), check
and what is left (the pipe, the record). Below each case: the median over its processes of what
the harness spends on the case (inputs, reference, copies, check and the rest: goal ≤ 0.8 s for
the sine at 10⁸), the median start-up apart (a worker's, paid by the first case it serves in a
round), and the most any process spent on reference and check (goal: ≤ 0.6 s for the matmul).

It reads only the replicate lines' phase fields (inputs_s, reference_s, transfer_s, build_s,
timer_s, check_s, to_host_s, first_call_s, wall_s) that older results files have too, so with
PYTHONPATH at an older checkout it measures that version the same way ("before" and "after");
start-up is then what is left when the worker was new.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

CPU_CASES = (("elementwise_sin", "100000000"), ("matmul", "4096"))
GPU_CASES = (("elementwise_sin", "100000000"), ("matmul", "8192"))
PHASES = ("startup", "inputs", "reference", "copies", "compile", "timing", "check", "other")
GOAL_OUTSIDE_S = 0.8  # median per process of all but timing and compile, element-wise at 10⁸
GOAL_REFERENCE_CHECK_S = 0.6  # reference + check in any process, matmul


def run(out: Path, workload: str, size: str, backends: str, devices: str) -> Path:
    d = out / f"{workload}-{size}"
    cmd = [sys.executable, "-m", "arraybench", "run", "--workloads", workload, "--sizes", size,
           "--backends", backends, "--modes", "eager", "--devices", devices, "--dtype", "float32",
           "--processes", "3", "--refine", "0", "--no-store", "--output-dir", str(d)]
    print("$", " ".join(cmd[1:]), file=sys.stderr)
    subprocess.run(cmd, check=False)
    return d


def phases(p: dict) -> dict[str, float]:
    """One process's wall split into PHASES (seconds)."""
    get = lambda k: p.get(k) or 0.0  # noqa: E731
    timer, first = get("timer_s"), get("first_call_s")
    known = {
        "inputs": get("inputs_s"), "reference": get("reference_s"),
        "copies": get("transfer_s") + get("to_host_s"),
        "compile": get("build_s") + first, "timing": max(0.0, timer - first), "check": get("check_s"),
    }
    wall = get("wall_s")
    rest = max(0.0, wall - sum(known.values()))
    startup = p.get("startup_s")
    if startup is None:  # an older file: a worker's start is most of what is left, where it had one
        startup = rest if rest > 0.5 else 0.0
    return {"startup": startup, **known, "other": max(0.0, rest - startup), "wall": wall}


def processes(d: Path) -> dict[str, list[dict]]:
    """Each case's processes (replicate lines), by backend·mode."""
    out: dict[str, list[dict]] = defaultdict(list)
    for line in (d / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        if rec.get("type") == "replicate" and rec.get("samples_s"):
            out[f"{rec['backend']}·{rec['mode']}"].append(rec)
    return out


def report(d: Path, workload: str) -> dict:
    summary = {}
    print(f"\n{d.name}   (seconds)")
    print(f"  {'backend·mode':<18} {'proc':>4} " + " ".join(f"{p:>9}" for p in (*PHASES, "wall")) + "   median")
    for label, procs in sorted(processes(d).items()):
        rows = [phases(p) for p in procs]
        for k, (p, row) in enumerate(zip(procs, rows, strict=True), 1):
            median = statistics.median(p["samples_s"])
            print(f"  {label:<18} {k:>4} " + " ".join(f"{row[ph]:9.3f}" for ph in (*PHASES, "wall"))
                  + f"   {median * 1e3:8.2f} ms")
        outside = statistics.median(r["wall"] - r["timing"] - r["compile"] - r["startup"] for r in rows)
        startup = statistics.median(r["startup"] for r in rows)
        ref_check = max(r["reference"] + r["check"] for r in rows)
        summary[label] = {"around_case_median_s": outside, "startup_median_s": startup,
                          "reference_check_max_s": ref_check, "processes": rows}
        goal = (f"goal ≤ {GOAL_OUTSIDE_S} s" if workload.startswith("elementwise")
                else f"reference+check max {ref_check:.3f} s, goal ≤ {GOAL_REFERENCE_CHECK_S} s")
        print(f"  {label:<18} around the case (inputs, reference, copies, check, rest), median over processes: "
              f"{outside:.3f} s ({goal}); start-up median {startup:.3f} s")
    return summary


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="where the runs go (default: a temporary directory)")
    ap.add_argument("--reuse", action="store_true", help="analyse the runs already in --out")
    ap.add_argument("--devices", default="cpu", choices=("cpu", "gpu"))
    ap.add_argument("--backends", default="numpy,torch", help="default %(default)s (cupy,torch,jax on a GPU)")
    ap.add_argument("--json", type=Path, help="write the figures here too")
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="harness-cost-"))
    backends = args.backends if args.devices == "cpu" or args.backends != "numpy,torch" else "cupy,torch,jax"
    figures = {}
    for workload, size in GPU_CASES if args.devices == "gpu" else CPU_CASES:
        d = out / f"{workload}-{size}"
        try:
            if not (args.reuse and (d / "results.jsonl").exists()):
                run(out, workload, size, backends, args.devices)
        except KeyboardInterrupt:  # cut (gpu_check.sh's LIMIT): the run kept its finished processes
            print(f"harness_cost: cut while running {d.name}; the cases after it are not run", file=sys.stderr)
            if (d / "results.jsonl").exists():
                figures[d.name] = report(d, workload)
            break
        figures[d.name] = report(d, workload)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1))


if __name__ == "__main__":
    main()
