"""Tests of arraybench.comparison (src/arraybench/comparison/)."""
