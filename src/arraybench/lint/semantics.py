"""What each framework call, operator and copy does, as events of the timings open when it runs.

`Semantics` is the half of the walk that knows the frameworks: which call is array work and of
which framework, on which device and in which dtype its result is, which returns before its work
ends, which waits, which copies between host and device, which builds or runs compiled code. The
other half (lint.walk) follows the file's statements and functions and opens the timings.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator
from dataclasses import replace

from arraybench.lint import frameworks as fw
from arraybench.lint import values as v
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
from arraybench.lint.values import Value


class Semantics:
    """The frameworks' half of the walk: what the file has set so far (x64, default devices, device
    scopes), the compiled code that has run, and the timings open now, which its events go to."""

    def __init__(self) -> None:
        self.active: list[Region] = []
        self.call_lines: list[int] = []   # the line of each call followed, outermost first
        self.loops: list[bool] = []       # each loop around this point: does it repeat one computation?
        self.contexts: list[tuple[str | None, str | None]] = []  # device scopes: (framework, device)
        self.warm: set[object] = set()    # compiled code that has run: its next call compiles nothing
        self.x64 = False                  # JAX computes in float64
        self.no_gpu = False               # CUDA_VISIBLE_DEVICES hides every GPU
        self.jax_cpu = False              # JAX_PLATFORMS=cpu
        self.torch_gpu = False            # torch.set_default_device("cuda")
        self.torch_float64 = False        # torch.set_default_dtype(torch.float64)

    def environment(self, key: str, value: object) -> None:
        text = str(value).strip().lower()
        if key == "JAX_ENABLE_X64":
            self.x64 = text in ("1", "true", "yes")
        elif key == "CUDA_VISIBLE_DEVICES":
            self.no_gpu = text in ("", "-1")
        elif key in ("JAX_PLATFORMS", "JAX_PLATFORM_NAME"):
            self.jax_cpu = text == "cpu"

    def emit(self, kind: str, node: ast.AST, framework: str | None = None, text: str = "", detail: str = "",
             dtype: str | None = None, at: int = 0) -> None:
        line = getattr(node, "lineno", 0)
        for region in self.active:
            via = self.call_lines[region.depth] if len(self.call_lines) > region.depth else line
            region.events.append(Event(kind, line, via, framework, in_loop=len(self.loops) > region.loops,
                                       text=text or v.snippet(node), detail=detail, dtype=dtype, at=at))

    def operate(self, node: ast.AST, operands: list[Value]) -> Value:
        arrays = [o for o in operands if o.kind == v.ARRAY]
        if arrays:
            operator_name = type(getattr(node, "op", node)).__name__
            return self.array_work(node, _leading(arrays), arrays, ("operator", operator_name))
        consts = [o.const for o in operands]
        if all(o.kind == v.CONST and isinstance(c, int | float) for o, c in zip(operands, consts, strict=True)):
            try:
                return Value(v.CONST, const=_arithmetic(node, consts))
            except (ArithmeticError, ValueError, TypeError):
                return Value()
        return Value()

    def array_work(self, node: ast.AST, framework: str, arrays: list[Value], op: tuple[str, str],
                   device: str | None = None, dtype: str | None = None, explicit_dtype: bool = False) -> Value:
        """The array an operation of `framework` on `arrays` makes, and its events: work, dispatch, compile."""
        if device is None:
            device = self.device_for(framework, arrays)
        if not explicit_dtype:
            dtype = v.promote([a.dtype for a in arrays if a.framework == framework] or [dtype])
        dtype = self.precision(framework, dtype)
        operation = op[1].rsplit(".", 1)[-1] or op[0]
        self.emit(COMPUTE, node, framework, dtype=dtype, detail=fw.SAME_OPERATION.get(operation, operation))
        if fw.is_async(framework, device):
            self.emit(ASYNC, node, framework)
        if framework == "jax":
            # JAX compiles each operation for its shapes on first use, jit or not.
            self.first_call(("jax", *op), node, EAGER)
        return v.array(framework, device, dtype)

    def first_call(self, key: object, node: ast.AST, detail: str, framework: str = "jax", at: int = 0) -> None:
        if key not in self.warm:
            self.emit(FIRST_CALL, node, framework, detail=detail, at=at)
            self.warm.add(key)

    def device_for(self, framework: str, arrays: list[Value]) -> str | None:
        if self.no_gpu or framework in ("numpy", "numba"):
            return "cpu"
        scoped = [d for f, d in self.contexts if f == framework]
        if framework == "tensorflow" and scoped:
            return scoped[-1]  # TensorFlow places each operation by the scope it runs in
        own = [a for a in arrays if a.kind == v.ARRAY and a.framework == framework]
        if own:
            device = own[0].device
            for a in own[1:]:
                device = v.join_device(device, a.device)
            return device
        if scoped:
            return scoped[-1]
        return {"jax": "cpu" if self.jax_cpu else None, "torch": "gpu" if self.torch_gpu else "cpu",
                "cupy": "gpu"}.get(framework)

    def precision(self, framework: str, dtype: str | None) -> str | None:
        if framework == "jax" and dtype == "float64" and not self.x64:
            return "float32"  # JAX computes in float32 unless x64 is enabled
        return dtype

    def default_float(self, framework: str) -> str:
        if framework == "jax":
            return "float64" if self.x64 else "float32"
        if framework == "torch":
            return "float64" if self.torch_float64 else "float32"
        return "float32" if framework == "tensorflow" else "float64"

    def wait_for(self, values: list[Value], node: ast.AST) -> None:
        """Python reading an array (print, float, an f-string) waits for the work that makes it."""
        for value in values:
            if value.kind == v.ARRAY and fw.is_async(value.framework, value.device):
                self.emit(SYNC, node, value.framework)

    def call_qual(self, qual: str, args: list[Value], kwargs: dict[str, Value], node: ast.Call) -> Value:
        first = args[0] if args else Value()
        if qual.startswith("builtins."):
            if qual.removeprefix("builtins.") in fw.SYNC_BUILTINS:
                self.wait_for(args, node)
            return Value()
        if qual == "functools.partial":
            if first.kind == v.QUAL and first.qual in fw.JIT_WRAPPERS:
                return Value(v.FACTORY, qual=first.qual)
            return Value(v.PARTIAL, of=first, items=tuple(args[1:]))
        if qual in fw.JIT_WRAPPERS:
            return self.jit_wrapper(qual, args, kwargs, node)
        if qual in fw.TRANSFORMS:
            return Value(v.TRANSFORM, framework=fw.TRANSFORMS[qual], of=first, name=qual)
        if qual in fw.SYNC_CALLS:
            self.emit(SYNC, node, fw.SYNC_CALLS[qual])
            return first
        if qual in fw.TO_HOST_CALLS:
            return self.to_host(first, fw.TO_HOST_CALLS[qual], node, qual)
        if qual in fw.TO_DEVICE_CALLS or qual in fw.ZERO_COPY:
            return self.to_device(qual, first, kwargs, node)
        special = self.setting_call(qual, args, node)
        if special is not None:
            return special
        framework = fw.framework_of(qual)
        if framework is None or _not_compute(qual):
            return Value()
        return self.framework_call(qual, framework, args, kwargs, node)

    def setting_call(self, qual: str, args: list[Value], node: ast.Call) -> Value | None:
        """Calls that set where arrays live or their precision, or name a device."""
        values = [v.const_of(a) for a in args]
        if qual == "jax.config.update" and len(values) == 2:
            if values[0] == "jax_enable_x64":
                self.x64 = bool(values[1])
            elif values[0] in ("jax_platforms", "jax_platform_name"):
                self.jax_cpu = values[1] == "cpu"
            return Value()
        if qual in ("os.environ.setdefault", "os.putenv") and len(values) == 2 and isinstance(values[0], str):
            self.environment(values[0], values[1])
            return Value()
        if qual == "torch.set_default_device" and args:
            self.torch_gpu = v.device_named(args[0]) == "gpu"
            return Value()
        if qual == "torch.set_default_dtype" and args:
            self.torch_float64 = v.dtype_named(args[0]) == "float64"
            return Value()
        if qual in ("jax.devices", "jax.local_devices", "jax.default_device", "tensorflow.device", "torch.device"):
            device = v.device_named(args[0]) if args else None
            return Value(v.DEVICE, framework=fw.framework_of(qual), device=device)
        if qual == "numpy.random.default_rng":
            return Value(v.QUAL, qual="numpy.random.Generator")
        return None

    def framework_call(self, qual: str, framework: str, args: list[Value], kwargs: dict[str, Value],
                       node: ast.Call) -> Value:
        framework = "numpy" if framework == "numba" else framework
        name = qual.rsplit(".", 1)[-1]
        given = v.dtype_named(kwargs["dtype"]) if "dtype" in kwargs else None
        made = qual in fw.RANDOM_NORMAL or qual in fw.RANDOM_UNIFORM or name in fw.CREATION
        dtype = given or (self.created_dtype(framework, name, args) if made else None)
        device = v.device_named(kwargs["device"]) if "device" in kwargs else None
        arrays = [a for a in [*args, *kwargs.values()] if a.kind == v.ARRAY]
        result = self.array_work(node, framework, arrays, ("call", qual), device=device or None, dtype=dtype,
                                 explicit_dtype=made or given is not None)
        return replace(result, made=_made(qual, name, args, kwargs)) if made else result

    def created_dtype(self, framework: str, name: str, args: list[Value]) -> str | None:
        if name == "arange" and not any(isinstance(v.const_of(a), float) for a in args):
            return None  # integers
        if name == "full" and len(args) > 1 and isinstance(v.const_of(args[1]), int):
            return None
        if name.endswith("_like") and args and args[0].kind == v.ARRAY:
            return args[0].dtype
        return self.default_float(framework)

    def to_device(self, qual: str, src: Value, kwargs: dict[str, Value], node: ast.Call) -> Value:
        framework = fw.TO_DEVICE_CALLS.get(qual) or fw.framework_of(qual) or "numpy"
        if src.kind == v.ARRAY and src.framework == framework:
            return self.framework_call(qual, framework, [src], kwargs, node)
        device = v.device_named(kwargs["device"]) if "device" in kwargs else None
        device = device or self.device_for(framework, [])
        given = v.dtype_named(kwargs["dtype"]) if "dtype" in kwargs else None
        dtype = self.precision(framework, given or _host_dtype(src, self.default_float(framework)))
        host = src.kind in (v.CONST, v.SEQUENCE, v.UNBOUND) or (src.kind == v.ARRAY and src.framework == "numpy")
        zero_copy = qual in fw.ZERO_COPY and device != "gpu"
        copies = framework in ("jax", "cupy") or (framework == "torch" and device == "gpu") or (
            framework == "tensorflow" and device != "cpu")
        if host and copies and not zero_copy:
            self.emit(TO_DEVICE, node, framework)
        return v.array(framework, device, dtype, src.made)

    def to_host(self, src: Value, how: str, node: ast.Call, qual: str = "") -> Value:
        if src.kind != v.ARRAY:
            if src.kind == v.UNKNOWN:
                self.emit(SYNC, node)  # a copy of an array the linter cannot see still waits for it
            return v.array("numpy", "cpu", _host_dtype(src, "float64"))
        if src.framework == "numpy":
            return self.framework_call(qual or "numpy.array", "numpy", [src], {}, node)
        if fw.copies_to_host(src.framework, src.device, how):
            self.emit(TO_HOST, node, src.framework)
        self.emit(SYNC, node, src.framework)
        return v.array("numpy", "cpu", src.dtype, src.made)

    def array_method(self, recv: Value, name: str, args: list[Value], kwargs: dict[str, Value],
                     node: ast.Call) -> Value:
        if name in fw.SYNC_METHODS:
            self.emit(SYNC, node, recv.framework if recv.kind == v.ARRAY else None)
            return recv
        if recv.kind != v.ARRAY:
            return Value()
        framework = recv.framework or "numpy"
        if name in fw.SYNC_ONLY_METHODS:
            self.wait_for([recv], node)
            return Value()
        if name in fw.TO_HOST_METHODS and framework != "numpy":
            return self.to_host(recv, "copy" if name in ("cpu", "get", "tolist") else "view", node)
        moved = self.moved(recv, name, args, kwargs, node)
        if moved is not None:
            return moved
        arrays = [recv, *(a for a in args if a.kind == v.ARRAY)]
        return self.array_work(node, framework, arrays, ("method", name))

    def moved(self, recv: Value, name: str, args: list[Value], kwargs: dict[str, Value],
              node: ast.Call) -> Value | None:
        """`.cuda()`, `.to(device)`, `.astype(dtype)`, `.float()`: the array somewhere else or in another dtype."""
        torch_casts = {"float": "float32", "double": "float64", "half": "float16"}
        dtype = torch_casts.get(name) if recv.framework == "torch" else None
        device = None
        if name == "astype" and args:
            dtype = v.dtype_named(args[0])
        elif name == "cuda":
            device = "gpu"
        elif name == "to":
            for a in [*args, *kwargs.values()]:
                dtype = dtype or v.dtype_named(a)
                device = device or v.device_named(a)
        elif dtype is None:
            return None
        if device == "gpu" and recv.device != "gpu":
            self.emit(TO_DEVICE, node, recv.framework)
            return replace(recv, device="gpu", dtype=dtype or recv.dtype)
        result = self.array_work(node, recv.framework or "numpy", [recv], ("method", name),
                                 dtype=dtype or recv.dtype, explicit_dtype=True)
        return replace(result, made=recv.made)

    def jit_wrapper(self, qual: str, args: list[Value], kwargs: dict[str, Value], node: ast.Call) -> Value:
        signature = bool(args) and args[0].kind in (v.CONST, v.SEQUENCE) or "signature" in kwargs
        if not args or signature:
            return Value(v.FACTORY, qual=qual, eager=signature and qual.startswith("numba."))
        return self.build_jit(qual, args[0], node)

    def build_jit(self, qual: str, target: Value, node: ast.AST, eager: bool = False) -> Value:
        self.emit(JIT_BUILD, node, fw.JIT_WRAPPERS.get(qual), text=v.snippet(node), detail=qual)
        compiled = v.Compiled(qual, fw.JIT_WRAPPERS.get(qual, "jax"), target, getattr(node, "lineno", 0), eager)
        return Value(v.COMPILED, compiled=compiled)

    def decorate(self, decorator: Value, function: Value, node: ast.expr) -> Value:
        if decorator.kind == v.QUAL and decorator.qual in fw.JIT_WRAPPERS:
            return self.build_jit(decorator.qual, function, node)
        if decorator.kind == v.FACTORY:
            return self.build_jit(decorator.qual or "", function, node, eager=decorator.eager)
        return function  # a decorator the linter does not know keeps the function callable as it was

    def run_compiled(self, compiled: v.Compiled, args: list[Value], node: ast.Call) -> Value:
        if not compiled.eager:
            self.first_call(compiled, node, compiled.wrapper, compiled.framework, at=compiled.line)
        arrays = [a for a in args if a.kind == v.ARRAY]
        framework = compiled.framework
        device = self.device_for(framework, arrays)
        dtype = self.precision(framework, v.promote([a.dtype for a in arrays]))
        self.emit(COMPUTE, node, framework, dtype=dtype, detail=_computes(compiled.target))
        if fw.is_async(framework, device):
            self.emit(ASYNC, node, framework)
        return v.array(framework, device, dtype)


# Where a creation function takes its shape: "dims" (randn(3, 4)), or the position of its shape argument.
_SHAPE_AT = {"randn": "dims", "rand": "dims", "normal": 2, "uniform": 2, "standard_normal": 0, "random": 0,
             "random_sample": 0, "ones": 0, "zeros": 0, "empty": 0}
_SHAPE_AT_RANDOM = {"jax.random.": 1, "tensorflow.random.": 0}  # after JAX's key; TensorFlow's first
_TORCH_DIMS = ("torch.randn", "torch.rand", "torch.ones", "torch.zeros", "torch.empty")


def _made(qual: str, name: str, args: list[Value], kwargs: dict[str, Value]) -> v.Made | None:
    """The distribution and shape a creation call draws, where its arguments are constants."""
    module = qual[: len(qual) - len(name)]
    at = _SHAPE_AT_RANDOM.get(module, _SHAPE_AT.get(name))
    # (low, high) come first where the shape is third: normal(loc, scale, size), uniform(low, high, size).
    spread = args if at == 2 else []
    if qual in fw.RANDOM_NORMAL:
        distribution = "normal"
        low, high = _number(spread, kwargs, "loc", 0, 0.0), _number(spread, kwargs, "scale", 1, 1.0)
    elif qual in fw.RANDOM_UNIFORM:
        distribution = "uniform"
        low, high = _number(spread, kwargs, "low", 0, 0.0), _number(spread, kwargs, "high", 1, 1.0)
    elif name in fw.FILLED:
        distribution, low, high = name, 0.0, 1.0
    else:
        return None
    if qual in _TORCH_DIMS or at == "dims":
        dims = v.const_of(args[0]) if len(args) == 1 and args[0].kind == v.SEQUENCE else tuple(
            v.const_of(a) for a in args)
    else:
        given = kwargs.get("size", kwargs.get("shape"))
        if given is None and isinstance(at, int) and len(args) > at:
            given = args[at]
        dims = v.const_of(given) if given is not None else None
    shape = (dims,) if isinstance(dims, int) else dims
    if not isinstance(shape, tuple) or not shape or not all(isinstance(d, int) and d > 0 for d in shape):
        return None
    return v.Made(distribution, shape, float(low), float(high))


def _number(args: list[Value], kwargs: dict[str, Value], name: str, position: int, default: float) -> float:
    given = kwargs.get(name, args[position] if len(args) > position else None)
    value = v.const_of(given) if given is not None else None
    return float(value) if isinstance(value, int | float) else default


def _computes(target: Value) -> str:
    """What a compiled function computes, by name: the file's function, or the framework's (`jnp.matmul`)."""
    if target.function is not None:
        return target.function.name
    name = (target.qual or "").rsplit(".", 1)[-1]
    return fw.SAME_OPERATION.get(name, name)


def _leading(arrays: list[Value]) -> str:
    """The framework an operation on arrays of several frameworks runs in: any but NumPy's."""
    frameworks = [a.framework for a in arrays if a.framework]
    return next((f for f in frameworks if f != "numpy"), frameworks[0] if frameworks else "numpy")


