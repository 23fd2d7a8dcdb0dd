"""Walks a module as it would run, top to bottom, and records each timed region and what it does.

The walk is an abstract interpretation, never an execution: each name holds a `Value` (an
array of some framework on some device in some dtype, a function, a compiled function, a
clock...), calls into the file's own functions are followed (with their arguments), and each
call, operator and copy the timed code makes becomes an `Event` of every region open at that
moment. Branches are both walked and their names joined; a loop's body is walked once. A
function nothing calls is walked on its own at the end, its parameters unknown.
"""

from __future__ import annotations

import ast
import builtins
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

from arraybench.lint import frameworks as fw
from arraybench.lint import values as v
from arraybench.lint.regions import CALL, Region, clock_pairs, keeps_samples
from arraybench.lint.semantics import Semantics
from arraybench.lint.source import MAGIC, TIMING_MAGICS, split_options, timeit_counts
from arraybench.lint.values import Frame, Function, Value

MAX_DEPTH = 8        # calls followed into the file's own functions, one inside another
MAX_CALLS = 4000     # calls followed in all: a bound on the walk for files that call a lot
_BUILTINS = frozenset(dir(builtins))
_FUNCTION_NODES = (ast.FunctionDef, ast.AsyncFunctionDef)


def timed_regions(tree: ast.Module) -> list[Region]:
    """Every timing in `tree`, each with the events of the code it times, in the order they end."""
    walker = Walker(tree)
    walker.run(tree)
    return walker.regions


