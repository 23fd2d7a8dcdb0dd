"""Tests of arraybench.store (src/arraybench/store/)."""
