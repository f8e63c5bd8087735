"""What a job's log and its processes say: the failed step's name and why it failed, and stall
evidence.

Only the tail of a log is read (a PyTorch log runs to hundreds of MB). The step names come from
the progress parser (`rocmtui.core.progress.tracker`) fed that tail; BuildKit's closing summary
(` > [stage 3/4] RUN ...:`) is the fallback when the step began before the tail. Text taken
from the log is sanitised and shortened before it is stored or shown.

Stall evidence separates a hung build from a quiet-but-busy one: how long the log has been
silent, which BuildKit step is still open, the CPU the local engine's process tree is using
(a RUN step's processes are children of the engine), for a node with a named builder
whether buildx reports it running, and whether BuildKit clipped the open step's output: past its
step log limit (2 MiB by default, dockerd's `BUILDKIT_STEP_LOG_MAX_SIZE`) BuildKit passes no more
of a step's output, so a compile that goes on for hours is silent in every log.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import psutil

from rocmtui.core.config.fleetfile import NodeConfig
from rocmtui.core.text.sanitize import sanitize_line
from rocmtui.core.text.units import fmt_age

if TYPE_CHECKING:
    from rocmtui.core.jobs.record import JobRecord
    from rocmtui.core.verdicts.failure import FailureWhy

TAIL_BYTES = 4 * 1024 * 1024
MAX_STEP_TEXT = 160
BUSY_CPU = 25.0  # percent of one core for the engine's process tree to count as busy
_SUMMARY_RE = re.compile(r"^ > (\[[^\]]+\] .*?):?\s*$")
_STEP_HEAD_RE = re.compile(r"^#(\d+) (\[[^\]]+\] .*)$")
_STEP_ERROR_RE = re.compile(r"^#(\d+) ERROR")
_STEP_END_RE = re.compile(r"^#(\d+) (DONE|CACHED|ERROR|CANCELED)")
# BuildKit's own words when a step's output passes its size limit (units.BytesSize: "2MiB");
# the rate limit's "200KiB/s" drops lines for a moment and is not matched
_CLIPPED_RE = re.compile(
    r"^#(\d+) (?:\d+\.\d+ )?\[output clipped, log limit ([0-9.]+[KMGT]?i?B) reached\]"
)


def _clean(text: str) -> str:
    """One safe, short line of display text from log content."""
    text = " ".join(sanitize_line(text).split())
    return text if len(text) <= MAX_STEP_TEXT else text[: MAX_STEP_TEXT - 1] + "…"


def read_tail(path: Path, limit: int = TAIL_BYTES) -> tuple[list[str], float | None]:
    """The last `limit` bytes of a log as lines (the first, probably cut, line dropped when the
    read did not start at 0), and the file's mtime."""
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            mtime = os.fstat(fh.fileno()).st_mtime
            start = max(0, size - limit)
            fh.seek(start)
            data = fh.read(limit)
    except OSError:
        return [], None
    lines = data.decode("utf-8", "replace").splitlines()
    if start > 0 and lines:
        lines = lines[1:]
    return lines, mtime


def _tracker_snapshot(lines: list[str], now: float) -> Any | None:
    """Feed lines to the project's progress parser; None if it is unavailable or fails."""
    try:
        # on first use: kept off `status`
        from rocmtui.core.progress.tracker import ProgressTracker
    except ImportError:  # pragma: no cover
        return None
    try:
        tracker = ProgressTracker()
        for line in lines:
            tracker.feed_line(line, now)
        return tracker.snapshot()
    except Exception:  # a parser bug must not stop a job being recorded
        return None


def _step_text(value: Any) -> str | None:
    """A step (or its name) from the progress model as display text."""
    if value is None:
        return None
    if isinstance(value, str):
        return value or None
    for attr in ("name", "title", "label"):
        name = getattr(value, attr, None)
        if isinstance(name, str) and name:
            return name
    return str(value)


def error_step_of(log_path: Path, dropped: bytes = b"") -> str | None:
    """The name of the build step that failed, from the log's tail (or, for a log that
    stopped holding lines, from `dropped`, the end of the output it could not keep); None
    when not found."""
    if dropped:
        lines = dropped.decode("utf-8", "replace").splitlines()[1:]  # the first: cut
    else:
        lines, _ = read_tail(log_path)
    snap = _tracker_snapshot(lines, time.time())
    name = _step_text(getattr(snap, "error_step", None)) if snap is not None else None
    if name:
        return _clean(name)
    heads: dict[str, str] = {}
    failed: str | None = None
    summary: str | None = None
    for line in lines:
        head = _STEP_HEAD_RE.match(line)
        if head:
            heads[head.group(1)] = head.group(2)
        err = _STEP_ERROR_RE.match(line)
        if err:
            failed = err.group(1)
        summ = _SUMMARY_RE.match(line)
        if summ and summary is None:
            summary = summ.group(1)
    if failed and failed in heads:
        return _clean(heads[failed])
    if summary:
        return _clean(summary)
    return None


def open_step_of(lines: list[str]) -> str | None:
    """The BuildKit step still running at the end of these lines (parser first)."""
    snap = _tracker_snapshot(lines, time.time())
    if snap is not None:
        name = _step_text(getattr(snap, "current", None))
        if name:
            return _clean(name)
    open_steps: dict[str, str] = {}
    for line in lines:
        head = _STEP_HEAD_RE.match(line)
        if head:
            open_steps[head.group(1)] = head.group(2)
            continue
        m = _STEP_END_RE.match(line)
        if m:
            open_steps.pop(m.group(1), None)
    if open_steps:
        return _clean(list(open_steps.values())[-1])
    return None


