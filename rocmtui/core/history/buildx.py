"""`docker buildx history ...` for one node, run as rocmtui's own launches reach that node.

The environment is bake's for that node (`jobs.command.node_environment`: the scrubbed launch
environment with the node's DOCKER_HOST or DOCKER_CONTEXT), plus what a remote node needs
(`jobs.remote.prepare_environment`: the ssh wrapper first on PATH with BatchMode and the fleet's
ssh config, or the TLS folder), made once per node under the state folder; a monitor's looks at
an ssh:// node go as sessions over the probe's kept connection (`kept_connection`), a
follower's, which outlives it, over one of its own; `--builder` when the node names one. Every
run has a deadline: the process gets its own session and the whole group is killed when the
deadline passes (a dead remote must never hang a caller).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from msgspec import Struct

from rocmtui.core.bake.plugin import buildx_plugin
from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.text.sanitize import sanitize_line
from rocmtui.core.text.units import fmt_seconds

if TYPE_CHECKING:
    from rocmtui.core.probes.ssh.dial import MasterPool

log = logging.getLogger(__name__)

LS_TIMEOUT = 10.0
INSPECT_TIMEOUT = 15.0
OUTPUT_CAP = 4 << 20

# what buildx prints when it has no `history` (0.13 and older) or the engine's BuildKit has no
# history API (dockerd 20.10: BuildKit 0.8)
# (0.13 parses the flags of an unknown `history ...` first: "unknown shorthand flag: 'o'")
_NO_COMMAND = re.compile(
    r"unknown command|is not a docker command|unknown (?:shorthand )?flag", re.IGNORECASE
)
_NO_API = re.compile(r"Unimplemented|unknown method ListenBuildHistory|unknown service", re.I)


class BuildxAnswer(Struct, frozen=True):
    """What one `docker buildx history ...` run gave."""

    stdout: str
    error: str | None  # one sanitised line when it failed or timed out; None when it worked
    kind: str | None = None  # "no-command" (buildx too old), "no-api" (engine), "timeout"


def node_workdir(state: Path, node: NodeConfig, env: Mapping[str, str] | None = None) -> Path:
    """Where the node's ssh wrapper or TLS folder for history commands lives: a private folder
    of the user's own for that state folder (`core.private`), never the shared state folder."""
    # on first use: kept off `status`
    from rocmtui.core.private import history_folder

    return history_folder(state, node.name, env)


def history_environment(
    node: NodeConfig,
    config: FleetConfig,
    env: Mapping[str, str],
    workdir: Path,
    control_path: str | None = None,
) -> dict[str, str]:
    """The environment `docker buildx history` runs with for `node` (see the module doc).
    `control_path`: on an ssh:// node, every connection is a session over that kept ssh
    connection (the probe's master) instead of a login of its own."""
    # on first use: kept off `status`
    from rocmtui.core.jobs import remote
    from rocmtui.core.jobs.command import node_environment

    child = node_environment(node, "", env, {}, ())
    child.pop("GFX_ARCH", None)
    return remote.prepare_environment(workdir, node, config, env, child, control_path)


def kept_connection(
    node: NodeConfig,
    config: FleetConfig,
    env: Mapping[str, str],
    masters: MasterPool,
    wait: float,
) -> str | None:
    """The control socket of the kept ssh connection to an ssh:// node (`masters`: the probe's),
    for `history_environment`; None for any other node, or when none can be had within `wait`
    seconds (the look then makes a connection of its own).

    A look a minute per node, and one a round while a build process is new on this host, would
    otherwise each be ssh logins (one `history ls` opens several connections): a key exchange
    and a PAM session on the node each time."""
    # on first use: kept off `status`
    from rocmtui.core.jobs.remote import endpoint_of
    from rocmtui.core.probes.failure import ReachError
    from rocmtui.core.probes.ssh.dial import parse_ssh_url

    endpoint = endpoint_of(node, config, env)
    if endpoint is None or endpoint.transport != "ssh":
        return None
    try:
        target = parse_ssh_url(endpoint.base_url)
        control, _ = masters.ensure(target, endpoint.ssh_config, wait)
    except (ReachError, ValueError) as exc:
        log.info("history of %s: a connection of its own (%s)", node.name, exc)
        return None
    return control


