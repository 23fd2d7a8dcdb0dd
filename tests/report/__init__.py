"""Tests of arraybench.report (src/arraybench/report/)."""
