"""Statistics: what a set of measured processes says, kept apart from how it was measured or shown.

Everything here is a pure function of numbers (log medians, standard errors, degrees of freedom,
a clock passed in), so it is tested on synthetic data whose answer is known, and none of it
imports SciPy: the stop rule runs in the parent process of a run, which does not need it.
`measurement` is a case's samples over its processes and their interval, `pooling` the spread
between processes pooled over a run, `bracket` the test every claim of the report goes through
(do two cases' intervals separate?) and the bracketing of crossovers; `student` is Student's t
and the interval of a log ratio; `verdicts` the rule that turns an
interval into faster / slower / same / too noisy; `paired` the ratio of two environments measured
in the same rounds; `power` the smallest change a comparison could have seen; `sequential` when
an undecided case has been measured enough.
"""
