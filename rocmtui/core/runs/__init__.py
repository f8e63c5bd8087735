"""Fleet runs: builds started together across the fleet, kept with their builds.

- `schema`: the job store's `runs` and `run_jobs` tables (schema 7);
- `run`: `Run` (what was started, where, and why a node did not start) and `RunBuild`;
- `chart`: the pure view of a run: one lane per node, one bar per build, wall, busy and idle
  time, the chain that set the run's length; `compare` of two runs;
- `book`: `RunBook`, reading and writing runs in the job store, and adopting builds started
  elsewhere by one bake invocation across nodes as runs of their own;
- `launch`: `launch_run`, a target or group on every chosen node at once (`rocmtui run`).

A package's `__init__` imports nothing, so importing one module loads only that module.
"""
