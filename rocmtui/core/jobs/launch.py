"""Start a bake job detached, in a straight line: resolve a plan, take its slots, record, spawn.

`launch_job` (`rocmtui bake`) resolves a `LaunchPlan` (`plan.resolve_plan`) and starts it;
`start_plan` starts a LaunchPlan already resolved — the one the console's bake dialog showed, so
what starts is exactly what was shown, with no second `bake --print`. Starting is four steps,
each a function below:

1. `confirm`: refused when read-only, a push not confirmed, a registry with no login, or a
   privilege bake asks for that the operator did not grant (`--allow`);
2. `take_slots`: one lock per image the plan builds on its node, all or none
   (`AlreadyRunning` names the job that holds one);
3. `record_job`: the job's record, folder, lock and log header;
4. `spawn_supervisor`: the supervisor (through `detach.py`) in a new session with stdin
   /dev/null and stdout/stderr on the job's log, handed the locks the launch holds.

The launch never runs bake itself and never holds a pipe to it: it waits only for the first,
forking process to exit, and returns the job's record.
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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import msgspec

import rocmtui
from rocmtui.core.bake.file import BakeFile
from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.jobs import locks, remote
from rocmtui.core.jobs.bakefiles import bake_metadata_file
from rocmtui.core.jobs.command import bake_workdir, engine_assignments
from rocmtui.core.jobs.images import write_targets
from rocmtui.core.jobs.plan import LaunchPlan, resolve_plan
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.redaction import redact_argv, redact_mapping
from rocmtui.core.jobs.refusals import (
    AlreadyRunning,
    LaunchError,
    LaunchRefused,
    PrivilegesRefused,
    refuse_if_read_only,
)
from rocmtui.core.jobs.registries import docker_config_hosts
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.private import PrivateFolderError, for_state, job_folder
from rocmtui.core.states import JobState
from rocmtui.core.text.units import fmt_utc_stamp

SUPERVISOR_START_TIMEOUT = 30.0

__all__ = ["SUPERVISOR_START_TIMEOUT", "launch_job", "start_plan"]


def launch_job(
    config: FleetConfig,
    bake: BakeFile,
    target: str,
    arch: str | None = None,
    node_name: str | None = None,
    push: bool = False,
    yes: bool = False,
    env: Mapping[str, str] | None = None,
    overrides: Mapping[str, str] | None = None,
    store: JobStore | None = None,
    allow: Sequence[str] = (),
) -> JobRecord:
    """Start `target` for `arch` on node `node_name`, detached; return its record at once.

    `target` is any name bake accepts: a target block, a group, a matrix-generated name. `arch`
    defaults to the bake file's `GFX_ARCH` default (`checks.launch_arches` says which are
    accepted). A name whose matrix fixes one arch (`pytorch-gfx1201`) is recorded and locked
    under that arch. The node defaults to the fleet's local node (else the first). Raises
    `LaunchError` for unknown names, `LaunchRefused` for a pushing build without `yes` or
    without a login entry for its registry, `ReadOnlyRefused` when the fleet is read-only,
    `AlreadyRunning` when an image it builds is already being built on that node (one slot per
    image tag, so a target, its matrix name for the arch, its push variant and a group holding
    it exclude each other).
    """
    refuse_if_read_only(config, "starting a build")
    env = os.environ if env is None else env
    plan = resolve_plan(config, bake, target, arch, node_name, push, env, overrides or {})
    return start_plan(config, plan, yes=yes, env=env, store=store, allow=allow)


def start_plan(
    config: FleetConfig,
    plan: LaunchPlan,
    yes: bool = False,
    env: Mapping[str, str] | None = None,
    store: JobStore | None = None,
    allow: Sequence[str] = (),
) -> JobRecord:
    """Start a resolved `plan` detached and return its record at once (see the module doc).
    `yes` confirms a plan that pushes, or asks a loud privilege; `allow` are the `--allow`
    words the operator granted (`entitlements.check_grants` has checked them). Raises as
    `launch_job` does, never for a name: the plan has been checked already."""
    env = os.environ if env is None else env
    allow = tuple(allow)
    confirm(config, plan, yes, allow)
    store = store or JobStore.for_config(config, env)
    held = take_slots(locks.lock_dir(config, env), plan, store)
    try:
        job = record_job(store, plan, env, held, allow)
        spawn_supervisor(config, plan, job, store, env, held, allow)
        return store.get(job.id)
    except BaseException as exc:
        if held.record is not None and not isinstance(exc, LaunchError):
            store.update(
                held.record.id,
                only_if_unfinished=True,
                state=JobState.FAILED,
                ended_at=time.time(),
                message=(
                    f"launch failed: {exc}"
                    if isinstance(exc, PrivateFolderError)
                    else f"launch failed: {type(exc).__name__}"
                ),
            )
        raise
    finally:
        held.close()  # the supervisor keeps its own copies of the locks


# -- 1. confirm -------------------------------------------------------------------------------


def confirm(config: FleetConfig, plan: LaunchPlan, yes: bool, allow: Sequence[str] = ()) -> None:
    """Refuse a start when the fleet is read-only, when bake will ask for a privilege `allow`
    does not grant (or a loud one without `yes`), when the plan pushes and `yes` was not
    given, or when the docker config has no login for a registry it pushes to (read now: a
    `docker login` since the plan was resolved counts)."""
    refuse_if_read_only(config, "starting a build")
    refuse_ungranted(plan, yes, allow)
    if plan.pushes and not yes:
        raise LaunchRefused(f"{plan.target} pushes to the registry: confirm with --yes")
    missing = sorted(set(plan.push_hosts) - docker_config_hosts(plan.child_env))
    if plan.pushes and missing:
        raise LaunchRefused(
            f"{plan.target} pushes to {', '.join(missing)} but the docker config has no login "
            f"for it: run `docker login {missing[0]}` first"
        )


def refuse_ungranted(plan: LaunchPlan, yes: bool, allow: Sequence[str]) -> None:
    """PrivilegesRefused naming every privilege bake will ask for that `allow` does not
    grant, with the `--allow` words that would; a loud one granted still needs `yes`."""
    missing = plan.ungranted(allow)
    if missing:
        words = tuple(p.grant for p in missing)
        named = "; ".join(f"{p.grant} ({p.why})" for p in missing)
        grant = " ".join(f"--allow {w}" for w in words)
        loud = " and --yes" if any(p.loud for p in missing) else ""
        raise PrivilegesRefused(
            f"{plan.target} asks bake for privileges not granted: {named}; grant them with "
            f"{grant}{loud}",
            words,
        )
    loud_ones = [p for p in plan.privileges if p.loud]
    if loud_ones and not yes:
        named = "; ".join(f"{p.grant} ({p.why})" for p in loud_ones)
        raise PrivilegesRefused(
            f"{plan.target} asks for privileges that change the node: {named}; granted, but "
            "confirm with --yes",
            tuple(p.grant for p in loud_ones),
        )


# -- 2. take the slots ------------------------------------------------------------------------


@dataclass
class Held:
    """Every descriptor a launch holds until the supervisor has its own copies: the slots of
    the images it builds, the job's lock and its log; and the record once made."""

    slots: list[int]
    job: int = -1
    log: int = -1
    record: JobRecord | None = field(default=None, repr=False)
    metadata: Path | None = None  # where bake writes its metadata (`bakefiles`)

    def close(self) -> None:
        """Close them all (the locks stay held by the supervisor's copies)."""
        for fd in (self.log, self.job, *self.slots):
            if fd >= 0:
                os.close(fd)


