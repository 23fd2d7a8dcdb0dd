"""Tests of arraybench.measure (src/arraybench/measure/)."""
