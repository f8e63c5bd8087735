"""A build's steps kept in the job store beside the build (`build_steps`), and where they come
from: `docker buildx history logs --progress rawjson REF`, which replays a finished build's
progress stream (and follows a running one), for rocmtui's own jobs (their `buildkit_ref`,
from bake's metadata) and builds started elsewhere (`OutsideBuild.ref`) alike.

BuildKit forgets records (48 h or 50 builds by default); what was read is kept here for the
history's retention. One row per build: the steps as one msgpack blob (a 10,000-step build is
one read of well under a megabyte). The replay carries the build's whole log as well, base64
in `logs` objects: the reader streams it through `stepgraph.StepCollector` under a deadline.
buildx writes the stream on stderr (stdout stays empty): each is read by a collector of its
own, and the one that found steps is kept.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import shutil
import subprocess
import time
from collections.abc import Mapping

import msgspec
from msgspec import Struct

from rocmtui.core.bake.plugin import buildx_plugin
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.history.buildx import (
    NO_API,
    NO_COMMAND,
    docker_cli,
    history_argv,
    history_environment,
    node_workdir,
    run_history,
)
from rocmtui.core.history.stepgraph import Step, StepCollector
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.text.sanitize import one_line

#: A replay of a long build's progress (its whole log, base64) is read for at most this long.
REPLAY_TIMEOUT = 120.0
_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(list[Step])


class KeptSteps(Struct, frozen=True):
    """A build's steps as kept, with where they came from (`rawjson`: BuildKit's progress)."""

    steps: list[Step]
    source: str
    dropped: int = 0


def save_steps(store: JobStore, job_id: str, kept: KeptSteps) -> None:
    """Keep (or replace) a build's steps."""
    blob = _ENCODER.encode(kept.steps)
    with store.connect(write=True) as conn:
        conn.execute(
            "INSERT OR REPLACE INTO build_steps (job_id, source, count, steps) VALUES (?,?,?,?)",
            (job_id, f"{kept.source};dropped={kept.dropped}", len(kept.steps), blob),
        )


def load_steps(store: JobStore, job_id: str) -> KeptSteps | None:
    """A build's kept steps (None: none kept, or the row cannot be read)."""
    with store.connect() as conn:
        row = conn.execute(
            "SELECT source, steps FROM build_steps WHERE job_id = ?", (job_id,)
        ).fetchone()
    if row is None:
        return None
    source, _, dropped = str(row[0]).partition(";dropped=")
    try:
        steps = _DECODER.decode(row[1])
    except (msgspec.DecodeError, TypeError):
        return None
    return KeptSteps(steps, source, int(dropped) if dropped.isdigit() else 0)


def history_ref(record: JobRecord) -> str | None:
    """The BuildKit record id of a job's build (rocmtui's own or one started elsewhere)."""
    if record.outside is not None and record.outside.ref not in ("", "?"):
        return record.outside.ref
    return record.buildkit_ref


class StepsUnavailable(Exception):
    """Why a build's steps cannot be had: one line naming the build and the cause."""


def replay_steps(
    config: FleetConfig,
    record: JobRecord,
    env: Mapping[str, str] | None = None,
    timeout: float = REPLAY_TIMEOUT,
) -> KeptSteps:
    """Read a build's steps from BuildKit's history on its node (`history logs --progress
    rawjson`), under `timeout`. Raises StepsUnavailable with the reason."""
    ref = history_ref(record)
    if ref is None:
        raise StepsUnavailable(
            f"job {record.id}: no BuildKit record is tied to it (its builder keeps no history, "
            "or bake wrote no metadata)"
        )
    node = next((n for n in config.nodes if n.name == record.node), None)
    if node is None:
        raise StepsUnavailable(f"job {record.id}: node {record.node!r} is not in the fleet file")
    env = dict(os.environ if env is None else env)
    state = JobStore.for_config(config, env).root
    child = history_environment(node, config, env, node_workdir(state, node))
    argv = history_argv(node, "logs", "--progress", "rawjson", ref, env=child)
    return replay(argv, child, timeout, f"job {record.id} on {record.node}")


