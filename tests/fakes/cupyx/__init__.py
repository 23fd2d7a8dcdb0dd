"""The stand-in CuPy of tests/fakes/cupy has no cupyx of its own to offer: an empty module."""
