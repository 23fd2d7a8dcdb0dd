"""How a run's records are read: slow spells set aside, each case's rounds, the priors pooled over the run.

A record holds what was measured (every process's samples, the host reference beside each); what
the report, compare, refinement and further rounds conclude from it is read here, once per run, so
they conclude the same: each process's point without the samples a slow spell reached
(stats/spells.py, judged against the process's window: its round of its workload at its parameter
point, every backend·mode and environment measured there taking turns), each case's point and
interval over its processes (stats/measurement.Replicated, with the run's prior), and its log point
by round, which pairs it with every rival measured in the same rounds (stats/paired.py).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from arraybench.core.case import rivals
from arraybench.results.record import CaseRecord
from arraybench.stats import bracket, modes, pools
from arraybench.stats.measurement import Measurement, Replicated
from arraybench.stats.paired import Pairing, all_differences, paired_prior
from arraybench.stats.pooling import NO_PRIOR, VariancePrior, fit_prior
from arraybench.stats.spells import Sifted, SpellCount, sift, stalled, window_level

Window = tuple[Any, ...]  # rivals(record), its machine and the round
Family = tuple[str, str, str]  # backend, mode, device


def family(r: CaseRecord) -> Family:
    """The cases whose processes behave alike: one framework's mode on one device (stats/modes.py)."""
    return (r.backend, r.mode, r.device or "")


def process_rounds(r: CaseRecord) -> list[int]:
    """The round each of a case's processes ran in, in order (their position, for a record written
    before processes recorded it)."""
    if not r.replicates:
        return [r.round if r.round is not None else 0]
    return [p.round if p.round is not None else i for i, p in enumerate(r.replicates)]


def pool_readings(r: CaseRecord) -> tuple[float, ...] | None:
    """Each process's pool reference (`pool_ref_s`, one a process) for a case of several threads; None
    for one thread, or where the record has none for every process."""
    count = len(r.replicates) or 1
    if r.threads < 2 or not r.pool_ref_s or len(r.pool_ref_s) != count:
        return None
    return r.pool_ref_s


def memory_by_round(r: CaseRecord) -> dict[int, float]:
    """Each process's `memory_bytes` by the round it ran in (those that measured one): what pairs a case's
    memory with its rivals' (stats/memory_order.py)."""
    figures = [p.memory_bytes for p in r.replicates] if r.replicates else [r.memory_bytes]
    return {k: float(m) for k, m in zip(process_rounds(r), figures, strict=True) if m is not None}


@dataclass(frozen=True)
class Process:
    """One process of a case as read: its round, its samples with its spells set aside, its loops."""

    round: int
    sifted: Sifted
    loops: int
    measured: int  # samples it took, spells included


@dataclass(frozen=True)
class Part:
    """One process of a record as written: its round, samples, the host reference and its threads'
    wait beside each sample (None where the record has none), and its loops."""

    round: int
    samples: tuple[float, ...]
    refs: tuple[float, ...] | None
    waits: tuple[float, ...] | None
    loops: int


def split(r: CaseRecord) -> list[Part]:
    """Each process of `r` (a record without `replicates` is one)."""
    counts = [p.n_samples for p in r.replicates] or [len(r.samples_s)]
    loops = [p.loops or 1 for p in r.replicates] or [r.loops or 1]
    if sum(counts) != len(r.samples_s):
        raise ValueError(f"replicate sample counts {counts} do not add up to {len(r.samples_s)} samples")

    def beside(values: tuple[float, ...] | None) -> tuple[float, ...] | None:
        return values if values is not None and len(values) == len(r.samples_s) else None

    refs, waits = beside(r.host_ref_s), beside(r.cpu_wait)
    out, start = [], 0
    for k, n, lp in zip(process_rounds(r), counts, loops, strict=True):
        cut = slice(start, start + n)
        out.append(Part(k, tuple(r.samples_s[cut]), refs[cut] if refs else None, waits[cut] if waits else None, lp))
        start += n
    return out


def window(r: CaseRecord, k: int) -> Window:
    """The samples measured together with round `k` of `r`: its rivals on its machine, that round."""
    return (*rivals(r), r.machine, k)


