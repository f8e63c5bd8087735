"""Bake jobs that outlive the console: launch, record, follow, cancel, and catch a stall.

Each public name is declared once, in its own module's `__all__`, and imported from there
(this package re-exports nothing: the supervisor, `python -m rocmtui.core.jobs.detach`, imports
this package first, and every millisecond it spends importing is launch latency). The console
and the CLI call:

- `plan`: `resolve_plan(...) -> LaunchPlan` (what a launch does, decided once); `launch`:
  `start_plan(config, plan, yes)` and `launch_job(config, bake, target, ...)`, both `->
  JobRecord`;
- `control`: `list_jobs`, `get_job`, `cancel_job`, `stalled_jobs`, `is_alive`, `job_pids`;
- `logtail`: `follow_job`, `FileTail`; `overlay`: `NodeJobOverlay` (the monitor's
  `building` / `stalled` nodes); `store`: `JobStore`, `JobRecord`;
- `refusals`: `LaunchError`, `LaunchRefused`, `AlreadyRunning`, `ReadOnlyRefused`;
- `checks` (names, arches, nodes, variables), `command` (bake's argv and environment,
  `build_command` for display, `parse_overrides`), `logout` (`logout_risk`).
"""
