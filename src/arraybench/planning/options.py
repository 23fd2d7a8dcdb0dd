"""The options of a run, each declared once: its name, how the command line reads it, its flag, help and
choices, and the `RunSettings` field it makes. `arraybench run`'s parser is made from this table
(cli/run.py), `arraybench.run` takes each as a keyword of the same name (api.py), and `run_settings`
turns the values given into the settings; `tests/planning/test_settings.py` holds the three to it.

An option not given is None (a flag: False) in all of them; the default a run then gets is
`RunSettings`' own (the sampling options': the run's timer, `settings.sampling`), which the help states.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from arraybench.planning.refine import ROUNDS as REFINE_ROUNDS
from arraybench.planning.settings import RunSettings, default_threads, parse_list, parse_params, sampling
from arraybench.planning.suites import SUITES
from arraybench.stats.spells import RECENT_S

# How the command line reads an option's text (cli/arguments.ARGUMENT_TYPES gives each its argparse
# type or action): as it is; a comma-separated list; NAME=VALUE pairs; a number (positive ones
# refused below 1 or 0); a size in bytes such as 2G; a flag; an option given again for each value.
ArgumentType = Literal["text", "list", "params", "int", "float", "positive_int", "positive_float",
                       "memory_size", "flag", "repeated"]

DEFAULTS = RunSettings()


@dataclass(frozen=True)
class Option:
    """One option of a run."""

    name: str  # the keyword of `arraybench.run` and `run_settings`, and the parsed command line's name
    flags: tuple[str, ...]  # on the command line, the first its name there
    type: ArgumentType
    help: str
    setting: str = ""  # the RunSettings field it makes, where not its own name
    metavar: str | None = None
    choices: tuple[str, ...] | None = None
    # False: `arraybench.run` reads it from its positional workloads (names, a .py file, workloads), not
    # from a keyword.
    keyword: bool = True

    @property
    def field(self) -> str:
        """The RunSettings field it makes."""
        return self.setting or self.name

    @property
    def default(self) -> Any:
        """Its value when not given, on the command line and in `arraybench.run`: None (a flag: False),
        which `run_settings` turns into RunSettings' default."""
        return False if self.type == "flag" else None

    def from_text(self, value: Any) -> Any:
        """The value `run_settings` takes, from the command line's (after its argument type)."""
        if value is None:
            return None
        if self.type == "list":
            return parse_list(value)
        if self.type == "params":
            return parse_params(value)
        return value


def sampling_default(name: str, unit: str = "") -> str:
    """The default of the timer option `name` in each kind of run, read from `settings.sampling`
    (what a run really uses), so the help cannot drift from the code."""
    plain, quick, chosen = (getattr(sampling(suite, default, {}), name)
                            for suite, default in ((None, True), ("quick", False), (None, False)))
    if plain == quick == chosen:
        return f"default {plain:g}{unit}"
    if plain == chosen:
        return f"default {quick:g}{unit} with --quick, {plain:g}{unit} otherwise"
    return (f"default {plain:g}{unit} in a plain run or a suite, {quick:g}{unit} with --quick, "
            f"{chosen:g}{unit} with --workloads or --workload-file")


