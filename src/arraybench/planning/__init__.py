"""Planning: what a run will measure. Settings (each option's default once), the plan of Cases, named
suites, user workload files, the project's [tool.arraybench] defaults and the
refinement that adds sizes where the fastest backend·mode changes. Runs in the arraybench process;
imports no framework. A Case and the device tokens are nouns every stage shares: `core/`.
"""
