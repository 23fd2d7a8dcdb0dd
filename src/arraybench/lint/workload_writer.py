"""Writes what a script times as arraybench `@workload`s, which `arraybench run --workload-file` measures.

From a timing's code it keeps the computation and drops what a harness does itself: the wait
(`.block_until_ready()`, `torch.cuda.synchronize()`), the copies to and from the device, the
JIT wrapper (`jax.jit(f)(x)` is `f`, which arraybench compiles itself, once, outside the timer),
and a loop of repetitions. What is left must be one call of a function the file defines, or one
expression, on arrays whose making the file shows (`np.random.randn(n, n)`, `jax.random.normal(key,
shape)`, `torch.ones(...)`); framework functions become the array API's (`jnp.exp` -> `xp.exp`).
Any other timing is left out: "where it can".
"""

from __future__ import annotations

import ast
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from arraybench.lint import frameworks as fw
from arraybench.lint import values as v
from arraybench.lint.regions import Region
from arraybench.lint.values import Made, Value

# The array API's main namespace (2023.12), and its linalg and fft extensions.
ARRAY_API = frozenset("""
abs acos acosh add all any arange argmax argmin argsort asin asinh astype atan atan2 atanh bitwise_and
bitwise_invert bitwise_left_shift bitwise_or bitwise_right_shift bitwise_xor broadcast_arrays broadcast_to
can_cast ceil clip concat conj copysign cos cosh cumulative_sum divide empty empty_like equal exp expand_dims
expm1 eye flip floor floor_divide full full_like greater greater_equal hypot imag isfinite isinf isnan less
less_equal linspace log log10 log1p log2 logaddexp logical_and logical_not logical_or logical_xor matmul
matrix_transpose max maximum mean meshgrid min minimum moveaxis multiply negative nonzero not_equal ones
ones_like permute_dims positive pow prod real remainder repeat reshape result_type roll round searchsorted sign
signbit sin sinh sort sqrt square squeeze stack std subtract sum take tan tanh tensordot tile tril triu trunc
unique_all unique_counts unique_inverse unique_values unstack var vecdot where zeros zeros_like
""".split())
EXTENSIONS = {"linalg": frozenset("cholesky cross det diagonal eigh eigvalsh inv matmul matrix_norm matrix_power "
                                  "matrix_rank outer pinv qr slogdet solve svd svdvals tensordot trace vecdot "
                                  "vector_norm".split()),
              "fft": frozenset("fft ifft fftn ifftn rfft irfft rfftn irfftn hfft ihfft fftfreq rfftfreq fftshift "
                               "ifftshift".split())}
# Framework modules whose functions are the array API's, with the extension each one is.
NAMESPACES = {"numpy": "", "jax.numpy": "", "torch": "", "tensorflow": "", "tensorflow.math": "",
              "tensorflow.experimental.numpy": "", "cupy": "", "numpy.linalg": "linalg", "jax.numpy.linalg": "linalg",
              "torch.linalg": "linalg", "tensorflow.linalg": "linalg", "cupy.linalg": "linalg", "numpy.fft": "fft",
              "jax.numpy.fft": "fft", "torch.fft": "fft", "cupy.fft": "fft"}
ARRAY_ATTRIBUTES = frozenset({"T", "mT", "shape", "dtype", "ndim", "size"})
SIZE_NAMES = ("n", "m", "k", "p", "q", "r")
INPUT_NAMES = ("x", "y", "z", "w", "u", "s")
# Wrappers a harness puts around the computation itself: copies in, waits and copies out.
_CONVERSIONS = frozenset({*fw.TO_DEVICE_CALLS, *fw.ZERO_COPY, *fw.TO_HOST_CALLS, *fw.SYNC_CALLS})
_CONVERSION_METHODS = frozenset({*fw.SYNC_METHODS, *fw.TO_HOST_METHODS, "item", "cuda", "to"})


class Unrenderable(Exception):
    """The timed code is not one computation the @workload form can hold."""


@dataclass(frozen=True)
class Computation:
    """One computation a script times, as a workload: its function's source and its inputs."""

    name: str
    function: str  # `def NAME(xp, ...)`, the array API's names in it
    inputs: tuple[tuple[str, Made], ...]  # (parameter, how its values are made)
    line: str      # where the script times it, as a sentence names it


