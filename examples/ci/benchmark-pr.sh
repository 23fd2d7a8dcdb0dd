#!/usr/bin/env bash
# Did this pull request slow the package down? Benchmark its commit against the base branch's in one
# arraybench run (each case's two processes side by side in the same rounds, compared round by round),
# and fail on a slowdown beyond the noise and the threshold. docs/own-package.md tells the whole story.
#
#   benchmark-pr.sh BASE_REF [PR_REF] [-- ARRAYBENCH_RUN_OPTIONS...]
#
# Run it at the top of the package's repository, both commits fetched and the tracked files clean: each
# side is built from its commit's files (--env base:git:BASE_REF --env pr:git:PR_REF; PR_REF: HEAD).
# What follows -- goes to `arraybench run` (e.g. --backends numpy --sizes small), except --output-dir.
#   ARRAYBENCH_WORKLOADS  the workload file (default benchmarks/bench.py)
#   ARRAYBENCH_FAIL_ON    a slowdown beyond the noise fails when it is larger than this (default 10%)
#   ARRAYBENCH            the arraybench command (default arraybench)
# The comparison in Markdown goes to benchmark_results/latest/compare.md and, on GitHub Actions, to the
# job summary. Exit: 0 no slowdown; 1 a case slower beyond the noise and the threshold, broken or
# failed; 2 bad input (a ref that does not exist, uncommitted changes to HEAD's files, ...).
set -euo pipefail

usage="usage: benchmark-pr.sh BASE_REF [PR_REF] [-- ARRAYBENCH_RUN_OPTIONS...]"
if [ $# -lt 1 ] || [ "$1" = "--" ]; then echo "$usage" >&2; exit 2; fi
base=$1
shift
pr=HEAD
if [ $# -gt 0 ] && [ "$1" != "--" ]; then pr=$1; shift; fi
if [ $# -gt 0 ]; then shift; fi  # the --
read -r -a arraybench <<< "${ARRAYBENCH:-arraybench}"
workloads=${ARRAYBENCH_WORKLOADS:-benchmarks/bench.py}
fail_on=${ARRAYBENCH_FAIL_ON:-10%}

# A run exits 1 when a case failed: its comparison still says which, and as what (broken).
ran=0
"${arraybench[@]}" run --workload-file "$workloads" --env "base:git:$base" --env "pr:git:$pr" --no-store "$@" \
    || ran=$?
if [ "$ran" -ne 0 ] && [ "$ran" -ne 1 ]; then exit "$ran"; fi

run=benchmark_results/latest
compared=0
"${arraybench[@]}" compare "$run@base" "$run@pr" --fail-on-slowdown "$fail_on" -o "$run/compare.md" \
    || compared=$?
if [ -n "${GITHUB_STEP_SUMMARY:-}" ] && [ -f "$run/compare.md" ]; then
    cat "$run/compare.md" >> "$GITHUB_STEP_SUMMARY"
fi
if [ "$compared" -ne 0 ]; then exit "$compared"; fi
exit "$ran"
