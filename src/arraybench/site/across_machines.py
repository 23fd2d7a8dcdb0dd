"""The answer across machines, in plain words: per workload, which backend·mode is fastest on each machine."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from arraybench.report.answer import Lead, leads
from arraybench.report.table import size_text
from arraybench.results.speedups import size_sort_key
from arraybench.site.site_data import Machine, SiteData
from arraybench.units import format_seconds


@dataclass(frozen=True)
class Verdict:
    """One machine's fastest correct case at one size, with its interval and margin."""

    machine: Machine
    label: str  # backend·mode (·device where the machine ran more than one)
    lead: Lead

    def text(self) -> str:
        """'torch·eager·gpu (85 µs, 95 % interval 80 µs–90 µs; 3.1× ahead of cupy·eager·gpu)'."""
        best = self.lead.best
        low, high = best.ci_low_s, best.ci_high_s
        interval = f", 95 % interval {format_seconds(low)}–{format_seconds(high)}" if low and high else ""
        return f"{self.label} ({format_seconds(best.median_s)}{interval}; {self.lead.margin})"


@dataclass(frozen=True)
class Across:
    """One problem of a workload and dtype: each machine's verdict at the largest size all of them
    measured (`size`), or, where they measured none in common, each at its own largest."""

    workload: str
    dtype: str
    size_name: str
    size: Any | None
    verdicts: tuple[Verdict, ...]
    title: str  # 'sort (float32)', or 'matvec (float32; m=128)' where the workload has several problems

    def where(self) -> str:
        """'at n = 10⁶', or '' where the machines' sizes differ."""
        return "" if self.size is None else f"at {self.size_name} = {_size(self.size)}"

    def verdicts_text(self) -> str:
        """'on the H100, torch·eager·gpu (…); on the 2-core EPYC, numpy·eager (…)'."""
        parts = []
        for v in self.verdicts:
            at = f" at {self.size_name} = {_size(v.lead.size)}" if self.size is None else ""
            parts.append(f"on the {v.machine.name}{at}, {v.text()}")
        return "; ".join(parts)

    def text(self) -> str:
        """'sort (float32) at n = 10⁶: on the H100, torch·eager·gpu (…); on the 2-core EPYC, numpy·eager (…).'"""
        return f"{' '.join(filter(None, (self.title, self.where())))}: {self.verdicts_text()}."


def across(site: SiteData) -> list[Across]:
    """Every problem (workload, dtype and its parameters besides the size) with a correct case on
    some machine, in name order."""
    out = []
    for problem in site.problems():
        per: dict[str, list[Lead]] = {}
        for key, recs in problem.cases.items():
            if found := leads(site.latest[key], recs):
                per[key] = found
        if not per:
            continue
        common = set.intersection(*({lead.size for lead in found} for found in per.values()))
        size = max(common, key=size_sort_key) if common else None
        verdicts = []
        for machine in site.machines:  # in the site's order of machines
            if machine.key not in per:
                continue
            found = per[machine.key]
            lead = next(x for x in found if x.size == size) if size is not None else found[-1]
            verdicts.append(Verdict(machine, site.latest[machine.key].label(lead.best), lead))
        out.append(Across(problem.workload, problem.dtype, site.points[problem.workload].size_param, size,
                          tuple(verdicts), problem.title))
    return out


def _size(size: Any) -> str:
    return size_text(size) if isinstance(size, int | float) else str(size)


def answer_text(said: Sequence[Across], site: SiteData) -> str:
    """What `arraybench answer` prints: the machines, then one line per workload."""
    lines = [f"The answer across {len(site.machines)} machine(s) and {len(site.runs)} run(s):"]
    lines += [f"  the {m.name}: {m.key}" for m in site.machines]
    lines += ["", *[f"{a.text()}" for a in said]] if said else ["", "No case was correct: nothing to rank."]
    return "\n".join(lines)