def render(regions: Sequence[Region], where: Callable[[int], str], script: str) -> str | None:
    """A file of `@workload`s, one per distinct computation the regions time, or None if none renders."""
    found: list[Computation] = []
    for region in regions:
        try:
            computation = _computation(region, where)
        except Unrenderable:
            continue
        if any(_signature(c) == _signature(computation) for c in found):
            continue  # the same computation timed again (on another framework, say): one workload
        if any(c.name == computation.name for c in found):
            unique = f"{computation.name}_{len(found)}"
            computation = replace(computation, name=unique,
                                  function=computation.function.replace(computation.name, unique, 1))
        found.append(computation)
    if not found:
        return None
    numpy = any(made.distribution in ("ones", "zeros") for c in found for _, made in c.inputs)
    head = (f'"""What {script} times, as arraybench workloads (written by `arraybench lint`).\n\n'
            f'    arraybench run --workload-file THIS_FILE\n"""\n\n'
            + ("import numpy as np\n\n" if numpy else "") + "import arraybench as ab\n")
    return "\n\n".join([head, *(_workload(c) for c in found)])


def _signature(c: Computation) -> tuple[str, tuple[tuple[str, Made], ...]]:
    return c.function.split("(", 1)[1], c.inputs


def _workload(c: Computation) -> str:
    sizes: dict[int, str] = {}
    tree = ast.parse(c.function)
    taken = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | {
        n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)} | {"xp", "rng", "dtype"}
    free = [s for s in SIZE_NAMES if s not in taken]
    for _, made in c.inputs:
        for d in made.shape:
            if d not in sizes:
                sizes[d] = free[len(sizes)] if len(sizes) < len(free) else f"size{len(sizes)}"
    preset = ", ".join(f'"{name}": {d}' for d, name in sizes.items())
    lines = [f"# timed at {c.line}", f'@ab.workload(presets={{"script": {{{preset}}}}})', c.function, "",
             "", f"@{c.name}.inputs", f"def _(rng, dtype, {', '.join(sizes.values())}):"]
    for name, made in c.inputs:
        shape = "(" + ", ".join(sizes[d] for d in made.shape) + ("," if len(made.shape) == 1 else "") + ")"
        lines.append(f"    {name} = {_drawn(made, shape)}")
    names = [name for name, _ in c.inputs]
    lines.append(f"    return ({', '.join(names)}{',' if len(names) == 1 else ''})")
    return "\n".join(lines) + "\n"


def _drawn(made: Made, shape: str) -> str:
    if made.distribution in ("ones", "zeros"):
        return f"np.{made.distribution}({shape}, dtype=dtype)"
    if made.distribution == "normal":
        draw = f"rng.standard_normal({shape})"
        if (made.low, made.high) != (0.0, 1.0):
            draw = f"({made.low!r} + {made.high!r} * {draw})"
    else:
        draw = f"rng.random({shape})" if (made.low, made.high) == (0.0, 1.0) else \
            f"rng.uniform({made.low!r}, {made.high!r}, {shape})"
    return f"{draw}.astype(dtype)"


def _computation(region: Region, where: Callable[[int], str]) -> Computation:
    expr = _the_expression(region.code, region.names)
    call = expr if isinstance(expr, ast.Call) else None
    function = _called_function(call.func, region.names) if call is not None else None
    if call is not None and function is not None:
        return _of_function(function, call, region, where)
    return _of_expression(expr, region, where)


def _the_expression(code: list[ast.stmt], names: dict[str, Value]) -> ast.expr:
    """The one expression timed code computes, once its waits and a loop of repetitions are taken off."""
    stmts = [s for s in code if not _is_wait(s, names)]
    if len(stmts) == 1 and isinstance(stmts[0], ast.For) and not stmts[0].orelse:
        return _the_expression(stmts[0].body, names)
    if len(stmts) != 1 or not isinstance(stmts[0], ast.Expr | ast.Assign | ast.Return) or stmts[0].value is None:
        raise Unrenderable("not one expression")
    return _unwrapped(stmts[0].value, names)