class Walker(Semantics):
    def __init__(self, tree: ast.Module) -> None:
        super().__init__()
        self.module = Frame()
        self.imports = _imports(tree)
        self.regions: list[Region] = []
        self.stack: list[Function] = []
        self.returns: list[list[Value]] = []
        self.walked: set[int] = set()
        self.calls = 0
        self.discards_first: set[int] = set()  # timeit.repeat calls whose minimum is taken
        self.stops: dict[int, Region] = {}  # the clock reads that end an open timing

    def run(self, tree: ast.Module) -> None:
        self.body(tree.body, self.module)
        for node in ast.walk(tree):
            if isinstance(node, _FUNCTION_NODES) and id(node) not in self.walked:
                self.walked.add(id(node))
                self.follow(Function(node, self.module, {}), [], {}, node.lineno)

    # -- statements ---------------------------------------------------------------------------

    def body(self, stmts: list[ast.stmt], frame: Frame) -> None:
        pairs = clock_pairs(stmts, lambda f: self.clock(f, frame))
        opens = {start + 1: (start, stop, clock) for start, stop, clock in pairs}
        closing: dict[int, list[Region]] = {}
        for i, stmt in enumerate(stmts):
            if i in opens:
                start, stop, clock = opens[i]
                region = self.open("clock", stmts[start].lineno, stmts[start + 1:stop], clock=clock,
                                   samples=any(self.loops) and keeps_samples(stmts[stop]))
                # It ends at the clock read in the stop statement: `print(float(y), clock() - t0)` waits first.
                for call in ast.walk(stmts[stop]):
                    if isinstance(call, ast.Call) and self.clock(call.func, frame):
                        self.stops[id(call)] = region
                closing.setdefault(stop, []).append(region)
            self.stmt(stmt, frame)
            for region in closing.pop(i, []):
                if region in self.active:
                    self.close(region)

    def stmt(self, node: ast.stmt, frame: Frame) -> None:
        handler = getattr(self, f"stmt_{type(node).__name__}", None)
        if handler is not None:
            handler(node, frame)
            return
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, frame)

    def stmt_Import(self, node: ast.Import, frame: Frame) -> None:
        for alias in node.names:
            if alias.asname:
                frame.names[alias.asname] = Value(v.QUAL, qual=alias.name)
            else:
                top = alias.name.split(".")[0]
                frame.names[top] = Value(v.QUAL, qual=top)

    def stmt_ImportFrom(self, node: ast.ImportFrom, frame: Frame) -> None:
        for alias in node.names:
            if node.module and not node.level and alias.name != "*":
                frame.names[alias.asname or alias.name] = Value(v.QUAL, qual=f"{node.module}.{alias.name}")

    def stmt_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef, frame: Frame) -> None:
        decorators = [self.expr(d, frame) for d in node.decorator_list]
        value = Value(v.FUNCTION, function=Function(node, frame, self.defaults(node.args, frame)))
        for decorator, dnode in zip(reversed(decorators), reversed(node.decorator_list), strict=True):
            value = self.decorate(decorator, value, dnode)
        frame.names[node.name] = value

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, node: ast.ClassDef, frame: Frame) -> None:
        for d in node.decorator_list:
            self.expr(d, frame)
        frame.names[node.name] = Value()

    def stmt_Assign(self, node: ast.Assign, frame: Frame) -> None:
        value = self.expr(node.value, frame)
        for target in node.targets:
            self.bind(target, value, frame)

    def stmt_AnnAssign(self, node: ast.AnnAssign, frame: Frame) -> None:
        if node.value is not None:
            self.bind(node.target, self.expr(node.value, frame), frame)

    def stmt_AugAssign(self, node: ast.AugAssign, frame: Frame) -> None:
        value = self.expr(node.value, frame)
        if isinstance(node.target, ast.Name):
            old = self.name(node.target.id, frame)
            self.bind(node.target, self.operate(node, [old, value]), frame)

    def stmt_Return(self, node: ast.Return, frame: Frame) -> None:
        value = self.expr(node.value, frame) if node.value is not None else Value(v.CONST)
        if self.returns:
            self.returns[-1].append(value)

    def stmt_If(self, node: ast.If, frame: Frame) -> None:
        self.expr(node.test, frame)
        before = dict(frame.names)
        self.body(node.body, frame)
        taken = frame.names
        frame.names = before
        self.body(node.orelse, frame)
        for name in taken.keys() | frame.names.keys():
            a, b = taken.get(name), frame.names.get(name)
            frame.names[name] = v.join(a, b) if a is not None and b is not None else (a or b or Value())

    def stmt_For(self, node: ast.For | ast.AsyncFor, frame: Frame) -> None:
        self.expr(node.iter, frame)
        self.bind(node.target, Value(), frame)
        self.loops.append(_repeats(node))
        self.body(node.body, frame)
        self.loops.pop()
        self.body(node.orelse, frame)

    stmt_AsyncFor = stmt_For

    def stmt_While(self, node: ast.While, frame: Frame) -> None:
        self.expr(node.test, frame)
        self.loops.append(True)
        self.body(node.body, frame)
        self.loops.pop()
        self.body(node.orelse, frame)

    def stmt_With(self, node: ast.With | ast.AsyncWith, frame: Frame) -> None:
        magic = _magic(node)
        if magic is not None:
            self.magic(magic[0], magic[1], node.lineno, node.body, frame)
            return
        scopes = 0
        for item in node.items:
            value = self.expr(item.context_expr, frame)
            if value.kind == v.DEVICE:
                self.contexts.append((value.framework, value.device))
                scopes += 1
            if item.optional_vars is not None:
                self.bind(item.optional_vars, value, frame)
        self.body(node.body, frame)
        del self.contexts[len(self.contexts) - scopes:]

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, node: ast.Try, frame: Frame) -> None:
        self.body(node.body, frame)
        for handler in node.handlers:
            self.body(handler.body, frame)
        self.body(node.orelse, frame)
        self.body(node.finalbody, frame)

    stmt_TryStar = stmt_Try

    def stmt_Match(self, node: ast.Match, frame: Frame) -> None:
        self.expr(node.subject, frame)
        for case in node.cases:
            self.body(case.body, frame)

    def bind(self, target: ast.expr, value: Value, frame: Frame) -> None:
        if isinstance(target, ast.Name):
            frame.names[target.id] = value
        elif isinstance(target, ast.Tuple | ast.List):
            items = value.items if value.kind == v.SEQUENCE and len(value.items) == len(target.elts) else None
            for i, element in enumerate(target.elts):
                self.bind(element, items[i] if items else Value(), frame)
        elif isinstance(target, ast.Starred):
            self.bind(target.value, Value(), frame)
        elif isinstance(target, ast.Subscript):
            self.setting(target, value, frame)

    def setting(self, target: ast.Subscript, value: Value, frame: Frame) -> None:
        """`os.environ["JAX_ENABLE_X64"] = "1"` and kin: settings that change dtypes and devices."""
        where = self.expr(target.value, frame)
        key = v.const_of(self.expr(target.slice, frame))
        if where.qual == "os.environ" and isinstance(key, str):
            self.environment(key, v.const_of(value))

    def defaults(self, args: ast.arguments, frame: Frame) -> dict[str, Value]:
        positional = [*args.posonlyargs, *args.args]
        found = {a.arg: self.expr(d, frame) for a, d in zip(positional[len(positional) - len(args.defaults):],
                                                            args.defaults, strict=True)}
        for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            if d is not None:
                found[a.arg] = self.expr(d, frame)
        return found

    # -- regions ------------------------------------------------------------------------------

    def open(self, kind: str, line: int, code: list[ast.stmt], *, repeated: bool = False,
             warms_up: bool = False, clock: str | None = None, samples: bool = False) -> Region:
        # A timing inside a loop that repeats it is repeated, whatever it is on its own.
        region = Region(kind, line, code, repeated=repeated or any(self.loops), warms_up=warms_up,
                        samples=samples, clock=clock, depth=len(self.call_lines), loops=len(self.loops))
        self.active.append(region)
        return region

    def close(self, region: Region) -> None:
        self.active.remove(region)
        self.regions.append(region)

    @contextmanager
    def timing(self, kind: str, line: int, code: list[ast.stmt], *, repeated: bool, warms_up: bool = False,
               clock: str | None = None, samples: bool = False) -> Iterator[Region]:
        region = self.open(kind, line, code, repeated=repeated, warms_up=warms_up, clock=clock, samples=samples)
        try:
            yield region
        finally:
            self.close(region)

    def magic(self, kind: str, options: str, line: int, code: list[ast.stmt], frame: Frame) -> None:
        loops, runs = timeit_counts(options)
        timeit = kind.lstrip("%") == "timeit"
        with self.timing(kind, line, code, repeated=timeit and not (loops == 1 and runs == 1),
                         warms_up=timeit and loops is None):
            self.body(code, frame)

    def clock(self, func: ast.expr, frame: Frame) -> str | None:
        qual = self.qual(func, frame)
        return qual if qual in fw.CLOCKS else None

    def qual(self, node: ast.expr, frame: Frame) -> str | None:
        """The qualified name an expression spells, without walking it: `jnp.dot` -> "jax.numpy.dot"."""
        if isinstance(node, ast.Name):
            value = self.name(node.id, frame)
            return value.qual if value.kind == v.QUAL else None
        if isinstance(node, ast.Attribute):
            base = self.qual(node.value, frame)
            return f"{base}.{node.attr}" if base else None
        return None

    # -- expressions --------------------------------------------------------------------------

    def name(self, name: str, frame: Frame) -> Value:
        found = frame.find(name)
        if found is None:
            found = self.module.names.get(name)
        if found is not None:
            return found
        if name in self.imports:
            return Value(v.QUAL, qual=self.imports[name])
        if name in fw.CONVENTIONAL:
            return Value(v.QUAL, qual=fw.CONVENTIONAL[name])
        if name in _BUILTINS:
            return Value(v.QUAL, qual=f"builtins.{name}")
        return Value(v.UNBOUND)

    def expr(self, node: ast.expr | None, frame: Frame) -> Value:
        if node is None:
            return Value()
        handler = getattr(self, f"expr_{type(node).__name__}", None)
        if handler is not None:
            result: Value = handler(node, frame)
            return result
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.expr):
                self.expr(child, frame)
        return Value()

    def expr_Constant(self, node: ast.Constant, frame: Frame) -> Value:
        return Value(v.CONST, const=node.value)

    def expr_Name(self, node: ast.Name, frame: Frame) -> Value:
        value = self.name(node.id, frame)
        for region in self.active:
            region.names.setdefault(node.id, value)
        return value

    def expr_Attribute(self, node: ast.Attribute, frame: Frame) -> Value:
        base = self.expr(node.value, frame)
        if base.kind == v.QUAL:
            return Value(v.QUAL, qual=f"{base.qual}.{node.attr}")
        if base.kind == v.ARRAY:
            if node.attr in ("shape", "dtype", "ndim", "size", "device", "nbytes", "itemsize", "devices"):
                return Value()
            if node.attr in ("T", "mT", "real", "imag"):
                return self.array_work(node, base.framework or "numpy", [base], ("method", node.attr))
        return Value(v.METHOD, of=base, name=node.attr)

    def expr_Subscript(self, node: ast.Subscript, frame: Frame) -> Value:
        base = self.expr(node.value, frame)
        index = self.expr(node.slice, frame)
        if base.kind == v.ARRAY:
            return self.array_work(node, base.framework or "numpy", [base], ("index", ""))
        if base.kind == v.DEVICE:
            return base
        items, at = base.items, v.const_of(index)
        if base.kind == v.SEQUENCE and isinstance(at, int) and -len(items) <= at < len(items):
            return items[at]
        return Value()

    def expr_Tuple(self, node: ast.Tuple | ast.List, frame: Frame) -> Value:
        return Value(v.SEQUENCE, items=tuple(self.expr(e, frame) for e in node.elts))

    expr_List = expr_Tuple

    def expr_BinOp(self, node: ast.BinOp, frame: Frame) -> Value:
        return self.operate(node, [self.expr(node.left, frame), self.expr(node.right, frame)])

    def expr_UnaryOp(self, node: ast.UnaryOp, frame: Frame) -> Value:
        operand = self.expr(node.operand, frame)
        if isinstance(node.op, ast.Not):
            self.wait_for([operand], node)  # `not x` asks the array for a Python bool
            return Value()
        return self.operate(node, [operand])

    def expr_Compare(self, node: ast.Compare, frame: Frame) -> Value:
        operands = [self.expr(node.left, frame), *(self.expr(c, frame) for c in node.comparators)]
        result = self.operate(node, operands)
        return replace(result, dtype=None) if result.kind == v.ARRAY else Value()

    def expr_IfExp(self, node: ast.IfExp, frame: Frame) -> Value:
        self.expr(node.test, frame)
        return v.join(self.expr(node.body, frame), self.expr(node.orelse, frame))

    def expr_Lambda(self, node: ast.Lambda, frame: Frame) -> Value:
        return Value(v.FUNCTION, function=Function(node, frame, self.defaults(node.args, frame)))

    def expr_NamedExpr(self, node: ast.NamedExpr, frame: Frame) -> Value:
        value = self.expr(node.value, frame)
        self.bind(node.target, value, frame)
        return value

    def expr_JoinedStr(self, node: ast.JoinedStr, frame: Frame) -> Value:
        for part in node.values:
            if isinstance(part, ast.FormattedValue):
                self.wait_for([self.expr(part.value, frame)], part)
        return Value()

    def expr_ListComp(self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp, frame: Frame) -> Value:
        inner = Frame(frame)
        for comp in node.generators:
            self.expr(comp.iter, inner)
            self.bind(comp.target, Value(), inner)
        self.loops.append(all(_repeats_over(comp.iter, comp.target, node) for comp in node.generators))
        for comp in node.generators:
            for test in comp.ifs:
                self.expr(test, inner)
        self.expr(node.elt, inner)
        self.loops.pop()
        return Value()

    expr_SetComp = expr_ListComp
    expr_GeneratorExp = expr_ListComp

    # -- calls --------------------------------------------------------------------------------

    def expr_Call(self, node: ast.Call, frame: Frame) -> Value:
        stopped = self.stops.pop(id(node), None)
        if stopped is not None and stopped in self.active:
            self.close(stopped)
        if isinstance(node.func, ast.Attribute) and _is_ipython_magic(node.func):
            return self.ipython_magic(node, node.func.attr == "run_cell_magic", frame)
        if self.qual(node.func, frame) == "builtins.min" and node.args and isinstance(node.args[0], ast.Call):
            self.discards_first.add(id(node.args[0]))
        func = self.expr(node.func, frame)
        if func.kind == v.QUAL and func.qual in ("timeit.timeit", "timeit.repeat"):
            return self.timeit_call(node, func.qual, frame)
        if func.kind == v.QUAL and func.qual == "timeit.Timer":
            return Value(v.TIMER, node=node)
        args = [self.expr(a, frame) for a in node.args]
        kwargs = {k.arg: self.expr(k.value, frame) for k in node.keywords if k.arg is not None}
        return self.call(func, args, kwargs, node, frame)

    def call(self, func: Value, args: list[Value], kwargs: dict[str, Value], node: ast.Call,
             frame: Frame) -> Value:
        if func.kind == v.QUAL and func.qual:
            return self.call_qual(func.qual, args, kwargs, node)
        if func.kind == v.FUNCTION and func.function is not None:
            return self.follow(func.function, args, kwargs, node.lineno)
        if func.kind == v.COMPILED and func.compiled is not None:
            return self.run_compiled(func.compiled, args, node)
        if func.kind == v.FACTORY and args and args[0].kind in (v.FUNCTION, v.PARTIAL, v.UNKNOWN, v.UNBOUND):
            return self.build_jit(func.qual or "", args[0], node, eager=func.eager)
        if func.kind == v.TRANSFORM:
            arrays = [a for a in args if a.kind == v.ARRAY]
            return self.array_work(node, func.framework or "jax", arrays, ("transform", func.name or ""))
        if func.kind == v.PARTIAL and func.of is not None:
            return self.call(func.of, [*func.items, *args], kwargs, node, frame)
        if func.kind == v.METHOD and func.of is not None and func.name:
            return self.call_method(func.of, func.name, args, kwargs, node, frame)
        return Value()

    def call_method(self, recv: Value, name: str, args: list[Value], kwargs: dict[str, Value], node: ast.Call,
                    frame: Frame) -> Value:
        if recv.kind == v.TIMER and recv.node is not None and name in ("timeit", "repeat", "autorange"):
            return self.timer_method(recv.node, name, node, frame)
        return self.array_method(recv, name, args, kwargs, node)

    def follow(self, function: Function, args: list[Value], kwargs: dict[str, Value], line: int) -> Value:
        """Walk a call into the file's own function, its parameters bound to what the call passes."""
        if len(self.stack) >= MAX_DEPTH or function in self.stack or self.calls >= MAX_CALLS:
            return Value()
        self.calls += 1
        self.walked.add(id(function.node))
        self.emit(CALL, _at(line), detail=function.name)
        frame = Frame(function.scope)
        _bind_parameters(function, args, kwargs, frame)
        self.stack.append(function)
        self.call_lines.append(line)
        self.returns.append([])
        try:
            if isinstance(function.node, ast.Lambda):
                return self.expr(function.node.body, frame)
            self.body(function.node.body, frame)
            returned = self.returns[-1]
            result = returned[0] if returned else Value(v.CONST)
            for other in returned[1:]:
                result = v.join(result, other)
            return result
        finally:
            self.returns.pop()
            self.call_lines.pop()
            self.stack.pop()

    # -- timeit and IPython ---------------------------------------------------------------------

    def timeit_call(self, node: ast.Call, qual: str, frame: Frame) -> Value:
        """`timeit.timeit(stmt, setup, timer, number)` and `timeit.repeat(stmt, setup, timer, repeat, number)`."""
        repeat = qual == "timeit.repeat"
        number = self.argument(node, "number", 4 if repeat else 3, frame, default=1_000_000)
        runs = self.argument(node, "repeat", 3, frame, default=5) if repeat else 1
        return self.timed_call(node, node, frame, number=number, runs=runs,
                               discards_first=repeat and id(node) in self.discards_first)

    def timer_method(self, made: ast.Call, method: str, node: ast.Call, frame: Frame) -> Value:
        """`timeit.Timer(stmt, setup, timer).timeit(number)`, `.repeat(repeat, number)`, `.autorange()`."""
        if method == "autorange":
            return self.timed_call(made, node, frame, number=None, runs=1)
        number = self.argument(node, "number", 1 if method == "repeat" else 0, frame, default=1_000_000)
        runs = self.argument(node, "repeat", 0, frame, default=5) if method == "repeat" else 1
        return self.timed_call(made, node, frame, number=number, runs=runs,
                               discards_first=method == "repeat" and id(node) in self.discards_first)

    def timed_call(self, made: ast.Call, at: ast.Call, frame: Frame, *, number: object, runs: object,
                   discards_first: bool = False) -> Value:
        stmt = self.keyword(made, "stmt", 0)
        setup = self.keyword(made, "setup", 1)
        timer = self.keyword(made, "timer", 2)
        if setup is not None:
            self.run_code(setup, made, frame)
        clock = self.qual(timer, frame) if timer is not None else "time.perf_counter"
        code = _timed_code(stmt, made)
        single = number == 1 and runs == 1
        # The minimum over repeats leaves out the first, compiling one: as if each run were kept.
        with self.timing("timeit", at.lineno, code, repeated=not single, clock=clock,
                         samples=discards_first) as region:
            if stmt is not None:
                self.run_code(stmt, made, frame, region)
        return Value()

    def run_code(self, code: ast.expr, at: ast.Call, frame: Frame, region: Region | None = None) -> None:
        """Run what timeit runs: a string of statements, or a callable called with no arguments."""
        if isinstance(code, ast.Constant) and isinstance(code.value, str):
            self.body(_parse_at(code.value, at.lineno), frame)
            return
        value = self.expr(code, frame)
        if region is not None and isinstance(code, ast.Name):
            region.names[code.id] = value
        self.call(value, [], {}, ast.Call(func=code, args=[], keywords=[], lineno=at.lineno,
                                          col_offset=at.col_offset), frame)

    def argument(self, node: ast.Call, name: str, position: int, frame: Frame, default: int) -> object:
        expr = self.keyword(node, name, position)
        return default if expr is None else v.const_of(self.expr(expr, frame))

    @staticmethod
    def keyword(node: ast.Call, name: str, position: int) -> ast.expr | None:
        for k in node.keywords:
            if k.arg == name:
                return k.value
        return node.args[position] if len(node.args) > position else None

    def ipython_magic(self, node: ast.Call, cell: bool, frame: Frame) -> Value:
        """`get_ipython().run_line_magic("timeit", "f(x)")`: how nbconvert writes a magic into a script."""
        texts = [a.value if isinstance(a, ast.Constant) else None for a in node.args]
        if len(texts) < 2 or not all(isinstance(t, str) for t in texts):
            return Value()
        name, line_text = str(texts[0]), str(texts[1])
        if name not in TIMING_MAGICS:
            if cell and len(texts) > 2:
                self.body(_parse_at(str(texts[2]), node.lineno), frame)
            return Value()
        if cell:
            options = split_options(line_text)[0] if name == "timeit" else ""
            code_text = str(texts[2]) if len(texts) > 2 else ""
        elif name == "timeit":
            options, code_text = split_options(line_text)
        else:
            options, code_text = "", line_text
        self.magic(("%%" if cell else "%") + name, options, node.lineno, _parse_at(code_text, node.lineno), frame)
        return Value()


