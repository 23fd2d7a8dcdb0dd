"""Tests of arraybench.output (src/arraybench/output/)."""
