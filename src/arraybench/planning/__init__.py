"""Planning: what a run will measure. The run's options, each declared once (`options`: the CLI's flags
and `arraybench.run`'s keywords follow it), settings (each option's default once), the plan of Cases, named
suites, the project's [tool.arraybench] defaults and the refinement that adds sizes where the fastest
backend·mode changes. Runs in the arraybench process; imports no framework. A Case and the device
tokens are nouns every stage shares: `core/`; a user's workload file is loaded where workers load it
too: `workloads/userfile.py`.
"""
