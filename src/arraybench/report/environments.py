"""The answer between a run's Python environments (`--env`): a sentence per pair, on the first screen.

Each environment after the first is compared with the first, case by case, paired round by round
(comparison.compare with `paired`: the same verdicts, FDR control and threshold as `arraybench
compare RUN@OLD RUN@NEW`), and the verdicts are counted: "jax 0.10.2 against 0.9.2: faster in 9
of 40 cases (median −8 %), slower in 2 (median +6 %), the same within 5 % in 25, undecided in 4
(at the median of those: no change larger than 7 % (80 % power))".
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from arraybench.comparison import Comparison, compare, environment_side
from arraybench.machine import packages
from arraybench.results import Results
from arraybench.results.header import PythonEnvironment
from arraybench.stats import power
from arraybench.stats.verdicts import ALPHA, FASTER, NOISY, SAME, SLOWER


def pair_lines(results: Sequence[Results]) -> list[str]:
    """A sentence per environment after each run's first: how it compares with the first."""
    out = []
    for res in results:
        envs = res.header.environments
        first, *others = list(envs) or [""]
        for other in others:
            cmp = compare(environment_side(res, first), environment_side(res, other), paired=True)
            out.append(sentence(names(envs, first, other), cmp))
    return out


def names(envs: Mapping[str, PythonEnvironment], old: str, new: str) -> str:
    """What the two environments are, by what differs: "mykern 0.2.0 (v2, 1582951) against 0.1.0 (v1,
    3fa2c1e)" where one package differs, "new (jax 0.10.2, jaxlib 0.10.2) against old (…)" where several
    do, else their names. A file written before packages were recorded says it of framework versions."""
    had, has = packages.of_environment(envs[old]), packages.of_environment(envs[new])
    a: Mapping[str, str | None]
    b: Mapping[str, str | None]
    if had is not None and has is not None:
        a, b = {k: p.describe() for k, p in had.items()}, {k: p.describe() for k, p in has.items()}
        changed = packages.changed(had, has)
    else:
        a, b = envs[old].versions, envs[new].versions
        changed = sorted(k for k in a.keys() | b.keys() if a.get(k) != b.get(k) and (a.get(k) or b.get(k)))
    if len(changed) == 1:
        (k,) = changed
        return f"{k} {b.get(k) or 'absent'} against {a.get(k) or 'absent'}"
    if changed:
        now = packages.named([f"{k} {b.get(k) or 'absent'}" for k in changed])
        before = packages.named([f"{k} {a.get(k) or 'absent'}" for k in changed])
        return f"{new} ({now}) against {old} ({before})"
    return f"{new} against {old}"


def _median_change(ratios: list[float]) -> str:
    change = 100 * (statistics.median(ratios) - 1)
    return f"median {'+' if change > 0 else '−'}{abs(change):.0f} %"


def sentence(what: str, cmp: Comparison) -> str:
    """`what`: the verdicts of `cmp` counted, with the median change of each direction."""
    tested = [c for c in cmp.cases if c.result is not None]
    by: dict[str, list[float]] = {FASTER: [], SLOWER: [], SAME: [], NOISY: []}
    for c in tested:
        by.setdefault(c.verdict, []).append(c.result.ratio)  # type: ignore[union-attr]
    if not tested:
        return f"{what}: no case was measured correctly in both"
    parts = [f"faster in {len(by[FASTER])} of {len(tested)} cases"
             + (f" ({_median_change(by[FASTER])})" if by[FASTER] else "")]
    parts.append(f"slower in {len(by[SLOWER])}" + (f" ({_median_change(by[SLOWER])})" if by[SLOWER] else ""))
    parts.append(f"the same within {100 * cmp.threshold:g} % in {len(by[SAME])}")
    undecided = [c for c in tested if c.verdict == NOISY]
    text = f"undecided in {len(undecided)}"
    if undecided:
        # At the level compare read its undecided cases at (power.bh_level), as its notes give it.
        level = power.bh_level(sum(c.result.q_value < ALPHA for c in tested), len(tested))  # type: ignore[union-attr]
        sizes = [power.detectable_change(c.result.log_se, c.result.df, cmp.threshold, level)  # type: ignore[union-attr]
                 for c in undecided]
        text += f" (at the median of those: {power.phrase(statistics.median(sizes))})"
    parts.append(text)
    broken = sum(c.verdict == "broken" for c in cmp.cases)
    if broken:
        parts.append(f"broken in {broken}")
    return f"{what}: " + ", ".join(parts)
