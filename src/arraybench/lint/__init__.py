"""`arraybench lint`: finds the timing mistakes of a hand-written benchmark, by reading its code.

A script or notebook is read (`source`), walked as it would run without running it (`walk`),
each timing in it (a pair of clock reads, `timeit`, `%timeit`, `%%time`...) recorded with what
its code does (`regions`), and every rule (`rules`) says where that makes the number wrong, why,
and how to fix it (`check`). Where it can, the timed computation is written out as arraybench
`@workload`s (`workload_writer`), which `arraybench run --workload-file` measures honestly. Only the
standard library is used: linting imports no framework and never runs the user's code.
"""

from arraybench.lint.check import Checked, Finding, as_json, as_text, check_file, summary
from arraybench.lint.rules import RULES, Rule

__all__ = ["RULES", "Checked", "Finding", "Rule", "as_json", "as_text", "check_file", "summary"]
