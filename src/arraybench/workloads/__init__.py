"""Workloads: one module per computation, each framework's version side by side (`workload.py` is
what one is); the built-in ones by name and a user's from their file in `catalogue.py`."""

from arraybench.workloads.catalogue import WORKLOADS, blank_record, case_size, get_workload, resolve_workload
from arraybench.workloads.workload import Check, Workload

__all__ = ["WORKLOADS", "Check", "Workload", "blank_record", "case_size", "get_workload", "resolve_workload"]
