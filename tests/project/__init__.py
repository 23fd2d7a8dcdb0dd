"""Tests of the whole repository: runs end to end, fault injection, the docs against the code, packaging, the stages."""
