"""The machine: what the hardware and software are (environment), NVIDIA GPUs without a framework,
which devices each framework sees (the device survey), and the probe that starts each backend's
worker once to learn its version and settings.
"""