def replay(argv: list[str], env: Mapping[str, str], timeout: float, what: str) -> KeptSteps:
    """Run one `history logs --progress rawjson REF` and collect its steps. Raises
    StepsUnavailable (naming `what`) when it gave none."""
    collector, error = _stream(argv, env, timeout)
    steps = collector.steps()
    if error is not None and not steps:
        if NO_API.search(error):
            error = f"the node's BuildKit keeps no build history (20.10's predates it): {error}"
        elif NO_COMMAND.search(error):
            error = f"this buildx has no `history` (0.13 and older): {error}"
        raise StepsUnavailable(f"{what}: {error}")
    return KeptSteps(steps, "rawjson", collector.dropped_steps)


def keep_after_build(
    store: JobStore,
    record: JobRecord,
    env: Mapping[str, str],
    builder: str | None,
    timeout: float = REPLAY_TIMEOUT,
) -> str:
    """For a supervisor or a follower whose build just ended: read its steps with the very
    environment the build ran under (the node's engine, ssh wrapper or TLS folder) and keep
    them, before BuildKit forgets the record. One line saying what happened (never raises)."""
    ref = history_ref(record)
    if ref is None:
        return "steps not kept: no BuildKit record is tied to this build"
    try:
        kept = replay([*capture_argv(env, builder), ref], capture_env(env), timeout,
                      f"job {record.id}")  # fmt: skip
        save_steps(store, record.id, kept)
    except StepsUnavailable as exc:
        return f"steps not kept: {exc}"
    except Exception as exc:  # the store's or the machine's: said, never raised
        return f"steps not kept: {type(exc).__name__}: {one_line(exc)}"
    return f"{len(kept.steps)} steps kept for the timeline"


def capture_argv(env: Mapping[str, str], builder: str | None) -> list[str]:
    """`buildx history logs --progress rawjson` (the ref goes last) as the build's own
    environment runs it, under `gentle`."""
    plugin = buildx_plugin(env)
    argv = [str(plugin)] if plugin is not None else [docker_cli(env.get("PATH")), "buildx"]
    argv += ["history", "logs", "--progress", "rawjson"]
    if builder:
        argv += ["--builder", builder]
    return gentle(argv)


def capture_env(env: Mapping[str, str]) -> dict[str, str]:
    """The capture's environment: the build's, with `CAPTURE_GO_ENV` where it sets nothing."""
    return {**dict(CAPTURE_GO_ENV), **env}


#: The capture's stream client: one Go thread and a collector that runs half as often, as a
#: follower's (~20% less CPU, bench/RESULTS.md). A value the caller's environment sets wins.
CAPTURE_GO_ENV = (("GOMAXPROCS", "1"), ("GOGC", "200"))
#: Its niceness: nobody waits for a capture (the outcome is recorded first), and the logs
#: being followed meanwhile do wait for CPU (bench_step_capture).
CAPTURE_NICE = 10


def gentle(argv: list[str]) -> list[str]:
    """`argv` under `nice -n CAPTURE_NICE` where `nice` is found (as is where it is not), and
    in the idle scheduling class where `chrt` is (SCHED_IDLE: it runs only on CPU time nothing
    else wants; nice 10 alone still took a share from the logs followed meanwhile)."""
    found = shutil.which("nice")
    argv = [found, "-n", str(CAPTURE_NICE), *argv] if found else argv
    idle = shutil.which("chrt")
    return [idle, "--idle", "0", *argv] if idle else argv


