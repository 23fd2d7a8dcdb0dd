"""The linter's picture of a value: what a name holds when timed code reads it (never the value itself)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field, replace
from typing import Any

from arraybench.lint.frameworks import DTYPE_NAMES, FLOAT_DTYPES

# What a Value stands for; each kind uses the fields named beside it.
UNKNOWN = "unknown"    # anything the linter cannot follow
UNBOUND = "unbound"    # a name the file never binds (a blog's snippet often leaves its data undefined)
CONST = "const"        # a Python constant: `const`
SEQUENCE = "sequence"  # a tuple or list: `items`
QUAL = "qual"          # a module, or a function or attribute of one: `qual` ("jax.numpy.dot")
ARRAY = "array"        # an array: `framework`, `device`, `dtype`, `made`
DEVICE = "device"      # a device, a list of them, or a device scope: `framework`, `device`
FUNCTION = "function"  # a function or lambda the file defines: `function`
COMPILED = "compiled"  # a JIT-compiled callable: `compiled`
FACTORY = "factory"    # a JIT wrapper waiting for its function (`tf.function(jit_compile=True)`): `qual`, `eager`
TRANSFORM = "transform"  # `jax.grad(f)` and kin: calling it runs `framework`'s operations eagerly
METHOD = "method"      # an attribute of `of` that may be called: `name`
PARTIAL = "partial"    # functools.partial(`of`, *`items`)
TIMER = "timer"        # a timeit.Timer: `node` is the call that made it

_FLOAT_ORDER = ("float16", "bfloat16", "float32", "float64")


@dataclass(eq=False)
class Frame:
    """The names of one scope; a function's frame sees its defining scope's names through `parent`."""

    parent: Frame | None = None
    names: dict[str, Value] = field(default_factory=dict)

    def find(self, name: str) -> Value | None:
        frame: Frame | None = self
        while frame is not None:
            if name in frame.names:
                return frame.names[name]
            frame = frame.parent
        return None


@dataclass(eq=False)
class Function:
    """A function the file defines, with the scope its free names come from."""

    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    scope: Frame
    defaults: dict[str, Value]

    @property
    def name(self) -> str:
        return "lambda" if isinstance(self.node, ast.Lambda) else self.node.name


@dataclass(eq=False)
class Compiled:
    """A JIT-compiled callable: built at `line` by `wrapper`; `eager` when compiled as it was built."""

    wrapper: str
    framework: str
    target: Value
    line: int
    eager: bool = False


@dataclass(frozen=True)
class Made:
    """How an array's values were made, for the @workload form: a distribution over a shape."""

    distribution: str  # "normal" (low: mean, high: standard deviation), "uniform" (low, high), "ones", "zeros"
    shape: tuple[int, ...]
    low: float = 0.0
    high: float = 1.0


@dataclass(frozen=True)
class Value:
    kind: str = UNKNOWN
    qual: str | None = None
    framework: str | None = None
    device: str | None = None
    dtype: str | None = None
    const: Any = None
    items: tuple[Value, ...] = ()
    function: Function | None = None
    compiled: Compiled | None = None
    of: Value | None = None
    name: str | None = None
    made: Made | None = None  # how an array's values were made, where the file shows it
    node: ast.Call | None = None
    eager: bool = False


def array(framework: str, device: str | None, dtype: str | None, made: Made | None = None) -> Value:
    return Value(ARRAY, framework=framework, device=device, dtype=dtype, made=made)


def join_device(a: str | None, b: str | None) -> str | None:
    """Where a value lives when it may come from either branch: a GPU if either may put it there."""
    if "gpu" in (a, b):
        return "gpu"
    return None if None in (a, b) else "cpu"


def device_named(v: Value) -> str | None:
    """"gpu", "cpu" or None (the framework's default) for a device value or a device string ("cuda:0")."""
    if v.kind == DEVICE:
        return v.device
    if v.kind == CONST and isinstance(v.const, str):
        text = v.const.lower()
        if any(word in text for word in ("cuda", "gpu", "mps", "xpu", "tpu")):
            return "gpu"
        if "cpu" in text:
            return "cpu"
    return None


def join(a: Value, b: Value) -> Value:
    """What a name holds after an if whose branches left it as `a` and `b`."""
    if a == b:
        return a
    if a.kind == ARRAY and b.kind == ARRAY and a.framework == b.framework:
        return replace(a, device=join_device(a.device, b.device), dtype=a.dtype if a.dtype == b.dtype else None)
    if {a.kind, b.kind} <= {CONST, DEVICE} and device_named(a) and device_named(b):
        return Value(DEVICE, framework=a.framework or b.framework, device=join_device(device_named(a), device_named(b)))
    if a.kind in (UNKNOWN, UNBOUND):
        return b
    if b.kind in (UNKNOWN, UNBOUND):
        return a
    return Value()


def dtype_named(v: Value) -> str | None:
    """The dtype a `dtype=` argument names: np.float32, torch.float64, "float32", float."""
    if v.kind == QUAL and v.qual:
        if v.qual == "builtins.float":
            return "float64"
        return DTYPE_NAMES.get(v.qual.rsplit(".", 1)[-1])
    if v.kind == CONST and isinstance(v.const, str):
        return DTYPE_NAMES.get(v.const)
    return None


def promote(dtypes: list[str | None]) -> str | None:
    """The widest float dtype among `dtypes` (operands of one operation); None when none is a float."""
    floats = [d for d in dtypes if d in FLOAT_DTYPES]
    return max(floats, key=_FLOAT_ORDER.index) if floats else None


def const_of(v: Value) -> Any:
    """The Python constant `v` holds (a tuple for a sequence of constants), or None."""
    if v.kind == CONST:
        return v.const
    if v.kind == SEQUENCE:
        items = [const_of(i) for i in v.items]
        return None if any(i is None for i in items) else tuple(items)
    return None


def snippet(node: ast.AST, limit: int = 60) -> str:
    """Code as a message quotes it: one line, at most `limit` characters."""
    text = " ".join(ast.unparse(node).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
