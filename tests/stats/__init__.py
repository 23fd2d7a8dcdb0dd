"""Tests of arraybench.stats (src/arraybench/stats/)."""