def _stream(
    argv: list[str], env: Mapping[str, str], timeout: float
) -> tuple[StepCollector, str | None]:
    collector = StepCollector()
    other = StepCollector()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return collector, one_line(f"cannot run {argv[0]}: {exc.strerror}")
    assert proc.stdout is not None and proc.stderr is not None
    deadline = time.monotonic() + timeout
    err = b""
    timed_out = False
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        sel.register(proc.stderr, selectors.EVENT_READ)
        open_pipes = 2
        while open_pipes:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            for key, _ in sel.select(min(left, 1.0)):
                data = os.read(key.fd, 1 << 20)
                if not data:
                    sel.unregister(key.fileobj)
                    open_pipes -= 1
                elif key.fileobj is proc.stderr:  # the stream, beside buildx's errors
                    collector.feed(data)
                    err = (err + data)[-8192:]
                else:
                    other.feed(data)
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, 9)
    proc.wait()
    proc.stdout.close()
    proc.stderr.close()
    if other.objects > collector.objects:
        collector = other
    if timed_out:
        return collector, f"history logs gave no end in {timeout:.0f} s"
    if proc.returncode:
        said = err.decode("utf-8", "replace").strip().splitlines()
        return collector, one_line(said[-1] if said else f"history logs exit {proc.returncode}")
    return collector, None


def steps_of(
    config: FleetConfig,
    store: JobStore,
    record: JobRecord,
    env: Mapping[str, str] | None = None,
    timeout: float = REPLAY_TIMEOUT,
) -> KeptSteps:
    """A build's steps: kept ones, else read from BuildKit's history (and kept, once the build
    has ended). Raises StepsUnavailable."""
    kept = load_steps(store, record.id)
    if kept is not None:
        return kept
    kept = replay_steps(config, record, env, timeout)
    if record.ended_at is not None and kept.steps:
        save_steps(store, record.id, kept)
    return kept


EXPORT_TIMEOUT = 120.0


def export_record(
    config: FleetConfig,
    record: JobRecord,
    out: str,
    env: Mapping[str, str] | None = None,
    timeout: float = EXPORT_TIMEOUT,
) -> None:
    """`docker buildx history export -o OUT REF` for a build, on its node: the bundle Docker
    Desktop imports. Raises StepsUnavailable saying plainly why it cannot be had (no record
    tied to the job; a buildx without `history` (0.13); an engine whose BuildKit keeps no
    history (dockerd 20.10); the builder's own words)."""
    ref = history_ref(record)
    if ref is None:
        raise StepsUnavailable(
            f"job {record.id}: no BuildKit record is tied to it, so there is nothing to export "
            "(its builder keeps no history, or bake wrote no metadata)"
        )
    node = next((n for n in config.nodes if n.name == record.node), None)
    if node is None:
        raise StepsUnavailable(f"job {record.id}: node {record.node!r} is not in the fleet file")
    env = dict(os.environ if env is None else env)
    state = JobStore.for_config(config, env).root
    child = history_environment(node, config, env, node_workdir(state, node))
    answer = run_history(history_argv(node, "export", "-o", out, ref, env=child), child, timeout)
    if answer.error is None:
        return
    if answer.kind == "no-command":
        raise StepsUnavailable(
            f"job {record.id} on {record.node}: this buildx has no `history export` (buildx "
            f"0.13 and older have no `history` at all; 0.29 has it): {answer.error}"
        )
    if answer.kind == "no-api":
        raise StepsUnavailable(
            f"job {record.id} on {record.node}: the node's BuildKit keeps no build history "
            f"(dockerd 20.10's BuildKit predates it): {answer.error}"
        )
    raise StepsUnavailable(f"job {record.id} on {record.node}: {answer.error}")


__all__ = [
    "CAPTURE_GO_ENV",
    "CAPTURE_NICE",
    "EXPORT_TIMEOUT",
    "REPLAY_TIMEOUT",
    "KeptSteps",
    "StepsUnavailable",
    "export_record",
    "gentle",
    "history_ref",
    "keep_after_build",
    "load_steps",
    "replay",
    "replay_steps",
    "save_steps",
    "steps_of",
]