def take_slots(directory: Path, plan: LaunchPlan, store: JobStore) -> Held:
    """Take the slot of every image the plan builds on its node, or none: AlreadyRunning names
    the first busy one and its holder. Never waits, so two launches cannot hold each other up."""
    what = f"{plan.target} for {plan.arch} on {plan.node.name}"
    fds: list[int] = []
    for key in sorted(plan.slots):  # every launch tries overlapping slots in the same order
        slot = locks.slot_path(directory, plan.node.name, plan.node.endpoint, key)
        try:
            fd = locks.take_slot(slot, share_with=store.root)
        except locks.LockFolderError as exc:
            for taken in fds:
                os.close(taken)
            raise LaunchRefused(str(exc)) from None
        if fd is None:
            for taken in fds:
                os.close(taken)
            holder = _wait_holder(slot, store)
            image = key.split(":", 1)[1]
            raise AlreadyRunning(_describe_holder(holder, f"{what} ({image})"), holder)
        fds.append(fd)
    for fd in fds:
        os.ftruncate(fd, 0)  # no stale holder is ever read while we hold it
    return Held(fds)


def _wait_holder(path: Path, store: JobStore) -> locks.SlotHolder | None:
    """Read the slot's holder; the winner of a race may not have written it yet."""
    deadline = time.monotonic() + 2.0
    holder = None
    while time.monotonic() < deadline:
        holder = locks.read_holder(path, locks.SlotHolder)
        if holder is not None and holder.job_id:
            try:
                known = store.get(holder.job_id)
            except LookupError:
                return holder  # another operator's state folder
            if known.ended_at is None:
                return holder
        time.sleep(0.05)
    return holder


def _describe_holder(holder: locks.SlotHolder | None, what: str) -> str:
    if holder is None or not holder.job_id:
        return f"{what} is already building (its holder has not said who yet)"
    when = fmt_utc_stamp(holder.started_at) if holder.started_at else "an unknown time"
    return (
        f"{what} is already building: job {holder.job_id}, started by {holder.user or '?'}"
        f"@{holder.host or '?'} at {when}"
    )


# -- 3. record the job ------------------------------------------------------------------------


