"""Tests of arraybench.machine (src/arraybench/machine/)."""
