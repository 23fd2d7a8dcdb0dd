"""Document 002's polynomial: its number as its own code measures it here, and arraybench's, for the same computation.

Document 002 times `f(x) = -4x³ + 9x² + 6x - 3` on a random n×n matrix with two `%timeit` lines
(tests/fixtures/lint/seed_002.ipynb, cell 4, the document's lines 88-94):

    %timeit f(x) # NumPy
    %timeit jax.jit(f)(jnp.array(x)) # JAX + JIT

and concludes that JAX with JIT is 6 times faster than NumPy. `arraybench lint` finds four
mistakes in the second line (no wait for the result, a new jit wrapper each run, the float64 →
float32 copy into JAX inside the timing, float64 NumPy against float32 JAX) and writes the
computation as a `@workload`. This script, CPU only, in subprocesses:

1. runs the document's cell as written, in IPython, but for its size (n instead of 10000, so it
   takes seconds) and the imports the document leaves out;
2. runs `arraybench lint --write-workload` on the fixture, then `arraybench run --workload-file`
   on the workload it wrote (`f_cell4`) at the same n, NumPy and JAX, eager and jit, in float32
   and in float64;

and prints the document's two numbers and its speed-up beside arraybench's.

    .venv/bin/python benchmarks/lint_measure.py                 # n = 3000: about two minutes on 2 cores
    .venv/bin/python benchmarks/lint_measure.py --n 2000 --processes 1   # quicker, wider intervals
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).parents[1]
FIXTURE = ROOT / "tests" / "fixtures" / "lint" / "seed_002.ipynb"
CELL = 4  # the notebook's cell 4: the document's lines 88-94
WORKLOAD = "f_cell4"
CPU_ONLY = {"JAX_PLATFORMS": "cpu", "CUDA_VISIBLE_DEVICES": ""}
# What %timeit prints: "1.23 s ± 4.56 ms per loop (mean ± std. dev. of 7 runs, 1 loop each)".
# IPython writes a Greek mu (U+03BC), a micro sign (U+00B5) elsewhere.
TIMEIT = re.compile(r"([\d.]+) (ns|µs|μs|us|ms|s) ± ([\d.]+) (ns|µs|μs|us|ms|s) per loop")
UNIT = {"ns": 1e-9, "µs": 1e-6, "μs": 1e-6, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def document_code(n: int) -> str:
    """The document's cell, its size made n, after the imports it does not show."""
    cell = json.loads(FIXTURE.read_text())["cells"][CELL - 1]
    code = "".join(cell["source"])
    assert "np.random.randn(10000, 10000)" in code, "the fixture's cell 4 is not document 002's timing"
    return "import jax\nimport jax.numpy as jnp\nimport numpy as np\n\n" + code.replace("10000, 10000", f"{n}, {n}")


def run_document(n: int, tmp: Path) -> list[tuple[float, float]]:
    """(mean, std) in seconds of the document's two %timeit lines, NumPy first."""
    script = tmp / "document_002.ipy"
    script.write_text(document_code(n))
    out = subprocess.run([sys.executable, "-m", "IPython", "--quick", "--no-banner", "--colors=NoColor",
                          str(script)], capture_output=True, text=True, env={**os.environ, **CPU_ONLY})
    found = [(float(m[1]) * UNIT[m[2]], float(m[3]) * UNIT[m[4]]) for m in TIMEIT.finditer(out.stdout)]
    if len(found) != 2:
        sys.exit(f"the document's code did not print two %timeit lines:\n{out.stdout}\n{out.stderr}")
    return found


def write_workload(tmp: Path) -> Path:
    target = tmp / "seed_002_workloads.py"
    out = subprocess.run([sys.executable, "-m", "arraybench", "lint", str(FIXTURE), "--write-workload", str(target)],
                         capture_output=True, text=True)
    if out.returncode != 1 or not target.exists():
        sys.exit(f"arraybench lint did not write the workload (exit {out.returncode}):\n{out.stdout}{out.stderr}")
    return target


def run_arraybench(workloads: Path, n: int, dtype: str, processes: int, tmp: Path) -> list[dict]:
    """The case lines of `arraybench run` on the document's computation at size n."""
    out_dir = tmp / f"run_{dtype}"
    cmd = [sys.executable, "-m", "arraybench", "run", "--workload-file", str(workloads), "--workloads", WORKLOAD,
           "--sizes", str(n), "--backends", "numpy,jax", "--modes", "eager,jit", "--dtype", dtype,
           "--processes", str(processes), "--output-dir", str(out_dir), "--no-store"]
    done = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, **CPU_ONLY})
    results = out_dir / "results.jsonl"
    if not results.exists():
        sys.exit(f"arraybench run wrote no results (exit {done.returncode}):\n{done.stdout}{done.stderr}")
    lines = [json.loads(line) for line in results.read_text().splitlines() if line.strip()]
    return [r for r in lines if r.get("type") == "case"]


def ms(seconds: float | None) -> str:
    return "—" if seconds is None else f"{seconds * 1e3:.3g} ms"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--n", type=int, default=3000, help="matrix size n (the document's: 10000)")
    p.add_argument("--processes", type=int, default=3, help="worker processes per arraybench case")
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        (numpy_mean, numpy_std), (jax_mean, jax_std) = run_document(args.n, tmp)
        print(f"document 002's own timing, as its code measures it here (IPython %timeit, n = {args.n}, CPU):")
        print(f"  NumPy  f(x)                         {ms(numpy_mean):>10} ± {ms(numpy_std)}   float64")
        print(f"  JAX    jax.jit(f)(jnp.array(x))     {ms(jax_mean):>10} ± {ms(jax_std)}   float32, with the copy "
              "into JAX and a new wrapper each run, not waited for")
        print(f"  speed-up of JAX over NumPy, as the document computes it: {numpy_mean / jax_mean:.2f}×\n")
        workloads = write_workload(tmp)
        print(f"arraybench run on the @workload lint wrote ({WORKLOAD}), n = {args.n}, median per call "
              f"[95 % interval], first call apart:")
        for dtype in ("float32", "float64"):
            measured = run_arraybench(workloads, args.n, dtype, args.processes, tmp)
            cases = {(c["backend"], c["mode"]): c for c in measured}
            for (backend, mode), c in sorted(cases.items()):
                interval = c.get("ci95_s") or (None, None)
                state = "" if c.get("status") == "ok" else f"  ({c.get('status')}: {c.get('error')})"
                print(f"  {dtype}  {backend}·{mode:<6} {ms(c.get('median_s')):>10} [{ms(interval[0])}, "
                      f"{ms(interval[1])}]  first call {ms(c.get('first_call_s'))}{state}")
            base = cases.get(("numpy", "eager"), {}).get("median_s")
            best = cases.get(("jax", "jit"), {}).get("median_s")
            if base and best:
                print(f"  {dtype}  speed-up of jax·jit over numpy·eager: {base / best:.2f}×")


if __name__ == "__main__":
    main()
