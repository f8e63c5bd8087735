"""The detached process that follows one build started elsewhere.

Started by `spawn_follower` (below; discovery calls it) as `python -S -P -m
rocmtui.core.history.outsidefollower ...` in a new session, stdin /dev/null, stdout and stderr
appended to the job's log; its first process forks and exits (as `jobs.detach` does for a
supervisor), so whoever started it never waits and never collects a zombie. The child takes the
job's lock (`jobs/<id>/lock`) without waiting and exits at once when another follower holds it:
one follower per build on the host, whoever discovered it. Holding the lock is what makes the
job read `running` (and `stalled` after `stall_after_seconds` of log silence), exactly as a
supervisor's lock does.

It copies `docker buildx history logs --progress plain REF` (which follows a running build
and replays a finished one; plain is the same progress format rocmtui's own bake runs write)
into the log through `jobs.logwriter.LogWriter`, under the same environment the node's probes
and launches use (the caller's, with the stream client's Go runtime made lean: `STREAM_GO_ENV`).
While the stream is silent it asks `history inspect` every `CHECK_SILENT` seconds, so a stream
that hangs after the build ended never holds it. When the stream ends, `history inspect` gives
the outcome (completed -> succeeded; error -> failed, or cancelled when BuildKit says so) and the
duration; then the build's steps are read once (`stepstore.keep_after_build`) and kept. A
stream that dies while BuildKit still says `running` is followed again, with backoff; an
engine that stops answering for `--gone-after` seconds, or a record BuildKit no longer has (an
engine restarted mid-build loses it), ends the job `lost` with the reason.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import select
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

# Every rocmtui import is in the function that needs it: this module starts as `python -S`
# (no site-packages, so no msgspec, until `run_detached` turns site on): its top imports the
# standard library only.
if TYPE_CHECKING:
    from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
    from rocmtui.core.jobs.record import JobRecord

CHUNK = 1 << 16
CHECK_SILENT = 60.0  # seconds of stream silence before asking inspect whether it still runs
RETRY_FIRST = 1.0
RETRY_MAX = 30.0
#: The stream client's Go runtime: one thread and a collector that runs half as often. It only
#: decodes BuildKit's progress stream and prints it, on the console host beside whatever else
#: runs there; at 6.7k lines/s this takes ~20% less CPU than Go's defaults (bench/RESULTS.md)
#: for ~6 MB more memory. A value the caller's environment sets wins.
STREAM_GO_ENV = (("GOMAXPROCS", "1"), ("GOGC", "200"))


def _parse(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="rocmtui.core.history.outsidefollower")
    parser.add_argument("--store", required=True, help="the state folder")
    parser.add_argument("--job", required=True, help="the job id")
    parser.add_argument("--ref", required=True, help="BuildKit's history record id")
    parser.add_argument("--builder", default=None, help="the node's buildx builder")
    parser.add_argument("--docker", default="docker", help="the docker CLI")
    parser.add_argument("--gone-after", type=float, default=120.0, help="seconds unanswered")
    parser.add_argument("--check-silent", type=float, default=CHECK_SILENT)
    return parser.parse_args(argv)


def spawn_follower(
    config: FleetConfig, node: NodeConfig, record: JobRecord, env: Mapping[str, str]
) -> None:
    """Start the build's follower (this module, with the arguments `_parse` reads), detached;
    returns once its first process has forked (a few ms)."""
    import rocmtui
    from rocmtui.core.history.buildx import docker_cli

    assert record.buildkit_ref
    store_root = Path(record.job_dir).parent.parent
    command = [sys.executable, "-S", "-P", "-m", "rocmtui.core.history.outsidefollower"]
    command += ["--store", str(store_root), "--job", record.id, "--ref", record.buildkit_ref]
    docker = docker_cli(env.get("PATH"))
    command += ["--docker", docker, "--gone-after", str(config.link_timeout_seconds)]
    if node.builder:
        command += ["--builder", node.builder]
    child_env = {**env, "PYTHONPATH": str(Path(rocmtui.__file__).resolve().parent.parent)}
    from rocmtui.core.sharing import open_file, sharing_of

    flags = os.O_WRONLY | os.O_APPEND | os.O_CLOEXEC | os.O_NOFOLLOW
    fd = open_file(record.log_path, flags, sharing_of(store_root).file_mode)
    try:
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            start_new_session=True,
            env=child_env,
            cwd="/",
        )
    finally:
        os.close(fd)
    try:
        proc.wait(10.0)
    except subprocess.TimeoutExpired:
        logging.getLogger(__name__).warning(
            "follower of %s did not detach: %s", record.id, shlex.join(command)
        )


class Follower:
    """Follows one build's output into the log on fd 1 and records its end."""

    def __init__(self, args: argparse.Namespace, env: Mapping[str, str]) -> None:
        from rocmtui.core.jobs.logwriter import LogWriter
        from rocmtui.core.jobs.store import JobStore

        self.args = args
        self.env = dict(env)
        self.env.pop("PYTHONPATH", None)
        self.store = JobStore(Path(args.store))
        self.log = LogWriter(1)
        self.stopping = False
        self.proc: subprocess.Popen[bytes] | None = None

    def argv(self, sub: str, *rest: str) -> list[str]:
        """`docker buildx history SUB [--builder B] REST...`."""
        argv = [self.args.docker, "buildx", "history", sub]
        if self.args.builder:
            argv += ["--builder", self.args.builder]
        return [*argv, *rest]

    def inspect(self) -> tuple[dict[str, Any] | None, str | None]:
        """(inspect's object, None) or (None, why it gave none)."""
        from rocmtui.core.history.buildx import INSPECT_TIMEOUT, run_history
        from rocmtui.core.history.parse import parse_inspect

        answer = run_history(
            self.argv("inspect", "--format", "json", self.args.ref), self.env, INSPECT_TIMEOUT
        )
        if answer.error is not None:
            return None, answer.error
        data = parse_inspect(answer.stdout)
        return (data, None) if data is not None else (None, "inspect printed no JSON object")

    def stream(self) -> str:
        """Copy `history logs` into the log until it ends; 'ended', or 'finished' when inspect
        (asked during a silence) says the build is over, or 'stopped' on our SIGTERM."""
        self.proc = subprocess.Popen(
            self.argv("logs", "--progress", "plain", self.args.ref),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env={**dict(STREAM_GO_ENV), **self.env},
            start_new_session=True,
        )
        out = self.proc.stdout
        assert out is not None
        fd = out.fileno()
        last = time.monotonic()
        try:
            while not self.stopping:
                ready, _, _ = select.select([fd], [], [], 1.0)
                if ready:
                    try:
                        data = os.read(fd, CHUNK)
                    except InterruptedError:
                        continue
                    if not data:
                        return "ended"
                    self.log.write(data)
                    last = time.monotonic()
                    continue
                if time.monotonic() - last >= self.args.check_silent:
                    last = time.monotonic()
                    data_, _ = self.inspect()
                    if data_ is not None and str(data_.get("Status", "")).lower() != "running":
                        return "finished"
            return "stopped"
        finally:
            self._end_stream()

    def _end_stream(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            proc.wait(5.0)
        if proc.stdout is not None:
            proc.stdout.close()
        self.proc = None

    def keep_steps(self, job_id: str) -> None:
        """With the outcome recorded: keep the build's steps for its timeline before BuildKit
        forgets the record (said in the log only when it cannot)."""
        from rocmtui.core.history.stepstore import keep_after_build

        try:
            record = self.store.get(job_id)
        except Exception:
            return
        said = keep_after_build(self.store, record, self.env, self.args.builder)
        if said.startswith("steps not kept"):
            self.log.note(said)

    def run(self) -> int:
        """Follow, then record the outcome (see the module doc)."""
        from rocmtui.core.history.parse import finished_state, outside_build
        from rocmtui.core.retry import backoff
        from rocmtui.core.states import JobState
        from rocmtui.core.text.units import fmt_age

        failures = 0
        unanswered_since: float | None = None
        while True:
            how = self.stream() if not self.stopping else "stopped"
            if how == "stopped":
                self.log.note("follower stopped; the build goes on where it runs")
                return 0
            data, why = self.inspect()
            now = time.time()
            record = self.store.get(self.args.job)
            if data is None:
                gone = why is not None and "no record found" in why
                unanswered_since = unanswered_since or now
                if gone or now - unanswered_since >= self.args.gone_after:
                    message = (
                        "BuildKit no longer has this build's record (its engine restarted or "
                        "collected it)"
                        if gone
                        else f"its engine did not answer for {fmt_age(now - unanswered_since)}: "
                        f"{why}"
                    )
                    self.log.note(f"build started elsewhere: {message}")
                    self.store.update(
                        record.id,
                        only_if_unfinished=True,
                        state=JobState.LOST,
                        ended_at=now,
                        message=message,
                    )
                    return 0
            else:
                unanswered_since = None
                facts = outside_build(self.args.ref, None, data, record.outside, self.env, now)
                if facts.status != "running":
                    state = finished_state(facts.status, facts.error)
                    started = record.started_at
                    ended = started + facts.duration if facts.duration else now
                    cached = facts.cached_percent
                    self.log.note(
                        f"build started elsewhere {state} after {fmt_age(ended - started)}"
                        + (f"; {cached}% of steps cached" if cached is not None else "")
                        + (f"; {facts.error}" if facts.error else "")
                    )
                    self.store.update(
                        record.id,
                        only_if_unfinished=True,
                        state=state,
                        ended_at=ended,
                        outside=facts,
                        message=facts.error,
                        error_step=facts.error if state is JobState.FAILED else None,
                    )
                    self.keep_steps(record.id)
                    return 0
                self.store.update(record.id, outside=facts)
            failures += 1
            if failures == 1 or failures % 10 == 0:
                said = why or "the history stream ended while BuildKit says it runs"
                self.log.note(f"following its output again ({said})")
            delay = backoff(RETRY_FIRST, failures, RETRY_MAX)
            end = time.monotonic() + delay
            while not self.stopping and time.monotonic() < end:
                time.sleep(min(0.5, end - time.monotonic()))


def _follow(argv: Sequence[str]) -> int:
    from rocmtui.core.jobs import locks

    args = _parse(argv)
    os.setsid()
    lock_path = Path(args.store) / "jobs" / args.job / "lock"
    fd = locks.try_lock(lock_path)
    if fd is None:
        return 0  # another follower has it
    follower = Follower(args, os.environ)

    def stop(signum: int, frame: object) -> None:
        follower.stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        return follower.run()
    except Exception as exc:
        follower.log.note(f"follower failed: {type(exc).__name__}: {exc}")
        return 1


def main() -> None:
    """Fork; the parent exits 0, the child follows (see the module doc)."""
    from rocmtui.core.jobs.detach import run_detached

    run_detached(_follow)


if __name__ == "__main__":
    main()