def _imports(tree: ast.Module) -> dict[str, str]:
    """Every name an import anywhere in the file binds, for code that runs before the import is reached."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.split(".")[0]
                found[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def _magic(node: ast.With | ast.AsyncWith) -> tuple[str, str] | None:
    item = node.items[0].context_expr if len(node.items) == 1 else None
    if (isinstance(item, ast.Call) and isinstance(item.func, ast.Name) and item.func.id == MAGIC
            and len(item.args) == 2 and all(isinstance(a, ast.Constant) for a in item.args)):
        kind, options = (a.value for a in item.args if isinstance(a, ast.Constant))
        return str(kind), str(options)
    return None


def _is_ipython_magic(func: ast.Attribute) -> bool:
    return (func.attr in ("run_line_magic", "run_cell_magic") and isinstance(func.value, ast.Call)
            and isinstance(func.value.func, ast.Name) and func.value.func.id == "get_ipython")


def _at(line: int) -> ast.AST:
    """A node that stands for a line, for an event that has no node of its own."""
    return ast.Pass(lineno=line, col_offset=0)


def _parse_at(text: str, line: int) -> list[ast.stmt]:
    """Code in a string (timeit's stmt, a magic's line), every node placed at `line`."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt | ast.expr):
            node.lineno = line
            node.end_lineno = line
    return tree.body