def _not_compute(qual: str) -> bool:
    module, _, name = qual.rpartition(".")
    return (module not in fw.ARRAY_MODULES or qual.startswith(fw.NOT_COMPUTE_PREFIXES)
            or bool(fw.DTYPE_ATTRIBUTE.fullmatch(name)))


def _host_dtype(src: Value, python_float: str) -> str | None:
    if src.kind == v.ARRAY:
        return src.dtype
    const = v.const_of(src)
    flat = const if isinstance(const, tuple) else (const,)
    if any(isinstance(c, float) for c in _flatten(flat)):
        return python_float
    return None


def _flatten(items: tuple[object, ...]) -> Iterator[object]:
    for item in items:
        if isinstance(item, tuple):
            yield from _flatten(item)
        else:
            yield item


_ARITHMETIC: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow,
}


def _arithmetic(node: ast.AST, consts: list[float]) -> float:
    """Arithmetic on constants, for sizes written as `10**4` or `2 * n`."""
    op = getattr(node, "op", None)
    if isinstance(op, ast.USub) and len(consts) == 1:
        return -consts[0]
    if isinstance(op, ast.UAdd) and len(consts) == 1:
        return consts[0]
    compute = _ARITHMETIC.get(type(op))
    if compute is None or len(consts) != 2 or (isinstance(op, ast.Pow) and abs(consts[1]) > 64):
        raise ValueError("not a size")  # a huge power would stall the walk
    return compute(consts[0], consts[1])
