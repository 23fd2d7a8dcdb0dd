"""How well `history --changes` finds the steps planted in a store (benchmarks/thousand_runs.py writes both).

Every planted step of 10 % or more must be found in its series at its run; in the series where
nothing was planted, at most one change may be found (a false alarm). Prints each planted step,
found or missed, every false change, and the time `changes` took; exits 1 when either bar fails.

    .venv/bin/python benchmarks/changes_score.py --store /tmp/year.db [--planted /tmp/year.db.planted.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from arraybench.store import Store
from arraybench.store.history import changes
from arraybench.store.postgres import is_url

# The bar: a step this large is always found at its run.
MUST_FIND = 0.10
# ...and no more than this many changes in the series where nothing was planted.
MAX_FALSE = 1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", required=True, help="a SQLite file or postgresql:// URL")
    ap.add_argument("--planted", help="the planted steps (default: STORE.planted.json beside a SQLite store)")
    args = ap.parse_args()
    if args.planted is None and is_url(args.store):
        ap.error("--planted is needed with a postgresql:// store")
    planted = json.loads(Path(args.planted or f"{args.store}.planted.json").read_text())
    start = time.perf_counter()
    with Store(args.store, create=False) as st:
        found = changes(st)
    took = time.perf_counter() - start
    at = {(c.machine.key, c.series.case_id, c.run.id): c for c in found}
    planted_series = {(p["machine"], p["case"]) for p in planted}
    missed = 0
    print(f"{len(planted)} planted steps:")
    for p in planted:
        hit = at.get((p["machine"], p["case"], p["run"]))
        must = abs(p["factor"] - 1) >= MUST_FIND - 1e-9
        missed += must and hit is None
        others = [c.run.id for c in found if (c.machine.key, c.series.case_id) == (p["machine"], p["case"])]
        said = f"FOUND {hit.change}" if hit else "missed" + (f" (found at {', '.join(others)})" if others else "")
        print(f"  ×{p['factor']:.2f} {'' if must else '(under 10 %, not required) '}{p['case']} on "
              f"{p['machine']} from {p['run']}: {said}")
    false = [c for c in found if (c.machine.key, c.series.case_id) not in planted_series]
    print(f"{len(false)} changes in unplanted series (at most {MAX_FALSE} allowed):")
    for c in false:
        print(f"  {c.text()}")
    series = len({(c.machine.key, c.series.case_id) for c in found})
    print(f"changes(): {took:.1f} s for {len(found)} changes in {series} series; "
          f"{missed} required steps missed, {len(false)} false")
    return 1 if missed or len(false) > MAX_FALSE else 0


if __name__ == "__main__":
    sys.exit(main())
