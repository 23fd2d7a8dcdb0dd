"""Lints one script or notebook: its timings through every rule, as findings, text and JSON."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from arraybench.lint.regions import Region
from arraybench.lint.rules import RULES
from arraybench.lint.source import read_source
from arraybench.lint.walk import timed_regions
from arraybench.lint.workload_writer import render


@dataclass(frozen=True)
class Finding:
    """One timing mistake: where it is, what is wrong there, why it changes the number, the fix."""

    file: str
    line: int          # in the script, or within the cell in a notebook
    cell: int | None   # the notebook cell, 1-based counting every cell; None in a script
    rule: str
    what: str
    why: str
    fix: str

    @property
    def location(self) -> str:
        """`FILE:LINE`, or `FILE:cell N:LINE` in a notebook, as ruff and flake8 write it."""
        return f"{self.file}:{self.line}" if self.cell is None else f"{self.file}:cell {self.cell}:{self.line}"


@dataclass(frozen=True)
class Checked:
    """What lint found in one file."""

    file: str
    timings: int  # places in the code that time array work: the checked ones
    findings: tuple[Finding, ...]
    workloads: str | None  # the timed code as @workloads, where it renders

    def counts(self) -> dict[str, int]:
        return dict(sorted(Counter(f.rule for f in self.findings).items()))


def check_file(path: str | Path) -> Checked:
    """Lint the script or notebook at `path`; a UsageError says why it cannot be read or parsed."""
    source = read_source(path)
    regions = [r for r in timed_regions(source.parse()) if r.times_arrays]
    # A function timed from several places is reported once per distinct mistake, not once a call.
    findings: dict[tuple[str, int, str], Finding] = {}
    for rule in RULES:
        for hit in rule.check(regions, source.where):
            at = source.origin(hit.line)
            findings.setdefault((rule.id, hit.line, hit.what), Finding(str(path), at.line, at.cell, rule.id,
                                                                       hit.what, rule.why, hit.fix or rule.fix))
    ordered = tuple(sorted(findings.values(), key=lambda f: (f.cell or 0, f.line, f.rule)))
    flawed = [r for r in regions if _lines(r) & {line for _, line, _ in findings}]
    # A timing in a helper called for each framework is one place in the code: counted once.
    places = len({(r.kind, r.line) for r in regions})
    return Checked(str(path), places, ordered, render(flawed, source.where, Path(path).name))


def _lines(region: Region) -> set[int]:
    return {region.line, *(e.line for e in region.events), *(e.via for e in region.events)}


def summary(checked: Checked) -> str:
    if not checked.timings:
        return f"{checked.file}: no timing of array code found"
    timings = f"{checked.timings} timing{'s' if checked.timings != 1 else ''}"
    if not checked.findings:
        return f"{checked.file}: no timing mistakes in {timings}"
    counts = ", ".join(f"{rule} {n}" for rule, n in checked.counts().items())
    n = len(checked.findings)
    return f"{checked.file}: {n} finding{'s' if n != 1 else ''} in {timings} ({counts})"


def as_text(checked: Checked, workload_file: str | None = None) -> str:
    """One block per finding, then the @workload form (or where it was written), then the summary."""
    blocks = [f"{f.location}: {f.rule} {f.what}\n    why: {f.why}\n    fix: {f.fix}" for f in checked.findings]
    if checked.findings and checked.workloads is not None:
        if workload_file is not None:
            blocks.append(f"The timed code as @workload, written to {workload_file}; measure it with\n"
                          f"    arraybench run --workload-file {workload_file}")
        else:
            blocks.append("The timed code as @workload: save it as a file and measure it with\n"
                          "    arraybench run --workload-file FILE\n\n" + checked.workloads.rstrip())
    blocks.append(summary(checked))
    return "\n\n".join(blocks) + "\n"


def as_json(checked: Checked) -> dict[str, Any]:
    return {"file": checked.file, "timings": checked.timings, "counts": checked.counts(),
            "findings": [asdict(f) for f in checked.findings], "workloads": checked.workloads}

