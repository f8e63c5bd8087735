"""Builds rocmtui did not start, from BuildKit's own build history (issue 26).

Builds started by rocm-bake's Makefile, cron, another host or another operator's rocmtui
(plain `docker buildx bake`) are recorded by BuildKit on the node's builder. rocmtui reads
that history with `docker buildx history ls/inspect/logs`, run exactly as its own launches
reach the node (the node's DOCKER_HOST or context, its builder, the ssh wrapper or TLS folder
of `jobs.remote`), and makes each such build a job of its own in the job store, marked
`started elsewhere` (`JobRecord.outside`, an `OutsideBuild`). So the node overlay, stall
detection, log panes, `status` exit codes and metrics cover them as they cover rocmtui's own.

- `record`: `OutsideBuild` (what BuildKit knows of such a build), the data shape consoles read;
- `parse`: history JSON -> sanitised, redacted facts (pure);
- `buildx`: the `docker buildx history ...` commands for one node, each under a deadline;
- `follower`: the detached process that follows one build's output into its job's log and
  records its outcome (`python -m rocmtui.core.history.follower`);
- `discover`: `HistoryWatch`, one `history ls` per node every `interval` seconds, turning new
  records into jobs and starting their followers; the node's `history_note`;
- `rebuild`: `rebuild_plan(config, bake, record)`: the launch rocmtui's own rebuild makes.
"""
