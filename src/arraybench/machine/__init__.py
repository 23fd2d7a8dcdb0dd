"""The machine: what the hardware and software are (`host`), NVIDIA GPUs without a framework (`nvidia`),
which devices each framework sees (the device survey) and an environment's packages. The probe that
starts each backend's worker once to learn its version and settings runs workers: execution/probe.py.
"""
