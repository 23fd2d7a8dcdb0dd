"""Timed regions: the code a clock, `timeit` or a timing magic times, and what that code does."""

from __future__ import annotations

import ast
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from arraybench.lint.frameworks import FRAMEWORK_WORDS
from arraybench.lint.values import Value

# What timed code does, event by event, in the order it runs.
COMPUTE = "compute"        # array work of a framework
ASYNC = "async"            # a call that returns before its work ends
SYNC = "sync"              # a wait for that work (framework None: waits for any)
TO_DEVICE = "to_device"    # host data copied into a framework's array
TO_HOST = "to_host"        # a framework's array copied to a NumPy array
JIT_BUILD = "jit_build"    # a JIT wrapper built
FIRST_CALL = "first_call"  # compiled code run for the first time in the program: it compiles now
CALL = "call"              # a call of one of the file's own functions (its events follow)
EAGER = "eager"            # a FIRST_CALL's detail when the code is one JAX operation, compiled on first use


@dataclass(frozen=True)
class Event:
    kind: str
    line: int            # the line that does it
    via: int             # the line of the timed code that leads to it: `line`, unless in a function it calls
    framework: str | None = None
    in_loop: bool = False  # in a loop inside the timed code: it runs many times per measurement
    text: str = ""       # the code that does it, as a message quotes it
    detail: str = ""     # COMPUTE: the operation; CALL: the function; FIRST_CALL: its wrapper, or EAGER
    dtype: str | None = None
    at: int = 0          # a line the message names too: where a compiled function was built


@dataclass(eq=False)
class Region:
    """One timing: what it times, how often, and (once walked) what the timed code did."""

    kind: str              # "clock", "timeit", "%timeit", "%time", "%%timeit", "%%time"
    line: int              # where the timing starts: the first clock read, the timeit call, the magic
    code: list[ast.stmt]   # the timed code, for the @workload form
    repeated: bool         # the timed code runs several times for what is reported
    warms_up: bool = False  # the timer runs the code before what it reports (%timeit sizing its loops)
    samples: bool = False  # one sample per run is kept (in a loop), so a median or min can drop a slow first
    clock: str | None = None
    depth: int = 0         # how deep in called functions the walk was when it began
    loops: int = 0         # how many loops enclosed it
    names: dict[str, Value] = field(default_factory=dict)  # what each name read in it held
    events: list[Event] = field(default_factory=list)

    def of(self, *kinds: str) -> list[Event]:
        return [e for e in self.events if e.kind in kinds]

    @property
    def times_arrays(self) -> bool:
        """Whether the timed code does array work the linter can see (else no rule applies to it)."""
        return bool(self.of(COMPUTE, TO_DEVICE, TO_HOST, FIRST_CALL))

    @property
    def computes(self) -> frozenset[str]:
        """What the timed code computes, named as the frameworks share it: the operations and the file's
        functions it calls itself (`f`, `matmul`, `Add`), a framework's word in a name dropped
        (`linreg_jax` is `linreg`). Two timings that share one time the same computation."""
        names = {e.detail for e in self.of(COMPUTE, CALL) if e.via == e.line and e.detail not in ("", "lambda")}
        return frozenset(_without_framework(n) for n in names)

    @property
    def single(self) -> bool:
        """One run of the computation, measured once."""
        return not self.repeated and not any(e.in_loop for e in self.of(COMPUTE, FIRST_CALL))


def _without_framework(name: str) -> str:
    words = [w for w in name.split("_") if w.lower() not in FRAMEWORK_WORDS]
    return "_".join(words) or name


def clock_pairs(body: list[ast.stmt], clock: Callable[[ast.expr], str | None]) -> list[tuple[int, int, str]]:
    """(start, stop, clock) for each pair of clock reads in `body` that times the statements between.

    A start is `t0 = CLOCK()`; its stop is the statement that reads `CLOCK() - t0`, or the read
    assigned to `t1` where `t1 - t0` is computed later; a start never subtracted from is stopped
    by the next `t1 = CLOCK()` (a clock read that is not kept, such as a timestamp printed, is no stop).
    """
    started: dict[str, tuple[int, str]] = {}
    starts: list[tuple[int, str]] = []
    pairs: dict[int, tuple[int, str]] = {}
    for i, stmt in enumerate(body):
        for later, earlier in _name_differences(stmt):
            if later in started and earlier in started and started[earlier][0] < started[later][0]:
                pairs.setdefault(started[earlier][0], (started[later][0], started[earlier][1]))
        if isinstance(stmt, _COMPOUND):
            continue
        reads = [c for c in _calls(stmt) if clock(c.func)]
        if not reads:
            continue
        for name in _minus_clock(stmt, clock):
            if name in started:
                pairs.setdefault(started[name][0], (i, started[name][1]))
        target = _assigned_clock(stmt, clock)
        if target is not None:
            started[target] = (i, clock(reads[0].func) or "")
            starts.append(started[target])
    stops = {stop for stop, _ in pairs.values()}
    for start, qual in starts:
        if start not in pairs and start not in stops:  # `t1 = CLOCK()` ends a timing; it starts none
            following = [i for i, _ in starts if i > start]
            if following:
                pairs[start] = (following[0], qual)
                stops.add(following[0])
    return sorted((s, e, q) for s, (e, q) in pairs.items() if e > s + 1)


_COMPOUND = (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try, ast.FunctionDef,
             ast.AsyncFunctionDef, ast.ClassDef, ast.Match)


def _calls(node: ast.AST) -> Iterator[ast.Call]:
    # Not into functions defined here: their clock reads run when they are called, not now.
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(child, ast.Call):
            yield child
        yield from _calls(child)


def _name_differences(node: ast.AST) -> Iterator[tuple[str, str]]:
    for sub in ast.walk(node):
        if (isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) and isinstance(sub.left, ast.Name)
                and isinstance(sub.right, ast.Name)):
            yield sub.left.id, sub.right.id


def _minus_clock(stmt: ast.stmt, clock: Callable[[ast.expr], str | None]) -> Iterator[str]:
    for sub in ast.walk(stmt):
        if (isinstance(sub, ast.BinOp) and isinstance(sub.op, ast.Sub) and isinstance(sub.left, ast.Call)
                and clock(sub.left.func) and isinstance(sub.right, ast.Name)):
            yield sub.right.id


def _assigned_clock(stmt: ast.stmt, clock: Callable[[ast.expr], str | None]) -> str | None:
    if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
        target, value = stmt.targets[0], stmt.value
    elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
        target, value = stmt.target, stmt.value
    else:
        return None
    if isinstance(target, ast.Name) and isinstance(value, ast.Call) and clock(value.func):
        return target.id
    return None


def keeps_samples(stmt: ast.stmt) -> bool:
    """Whether a stop statement stores one sample per run (`times.append(...)`, `times[i] = ...`)."""
    for sub in ast.walk(stmt):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "append":
            return True
        if isinstance(sub, ast.Subscript) and isinstance(sub.ctx, ast.Store):
            return True
    return False
