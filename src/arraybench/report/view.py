"""A case as the report shows it: its record and the figures the report derives from it."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from arraybench.results.record import FIELDS, CaseRecord, described, registry
from arraybench.stats.paired import Pairing

# The figures derived per case that travel with it, in this order: results.csv, the JSON formats
# (`arraybench show --format json`, the exports) and the published site carry them, from CaseView.
FIGURES = ("bound", "speedup", "gflops", "gbs", "intensity", "pct_flop_peak", "pct_bw_peak")


@dataclass(frozen=True)
class CaseView(CaseRecord):
    """A record as a report shows it: the record's fields, unchanged, and the numbers derived from it,
    its neighbours (NumPy at the same point, the sweep it belongs to) and its machine's peaks.

    Read-only like the record, and read by attribute (`view.median_s`, `view.speedup`), so a renamed
    field is a type error.
    """

    # Always set on a view: the machine its report keys it by (ReportData.from_results).
    machine: str = described("", "the machine the case ran on: its host name, or its fingerprint where two "
                                 "machines of the report share a host name", default="")
    speedup: float | None = described("ratio", "NumPy eager's median over this one's, at the same workload, "
                                               "params, dtype and machine")
    q25_s: float | None = described("s", "the pooled samples' 25th percentile (never above `median_s`)")
    q75_s: float | None = described("s", "the pooled samples' 75th percentile (never below `median_s`)")
    ci_low_s: float | None = described("s", "the lower end of the 95 % interval the plots draw")
    ci_high_s: float | None = described("s", "its upper end")
    no_rate: str = described("", "why no GFLOP/s or GB/s is shown, where none is", default="")
    gflops: float | None = described("GFLOP/s", "`flops` over `median_s`")
    gbs: float | None = described("GB/s", "bytes moved over `median_s`")
    intensity: float | None = described("FLOP/byte", "arithmetic intensity, `flops` over `bytes`")
    pct_flop_peak: float | None = described("%", "GFLOP/s as a share of the machine's measured matmul peak")
    pct_bw_peak: float | None = described("%", "GB/s as a share of the machine's measured streaming bandwidth")
    dispatch_floor_s: float | None = described("s", "this backend·mode's empty call on this machine "
                                                    "(backend_info.empty_call_s; in older files, its fastest "
                                                    "median): its per-call floor")
    bound: str | None = described("", "what limits the case, in one word: dispatch, memory, compute, page-faults "
                                      "or transfer (docs/report.md says how each is decided)")
    harness_s: float | None = described("s", "the harness's own per-call cost, shown beside sub-µs CPU cases")
    rounds: tuple[tuple[int, float], ...] = described("log s", "each process's log median by the round it ran in, "
                                                               "the samples of a slow spell set aside "
                                                               "(results/reading.py): what pairs the case with "
                                                               "its rivals", default=())
    pairing: Pairing | None = described("", "its run's pairing of rivals (stats.paired.Pairing): two cases are "
                                            "compared round by round only under the same one")
    spelled: int = described("processes", "its processes that a slow spell of the host reached (a quarter of their "
                                           "samples or more set aside, or covered: stats/spells.py)", default=0)
    reach: float = described("ratio", "how many times faster it might have run had the host kept its thread pool "
                                      "ready (stats/pools.reach): above 1, up to stats.pools.POOL_REACH, only where "
                                      "the host kept it waiting in half its processes or more", default=1.0)
    slowed: tuple[tuple[int, float], ...] = described("log s", "each process a slow spell covered, which `rounds` "
                                                               "leaves out: its log median over all its samples "
                                                               "by its round, what it took at most there "
                                                               "(bracket.ahead_though_slowed)", default=())
    spell: float = described("ratio", "how many times slower than it runs a process of it that a slow spell "
                                      "covered may have read (results.reading.Reading.spell_of): each of its "
                                      "`slowed` rounds over this is what it took at least there; inf where "
                                      "unknown", default=math.inf)

    @classmethod
    def of(cls, r: CaseRecord, **figures: Any) -> CaseView:
        """`r` with the figures derived for it (the rest None)."""
        return cls(**{f.name: getattr(r, f.name) for f in FIELDS}, **figures)

    @property
    def record(self) -> CaseRecord:
        """The case's record, as its results file holds it (a view is one, with more fields)."""
        return self

    def figures(self) -> dict[str, Any]:
        """The derived figures that travel with the record (FIGURES), by name; None where there is none."""
        return {name: getattr(self, name) for name in FIGURES}


DERIVED_FIELDS = registry(CaseView)[len(FIELDS):]


def quartiles(r: CaseView) -> tuple[float, float]:
    """A timed case's 25th and 75th percentiles (its error bars)."""
    if r.q25_s is None or r.q75_s is None:
        raise ValueError(f"{r.id} ({r.status}) has no quartiles to draw")
    return r.q25_s, r.q75_s


def timed(r: CaseRecord) -> float:
    """The median per call of a case that was timed: the report ranks and divides only those."""
    if r.median_s is None:
        raise ValueError(f"{r.id} ({r.status}) has no median to rank")
    return r.median_s
