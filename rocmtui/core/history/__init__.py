"""Builds rocmtui did not start, from BuildKit's own build history.

Builds started by rocm-bake's Makefile, cron, another host or another operator's rocmtui
(plain `docker buildx bake`) are recorded by BuildKit on the node's builder. rocmtui reads
that history with `docker buildx history ls/inspect/logs`, run exactly as its own launches
reach the node (the node's DOCKER_HOST or context, its builder, the ssh wrapper or TLS folder
of `jobs.remote`), and makes each such build a job of its own in the job store, marked
`started elsewhere` (`JobRecord.outside`, an `OutsideBuild`). So the node overlay, stall
detection, log panes, `status` exit codes and metrics cover them as they cover rocmtui's own.

- `outside`: `OutsideBuild` (what BuildKit knows of such a build), the data shape consoles read;
- `parse`: history JSON -> sanitised, redacted facts (pure);
- `buildx`: the `docker buildx history ...` commands for one node, each under a deadline;
- `outsidefollower`: the detached process that follows one build's output into its job's log and
  records its outcome (`python -m rocmtui.core.history.outsidefollower`);
- `discover`: `HistoryWatch`, one `history ls` per node every `interval` seconds, turning new
  records into jobs and starting their followers; the node's `history_note`;
- `rebuild`: `rebuild_plan(config, bake, record)`: the launch rocmtui's own rebuild makes.

For the console (what it reads; nothing here imports Textual):

- a job started elsewhere is an ordinary `JobRecord` from `jobs.control.list_jobs` /
  `get_job`, with `record.started_elsewhere` True and `record.outside` an `OutsideBuild`
  (`name`, `target`, `build_args` already sanitised and redacted, `vcs_revision`, step counts,
  `cached_percent`, `error`, `client`, `follow_note`); `user`/`host`/`command` are empty and
  its log (`record.log_path`) is written by its follower like any job's;
- node rows: `NodeSnapshot.history_note` (one line, or None) says when builds started
  elsewhere are not visible on that node, and why;
- `c`: `jobs.control.cancel_job` raises `jobs.control.StartedElsewhere` for such a job; its
  message says only the client that started it can cancel it (and names it when known);
- `r`: `history.rebuild.rebuild_request(record, bake)` -> `RebuildRequest(target, arch, node,
  push, overrides, left_out)`, the fields of the bake dialog's `BakeRequest` (for any job:
  rocmtui's own gives back exactly what it built);
- the matrix: `CellJob.started_elsewhere`, `CellJob.cached_percent`, `CellJob.last_built()`.
"""
