"""Tests of arraybench.lint (src/arraybench/lint/)."""
