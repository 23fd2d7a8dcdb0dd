"""Tests of arraybench.results (src/arraybench/results/)."""
