"""Tests of arraybench.cli (src/arraybench/cli/)."""