@dataclass(frozen=True)
class Reading:
    """A run read as a whole: the host's window levels, the priors, the pairing of its rivals, its spells.

    `prior` pools the spread between a case's processes over the run (pooling.py: every case's
    interval), `pairing` the spread of one round's difference between rivals (every claim that one
    backend·mode is faster than another at a size: bracket.side). `spells` counts what they reached.
    """

    levels: Mapping[Window, float] = field(default_factory=dict)
    prior: VariancePrior = NO_PRIOR
    pairing: Pairing | None = None
    spells: SpellCount = SpellCount()
    full_speed_s: float | None = None
    # Each family's cases as (point, spread between its processes), where any had two processes.
    families: Mapping[Family, tuple[tuple[float, float], ...]] = field(default_factory=dict)
    # The pool reference at its fastest (stats/pools.fastest) over the run's processes of several threads, by
    # machine: a cluster's machines each have their own.
    pool_fastest_s: Mapping[str | None, float] = field(default_factory=dict)
    # What `processes` found for each record, by the record's identity (kept beside it, so an id is never
    # another's): a look of the stop rule asks it of a record many times over (covered, kept, rounds,
    # measured, slowed), and the readings `read` builds on the same levels share it.
    sifted: dict[int, tuple[CaseRecord, list[Process]]] = field(default_factory=dict, compare=False, repr=False)
    # The most a slow spell was seen to slow a case in this run (spell_reach); 1: not seen.
    spell_reach: float = 1.0
    # The most a spell slowed a case whose threads it kept from no CPU (spell_reach, the second): the host's
    # speed alone; where none was seen, spell_reach.
    host_reach: float = 1.0

    def reach(self, r: CaseRecord) -> float:
        """How many times faster `r` might have run had the host kept its thread pool ready (stats/pools.reach),
        or, where a spell covered every process of `r` (`covered`), been out of its spells: as much as a
        spell slowed any case of this run (`spell_reach`), if that is more; as much as one slowed a case
        by the host's speed alone (`host_reach`) where no process of `r` had its threads kept waiting
        for a CPU (spells.stalled)."""
        parts = split(r) if r.samples_s else []
        medians = [Measurement(p.samples).median for p in parts] if all(p.samples for p in parts) else []
        pool = pools.reach(pool_readings(r), self.pool_fastest_s.get(r.machine), r.threads, r.median_s or 0.0, medians)
        return max(pool, self.spell_of(r)) if self.covered(r) else pool

    def spell_of(self, r: CaseRecord) -> float:
        """How many times slower than it ran outside a spell a process of `r` that a spell covered may have
        read: `host_reach` where no process of `r` had its threads kept waiting for a CPU (spells.stalled),
        else `spell_reach`. Each of its `slowed` rounds over this is what it took at least there."""
        stall = any(stalled(p.waits) for p in split(r)) if r.samples_s else True
        return self.spell_reach if stall else self.host_reach

    def mode_spread(self, r: CaseRecord) -> float:
        """How far apart the modes of `r`'s neighbours in its family were in this run (stats/modes.py; 1:
        none seen)."""
        return modes.mode_spread(r.median_s, self.families.get(family(r), ())) if r.median_s else 1.0

    def processes(self, r: CaseRecord) -> list[Process]:
        """Every process of `r`, each with the samples of its spells set aside."""
        if not r.samples_s:
            return []
        hit = self.sifted.get(id(r))
        if hit is None or hit[0] is not r:
            hit = r, [Process(p.round, sift(p.samples, p.refs, self.levels.get(window(r, p.round)), p.waits),
                              p.loops, len(p.samples)) for p in split(r)]
            self.sifted[id(r)] = hit
        return list(hit[1])

    def covered(self, r: CaseRecord) -> bool:
        """Whether a spell covered every process of `r`: nothing measured it outside one."""
        procs = self.processes(r)
        return bool(procs) and all(p.sifted.covered for p in procs)

    def outnumbered(self, r: CaseRecord) -> bool:
        """Whether a spell covered most of `r`'s processes, or every one: those left ran on a host in spells
        most of the time, where one the readings missed is likely. Beside the neighbour, with spells in
        41-43 % of processes, PyTorch's 2-thread add of 10⁶ floats kept one process of four at 179 µs (its
        others 211 µs to 7.7 ms), and its jitted FFT of 10⁶ points one of four at 10 ms; identical runs read
        them at 97-99 µs and 4.7-5.1 ms, and compare called them ×0.52 faster and ×2.05 slower."""
        procs = self.processes(r)
        return bool(procs) and 2 * sum(not p.sifted.covered for p in procs) < len(procs)

    def kept(self, r: CaseRecord) -> list[Process]:
        """The processes `r` is read from: those a spell did not cover, where it has any (one covered
        by its spell is set aside whole, its round with it); else all of them."""
        procs = self.processes(r)
        return [p for p in procs if not p.sifted.covered] or procs

    def measured(self, r: CaseRecord, prior: VariancePrior | None = None) -> Replicated | None:
        """`r`'s kept processes as Replicated, spells set aside, with the run's prior (or `prior`); None
        where it has no samples."""
        procs = self.kept(r)
        if not procs:
            return None
        runs = tuple(Measurement(p.sifted.samples, p.loops) for p in procs)
        return Replicated(runs, self.prior if prior is None else prior)

    def rounds(self, r: CaseRecord) -> dict[int, float]:
        """`r`'s log point by round: each kept process's median, spells set aside (what pairs it with a
        rival: a round one of two set aside is no pair of theirs); none where a spell covered every process
        of `r` (`covered`): each is then only what it took at most (`slowed`)."""
        if self.covered(r):
            return {}
        return {p.round: math.log(Measurement(p.sifted.samples).median) for p in self.kept(r)
                if p.sifted.samples and min(p.sifted.samples) > 0}

    def slowed(self, r: CaseRecord) -> dict[int, float]:
        """`r`'s log point by round in the processes a spell covered that it is read without (`kept`), or in
        every process where a spell covered them all (`covered`): each one's median over all its samples,
        spells included. What it took at most there, since a spell only slows: a claim that the case is
        ahead of a rival may read it (bracket.ahead_though_slowed), and one that has nothing else is behind
        nothing (bracket.side)."""
        kept = set() if self.covered(r) else {p.round for p in self.kept(r)}
        return {p.round: math.log(Measurement(p.samples).median) for p in (split(r) if r.samples_s else [])
                if p.round not in kept and p.samples and min(p.samples) > 0}

    def point(self, r: CaseRecord) -> bracket.Point:
        """`r` (measured, as this reading gives its median and interval) as a point of the run's claims:
        paired with its rivals by round where the run measured them side by side."""
        p = bracket.point(r)
        return bracket.Point(p.size, p.median, p.low, p.high, tuple(sorted(self.rounds(r).items())), self.pairing,
                             self.reach(r), tuple(sorted(self.slowed(r).items())), self.spell_of(r))


