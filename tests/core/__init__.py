"""Tests of arraybench.core (src/arraybench/core/)."""
