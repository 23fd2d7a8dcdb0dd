"""Tests of arraybench.site (src/arraybench/site/)."""