def _is_wait(stmt: ast.stmt, names: dict[str, Value]) -> bool:
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    # A wait on its own (`y.block_until_ready()`, `torch.cuda.synchronize()`), not one on a computation.
    call = stmt.value
    if _qual(call.func, names) in fw.SYNC_CALLS:
        return all(isinstance(a, ast.Name) for a in call.args)
    return isinstance(call.func, ast.Attribute) and call.func.attr in fw.SYNC_METHODS and not isinstance(
        call.func.value, ast.Call)


def _unwrapped(expr: ast.expr, names: dict[str, Value]) -> ast.expr:
    """`np.array(f(x).block_until_ready())` -> `f(x)`: the computation inside the harness's calls."""
    while True:
        if isinstance(expr, ast.Attribute) and expr.attr in ("device", "shape", "dtype"):
            expr = expr.value
        elif isinstance(expr, ast.Call) and isinstance(expr.func, ast.Attribute) and (
                expr.func.attr in _CONVERSION_METHODS) and not _is_module(expr.func.value, names):
            expr = expr.func.value
        elif isinstance(expr, ast.Call) and _qual(expr.func, names) in _CONVERSIONS and len(expr.args) == 1:
            expr = expr.args[0]
        else:
            return expr


def _called_function(func: ast.expr, names: dict[str, Value]) -> v.Function | None:
    """The file's function a call runs: `f`, `f_jit` (compiled from `f`), or `jax.jit(f)`."""
    if isinstance(func, ast.Call) and _qual(func.func, names) in fw.JIT_WRAPPERS and func.args:
        return _called_function(func.args[0], names)
    if isinstance(func, ast.Name):
        value = names.get(func.id)
        if value is not None and value.kind == v.COMPILED and value.compiled is not None:
            value = value.compiled.target
        if value is not None and value.kind == v.FUNCTION and value.function is not None:
            return value.function
    return None


def _of_function(function: v.Function, call: ast.Call, region: Region, where: Callable[[int], str]) -> Computation:
    node = function.node
    if isinstance(node, ast.Lambda) or call.keywords or node.args.vararg or node.args.posonlyargs:
        raise Unrenderable("not a plain function call")
    params = node.args.args
    needed = len(params) - len(node.args.defaults)
    if not needed <= len(call.args) <= len(params):
        raise Unrenderable("arguments do not match")
    inputs = tuple((p.arg, _made_of(a, region.names)) for p, a in zip(params, call.args, strict=False))
    name = f"{function.name}_{_place(region.line, where)}"
    local = {p.arg for p in params} | _assigned(node)
    body = _Namespace(lambda n: function.scope.find(n) or region.names.get(n), local).visit_function(node, name)
    return Computation(name, body, inputs, where(region.line))


def _of_expression(expr: ast.expr, region: Region, where: Callable[[int], str]) -> Computation:
    arrays: dict[str, str] = {}
    made: list[tuple[str, Made]] = []
    for node in ast.walk(expr):
        if isinstance(node, ast.Name) and node.id not in arrays:
            value = region.names.get(node.id)
            if value is not None and value.kind == v.ARRAY:
                if len(arrays) >= len(INPUT_NAMES):
                    raise Unrenderable("too many inputs")
                arrays[node.id] = INPUT_NAMES[len(arrays)]
                made.append((arrays[node.id], _made_of(node, region.names)))
    if not arrays:
        raise Unrenderable("no arrays")
    head = expr.func if isinstance(expr, ast.Call) else None
    label = (head.attr if isinstance(head, ast.Attribute) else head.id if isinstance(head, ast.Name) else "expression")
    name = f"{label}_{_place(region.line, where)}"
    body = _Namespace(region.names.get, set(), renamed=arrays).visit(_unwrap_all(expr, region.names))
    params = ", ".join(arrays.values())
    function = f"def {name}(xp, {params}):\n    return {ast.unparse(body)}"
    return Computation(name, function, tuple(made), where(region.line))