def read(records: Sequence[CaseRecord], run: str, full_speed: float | None) -> tuple[list[CaseRecord], Reading]:
    """The records as a run reads them, and the Reading they were read with.

    Every measured case's `median_s` and `ci95_s` come from its samples, spells set aside, and the
    run's prior (pooling.py): a file written before the point became the median of the processes
    holds their geometric mean; one written before spells were set aside, the points with them.
    A record that nothing changes (no prior, no spell) is kept as written.
    """
    latest = {r.id: r for r in records}
    levels = window_levels(latest.values())
    bare = Reading(levels, full_speed_s=full_speed, sifted={})
    alone = {id(r): bare.measured(r) for r in records}
    prior = fit_prior((m.own_process_variance, m.processes - 1) for r in latest.values()
                      if (m := alone[id(r)]) is not None and m.processes > 1)
    spells = SpellCount()
    for r in latest.values():
        for p in bare.processes(r):
            spells = spells.add(p.sifted, p.measured)
    found: dict[Family, list[tuple[float, float]]] = defaultdict(list)
    for r in latest.values():
        if r.status == "ok" and (m := alone[id(r)]) is not None and m.processes > 1:
            found[family(r)].append((m.point, 1 + m.spread))  # slowest process over fastest
    families = {f: tuple(cases) for f, cases in found.items()}
    pool = pool_fastest(latest.values())
    slowest, host = spell_reach(bare, latest.values())
    reading = Reading(levels, prior, None, spells, full_speed, families, pool, bare.sifted, slowest, host)
    out = []
    for r in records:
        m = alone[id(r)]
        touched = m is not None and any(p.sifted.in_spell for p in bare.processes(r))
        if m is None or (prior.df <= 0 and not touched):
            out.append(r)
            continue
        out.append(dataclasses.replace(r, median_s=m.point, ci95_s=m.with_prior(prior).ci95))
    pairing = Pairing(run, rival_prior(reading, out))
    return out, Reading(levels, prior, pairing, spells, full_speed, families, pool, bare.sifted, slowest, host)


