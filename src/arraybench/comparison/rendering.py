"""A comparison in the other forms: JSON and CSV for tools (case_rows), or render's text and
Markdown (render_as), and the sentence that says when two runs are not like for like (headline)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from arraybench.comparison import memory_change
from arraybench.comparison.matching import different_settings, package_sides
from arraybench.comparison.outcome import Comparison, render
from arraybench.machine import packages
from arraybench.output import formats
from arraybench.results import Results
from arraybench.results.run_ids import run_id


def headline(base: Results, new: Results) -> str | None:
    """One sentence when the runs are not like for like; the differences follow it."""
    installed = package_sides(base, new)
    if installed is not None and run_id(base.header) == run_id(new.header):
        differ = packages.changed(*installed)
        return f"The two environments differ in {packages.named(differ)}:" if differ else None
    what = []
    if base.environment.fingerprint != new.environment.fingerprint:
        what.append("on different machines")
    if base.environment.versions != new.environment.versions:
        what.append("with different framework versions")
    settings = different_settings(base, new)
    if settings:
        what.append(f"with different settings ({', '.join(settings)})")
    if not what:
        return None
    return "The two runs ran " + ", ".join(what) + ": a change may come from these, not from the code."


def case_rows(cmp: Comparison) -> list[dict[str, Any]]:
    """One dict per compared case, for --format json and csv."""
    return [{"case": c.label, "row": c.row, "case_id": c.base.id,
             "base_status": c.base.status, "new_status": c.new.status,
             "base_median_s": c.base.median_s, "new_median_s": c.new.median_s,
             "ratio": c.result.ratio if c.result else None,
             "ci95_low": c.result.ci95[0] if c.result else None, "ci95_high": c.result.ci95[1] if c.result else None,
             "p_value": c.result.p_value if c.result else None, "verdict": c.verdict, "note": c.note,
             "run_variance": c.result.run_variance if c.result else None, **memory_change.json_fields(c.memory)}
            for c in cmp.cases]


def render_as(cmp: Comparison, note: str | None, fmt: str,
              table: Callable[[list[str], list[list[str]]], str] = formats.text_table) -> str:
    """The comparison in one of formats.FORMATS: text and Markdown for people, JSON and CSV for tools."""
    if fmt == "json":
        return formats.json_text({
            "base": cmp.base_name, "new": cmp.new_name, "threshold": cmp.threshold, "note": note,
            "differences": cmp.differences, "counts": cmp.counts(), "cases": case_rows(cmp),
            "run_spread": cmp.run_spread.to_json() if cmp.run_spread else None,
            "pair_spread": cmp.pair_spread.to_json() if cmp.pair_spread else None,
            "geometric_means": [{"row": row, "ratio": g, "cases": k} for row, g, k in cmp.geometric_means()],
            "only_base": cmp.only_base, "only_new": cmp.only_new,
            "planned": [dataclasses.asdict(p) if p is not None else None for p in cmp.planned],
        })
    if fmt == "csv":
        return formats.render_rows(case_rows(cmp), "csv")
    return render(cmp, note, markdown=fmt == "markdown", table=table)
