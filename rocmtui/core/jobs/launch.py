"""Start a bake job detached: validate, take the target's slot, record, hand over, return.

`launch_job` never runs bake itself and never holds a pipe to it. It starts the supervisor
(`supervisor.py`) in a new session with stdin /dev/null and stdout/stderr on the job's log,
passes it the two locks it already holds (the job's and the target+arch+node slot), waits
only until the supervisor says bake has started, and returns the job's record.

Everything bake sees is decided here, as data: the argument list (no shell; `--` before the
target), and the environment: the scrubbed launch environment (`bakeprint.bake_environment`),
the explicit variable overrides, `GFX_ARCH`, and the node's `DOCKER_HOST` or `DOCKER_CONTEXT`.
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import select
import shlex
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import rocmtui
from rocmtui.core.config import FleetConfig, NodeConfig
from rocmtui.core.jobs import locks
from rocmtui.core.jobs.redaction import redact_argv, redact_mapping
from rocmtui.core.jobs.store import JobRecord, JobStore
from rocmtui.core.states import JobState

SUPERVISOR_START_TIMEOUT = 30.0
ARCH_VARIABLE = "GFX_ARCH"


class LaunchError(Exception):
    """A launch that cannot go ahead as asked (unknown target, arch, node or variable)."""


class LaunchRefused(LaunchError):
    """A launch refused by policy: a pushing target without --yes or without a login entry."""


class AlreadyRunning(LaunchRefused):
    """The target+arch+node already has a build; `holder` says whose and since when."""

    def __init__(self, message: str, holder: locks.SlotHolder | None) -> None:
        super().__init__(message)
        self.holder = holder

    @property
    def job_id(self) -> str | None:
        """The running job's id, when its holder wrote it."""
        return self.holder.job_id if self.holder else None


# -- reading the bake file (tolerant of the BakeFile's exact shapes) ----------------------------


def _names(items: Any) -> list[str]:
    if isinstance(items, Mapping):
        return [str(k) for k in items]
    out = []
    for item in items or ():
        out.append(item if isinstance(item, str) else str(getattr(item, "name", item)))
    return out


def _variable_default(bake: Any, name: str) -> str | None:
    variables = getattr(bake, "variables", {}) or {}
    var = variables.get(name) if isinstance(variables, Mapping) else None
    if var is None:
        for item in variables if not isinstance(variables, Mapping) else ():
            if getattr(item, "name", None) == name:
                var = item
    if var is None:
        return None
    value = getattr(var, "default", var)
    if isinstance(value, str):
        return value.strip().strip('"')
    return None if value is None else str(value)


def known_arches(bake: Any) -> list[str]:
    """The GPU architectures the bake file knows."""
    return _names(getattr(bake, "arches", ()))


def _target_pushes(bake: Any, target: str) -> bool:
    pushing = set(_names(getattr(bake, "pushing_targets", ())))
    if target in pushing:
        return True
    targets = getattr(bake, "targets", {}) or {}
    entry = targets.get(target) if isinstance(targets, Mapping) else None
    return bool(getattr(entry, "pushes", False))


def _bake_path(config: FleetConfig, bake: Any) -> Path:
    path = getattr(bake, "path", None)
    return Path(path) if path else Path(config.bake_file)


# -- environment and command --------------------------------------------------------------------


def bake_workdir(path: Path) -> Path:
    """Where bake runs: the bake file's folder (its context paths are relative to it)."""
    from rocmtui.core.bakeprint import bake_workdir as project_rule

    return Path(project_rule(path))


def _scrubbed(
    env: Mapping[str, str], overrides: Mapping[str, str], declared: Iterable[str]
) -> dict[str, str]:
    from rocmtui.core.bakeprint import bake_environment

    return dict(bake_environment(env, overrides, bake_variables=declared))


def node_environment(
    node: NodeConfig,
    arch: str,
    env: Mapping[str, str],
    overrides: Mapping[str, str],
    declared: Iterable[str] = (),
) -> dict[str, str]:
    """bake's whole environment for a job: the scrubbed launch environment (no variable the
    bake file declares, unless overridden explicitly) + overrides + arch + the node's engine."""
    child = _scrubbed(env, {**overrides, ARCH_VARIABLE: arch}, declared)
    child[ARCH_VARIABLE] = arch
    if node.docker_host:
        child["DOCKER_HOST"] = node.docker_host
        child.pop("DOCKER_CONTEXT", None)
    elif node.context:
        child["DOCKER_CONTEXT"] = node.context
        child.pop("DOCKER_HOST", None)
    if node.docker_host and node.docker_host.startswith("ssh://"):
        # ssh needs the agent; never let it prompt on a terminal it does not have
        for name in ("SSH_AUTH_SOCK", "HOME", "USER"):
            if name in env and name not in child:
                child[name] = env[name]
    return child


