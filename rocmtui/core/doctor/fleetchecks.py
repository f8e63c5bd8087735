"""The doctor's checks of the fleet: every node's engine (and, for ssh:// nodes, the ssh agent
and the known host), the registry login of pushing targets, the bake file and `bake --print`.

A login is checked without ever reading it: presence is a key of the docker config, and
whether the registry takes it is asked of buildx itself (`imagetools inspect` of a tag that
does not exist: "not found" means the login was accepted, 401 that it was refused).
"""

from __future__ import annotations

import asyncio
import os
import pwd
import shutil
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from rocmtui.core.bake.effective import fleet_variables, shell_overrides
from rocmtui.core.bake.file import BakeError, load_bake
from rocmtui.core.bake.find import check_found, shown
from rocmtui.core.bake.resolve import bake_environment, bake_print
from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.doctor.checks import FAIL, OK, WARN, Finding, command, first_line
from rocmtui.core.jobs.registries import docker_config_hosts, push_hosts
from rocmtui.core.probes import NodeProber
from rocmtui.core.states import NodeState
from rocmtui.core.text.units import fmt_seconds

LOGIN_PROBE_REPO = "rocmtui-doctor/login-check:none"  # a tag nobody pushes


# --- nodes ---------------------------------------------------------------------------------------


class NodesCheck:
    """Every node's engine, probed at once as the console does, within `deadline`.

    Each node's line is kept as its probe ends, so a round that misses the doctor's own
    deadline (a loaded machine: the probe imports alone can take a second) still says which
    nodes answered; only the others read "no answer" (`so_far`)."""

    def __init__(self, config: FleetConfig, deadline: float) -> None:
        self.config = config
        self.deadline = deadline
        self.found: dict[str, Finding] = {}

    def __call__(self) -> list[Finding]:
        """Probe every node; one line each, in the fleet file's order."""

        async def probe_all() -> None:
            prober = NodeProber(count_containers=False)

            async def one(node: NodeConfig) -> None:
                snap = await prober.probe(node, deadline=self.deadline)
                self.found[node.name] = self._finding(node, snap)

            await asyncio.gather(*(one(n) for n in self.config.nodes))

        asyncio.run(probe_all())
        return self.so_far(self.deadline)

    def so_far(self, waited: float) -> list[Finding]:
        """The lines of the nodes that answered; a `fail` for each that has not yet."""
        return [
            self.found.get(node.name)
            or Finding(
                f"node {node.name}",
                FAIL,
                f"{node.endpoint}: no answer within {fmt_seconds(waited)}",
                f"start the engine on {node.name}, or fix its docker_host / context",
            )
            for node in self.config.nodes
        ]

    @staticmethod
    def _finding(node: NodeConfig, snap: Any) -> Finding:
        name = f"node {node.name}"
        where = node.endpoint
        if snap.state == NodeState.OK:
            version = f"engine {snap.engine_version}" if snap.engine_version else "answers"
            return Finding(name, OK, f"{where}: {version}")
        return Finding(
            name,
            FAIL,
            f"{where}: {snap.state}: {snap.reason or 'no answer'}",
            f"start the engine on {node.name}, or fix its docker_host / context",
        )


def check_ssh(config: FleetConfig, env: Mapping[str, str], timeout: float) -> list[Finding]:
    """For ssh:// nodes: an agent with keys, and each host in known_hosts (ssh runs with
    BatchMode, so it can neither ask for a passphrase nor accept a new host key)."""
    ssh_nodes = [n for n in config.nodes if (n.docker_host or "").startswith("ssh://")]
    if not ssh_nodes:
        return []
    out = [_agent(env, timeout)]
    out.extend(_known_host(node, env, timeout) for node in ssh_nodes)
    return out


def _agent(env: Mapping[str, str], timeout: float) -> Finding:
    if not env.get("SSH_AUTH_SOCK"):
        return Finding(
            "ssh agent",
            WARN,
            "SSH_AUTH_SOCK is not set: only keys without a passphrase can be used",
            "start ssh-agent and ssh-add your key (or forward it: ssh -A)",
        )
    code, out = command(["ssh-add", "-l"], timeout, env)
    if code == 0:
        keys = len([ln for ln in out.splitlines() if ln.strip()])
        return Finding("ssh agent", OK, f"{keys} key(s) loaded")
    if code == 1:
        return Finding("ssh agent", WARN, "the agent holds no keys", "ssh-add your key")
    return Finding(
        "ssh agent",
        FAIL,
        first_line(out) or "the agent does not answer",
        "start ssh-agent again and ssh-add your key",
    )


