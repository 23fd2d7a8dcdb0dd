"""Tests of arraybench.envs (src/arraybench/envs/)."""
