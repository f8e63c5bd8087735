"""Start a bake job detached: validate, take its images' slots, record, hand over, return.

`launch_job` never runs bake itself and never holds a pipe to it. It starts the supervisor
(through `detach.py`) in a new session with stdin /dev/null and stdout/stderr on the job's
log, hands it the locks it already holds (the job's, and one slot per image the build makes
on its node), waits only for the first, forking process to exit, and returns the job's
record. What bake runs with is decided in `plan.py`.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import select
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import rocmtui
from rocmtui.core.config import FleetConfig, NodeConfig
from rocmtui.core.jobs import locks, remote
from rocmtui.core.jobs.images import write_targets
from rocmtui.core.jobs.plan import (
    LaunchError,
    LaunchRefused,
    bake_path,
    bake_workdir,
    build_argv,
    build_command,
    engine_assignments,
    images,
    known_arches,
    logout_risk,
    node_environment,
    parse_overrides,
    refuse_if_read_only,
)
from rocmtui.core.jobs.preview import preview_launch
from rocmtui.core.jobs.redaction import redact_argv, redact_mapping
from rocmtui.core.jobs.registries import docker_config_hosts
from rocmtui.core.jobs.store import JobRecord, JobStore
from rocmtui.core.states import JobState
from rocmtui.core.units import fmt_utc_stamp

SUPERVISOR_START_TIMEOUT = 30.0

__all__ = [
    "AlreadyRunning",
    "LaunchError",
    "LaunchRefused",
    "build_command",
    "docker_config_hosts",
    "known_arches",
    "launch_job",
    "logout_risk",
    "node_environment",
    "parse_overrides",
]


class AlreadyRunning(LaunchRefused):
    """An image of the launch is already being built on the node; `holder` says whose and
    since when."""

    def __init__(self, message: str, holder: locks.SlotHolder | None) -> None:
        super().__init__(message)
        self.holder = holder

    @property
    def job_id(self) -> str | None:
        """The running job's id, when its holder wrote it."""
        return self.holder.job_id if self.holder else None


def _who(env: Mapping[str, str]) -> str:
    try:
        name = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        name = str(os.geteuid())
    sudo = env.get("SUDO_USER")
    return f"{name} (sudo from {sudo})" if sudo and sudo != name else name


def _header(record: JobRecord, node: NodeConfig) -> bytes:
    when = fmt_utc_stamp(record.started_at)
    lines = [
        f"# rocmtui job {record.id}: {record.target} for {record.arch} on {record.node} "
        f"({node.endpoint})",
        f"# started {when} by {record.user}@{record.host}",
        f"# command: {shlex.join(record.command)}",
    ]
    return ("\n".join(lines) + "\n").encode("utf-8", "replace")


def _supervisor_env(child_env: Mapping[str, str]) -> dict[str, str]:
    """bake's environment, plus PYTHONPATH so `python -S` finds this package (the supervisor
    removes it again before starting bake; bake's scrubbed environment never has one)."""
    return {**child_env, "PYTHONPATH": str(Path(rocmtui.__file__).resolve().parent.parent)}


def _describe_holder(holder: locks.SlotHolder | None, what: str) -> str:
    if holder is None or not holder.job_id:
        return f"{what} is already building (its holder has not said who yet)"
    when = fmt_utc_stamp(holder.started_at) if holder.started_at else "an unknown time"
    return (
        f"{what} is already building: job {holder.job_id}, started by {holder.user or '?'}"
        f"@{holder.host or '?'} at {when}"
    )


def _take_slots(
    directory: Path, node: NodeConfig, keys: list[str], store: JobStore, what: str
) -> list[int]:
    """Take the slot of every image the launch builds, or none: AlreadyRunning names the
    first busy one and its holder. Never waits, so two launches cannot hold each other up."""
    fds: list[int] = []
    for key in keys:  # sorted: every launch tries overlapping slots in the same order
        slot = locks.slot_path(directory, node.name, node.endpoint, key)
        fd = locks.take_slot(slot)
        if fd is None:
            for taken in fds:
                os.close(taken)
            image = key.split(":", 1)[1]
            holder = _wait_holder(slot, store)
            raise AlreadyRunning(_describe_holder(holder, f"{what} ({image})"), holder)
        fds.append(fd)
    return fds


def _wait_holder(path: Path, store: JobStore) -> locks.SlotHolder | None:
    """Read the slot's holder; the winner of a race may not have written it yet."""
    deadline = time.monotonic() + 2.0
    holder = None
    while time.monotonic() < deadline:
        holder = locks.read_holder(path)
        if holder is not None and holder.job_id:
            try:
                known = store.get(holder.job_id)
            except LookupError:
                return holder  # another operator's state folder
            if known.ended_at is None:
                return holder
        time.sleep(0.05)
    return holder


