"""How many of a run's answers are decided: at each ranked size of each problem, is the fastest
backend·mode ahead of the runner-up beyond noise, or tied with it ("within noise")?

    python benchmarks/decided.py RESULTS [RESULTS ...]     # a results file or run directory each

The figure `make bench` before and after a change is judged by (issue 30): the share of the
report's claims that a second identical run would repeat, and the "within noise" rest. Prints one
JSON line per run: sizes ranked, decided, tied, and the wall time of the run's cases.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def decided(path: Path) -> dict:
    from arraybench.report.answer import leads
    from arraybench.report.data import ReportData
    from arraybench.results import load_results

    res = load_results(path)
    data = ReportData.from_results([res])
    ranked = tied = 0
    for recs in data.problems(data.records).values():
        for lead in leads(data, recs):
            if lead.margin == "the only correct backend·mode":
                continue
            ranked += 1
            tied += lead.tied
    latest = res.latest().values()
    return {"run": str(path), "problems": len(data.problems(data.records)), "sizes_ranked": ranked,
            "decided": ranked - tied, "tied": tied,
            "share_decided": round((ranked - tied) / ranked, 3) if ranked else None,
            "cases": len(latest), "cases_wall_s": round(sum(r.wall_s or 0.0 for r in latest), 1)}


def main() -> None:
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for p in sys.argv[1:]:
        print(json.dumps(decided(Path(p))))


if __name__ == "__main__":
    main()
