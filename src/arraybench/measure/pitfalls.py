"""Pitfalls: turns a framework's failure on code it cannot run into a reason in plain words.

Document 004 lists what breaks code written once for every framework: in-place assignment on
immutable arrays, shapes that depend on values, Python `if` on a value under a tracing JIT,
and operations a namespace lacks. Each is a property of the framework, not a bug in the user's
code, so the case is `unsupported` with this reason and the run goes on.
"""

from __future__ import annotations

import re

FRAMEWORK = {"jax": "JAX", "tensorflow": "TensorFlow", "torch": "PyTorch", "numpy": "NumPy",
             "numba": "Numba", "cupy": "CuPy"}
JIT = {"jax": "jax.jit", "tensorflow": "tf.function", "torch": "torch.compile"}

_MODULE_LACKS = re.compile(r"module '([\w.]+)' has no attribute '(\w+)'")
_OBJECT_LACKS = re.compile(r"'?([\w.]+)'? object has no attribute '(\w+)'")


def _namespace(module: str) -> str:
    return module.replace("tensorflow._api.v2.", "tf.").replace("array_api_compat.", "")


def explain(error: BaseException, backend: str) -> str | None:
    """The plain reason `backend` cannot run the code that raised `error`, or None.

    None means the failure is not a known limit of the framework: the case stays an error.
    """
    kinds = {cls.__name__ for cls in type(error).__mro__}
    text = str(error)
    who = FRAMEWORK.get(backend, backend)
    jit = JIT.get(backend, f"{backend}'s JIT")

    if isinstance(error, TypeError) and ("item assignment" in text or "arrays are immutable" in text):
        fix = "use x = x.at[i].set(v)" if backend == "jax" else "compute a new array instead (e.g. xp.where)"
        return f"{who} arrays are immutable: x[i] = v is not allowed; {fix}"
    if "NonConcreteBooleanIndexError" in kinds:
        return (f"under {jit} an array's shape cannot depend on its values (x[x < 0] does); "
                "keep the shape fixed, e.g. xp.where(x < 0, x, 0)")
    if kinds & {"TracerBoolConversionError", "OperatorNotAllowedInGraphError"}:
        return (f"under {jit} a Python if/while cannot test an array's value (it is not known while "
                "the function is traced); use xp.where, or write a per-backend override")
    if kinds & {"ConcretizationTypeError", "TracerIntegerConversionError"} or (
            isinstance(error, TypeError) and "concrete values" in text):
        return (f"under {jit} a value Python needs at once (a shape, a loop count, an index) was "
                "computed from array data; derive it from shapes or parameters instead")
    if "Unsupported" in kinds and backend == "torch":
        return f"torch.compile cannot trace this code: {_first_line(text)}"
    if isinstance(error, AttributeError):
        if m := _MODULE_LACKS.search(text):
            return f"{who}'s array namespace ({_namespace(m[1])}) has no {m[2]!r}"
        if m := _OBJECT_LACKS.search(text):
            return f"{who} arrays ({m[1]}) have no attribute {m[2]!r}"
    if isinstance(error, NotImplementedError):
        return f"{who} does not implement this: {_first_line(text)}"
    return None


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[0] if lines else ""