def _engine_assignments(node: NodeConfig, arch: str, overrides: Mapping[str, str]) -> list[str]:
    pairs = [f"{ARCH_VARIABLE}={arch}"]
    pairs += [f"{k}={v}" for k, v in sorted(overrides.items()) if k != ARCH_VARIABLE]
    if node.docker_host:
        pairs.append(f"DOCKER_HOST={node.docker_host}")
    elif node.context:
        pairs.append(f"DOCKER_CONTEXT={node.context}")
    return pairs


def build_argv(
    config: FleetConfig,
    target: str,
    node: NodeConfig,
    push: bool,
    metadata_file: str,
    docker: str = "docker",
    bake_file: Path | None = None,
) -> list[str]:
    """bake's argument list: plain progress (what people read and the parser knows best),
    the metadata file, the node's builder, --push, and `--` before the target."""
    argv = [docker, "buildx", "bake", "-f", str(bake_file or config.bake_file)]
    argv += ["--progress=plain", "--metadata-file", metadata_file]
    if node.builder:
        argv += ["--builder", node.builder]
    if push:
        argv.append("--push")
    return [*argv, "--", target]


def build_command(
    config: FleetConfig,
    target: str,
    arch: str,
    node_name: str | None = None,
    push: bool = False,
    overrides: Mapping[str, str] | None = None,
) -> list[str]:
    """The command a launch would run, for display: `VAR=value ... docker buildx bake ...`
    (override values redacted by name; the metadata file shown as `<job>/metadata.json`)."""
    node = _pick_node(config, node_name)
    pairs = _engine_assignments(node, arch, dict(overrides or {}))
    argv = build_argv(config, target, node, push, "<job>/metadata.json")
    return redact_argv([*pairs, *argv])


# -- validation -----------------------------------------------------------------------------------


def _pick_node(config: FleetConfig, node_name: str | None) -> NodeConfig:
    if node_name:
        node = config.node(node_name)
        if node is None:
            names = ", ".join(n.name for n in config.nodes)
            raise LaunchError(f"no node {node_name!r} in the fleet file (nodes: {names})")
        return node
    return next((n for n in config.nodes if n.local), config.nodes[0])


def _check_overrides(bake: Any, overrides: Mapping[str, str]) -> None:
    declared = set(_names(getattr(bake, "variables", {})))
    for name in overrides:
        if name == ARCH_VARIABLE:
            raise LaunchError(f"set {ARCH_VARIABLE} with --arch, not as a variable override")
        if name not in declared:
            raise LaunchError(
                f"{name!r} is not a variable of the bake file; only declared variables can be "
                "overridden"
            )


def docker_config_hosts(env: Mapping[str, str]) -> set[str]:
    """Registry hosts with a login entry in the docker config (`auths` and `credHelpers`
    keys). Only the keys are looked at; no value is kept or shown."""
    folder = env.get("DOCKER_CONFIG") or os.path.join(env.get("HOME", "~"), ".docker")
    path = Path(os.path.expanduser(folder)) / "config.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return set()
    hosts: set[str] = set()
    if isinstance(data, dict):
        for section in ("auths", "credHelpers"):
            entries = data.get(section)
            if isinstance(entries, dict):
                hosts.update(_registry_host(str(key)) for key in entries)
    return hosts


def _registry_host(ref: str) -> str:
    """`https://host:port/v1/` or `host:port` -> `host:port` (docker.io's aliases folded)."""
    if "://" in ref:
        ref = urlsplit(ref).netloc
    host = ref.split("/", 1)[0].lower()
    return "docker.io" if host in ("index.docker.io", "registry-1.docker.io") else host


def _tag_host(tag: str) -> str:
    first, sep, _ = tag.partition("/")
    if sep and ("." in first or ":" in first or first == "localhost"):
        return first.lower()
    return "docker.io"


def push_hosts(
    config: FleetConfig, bake: Any, target: str, child_env: Mapping[str, str]
) -> set[str]:
    """The registries `target` pushes to: the hosts of its tags as `bake --print` resolves
    them with the job's environment, else the REGISTRY variable, else the fleet's registry."""
    try:
        from rocmtui.core.bakeprint import bake_print

        printed = bake_print(_bake_path(config, bake), [target], dict(child_env), 20.0)
        data = printed if isinstance(printed, Mapping) else getattr(printed, "data", None)
        tags = (data or {}).get("target", {}).get(target, {}).get("tags") or []
        hosts = {_tag_host(str(t)) for t in tags}
        if hosts:
            return hosts
    except Exception:  # fall back to the static view below
        pass
    registry = child_env.get("REGISTRY") or _variable_default(bake, "REGISTRY")
    if registry and "${" not in registry:
        return {_registry_host(registry)}
    return {_registry_host(config.registry.url)}


def _who(env: Mapping[str, str]) -> str:
    try:
        name = pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        name = str(os.geteuid())
    sudo = env.get("SUDO_USER")
    return f"{name} (sudo from {sudo})" if sudo and sudo != name else name


