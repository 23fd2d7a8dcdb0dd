"""Tests of arraybench.execution (src/arraybench/execution/)."""
