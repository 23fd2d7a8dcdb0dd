"""The run layer: one module per process it runs in (each module's first line says which).

Imports nothing: `python -m arraybench.execution.child` imports this package first, and the child
must set its environment and CPU affinity before any framework (NumPy included) is imported.
(Not named `run`: a subpackage `arraybench.run` would replace the function `arraybench.run()`.)
"""
