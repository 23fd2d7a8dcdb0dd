"""Measuring, inside a worker process: the Timer, the case executor (inputs, transfer, build, time,
check), the run's case and compile caches, the host-speed references, peaks, floors, the worker's
limits (its CPUs and memory), and the plain-words reasons for a framework's failures.
"""
