"""The timing mistakes `arraybench lint` finds: one rule each, with its reason and its fix.

A rule reads the timed regions of a file (lint.regions) and says, for each mistake, at which
line and what exactly is wrong there; why it changes the number and how to fix it are the
rule's own, stated once. A region whose code does no array work the linter can see (a timing
of a sleep, of an unknown callable passed in) is never reported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

from arraybench.lint.frameworks import NAMES, WALL_CLOCKS
from arraybench.lint.regions import (
    ASYNC,
    COMPUTE,
    EAGER,
    FIRST_CALL,
    JIT_BUILD,
    SYNC,
    TO_DEVICE,
    TO_HOST,
    Event,
    Region,
)

Where = Callable[[int], str]  # a line as a sentence names it: "line 12" or "cell 3, line 2"


@dataclass(frozen=True)
class Hit:
    """One mistake a rule found: the line to show, what is wrong there, and a fix for this case."""

    line: int
    what: str
    fix: str = ""  # empty: the rule's own fix


@dataclass(frozen=True)
class Rule:
    """One timing mistake: its id, its title, why it changes the number, its fix, and how it is found."""

    id: str
    title: str
    why: str  # why the mistake changes the number, in one sentence
    fix: str
    check: Callable[[Sequence[Region], Where], Iterator[Hit]]


def _name(framework: str | None) -> str:
    return NAMES.get(framework or "", framework or "the framework")


def _spelled(qual: str) -> str:
    """A wrapper as code spells it: "tensorflow.function" -> "tf.function"."""
    return qual.replace("tensorflow.", "tf.", 1)


def _each(check: Callable[[Region, Where], Iterator[Hit]]) -> Callable[[Sequence[Region], Where], Iterator[Hit]]:
    """A rule that reads one timing at a time."""

    def over(regions: Sequence[Region], where: Where) -> Iterator[Hit]:
        for region in regions:
            yield from check(region, where)

    return over


_SYNC_FIX = {
    "jax": "call `.block_until_ready()` on the result (or `jax.block_until_ready(out)`) inside the timed code",
    "torch": "call `torch.cuda.synchronize()` after the timed calls, before the clock is read",
    "cupy": "call `cupy.cuda.get_current_stream().synchronize()` after the timed calls, before the clock is read",
    "tensorflow": "call `tf.test.experimental.sync_devices()` (TensorFlow 2.13+) after the timed calls, "
                  "before the clock is read",
}


@_each
def _unsynced(region: Region, where: Where) -> Iterator[Hit]:
    waiting: dict[str, Event] = {}
    for event in region.events:
        if event.kind == ASYNC and event.framework:
            waiting[event.framework] = event  # the last: the result the timing should have waited for
        elif event.kind in (SYNC, TO_HOST):
            if event.framework is None:
                waiting.clear()
            waiting.pop(event.framework or "", None)
    for framework, event in waiting.items():
        yield Hit(event.via, f"{_name(framework)} runs `{event.text}` asynchronously and nothing waits for it "
                             "before the timing ends", _SYNC_FIX.get(framework, ""))


@_each
def _compile_timed(region: Region, where: Where) -> Iterator[Hit]:
    if region.warms_up or region.samples:
        return  # the timer reports runs after the first (%timeit sizing its loops), or keeps each run apart
    first = region.of(FIRST_CALL)
    compiled = [e for e in first if e.detail != EAGER]
    eager = [e for e in first if e.detail == EAGER]
    for event in compiled:
        built = f", built at {where(event.at)}" if event.at and event.at != event.line else ""
        wrapper = _spelled(event.detail)
        yield Hit(event.via, f"`{event.text}` is the first call of a compiled function ({wrapper}{built}), "
                             "so its compilation is timed")
    if eager and not compiled:
        ops = ", ".join(f"`{e.text}`" for e in eager[:3]) + (", …" if len(eager) > 3 else "")
        yield Hit(eager[0].via, f"the first use of JAX operations ({ops}) is timed: JAX compiles each "
                                "operation for its shapes on first use, jit or not")


@_each
def _jit_rebuilt(region: Region, where: Where) -> Iterator[Hit]:
    for event in region.of(JIT_BUILD):
        if not (region.repeated or event.in_loop):
            continue
        called = f", in a function the timed code calls at {where(event.via)}" if event.via != event.line else ""
        wrapper = _spelled(event.detail)
        yield Hit(event.line, f"`{event.text}` builds a new {wrapper} wrapper on every timed run{called}")


@_each
def _transfer_timed(region: Region, where: Where) -> Iterator[Hit]:
    work = region.of(COMPUTE)
    # A copy made once around a loop of runs (reading the last result back, TensorFlow's only wait
    # before 2.13) is spread over the runs; one made with each run is part of each.
    per_run = region.repeated or not any(e.in_loop for e in work)
    transfers = [e for e in region.of(TO_DEVICE, TO_HOST) if per_run or e.in_loop]
    if not transfers or not work:
        return  # a timing of the copy alone measures the copy, as it claims to
    computed = f"`{work[-1].text}`"
    at: dict[tuple[int, str], list[Event]] = {}
    for event in transfers:
        at.setdefault((event.line, event.kind), []).append(event)
    for (line, kind), events in at.items():
        texts = ", ".join(dict.fromkeys(f"`{e.text}`" for e in events))
        many = len({e.text for e in events}) > 1
        name = _name(events[0].framework)
        if kind == TO_DEVICE:
            copy = f"copy host data into {name} arrays" if many else f"copies host data into a {name} array"
        else:
            copy = f"copy {name} arrays back to the host" if many else f"copies a {name} array back to the host"
        via = events[0].via
        called = f" (in a function the timed code calls at {where(via)})" if via != line else ""
        yield Hit(line, f"{texts} {copy} inside a timing of {computed}{called}")


@dataclass(frozen=True)
class _Compared:
    """A timing as ABL005 compares it: its place among the timings, its framework and its float dtype."""

    order: int
    region: Region
    framework: str
    dtype: str


def _dtype_mismatch(regions: Sequence[Region], where: Where) -> Iterator[Hit]:
    known = []
    for order, region in enumerate(r for r in regions if r.times_arrays):
        framework, dtype = _compared(region)
        if framework and dtype:
            known.append(_Compared(order, region, framework, dtype))
    for timing in known:
        if timing.framework == "numpy":
            continue
        others = [k for k in known if k.framework != timing.framework and k.region.computes & timing.region.computes]
        partner = _nearest(timing.order, [k for k in others if k.framework == "numpy"] or others)
        if partner is not None and partner.dtype != timing.dtype:
            # One helper timing every framework in turn: its other call, not another line.
            line = partner.region.line
            there = f"at {where(line)}" if line != timing.region.line else "in another call of it"
            yield Hit(timing.region.line, f"{_name(timing.framework)} is timed in {timing.dtype} here, "
                                          f"{_name(partner.framework)} in {partner.dtype} {there}")


def _compared(region: Region) -> tuple[str | None, str | None]:
    """The framework a timing measures (any but NumPy, when it converts from NumPy) and its float dtype."""
    work = region.of(COMPUTE)
    frameworks = {e.framework for e in work if e.framework}
    others = frameworks - {"numpy"}
    framework = (others.pop() if len(others) == 1 else None) if others else ("numpy" if frameworks else None)
    dtypes = {e.dtype for e in work if e.framework == framework and e.dtype}
    return framework, dtypes.pop() if len(dtypes) == 1 else None


def _nearest(order: int, candidates: list[_Compared]) -> _Compared | None:
    """The timing run closest before the `order`-th, else the closest after it."""
    before = [c for c in candidates if c.order < order]
    after = [c for c in candidates if c.order > order]
    return before[-1] if before else (after[0] if after else None)


@_each
def _once(region: Region, where: Where) -> Iterator[Hit]:
    if not region.single or not region.of(COMPUTE, FIRST_CALL):
        return
    how = {"%time": "`%time` runs it once", "%%time": "`%%time` runs the cell once",
           "%timeit": "`-n1 -r1` runs it once", "%%timeit": "`-n1 -r1` runs the cell once",
           "timeit": "`number=1` runs it once"}.get(region.kind, "the clock reads around it time one run")
    work = region.of(COMPUTE, FIRST_CALL)[-1]
    yield Hit(region.line, f"one run of `{work.text}` is measured, once: {how}")


@_each
def _wall_clock(region: Region, where: Where) -> Iterator[Hit]:
    if region.clock in WALL_CLOCKS:
        yield Hit(region.line, f"`{region.clock}()` is the clock of this timing")


RULES: tuple[Rule, ...] = (
    Rule("ABL001", "asynchronous work timed without waiting for it",
         "An asynchronous call returns as soon as its work is queued, so the clock measures the dispatch "
         "(microseconds), not the computation.",
         "Wait for the result inside the timed code: `.block_until_ready()` in JAX, `torch.cuda.synchronize()`, "
         "a stream synchronize in CuPy.", _unsynced),
    Rule("ABL002", "compilation inside the timed code",
         "The first call traces and compiles, often taking hundreds of times a later call, so it inflates a "
         "mean over the runs or is the whole of a single one.",
         "Call the function once before the timer starts (with the same shapes and dtypes, and wait for it), "
         "then time the later calls; report the compile time apart if it matters.", _compile_timed),
    Rule("ABL003", "JIT wrapper built inside the timed loop",
         "Each new wrapper goes through the framework's slow path again, a cache lookup at best (jax.jit of "
         "one function) and a full trace and compile at worst (tf.function, numba, a new lambda), on every run.",
         "Build the compiled function once, outside the timed code (`f_jit = jax.jit(f)`), call it once to "
         "compile, then time `f_jit(x)`.", _jit_rebuilt),
    Rule("ABL004", "copy between host and device inside the timed code",
         "The copy's time (over PCIe to a GPU, a memory copy on the CPU) is added to the computation's and "
         "can exceed it, so the number is not the computation's.",
         "Put the inputs on the device before the timer starts and copy results back after it stops; to "
         "wait for the result, synchronise instead of copying it.", _transfer_timed),
    Rule("ABL005", "frameworks compared in different dtypes",
         "float64 moves twice the bytes of float32 and runs at a fraction of its speed, so the comparison "
         "measures the dtype as much as the framework.",
         "Give every framework the same dtype: e.g. `x = np.random.randn(n, n).astype(np.float32)`, or "
         "enable float64 in JAX with `jax.config.update('jax_enable_x64', True)`.", _dtype_mismatch),
    Rule("ABL006", "a single run measured once",
         "One measurement cannot tell the computation from noise (other processes, clock frequency, caches), "
         "and a second run can differ by tens of percent.",
         "Repeat it (`%timeit`, `timeit.repeat`, or a loop of timed runs) and report the median with its "
         "spread.", _once),
    Rule("ABL007", "the wall clock used to time",
         "The wall clock can jump when the system time is adjusted and its resolution may be coarse, so "
         "an interval read from it can be wrong.",
         "Use `time.perf_counter()` (monotonic, the highest resolution available).", _wall_clock),
)
