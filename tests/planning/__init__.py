"""Tests of arraybench.planning (src/arraybench/planning/)."""