def _header(record: JobRecord, node: NodeConfig) -> bytes:
    when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(record.started_at))
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
    when = (
        time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(holder.started_at))
        if holder.started_at
        else "an unknown time"
    )
    return (
        f"{what} is already building: job {holder.job_id}, started by {holder.user or '?'}"
        f"@{holder.host or '?'} at {when}"
    )


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

    `bake` is the loaded bake file (`bakefile.load_bake`). `arch` defaults to the bake file's
    `GFX_ARCH` default; the node to the fleet's local node (else the first). Raises
    `LaunchError` for unknown names, `LaunchRefused` for a pushing build without `yes` or
    without a login entry for its registry, `AlreadyRunning` when the target+arch+node is busy.
    """
    env = os.environ if env is None else env
    overrides = dict(overrides or {})
    store = store or JobStore.for_config(config, env)
    targets = _names(getattr(bake, "targets", {}))
    if target not in targets:
        raise LaunchError(f"no target {target!r} in {_bake_path(config, bake)}")
    arches = known_arches(bake)
    arch = arch or _variable_default(bake, ARCH_VARIABLE) or (arches[0] if arches else None)
    if not arch or arch not in arches:
        raise LaunchError(f"unknown arch {arch!r}; the bake file knows: {', '.join(arches)}")
    node = _pick_node(config, node_name)
    _check_overrides(bake, overrides)
    child_env = node_environment(node, arch, env, overrides, _names(bake.variables))
    pushes = push or _target_pushes(bake, target)
    if pushes:
        if not yes:
            raise LaunchRefused(f"{target} pushes to the registry: confirm with --yes")
        logged_in = docker_config_hosts(child_env)
        missing = sorted(push_hosts(config, bake, target, child_env) - logged_in)
        if missing:
            raise LaunchRefused(
                f"{target} pushes to {', '.join(missing)} but the docker config has no login "
                f"for it: run `docker login {missing[0]}` first"
            )
    docker = shutil.which("docker", path=child_env.get("PATH") or os.defpath) or "docker"
    bake_file = _bake_path(config, bake)

    slot = locks.slot_path(locks.lock_dir(config, env), node.name, node.endpoint, target, arch)
    slot_fd = locks.take_slot(slot)
    if slot_fd is None:
        holder = _wait_holder(slot, store)
        raise AlreadyRunning(
            _describe_holder(holder, f"{target} for {arch} on {node.name}"), holder
        )
    job_fd = log_fd = -1
    record: JobRecord | None = None
    try:
        os.ftruncate(slot_fd, 0)  # no stale holder is ever read while we hold it
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
                    redact_argv([*_engine_assignments(node, arch, overrides), *argv], env)
                ),
                user=user,
                host=host,
                bake_file=str(bake_file),
                job_dir=str(job_dir),
                started_at=time.time(),
                state=JobState.RUNNING,
            )
            log_fd = os.open(
                made.log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644
            )
            os.write(log_fd, _header(made, node))
            return made

        record = store.create(make)
        locks.write_holder(
            slot_fd,
            {
                "job_id": record.id,
                "user": user,
                "host": host,
                "started_at": record.started_at,
                "state_dir": str(store.root),
            },
        )
        argv = build_argv(
            config, target, node, pushes, str(record.metadata_path), docker, bake_file
        )
        command = [sys.executable, "-S", "-m", "rocmtui.core.jobs.detach"]
        command += ["--store", str(store.root), "--job", record.id, "--slot-fd", str(slot_fd)]
        command += [*(["--push"] if pushes else []), "--", *argv]
        proc = subprocess.Popen(
            command,
            stdin=subprocess.DEVNULL,
            stdout=log_fd,
            stderr=log_fd,
            pass_fds=(job_fd, slot_fd),
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
        for fd in (log_fd, job_fd, slot_fd):
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


def logout_risk(
    user: str | None = None, etc: Path = Path("/etc"), var: Path = Path("/var")
) -> str | None:
    """Why a detached build might still die at logout, or None.

    Where logind has `KillUserProcesses=yes`, every process of a login session is killed at
    logout, `setsid` or not (HAZARDS.md); only a process in the user's systemd manager, kept
    after logout by linger, survives. Read from logind.conf (and its drop-ins, last wins).
    """
    files = [etc / "systemd" / "logind.conf"]
    files += sorted((etc / "systemd" / "logind.conf.d").glob("*.conf"))
    kill = False
    for conf in files:
        try:
            text = conf.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            name, sep, value = line.strip().partition("=")
            if sep and name.strip() == "KillUserProcesses":
                kill = value.strip().lower() in ("yes", "true", "1", "on")
    if not kill:
        return None
    name = user or pwd.getpwuid(os.geteuid()).pw_name
    linger = (var / "lib" / "systemd" / "linger" / name).exists()
    advice = "" if linger else f"`loginctl enable-linger {name}` and "
    return (
        "logind kills a session's processes at logout (KillUserProcesses=yes): this build may "
        f"die when the session ends; use {advice}start builds from a `systemd-run --user` shell"
    )


def parse_overrides(items: Iterable[str]) -> dict[str, str]:
    """`VAR=VALUE` strings (from `--set`) as a mapping; raises LaunchError on a bad one."""
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name.isidentifier():
            raise LaunchError(f"--set takes VAR=VALUE with a bake variable name, not {item!r}")
        out[name] = value
    return out
