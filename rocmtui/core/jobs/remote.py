"""What a build on a remote node needs beyond a local one: its ssh or TLS set-up, a watch on its
link, and after a cancel a look at the remote engine itself.

* ssh:// nodes: bake's docker runs plain `ssh` (its connection helper takes no options and no
  `-F`), so the job's private folder (`core.private`: the user's own, 0700, never the shared
  state folder, where any group member could replace it) gets `bin/ssh`, a two-line wrapper
  put first on bake's PATH that runs the real ssh with the options rocmtui's own ssh uses:
  the fleet file's `ssh_config` as `-F` (when set), `BatchMode=yes` (never a prompt),
  `StrictHostKeyChecking=yes` (no key is trusted by itself), keepalives set from
  `link_timeout_seconds` (ssh notices a dead link within a quarter of it, and gives up only
  well after the supervisor would), and `ControlPath=none`: the build's connection is its
  own, never a session over the console's kept connection, which ends with the console.
* tcp:// nodes with `tls_ca`/`tls_cert`/`tls_key`: docker wants them as `ca.pem`, `cert.pem` and
  `key.pem` in one folder (`DOCKER_CERT_PATH`, with `DOCKER_TLS_VERIFY=1`); the job's private
  folder gets `tls/` with links of those names. A context carries its own TLS material.
* Any node not reached through a unix socket gets the supervisor's link watch (`linkwatch`).
* Cancel on a remote node: killing bake here closes its connection, and BuildKit there cancels
  the solve; `engine_busy` asks that engine (its build cache records in use, docker's
  `/system/df`) so the record can say the remote engine stopped building, not only that the
  local process is gone.
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import shutil
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.private import ensure_private
from rocmtui.core.probes.endpoints import EndpointError, resolve_endpoint
from rocmtui.core.probes.engine_calls import client_for, dialer_for
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds

# bake's ssh sends a keepalive after link_timeout/4 s of silence and gives up after 8 missed:
# about twice the timeout, so the supervisor's link watch, not ssh, decides when a build is lost
# (a build whose ssh gave up early hangs even once the link is back)
SSH_ALIVE_SPLIT = 4
SSH_ALIVE_COUNT = 8


def endpoint_of(node: NodeConfig, config: FleetConfig | None, env: Mapping[str, str]) -> Any:
    """The node's resolved engine endpoint (None when it cannot be resolved)."""
    try:
        return resolve_endpoint(node, env)
    except EndpointError:
        return None


def is_remote(node: NodeConfig, config: FleetConfig | None, env: Mapping[str, str]) -> bool:
    """Reached over a network (ssh, tcp), not a unix socket of this machine."""
    endpoint = endpoint_of(node, config, env)
    return endpoint is not None and endpoint.transport not in ("unix", "npipe", "fd")


def _real_ssh(path: str) -> str:
    return shutil.which("ssh", path=path) or "/usr/bin/ssh"


def ssh_wrapper_text(
    real_ssh: str, ssh_config: str | None, link_timeout: float, control_path: str | None = None
) -> str:
    """The `bin/ssh` of a job on an ssh:// node (see the module docstring). `control_path`:
    sessions over that kept connection instead (the monitor's short history looks, which end
    with the monitor as its master does); a build's own connection never takes one."""
    alive = max(1, math.ceil(link_timeout / SSH_ALIVE_SPLIT))
    words = [real_ssh]
    if ssh_config:
        words += ["-F", ssh_config]
    for option in (
        "BatchMode=yes",
        "StrictHostKeyChecking=yes",
        "UpdateHostKeys=no",
        "ControlMaster=no",
        f"ControlPath={control_path or 'none'}",
        f"ServerAliveInterval={alive}",
        f"ServerAliveCountMax={SSH_ALIVE_COUNT}",
    ):
        words += ["-o", option]
    return (
        "#!/bin/sh\n"
        "# rocmtui: bake's docker runs plain `ssh`; this adds the options rocmtui's own ssh uses\n"
        f'exec {shlex.join(words)} "$@"\n'
    )