def _timed_code(stmt: ast.expr | None, at: ast.Call) -> list[ast.stmt]:
    if isinstance(stmt, ast.Lambda):
        return [ast.Expr(stmt.body, lineno=at.lineno, col_offset=0)]
    if isinstance(stmt, ast.Constant) and isinstance(stmt.value, str):
        return _parse_at(stmt.value, at.lineno)
    if isinstance(stmt, ast.expr):
        return [ast.Expr(ast.Call(func=stmt, args=[], keywords=[], lineno=at.lineno, col_offset=0),
                         lineno=at.lineno, col_offset=0)]
    return []


def _bind_parameters(function: Function, args: list[Value], kwargs: dict[str, Value], frame: Frame) -> None:
    params = function.node.args
    positional = [*params.posonlyargs, *params.args]
    for i, param in enumerate(positional):
        value = args[i] if i < len(args) else kwargs.get(param.arg, function.defaults.get(param.arg, Value()))
        frame.names[param.arg] = value
    for param in params.kwonlyargs:
        frame.names[param.arg] = kwargs.get(param.arg, function.defaults.get(param.arg, Value()))
    for extra in (params.vararg, params.kwarg):
        if extra is not None:
            frame.names[extra.arg] = Value()


def _repeats(node: ast.For | ast.AsyncFor) -> bool:
    return _repeats_over(node.iter, node.target, node)


def _repeats_over(iterable: ast.expr, target: ast.expr, scope: ast.AST) -> bool:
    """Whether a loop repeats one computation: `for _ in range(n)` whose index the body does not read
    (a store of the run's own sample, `times[i] = ...`, aside), as opposed to a loop over sizes."""
    if not (isinstance(iterable, ast.Call) and isinstance(iterable.func, ast.Attribute | ast.Name)):
        return False
    called = iterable.func.attr if isinstance(iterable.func, ast.Attribute) else iterable.func.id
    if called not in ("range", "repeat"):
        return False
    if not isinstance(target, ast.Name):
        return False
    stored_at = {id(n) for s in ast.walk(scope) if isinstance(s, ast.Subscript) and isinstance(s.ctx, ast.Store)
                 for n in ast.walk(s.slice)}
    return not any(isinstance(n, ast.Name) and n.id == target.id and isinstance(n.ctx, ast.Load)
                   and id(n) not in stored_at for n in ast.walk(scope) if n is not target)
