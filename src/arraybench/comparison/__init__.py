"""Compare: two runs case by case — ratio with its uncertainty, significance, verdict, CI exit code.

`matching` pairs the cases of two runs, picks the earlier runs that count as their history and
lists the settings and facts of the machine in which they differ; `outcome` is what a comparison
found (CaseComparison, Comparison) and the text or Markdown table it reads as (render); `cases`
makes it (`compare`: each case's verdict after the correction across cases, and its memory:
`memory_change`); `rendering` shows it as JSON or CSV (render_as) and says when two runs are not like for
like. The statistics they use are in stats/: stats/two_sample.py (ratio, interval, p-value,
Benjamini–Hochberg) and stats/between_runs.py (the spread between runs of one machine).
"""

from arraybench.comparison.cases import (
    compare,
    compare_cases,
    spelled,
    verdict_note,
    with_memory,
)
from arraybench.comparison.matching import (
    COMPARABLE_SETTINGS,
    MAX_EARLIER_RUNS,
    MEASURED_INFO,
    backend_infos,
    case_label,
    counts_as_history,
    different_settings,
    earlier_measurements,
    environment_differences,
    environment_side,
    flatten,
    like_for_like,
    match_key,
    package_sides,
    row_label,
    unordered,
)
from arraybench.comparison.outcome import (
    BROKEN,
    CASE_HEADER,
    GEO_HEADER,
    MIN_SPREAD_DF,
    NOT_COMPARED,
    RUN_MARK,
    VERDICTS,
    CaseComparison,
    Comparison,
    history_line,
    render,
    summary,
)
from arraybench.comparison.rendering import case_rows, headline, render_as
from arraybench.results.reading import paired_prior_of
from arraybench.stats.between_runs import MIN_EARLIER_RUNS, RunSpread, log_point, run_spread
from arraybench.stats.two_sample import (
    DEFAULT_THRESHOLD,
    SampleComparison,
    adjust,
    compare_paired,
    compare_samples,
    log_ratio_error,
    ratio_test,
    scipy_stats,
)
from arraybench.stats.verdicts import ALPHA, FASTER, NOISY, SAME, SLOWER

__all__ = [
    "ALPHA",
    "BROKEN",
    "CASE_HEADER",
    "COMPARABLE_SETTINGS",
    "DEFAULT_THRESHOLD",
    "FASTER",
    "GEO_HEADER",
    "MAX_EARLIER_RUNS",
    "MEASURED_INFO",
    "MIN_EARLIER_RUNS",
    "MIN_SPREAD_DF",
    "NOISY",
    "NOT_COMPARED",
    "RUN_MARK",
    "SAME",
    "SLOWER",
    "VERDICTS",
    "CaseComparison",
    "Comparison",
    "RunSpread",
    "SampleComparison",
    "adjust",
    "backend_infos",
    "case_label",
    "case_rows",
    "compare",
    "compare_cases",
    "compare_paired",
    "compare_samples",
    "counts_as_history",
    "different_settings",
    "earlier_measurements",
    "environment_differences",
    "environment_side",
    "flatten",
    "headline",
    "history_line",
    "like_for_like",
    "log_point",
    "log_ratio_error",
    "match_key",
    "package_sides",
    "paired_prior_of",
    "ratio_test",
    "render",
    "render_as",
    "row_label",
    "run_spread",
    "scipy_stats",
    "spelled",
    "summary",
    "unordered",
    "verdict_note",
    "with_memory",
]
