"""The GPU section of a report: which figure the tables show, the L2-cold and one-call figures
beside it, transfer rates with the host memory named, and any case timed while the GPU throttled."""

from __future__ import annotations

import html
from collections.abc import Sequence

from arraybench.core.case import label
from arraybench.core.device_tokens import kind_of
from arraybench.report.view import timed
from arraybench.results.record import CaseRecord
from arraybench.units import format_seconds

EXPLANATION = (
    "GPU medians in the tables are **hot**: calls back to back with one sync per block of calls "
    "(what CUDA events around the block measure), inputs left in L2 by the previous call. "
    "**cold** is one call after a {l2} write flushed L2 (nvbench's default figure), taken where the "
    "inputs fit in L2 and the call is under 1 ms: for torch and CuPy it is the device time between "
    "CUDA events, with the launch hidden behind the flush, so a dispatch-bound call is colder yet "
    "faster than hot; for JAX, which has no events, it is the wall clock of the call and its sync. "
    "**alone** is one call followed by its own sync: launch, kernel and sync, "
    "what a caller that needs each result at once pays. A hot figure far below *alone* is a "
    "dispatch-bound case: the host's launch cost, not the GPU, sets its speed."
)


def _gpu_records(records: Sequence[CaseRecord]) -> Sequence[CaseRecord]:
    return [r for r in records if kind_of(r.device) == "gpu" and r.status == "ok"]


def _label(r: CaseRecord) -> str:
    return label(r)


def _clock(r: CaseRecord) -> str:
    c = r.gpu_clock
    if not c:
        return ""
    text = f"{c.get('sm_mhz_before')}→{c.get('sm_mhz_after')} MHz"
    return text + (f" THROTTLED ({', '.join(c['reasons']) or 'clock drop'})" if c.get("throttled") else "")


def rows(records: Sequence[CaseRecord]) -> list[list[str]]:
    """One row per GPU case: workload, size, backend·mode, dtype, hot, cold, alone, GB/s, clock."""
    out = []
    for r in sorted(_gpu_records(records), key=lambda r: (r.workload, r.dtype, str(r.size), _label(r))):
        gbs = ""
        if r.workload.startswith("transfer") and r.bytes:
            memory = "pinned" if "pinned" in r.workload else "pageable"
            gbs = f"{r.bytes / timed(r) / 1e9:.3g} GB/s ({memory})"
        out.append([
            r.workload, str(r.size), _label(r), r.dtype, format_seconds(r.median_s),
            format_seconds(r.cold_median_s) if r.cold_median_s else "",
            format_seconds(r.latency_s) if r.latency_s else "", gbs, _clock(r),
        ])
    return out


HEADER = ["workload", "size", "backend·mode", "dtype", "hot", "cold (L2 flushed)", "alone (synced)",
          "transfer", "SM clock"]


def _l2_text(records: Sequence[CaseRecord]) -> str:
    l2 = next((r.l2_bytes for r in _gpu_records(records) if r.l2_bytes), None)
    return f"{2 * l2 / 2**20:.0f} MiB" if l2 else "2×L2"


def throttled(records: Sequence[CaseRecord]) -> Sequence[CaseRecord]:
    return [r for r in _gpu_records(records) if (r.gpu_clock or {}).get("throttled")]


def markdown(records: Sequence[CaseRecord]) -> list[str]:
    """The section's Markdown lines; none when the results hold no GPU case."""
    table = rows(records)
    if not table:
        return []
    bad = throttled(records)
    md = ["## GPU figures", "", EXPLANATION.format(l2=_l2_text(records)), ""]
    md += [f"{len(bad)} case(s) ran while the GPU slowed down: their figures are flagged below." if bad
           else "No case ran while the GPU throttled (SM clock read before and after each case).", ""]
    md += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    md += ["| " + " | ".join(row) + " |" for row in table]
    return [*md, ""]


def html_section(records: Sequence[CaseRecord]) -> str:
    """The same section as an HTML fragment (escaped); empty without GPU cases."""
    table = rows(records)
    if not table:
        return ""
    text = html.escape(EXPLANATION.format(l2=_l2_text(records))).replace("**", "")
    head = "".join(f"<th>{html.escape(h)}</th>" for h in HEADER)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in table)
    return (f'<section id="gpu"><h2>GPU figures</h2><p>{text}</p>'
            f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>")