def _known_host(node: NodeConfig, env: Mapping[str, str], timeout: float) -> Finding:
    name = f"known host {node.name}"
    url = urllib.parse.urlsplit(node.docker_host or "")
    host = url.hostname or ""
    config = ["-F", node.ssh_config] if node.ssh_config else []  # the fleet file's ssh_config
    argv = ["ssh", *config, "-G"] + (["-p", str(url.port)] if url.port else []) + ["--", host]
    code, out = command(argv, timeout, env)
    if code != 0:
        return Finding(name, FAIL, first_line(out), "check ~/.ssh/config for that host")
    options: dict[str, str] = {}
    for line in out.splitlines():
        key, _, value = line.partition(" ")
        options.setdefault(key.lower(), value)
    real = options.get("hostname", host)
    port = options.get("port", "22")
    wanted = real if port == "22" else f"[{real}]:{port}"
    # OpenSSH expands ~ from the passwd entry, not $HOME: look where ssh will look
    home = pwd.getpwuid(os.getuid()).pw_dir
    files = [
        home + f[1:] if f.startswith("~/") else f
        for f in options.get("userknownhostsfile", "").split()
    ]
    files += options.get("globalknownhostsfile", "").split()
    for path in files:
        if Path(path).is_file():
            found, _ = command(["ssh-keygen", "-F", wanted, "-f", path], timeout, env)
            if found == 0:
                return Finding(name, OK, f"{wanted} is in {path}")
    return Finding(
        name,
        FAIL,
        f"{wanted} is in no known_hosts file: ssh (BatchMode) refuses it",
        f"check the key's fingerprint, then: ssh-keyscan -p {port} {real} >> ~/.ssh/known_hosts",
    )


# --- the bake file and logins ------------------------------------------------------------------


def check_bake(config: FleetConfig, env: Mapping[str, str], timeout: float) -> list[Finding]:
    """The bake file parses, `bake --print` resolves it, and pushing targets have a login."""
    try:
        check_found(config)
        bake = load_bake(config.bake_file)
    except BakeError as exc:
        return [Finding("bake file", FAIL, str(exc), "fix the file at that line")]
    out = [
        Finding(
            "bake file",
            OK,
            f"{shown(config.bake_file)}: {len(bake.targets)} targets, "
            f"{len(bake.variables)} variables",
        )
    ]
    names = sorted(n for n in bake.targets if not n.startswith("_"))
    # what a launch from this shell would use: its variables named like bake's override them
    # what a launch from this shell would resolve: the fleet file's [variables], then the shell's
    overrides = fleet_variables(config.variables, bake) | shell_overrides(bake, env)
    launch_env = bake_environment(env, overrides, bake_variables=bake.variables)
    try:
        printed = bake_print(config.bake_file, names, launch_env, timeout)
    except BakeError as exc:
        out.append(
            Finding(
                "bake --print",
                FAIL,
                first_line(str(exc), 300),
                "run `docker buildx bake --print` there to see all of it",
            )
        )
        return out
    resolved = printed.get("target") if isinstance(printed, dict) else None
    out.append(Finding("bake --print", OK, f"{len(resolved or {})} targets resolved"))
    out.extend(check_logins(config, bake, printed, {**env, **launch_env}, timeout))
    return out


def check_logins(
    config: FleetConfig, bake: Any, printed: Any, env: Mapping[str, str], timeout: float
) -> list[Finding]:
    """Each registry a pushing target pushes to: a login entry, and whether it is taken."""
    pushing = sorted(bake.pushing_targets)
    if not pushing:
        return [Finding("registry login", OK, "no target pushes")]
    by_host: dict[str, list[str]] = {}
    for target in pushing:
        for host in push_hosts(config, bake, target, env, printed):
            by_host.setdefault(host, []).append(target)
    logged_in = docker_config_hosts(env)
    out = []
    for host, targets in sorted(by_host.items()):
        name = f"registry login {host}"
        shown = ", ".join(targets[:3]) + (
            f" and {len(targets) - 3} more" if len(targets) > 3 else ""
        )
        if host not in logged_in:
            out.append(
                Finding(
                    name,
                    FAIL,
                    f"no login for {host} (pushed to by {shown})",
                    f"docker login {host}",
                )
            )
            continue
        out.append(_login_taken(name, host, env, timeout))
    return out


def _login_taken(name: str, host: str, env: Mapping[str, str], timeout: float) -> Finding:
    if shutil.which("docker") is None:
        return Finding(name, WARN, "a login is saved; docker is missing to check it")
    code, out = command(
        ["docker", "buildx", "imagetools", "inspect", f"{host}/{LOGIN_PROBE_REPO}"], timeout, env
    )
    text = out.lower()
    if code == 0 or "not found" in text or "manifest unknown" in text:
        return Finding(name, OK, f"{host} accepts the saved login")
    if "401" in text or "unauthorized" in text or "authorization failed" in text:
        return Finding(name, FAIL, f"{host} refuses the saved login", f"docker login {host}")
    return Finding(name, WARN, f"a login is saved; {host} could not be asked: {first_line(out)}")