def record_job(
    store: JobStore,
    plan: LaunchPlan,
    env: Mapping[str, str],
    held: Held,
    allow: Sequence[str] = (),
) -> JobRecord:
    """The job's record (overrides and command redacted; what it was granted), its folder
    with the targets bake resolved, its lock and its log with a header; each slot then names
    the job as holder."""
    user, host = _who(env), socket.gethostname()

    def make(job_id: str, job_dir: Path) -> JobRecord:
        fd = locks.try_lock(job_dir / "lock")
        assert fd is not None  # a brand-new file nobody else knows
        held.job = fd
        held.metadata = bake_metadata_file(store.root, job_dir, env)  # off the state disk
        argv = plan.argv(str(held.metadata), _docker(plan), job_id, allow)
        record = JobRecord(
            id=job_id,
            target=plan.target,
            arch=plan.arch,
            node=plan.node.name,
            endpoint=plan.node.endpoint,
            push=plan.pushes,
            overrides=redact_mapping(plan.overrides, env),
            command=tuple(
                redact_argv([*engine_assignments(plan.node, plan.arch, plan.overrides), *argv], env)
            ),
            user=user,
            host=host,
            bake_file=str(plan.bake_file),
            job_dir=str(job_dir),
            started_at=time.time(),
            state=JobState.RUNNING,
            allowed=tuple(allow),
        )
        write_targets(job_dir, plan.printed or None, plan.pushes)  # the matrix and the loop
        held.log = store.open_log(record)
        os.write(held.log, _header(record, plan))
        return record

    record = held.record = store.create(make)
    holder = {
        "job_id": record.id,
        "user": user,
        "host": host,
        "started_at": record.started_at,
        "state_dir": str(store.root),
    }
    for fd in held.slots:
        locks.write_holder(fd, holder, mode=locks.SLOT_MODE)  # the group may take it later
    return record


def _who(env: Mapping[str, str]) -> str:
    try:
        name = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        name = str(os.geteuid())
    sudo = env.get("SUDO_USER")
    return f"{name} (sudo from {sudo})" if sudo and sudo != name else name


def _header(record: JobRecord, plan: LaunchPlan) -> bytes:
    lines = [
        f"# rocmtui job {record.id}: {record.target} for {record.arch} on {record.node} "
        f"({plan.node.endpoint})",
        f"# started {fmt_utc_stamp(record.started_at)} by {record.user}@{record.host}",
        f"# command: {shlex.join(record.command)}",
    ]
    return ("\n".join(lines) + "\n").encode("utf-8", "replace")


def _docker(plan: LaunchPlan) -> str:
    """The docker CLI bake's environment finds first."""
    return shutil.which("docker", path=plan.child_env.get("PATH") or os.defpath) or "docker"


# -- 4. spawn the supervisor ------------------------------------------------------------------


def spawn_supervisor(
    config: FleetConfig,
    plan: LaunchPlan,
    record: JobRecord,
    store: JobStore,
    env: Mapping[str, str],
    held: Held,
    allow: Sequence[str] = (),
) -> None:
    """Start the job's supervisor in a new session (stdin /dev/null, output on the job's log),
    handing it the job's lock and the slots; wait only for its first, forking process."""
    # a remote node: bake's ssh options or TLS files, and the supervisor's link watch
    child_env = remote.prepare_environment(
        job_folder(store.root, record.id, env), plan.node, config, env, dict(plan.child_env)
    )
    command = [sys.executable, "-S", "-P", "-m", "rocmtui.core.jobs.detach"]
    command += ["--store", str(store.root), "--job", record.id]
    command += remote.supervisor_args(plan.node, config, env)
    # the node, for the OOM count at the build's start (read by the supervisor: verdicts/atstart)
    command += ["--vitals-node", msgspec.json.encode(plan.node).decode()]
    command += ["--vitals-path", _without_wrappers(child_env, for_state(store.root, env))]
    command += [word for fd in held.slots for word in ("--slot-fd", str(fd))]
    command += [*(["--push"] if plan.pushes else []), "--registry-url", config.registry.url]
    metadata = held.metadata or record.metadata_path
    command += ["--", *plan.argv(str(metadata), _docker(plan), record.id, allow)]
    proc = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=held.log,
        stderr=held.log,
        pass_fds=(held.job, *held.slots),
        start_new_session=True,
        cwd=bake_workdir(plan.bake_file),
        env=_supervisor_env(child_env),
    )
    # the first process only forks and exits; wait for it without polling sleeps
    _wait_exit(proc, SUPERVISOR_START_TIMEOUT)


def _without_wrappers(child_env: Mapping[str, str], private: Path) -> str:
    """bake's PATH without the ssh wrappers rocmtui put first on it (folders under the state's
    private folder): their `ControlMaster=no` would keep another reader's kept connection from
    forming (the supervisor's OOM-count read, verdicts/atstart)."""
    words = (child_env.get("PATH") or os.defpath).split(os.pathsep)
    return os.pathsep.join(w for w in words if not Path(w).is_relative_to(private))


def _supervisor_env(child_env: Mapping[str, str]) -> dict[str, str]:
    """bake's environment, plus PYTHONPATH so `python -S` finds this package (the supervisor
    removes it again before starting bake; bake's scrubbed environment never has one)."""
    return {**child_env, "PYTHONPATH": str(Path(rocmtui.__file__).resolve().parent.parent)}


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