def docker_cli(path: str | None) -> str:
    """The docker CLI on `path` (a follower's `history logs` runs through it)."""
    return shutil.which("docker", path=path or os.defpath) or "docker"


def history_argv(node: NodeConfig, sub: str, *args: str, env: Mapping[str, str]) -> list[str]:
    """`docker-buildx history SUB [--builder B] ARGS...`: the buildx `docker buildx` runs under
    `env` (`bake.plugin.buildx_plugin`), in its standalone form, so no docker CLI process runs
    in between (half of a look's CPU); `docker buildx history ...` when no plugin is found."""
    plugin = buildx_plugin(env)
    if plugin is not None:
        argv = [str(plugin), "history", sub]
    else:
        argv = [docker_cli(env.get("PATH")), "buildx", "history", sub]
    if node.builder:
        argv += ["--builder", node.builder]
    return [*argv, *args]


#: Public names for readers that classify a history command's error themselves.
NO_API = _NO_API
NO_COMMAND = _NO_COMMAND


def _answer(out: bytes, err: bytes, code: int | None, what: str, timeout: float) -> BuildxAnswer:
    if code is None:
        return BuildxAnswer(
            out.decode("utf-8", "replace"),
            f"{what}: no answer in {fmt_seconds(timeout)}",
            "timeout",
        )
    if code == 0:
        return BuildxAnswer(out.decode("utf-8", "replace"), None)
    said = err.decode("utf-8", "replace").strip().splitlines()
    last = said[-1] if said else f"exit code {code}"
    kind = "no-command" if _NO_COMMAND.search(last) else "no-api" if _NO_API.search(last) else None
    return BuildxAnswer(out.decode("utf-8", "replace"), sanitize_line(f"{what}: {last}", 300), kind)


def run_history(argv: Sequence[str], env: Mapping[str, str], timeout: float) -> BuildxAnswer:
    """Run one history command (blocking), its group killed at `timeout`."""
    what = " ".join(argv[1:4])
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return BuildxAnswer(
            "", sanitize_line(f"cannot run {argv[0]}: {exc.strerror}"), "no-command"
        )
    try:
        out, err = proc.communicate(timeout=timeout)
        return _answer(out[:OUTPUT_CAP], err[-65536:], proc.returncode, what, timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        return _answer(out[:OUTPUT_CAP], err, None, what, timeout)
    finally:
        if proc.poll() is None:
            _kill_group(proc.pid)
            proc.wait()


async def run_history_async(
    argv: Sequence[str], env: Mapping[str, str], timeout: float
) -> BuildxAnswer:
    """`run_history` on the event loop (never blocks it; cancelled, it kills the group)."""
    what = " ".join(argv[1:4])
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=dict(env),
            start_new_session=True,
        )
    except OSError as exc:
        return BuildxAnswer(
            "", sanitize_line(f"cannot run {argv[0]}: {exc.strerror}"), "no-command"
        )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
        return _answer(out[:OUTPUT_CAP], err[-65536:], proc.returncode, what, timeout)
    except TimeoutError:
        return _answer(b"", b"", None, what, timeout)
    finally:
        if proc.returncode is None:
            _kill_group(proc.pid)
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait(), 2.0)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


__all__ = [
    "INSPECT_TIMEOUT",
    "LS_TIMEOUT",
    "NO_API",
    "NO_COMMAND",
    "BuildxAnswer",
    "docker_cli",
    "history_argv",
    "history_environment",
    "kept_connection",
    "node_workdir",
    "run_history",
    "run_history_async",
]