def spell_reach(reading: Reading, records: Iterable[CaseRecord]) -> tuple[float, float]:
    """The most a slow spell slowed a case in these records: over the cases with processes a spell covered
    and processes it did not, a covered one's median over the median of the others' (1 where none has
    both); and the same over the covered processes whose threads no spell kept waiting for a CPU
    (spells.stalled) alone (the first where there are none). What a case covered in every process may have
    run faster than it read (Reading.reach): it is behind a rival only beyond that (bracket.side).

    Beside the neighbour on the 2-core VM (2026-11-29), a covered process read 1.2-1.4× its case's kept
    ones at the median, 2× at the 90th percentile, and at most 45× and 95×: PyTorch's and Numba's 2-thread
    pools stalled, their threads waiting for a CPU in most samples. Over the covered processes whose
    threads did not wait, 79-102 of them a run, it was at most 2.1-3.0× beside the neighbour and 2.4-2.6×
    without it: a spell the reference saw slows a case about as much as it slowed the reference (1.4-1.9×
    here), and a case covered in every process that way, with nothing else to say it was stalled, is
    behind a rival only beyond that reach (Reading.host_reach), not beyond a stalled pool's."""
    most, host = 1.0, None
    for r in records:
        if r.status != "ok" or not all(x is not None and math.isfinite(x) for x in r.samples_s):
            continue
        kept, covered = reading.rounds(r), reading.slowed(r)  # log medians: none of one where all are the other
        if not kept or not covered:
            continue
        level = statistics.median(math.exp(x) for x in kept.values())
        most = max(most, math.exp(max(covered.values())) / level)
        quiet = [covered[p.round] for p in split(r) if p.round in covered and not stalled(p.waits)]
        if quiet:
            host = max(host or 1.0, math.exp(max(quiet)) / level)
    return most, host or most


def pool_fastest(records: Iterable[CaseRecord]) -> dict[str | None, float]:
    """Each machine's pool reference at its fastest (stats/pools.fastest) over its processes of several threads."""
    readings: dict[str | None, list[float]] = defaultdict(list)
    for r in records:
        readings[r.machine].extend(pool_readings(r) or ())
    return {m: best for m, xs in readings.items() if (best := pools.fastest(xs)) is not None}


def window_levels(records: Iterable[CaseRecord]) -> dict[Window, float]:
    """Each window's level: the host's best speed over the references of every sample measured in it."""
    refs: dict[Window, list[float]] = defaultdict(list)
    for r in records:
        if not r.samples_s or not r.host_ref_s:
            continue
        for p in split(r):
            if p.refs:
                refs[window(r, p.round)].extend(p.refs)
    return {w: level for w, x in refs.items() if (level := window_level(x)) is not None}


def rival_prior(reading: Reading, records: Sequence[CaseRecord]) -> VariancePrior:
    """What the run's rivals (the backend·modes of one size, measured in the same rounds) say about
    the variance of one round's difference between two of them (paired.paired_prior)."""
    groups: dict[tuple[Any, ...], list[CaseRecord]] = defaultdict(list)
    for r in {r.id: r for r in records}.values():
        if r.status == "ok" and r.samples_s:
            groups[(*rivals(r), r.machine, r.env or "")].append(r)
    diffs = []
    for members in groups.values():
        rounds = [reading.rounds(r) for r in members]
        diffs += [all_differences(a, b) for a, b in combinations(rounds, 2)]
    return paired_prior(diffs)


def paired_prior_of(pairs: Sequence[tuple[CaseRecord, CaseRecord]], reading: Reading | None = None) -> VariancePrior:
    """What the compared cases of two environments say about the variance of one round's difference
    (each process read as `reading`, the run's, reads it: its spells set aside): compare's paired
    prior, and further rounds' (execution/more_rounds.py)."""
    reading = reading or Reading()
    return paired_prior(all_differences(reading.rounds(base), reading.rounds(new)) for base, new in pairs
                        if base.status == new.status == "ok" and base.samples_s and new.samples_s)