def clipped_limit(lines: list[str]) -> str | None:
    """BuildKit's size limit ("2MiB") when it clipped the output of a step not yet ended in
    these lines, else None."""
    clipped: dict[str, str] = {}
    for line in lines:
        m = _CLIPPED_RE.match(line)
        if m:
            clipped[m.group(1)] = m.group(2)
            continue
        end = _STEP_END_RE.match(line)
        if end:
            clipped.pop(end.group(1), None)
    return list(clipped.values())[-1] if clipped else None


def engine_pid(node: NodeConfig) -> int | None:
    """The dockerd serving a local node's unix socket (matched on its command line)."""
    host = node.docker_host or "unix:///var/run/docker.sock"
    if not host.startswith("unix://"):
        return None
    sock = host[len("unix://") :]
    default = sock in ("/var/run/docker.sock", "/run/docker.sock")
    for proc in psutil.process_iter(["name", "cmdline"]):
        try:
            if proc.info["name"] != "dockerd":
                continue
            cmd = " ".join(proc.info["cmdline"] or [])
        except (psutil.Error, TypeError):
            continue
        if sock in cmd or (default and "-H" not in cmd and "--host" not in cmd):
            return int(proc.pid)
    return None


def tree_cpu_percent(pid: int, interval: float = 0.5) -> float | None:
    """CPU use (100 = one core) of `pid` and all its descendants over `interval` seconds."""

    def total() -> float | None:
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return None
        busy = 0.0
        for proc in procs:
            try:
                times = proc.cpu_times()
            except psutil.Error:
                continue
            busy += times.user + times.system
        return busy

    before = total()
    start = time.monotonic()
    time.sleep(interval)
    after = total()
    if before is None or after is None:
        return None
    # processes that ended in between take their time with them: never report below zero
    return max(0.0, (after - before) / (time.monotonic() - start) * 100.0)


def builder_status(node: NodeConfig, env: Mapping[str, str], timeout: float = 5.0) -> str | None:
    """buildx's status word for the node's named builder (e.g. "running"), or None."""
    if not node.builder:
        return None
    child_env = dict(env)
    if node.docker_host:
        child_env["DOCKER_HOST"] = node.docker_host
        child_env.pop("DOCKER_CONTEXT", None)
    elif node.context:
        child_env["DOCKER_CONTEXT"] = node.context
        child_env.pop("DOCKER_HOST", None)
    try:
        out = subprocess.run(
            ["docker", "buildx", "inspect", "--", node.builder],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=child_env,
            stdin=subprocess.DEVNULL,
            check=False,
        ).stdout
    except (OSError, subprocess.TimeoutExpired):
        return "no answer"
    for line in out.splitlines():
        if line.strip().lower().startswith("status:"):
            return _clean(line.split(":", 1)[1].strip())
    return None


def stall_evidence(
    log_path: Path,
    silent_for: float,
    node: NodeConfig | None,
    env: Mapping[str, str] | None = None,
    cpu_interval: float = 0.5,
    sample_cpu: bool = True,
) -> str:
    """One short line of evidence for a silent job, e.g.
    "silent 16m00s; step [demo-vllm 2/2] RUN fake-compile still open; engine busy 180% CPU".
    `sample_cpu=False` leaves out the local engine's CPU sample (a stall verdict reads the
    node's vitals instead)."""
    parts = [f"silent {fmt_age(silent_for)}"]
    lines, _ = read_tail(log_path, 256 * 1024)
    step = open_step_of(lines)
    if step:
        step = step if len(step) <= 60 else step[:59] + "…"
        parts.append(f"step {step} still open")
    limit = clipped_limit(lines)
    if limit:
        parts.append(f"BuildKit clipped its output at {limit}: silence expected")
    if sample_cpu and node is not None and node.local:
        pid = engine_pid(node)
        cpu = tree_cpu_percent(pid, cpu_interval) if pid else None
        if cpu is None:
            parts.append("engine process not found")
        else:
            # an idle dockerd ticks along at a few percent; a compile keeps cores busy
            parts.append(f"engine {'busy' if cpu >= BUSY_CPU else 'idle'} {cpu:.0f}% CPU")
    if node is not None and node.builder:
        status = builder_status(node, os.environ if env is None else env)
        if status:
            parts.append(f"builder {node.builder} {status}")
    return "; ".join(parts)


#: A failed build's reasons are in its log's last lines (BuildKit's closing summary and
#: bake's error): this much of the end is read, however long the log.
FAILURE_TAIL_BYTES = 64 * 1024


def failure_of(record: JobRecord) -> FailureWhy | None:
    """Why a failed job failed and what to do next (`verdicts.failure.explain`), from its
    record and its log's last `FAILURE_TAIL_BYTES`; None for a job that did not fail. The
    record's own message (a link that broke, a full state disk) is read with the log."""
    # on first use: kept off `status`
    from rocmtui.core.states import JobState
    from rocmtui.core.verdicts.failure import explain, tail_text

    if record.state is not JobState.FAILED:
        return None
    lines, _ = read_tail(record.log_path, FAILURE_TAIL_BYTES)
    text = tail_text(lines)
    if record.message:
        text.append(record.message)
    return explain(text, record.exit_code, record.node)