# In the order `arraybench run --help` lists them.
RUN_OPTIONS: tuple[Option, ...] = (
    Option("workloads", ("--workloads",), "list", keyword=False,
           help="comma-separated workload names (default: every built-in workload, or every one "
                "--workload-file defines)"),
    Option("backends", ("--backends",), "list", help="comma-separated backends (default: all)"),
    Option("modes", ("--modes",), "list", help="eager,jit,fd (default: all)"),
    Option("sizes", ("--sizes",), "list",
           help="preset names and/or values of each workload's size parameter (default: each workload's "
                "default presets); or fit:BYTES (e.g. fit:16G): find each backend·mode's largest size whose "
                "memory fits (docs/memory.md)"),
    Option("params", ("--params",), "params", help="override workload parameters, e.g. n=1000,iters=10"),
    Option("dtype", ("--dtype",), "text",
           help=f"float32 or float64 (default {DEFAULTS.dtype}; the seeds suite sets its own)"),
    Option("threads", ("--threads",), "int",
           help=f"threads for every backend (default: the {default_threads()} usable cores; with --cluster "
                "local:N, cores/N)"),
    Option("devices", ("--devices",), "list",
           help="comma-separated devices, each KIND (one device), KIND:N (the first N), KIND:all or KIND:I,J,... "
                "(those ids); KIND is the framework's name: cpu, gpu (or cuda), tpu, ... e.g. cpu,cpu:2,cpu:4 "
                "measures the multi-device workloads' scaling over 1, 2 and 4 forced host devices "
                f"(docs/multi-device.md; default {','.join(DEFAULTS.devices)})"),
    Option("seed", ("--seed",), "int", help=f"seed for inputs and case order (default {DEFAULTS.seed})"),
    Option("timeout", ("--timeout",), "positive_float", help=f"seconds per case (default {DEFAULTS.timeout:g})"),
    Option("min_time", ("--min-time",), "positive_float", setting="timer",
           help=f"seconds of sampling in each process of a case ({sampling_default('min_time', ' s')})"),
    Option("max_time", ("--max-time",), "positive_float", setting="timer",
           help=f"cap on sampling in each process of a case ({sampling_default('max_time', ' s')})"),
    Option("spell_wait", ("--spell-wait",), "float", setting="timer", metavar="SECONDS",
           help="seconds a process may sample past its rule while a slow spell of the host (its reference "
                f"loop timed beside each sample, against the last {RECENT_S:g} s) covers its samples, so that "
                f"enough lie outside it ({sampling_default('spell_wait', ' s')}; 0: stop at the rule; "
                "docs/how-a-number-is-made.md §3)"),
    Option("min_samples", ("--min-samples",), "positive_int", setting="timer",
           help=f"samples in each process of a case at least ({sampling_default('min_samples')})"),
    Option("processes", ("--processes",), "positive_int", setting="timer",
           help=f"fresh worker processes each case is measured in ({sampling_default('processes')}); a case "
                "placed by its first two (far behind the fastest at its size) stops there, an open one goes "
                "on within --budget"),
    Option("refine", ("--refine",), "int", metavar="ROUNDS",
           help="rounds of measuring more sizes where the fastest backend·mode changes between planned sizes, "
                f"until each such crossover is bracketed ≤2× (default {REFINE_ROUNDS}; 0: none)"),
    Option("workload_file", ("--workload-file",), "text", keyword=False,
           help="a Python file defining your own workloads"),
    Option("memory_limit", ("--memory-limit",), "memory_size", help="cap each worker's memory, e.g. 2G"),
    Option("full_check", ("--full-check",), "flag",
           help="check every output element against the float64 reference, even where a cheaper check "
                "applies (matmul from n = 512: Freivalds' test, O(n²) instead of O(n³))"),
    Option("fixed_layout", ("--fixed-layout",), "flag",
           help="one memory layout for every process: no random input offsets or heap and environment pads "
                "(the intervals then leave out what layout moves; the report says so)"),
    Option("envs", ("--env",), "repeated", metavar="NAME:SPEC",
           help="measure the plan in this Python environment too, interleaved with the others in the same "
                "rounds (repeat it): NAME:REQUIREMENTS built with uv and cached (old:jax==0.9.2, "
                "np23:'numpy==2.3.5 numba'), NAME:@PYTHON an interpreter, NAME: this one; then "
                "`compare RUN@OLD RUN@NEW` (docs/environments.md)"),
    Option("env_vars", ("--env-var",), "repeated", setting="envs", metavar="NAME:VAR=VALUE",
           help="set VAR for environment NAME's workers only (repeat it)"),
    Option("budget", ("--budget",), "float", metavar="SECONDS",
           help="seconds of rounds beyond --processes for the cases still undecided (which backend·mode is "
                "fastest at a size, or between --env environments); default: 0.15 times the first two rounds' "
                "time, 4 times with several --env; the rounds up to --processes are not counted in it, and a "
                "pair 2× apart still open may overrun it by half"),
    Option("cache_limit", ("--cache-limit",), "memory_size",
           help="bytes the run's shared inputs and references may hold on disk, in the run's cache/ until it "
                "completes (default 2G)"),
    Option("suite", ("--suite", "--preset"), "text", metavar="SUITE", choices=tuple(sorted(SUITES)),
           help="a named suite: 'seeds' is every configuration of the four source documents, 'quick' the "
                "same as --quick, 'vmap' the loop, vmap and hand-batched forms of the vmap families over "
                "their batch sweep (--preset is the old name)"),
)
OPTIONS_BY_NAME = {o.name: o for o in RUN_OPTIONS}