@contextlib.contextmanager
def _replacing(path: Path) -> Iterator[Path]:
    """A temporary name to make `path` under, renamed over it when the block ends: a folder
    made before (the history looks' folder, which every console and `status` of this state
    folder shares) is brought up to date, a reader or a concurrent writer never sees half of
    it, and a block that fails leaves nothing behind."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def prepare_environment(
    job_dir: Path,
    node: NodeConfig,
    config: FleetConfig,
    env: Mapping[str, str],
    child_env: dict[str, str],
    control_path: str | None = None,
) -> dict[str, str]:
    """bake's environment for a remote node: the ssh wrapper first on PATH, or the TLS
    folder; files are made in `job_dir`, a private folder (made 0700 and checked: raises
    `PrivateFolderError` when it is not the user's own). A local node's environment comes
    back unchanged. `control_path`: the wrapper's sessions go over that kept ssh connection."""
    endpoint = endpoint_of(node, config, env)
    if endpoint is None:
        return child_env
    out = dict(child_env)
    if endpoint.transport == "ssh":
        path = out.get("PATH") or os.defpath
        bindir = ensure_private(job_dir / "bin")
        ssh_config = str(config.ssh_config) if config.ssh_config else None
        text = ssh_wrapper_text(
            _real_ssh(path), ssh_config, config.link_timeout_seconds, control_path
        )
        with _replacing(bindir / "ssh") as tmp:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o700)
            with open(fd, "w") as fh:
                fh.write(text)
        out["PATH"] = f"{bindir}{os.pathsep}{path}"
    elif node.docker_host and endpoint.tls:
        tls = ensure_private(job_dir / "tls")
        for name, source in (
            ("ca.pem", node.tls_ca),
            ("cert.pem", node.tls_cert),
            ("key.pem", node.tls_key),
        ):
            if source:
                with _replacing(tls / name) as tmp:
                    tmp.symlink_to(source)
        out["DOCKER_CERT_PATH"] = str(tls)
        out["DOCKER_TLS_VERIFY"] = "1"
    return out


def supervisor_args(node: NodeConfig, config: FleetConfig, env: Mapping[str, str]) -> list[str]:
    """The supervisor's link-watch options for a remote node (none for a local one)."""
    if not is_remote(node, config, env):
        return []
    return ["--link-node", node.name, "--link-timeout", f"{config.link_timeout_seconds:g}"]


def engine_busy(endpoint: Any, timeout: float) -> int:
    """How many build cache records the engine reports in use (a build running there).

    Blocking (docker SDK, and ssh for an ssh:// engine); raises on no answer."""
    dialer = dialer_for(endpoint, timeout, None)
    client = client_for(endpoint, timeout, dialer)
    try:
        df = client.api.df()
    finally:
        client.close()
        if dialer is not None:
            dialer.reap()
    return sum(1 for record in df.get("BuildCache") or [] if record.get("InUse"))


def confirm_stopped(
    node: NodeConfig,
    config: FleetConfig | None,
    env: Mapping[str, str],
    others_running: bool,
    timeout: float = 20.0,
) -> str | None:
    """After a cancel: ask the remote engine until no build is in use there (or `timeout`).

    Returns a line for the record, or None for a local node. With `others_running` (another
    job of ours builds on the node), a busy engine proves nothing, so it is said so."""
    endpoint = endpoint_of(node, config, env)
    if endpoint is None or endpoint.transport in ("unix", "npipe", "fd"):
        return None
    deadline = time.monotonic() + timeout
    busy = -1
    while True:
        try:
            busy = engine_busy(endpoint, min(5.0, max(1.0, deadline - time.monotonic())))
        except Exception as exc:
            return one_line(f"{node.name}'s engine not asked ({type(exc).__name__}: {exc})")
        if busy == 0:
            return f"{node.name}'s engine: no build running"
        if others_running:
            return f"{node.name}'s engine: busy with another job's build"
        if time.monotonic() >= deadline:
            return f"{node.name}'s engine still reports a build in use after {fmt_seconds(timeout)}"
        time.sleep(0.5)