def launch_job(
    config: FleetConfig,
    bake: Any,
    target: str,
    arch: str | None = None,
    node_name: str | None = None,
    push: bool = False,
    yes: bool = False,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
    store: JobStore | None = None,
) -> JobRecord:
    """Start `target` for `arch` on node `node_name`, detached; return its record at once.

    `bake` is the loaded bake file (`bakefile.load_bake`). `target` is any name bake accepts:
    a target block, a group, a matrix-generated name. `arch` defaults to the bake file's
    `GFX_ARCH` default; the bake file's arches and the node's own are accepted. A name whose
    matrix fixes one arch (`pytorch-gfx1201`) is recorded and locked under that arch. The node
    defaults to the fleet's local node (else the first). Raises `LaunchError` for unknown names,
    `LaunchRefused` for a pushing build without `yes` or without a login entry for its
    registry, `ReadOnlyRefused` when the fleet is read-only, `AlreadyRunning` when an image it
    builds is already being built on that node
    (one slot per image tag, so a target, its matrix name for the arch, its push variant and
    a group holding it exclude each other).
    """
    refuse_if_read_only(config, "starting a build")
    env = os.environ if env is None else env
    store = store or JobStore.for_config(config, env)
    chosen = preview_launch(config, bake, target, arch, node_name, push, env, overrides or {})
    node, arch, pushes = chosen.node, chosen.arch, chosen.pushes
    child_env = dict(chosen.child_env)  # a remote node adds its ssh options or TLS files
    overrides = chosen.overrides
    if pushes and not yes:
        raise LaunchRefused(f"{target} pushes to the registry: confirm with --yes")
    if chosen.missing_logins:
        missing = chosen.missing_logins
        raise LaunchRefused(
            f"{target} pushes to {', '.join(missing)} but the docker config has no login "
            f"for it: run `docker login {missing[0]}` first"
        )
    docker = shutil.which("docker", path=child_env.get("PATH") or os.defpath) or "docker"
    bake_file = bake_path(config, bake)

    slot_fds = _take_slots(
        locks.lock_dir(config, env),
        node,
        images(config, bake, target, arch, child_env, chosen.printed),
        store,
        f"{target} for {arch} on {node.name}",
    )
    job_fd = log_fd = -1
    record: JobRecord | None = None
    try:
        for fd in slot_fds:
            os.ftruncate(fd, 0)  # no stale holder is ever read while we hold it
        user, host = _who(env), socket.gethostname()

        def make(job_id: str, job_dir: Path) -> JobRecord:
            nonlocal job_fd, log_fd
            fd = locks.try_lock(job_dir / "lock")
            assert fd is not None  # a brand-new file nobody else knows
            job_fd = fd
            argv = build_argv(
                config, target, node, pushes, str(job_dir / "metadata.json"), docker, bake_file
            )
            made = JobRecord(
                id=job_id,
                target=target,
                arch=arch,
                node=node.name,
                endpoint=node.endpoint,
                push=pushes,
                overrides=redact_mapping(overrides, env),
                command=tuple(
                    redact_argv([*engine_assignments(node, arch, overrides), *argv], env)
                ),
                user=user,
                host=host,
                bake_file=str(bake_file),
                job_dir=str(job_dir),
                started_at=time.time(),
                state=JobState.RUNNING,
            )
            # each image's tags: the matrix and the loop
            write_targets(job_dir, chosen.printed or None, pushes)
            log_fd = os.open(
                made.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644
            )
            os.write(log_fd, _header(made, node))
            return made

        record = store.create(make)
        holder = {
            "job_id": record.id,
            "user": user,
            "host": host,
            "started_at": record.started_at,
            "state_dir": str(store.root),
        }
        for fd in slot_fds:
            locks.write_holder(fd, holder)
        argv = build_argv(
            config, target, node, pushes, str(record.metadata_path), docker, bake_file
        )
        # a remote node: bake's ssh options or TLS files, and the supervisor's link watch
        child_env = remote.prepare_environment(record.path, node, config, env, child_env)
        command = [sys.executable, "-S", "-P", "-m", "rocmtui.core.jobs.detach"]
        command += ["--store", str(store.root), "--job", record.id]
        command += remote.supervisor_args(node, config, env)
        command += [word for fd in slot_fds for word in ("--slot-fd", str(fd))]
        command += [*(["--push"] if pushes else []), "--registry-url", config.registry.url]
        command += ["--", *argv]
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            pass_fds=(job_fd, *slot_fds),
            start_new_session=True,
            cwd=bake_workdir(bake_file),
            env=_supervisor_env(child_env),
        )
        # the first process only forks and exits; wait for it without polling sleeps
        _wait_exit(proc, SUPERVISOR_START_TIMEOUT)
        return store.get(record.id)
    except BaseException as exc:
        if record is not None and not isinstance(exc, LaunchError):
            store.update(
                record.id,
                only_if_unfinished=True,
                state=JobState.FAILED,
                ended_at=time.time(),
                message=f"launch failed: {type(exc).__name__}",
            )
        raise
    finally:
        for fd in (log_fd, job_fd, *slot_fds):
            if fd >= 0:
                os.close(fd)  # the supervisor keeps its own copies of the locks


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float) -> None:
    """Reap `proc` once it exits (within `timeout`), woken by a pidfd rather than by polling."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
        return
    try:
        select.select([pidfd], [], [], timeout)
    finally:
        os.close(pidfd)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(0.5 if proc.poll() is None else 0)
