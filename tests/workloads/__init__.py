"""Tests of arraybench.workloads (src/arraybench/workloads/)."""