def _unwrap_all(expr: ast.expr, names: dict[str, Value]) -> ast.expr:
    class Unwrap(ast.NodeTransformer):
        def visit_Call(self, node: ast.Call) -> ast.AST:
            inner = _unwrapped(node, names)
            return self.generic_visit(node) if inner is node else self.visit(inner)

    result: ast.expr = Unwrap().visit(ast.parse(ast.unparse(expr), mode="eval").body)
    return result


def _made_of(arg: ast.expr, names: dict[str, Value]) -> Made:
    arg = _unwrapped(arg, names)
    value = names.get(arg.id) if isinstance(arg, ast.Name) else None
    if value is None or value.kind != v.ARRAY or value.made is None:
        raise Unrenderable("an input whose making the file does not show")
    return value.made


def _place(line: int, where: Callable[[int], str]) -> str:
    """"line 94" -> "line94", "cell 4, line 7" -> "cell4": a workload's name says where it was timed."""
    words = where(line).replace(",", "").split()
    return f"{words[0]}{words[1]}"


def _qual(node: ast.expr, names: dict[str, Value] | Callable[[str], Value | None]) -> str | None:
    """The module attribute an expression names (`jnp.exp` -> "jax.numpy.exp"), or None."""
    lookup = names.get if isinstance(names, dict) else names
    if isinstance(node, ast.Name):
        value = lookup(node.id)
        if value is None and node.id in fw.CONVENTIONAL:
            return fw.CONVENTIONAL[node.id]
        return value.qual if value is not None and value.kind == v.QUAL else None
    if isinstance(node, ast.Attribute):
        base = _qual(node.value, lookup)
        return f"{base}.{node.attr}" if base else None
    return None


def _is_module(node: ast.expr, names: dict[str, Value]) -> bool:
    return _qual(node, names) is not None


def _assigned(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}


class _Namespace(ast.NodeTransformer):
    """Framework functions to `xp.`'s, module constants inlined; anything else makes the code unrenderable."""

    def __init__(self, lookup: Callable[[str], Value | None], local: set[str],
                 renamed: dict[str, str] | None = None) -> None:
        self.lookup = lookup
        self.local = local
        self.renamed = renamed or {}

    def visit_function(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, name: str) -> str:
        """The function's source as a workload's computation: named `name`, `xp` first, no decorators."""
        copy = ast.parse(ast.unparse(node)).body[0] if isinstance(node, ast.FunctionDef) else None
        if not isinstance(copy, ast.FunctionDef):
            raise Unrenderable("not a plain def")
        copy.decorator_list = []
        copy.name = name
        copy.args.args.insert(0, ast.arg("xp"))
        copy.body = [self.visit(s) for s in copy.body]
        return ast.unparse(copy)

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if node.id in self.renamed:
            return ast.Name(self.renamed[node.id], node.ctx)
        if node.id in self.local or node.id in ("xp", "range", "len", "abs", "min", "max", "float", "int"):
            return node
        value = self.lookup(node.id)
        if value is not None and value.kind == v.CONST and isinstance(value.const, int | float):
            return ast.Constant(value.const)
        raise Unrenderable(f"{node.id} is not a parameter, a constant or the array API")

    def visit_Attribute(self, node: ast.Attribute) -> ast.AST:
        qual = self._qual(node)
        if qual is not None:
            module, _, attr = qual.rpartition(".")
            extension = NAMESPACES.get(module)
            name = fw.SAME_OPERATION.get(attr, attr)
            if extension is None or name not in (EXTENSIONS[extension] if extension else ARRAY_API):
                raise Unrenderable(f"{qual} is not in the array API")
            return ast.Attribute(ast.Attribute(ast.Name("xp", ast.Load()), extension, ast.Load())
                                 if extension else ast.Name("xp", ast.Load()), name, ast.Load())
        if node.attr not in ARRAY_ATTRIBUTES:
            raise Unrenderable(f".{node.attr} is not an array API attribute")
        return self.generic_visit(node)

    def _qual(self, node: ast.expr) -> str | None:
        base = node
        while isinstance(base, ast.Attribute):
            base = base.value
        if isinstance(base, ast.Name) and (base.id in self.local or base.id in self.renamed):
            return None  # an attribute of the function's own arrays, not of a module
        return _qual(node, self.lookup)
