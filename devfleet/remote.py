"""Remote access to a dev node: its link, its sshd, its TLS listener; and the fleet files.

Every node in a namespace of its own becomes a host reached as a remote node is on the SNOC
mesh: a veth link with an address (`links`), dockerd also listening on `tcp://ADDR:2376` with
mutual TLS (`tls`), and sshd on `ADDR:22` for `ci` (`sshhost`). The fleet file written
beside it (`rocmtui.toml`) names each node the way the real one does: the local node by its
socket, `ssh://ci@snoc-think` through the fleet's ssh config, `tcp://ADDR:2376` with
`tls_ca`/`tls_cert`/`tls_key`. A second file (`unix.toml`) reaches every engine through its
unix socket, for tests about other things than the links. And `docker/` is a docker config
folder holding a real `docker context` per remote node (`DOCKER_CONFIG=.../docker`, then
`context = "snoc-gaming"` in a fleet file).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from devfleet.dockerd import EngineHandle
from devfleet.links import VethLink
from devfleet.processes import FleetError, child_env
from devfleet.services import ServiceHandle
from devfleet.sshhost import SshClientFiles, SshHostHandle
from devfleet.tls import ClientCert

TLS_PORT = 2376
#: How the fleet file reaches each remote node by default ("ssh" or "tls").
DEFAULT_REACH: Mapping[str, str] = {"snoc-think": "ssh", "snoc-gaming": "tls"}


@dataclass
class RemoteNode:
    """A node's remote access: the link, the TLS address, the sshd."""

    name: str
    reach: str  # how the fleet file reaches it: "ssh" or "tls"
    link: VethLink
    sshd: SshHostHandle | None = None

    @property
    def address(self) -> str:
        """The node's address on its link."""
        return self.link.node_address

    @property
    def tls_host(self) -> str:
        """`tcp://ADDR:2376`: dockerd with mutual TLS."""
        return f"tcp://{self.address}:{TLS_PORT}"

    @property
    def ssh_host(self) -> str:
        """`ssh://ci@NAME`: NAME is a `Host` of the fleet's ssh config."""
        user = self.sshd.user if self.sshd else "ci"
        return f"ssh://{user}@{self.name}"

    def stop(self) -> None:
        """Stop the sshd and drop the link."""
        try:
            if self.sshd is not None:
                self.sshd.stop()
        finally:
            self.link.remove()

    def to_record(self) -> dict[str, Any]:
        """A JSON-able record for fleet.json."""
        return {
            "name": self.name,
            "reach": self.reach,
            "link": self.link.to_record(),
            "sshd": self.sshd.to_record() if self.sshd else None,
        }

    @classmethod
    def from_record(cls, rec: dict[str, Any]) -> RemoteNode:
        """The remote node a `to_record` dict describes."""
        sshd = SshHostHandle.from_record(rec["sshd"]) if rec.get("sshd") else None
        return cls(rec["name"], rec["reach"], VethLink.from_record(rec["link"]), sshd)


def _toml(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid TOML basic string here


def write_fleet_file(
    path: Path,
    engines: list[EngineHandle],
    remotes: Mapping[str, RemoteNode],
    registry: ServiceHandle,
    webdav: ServiceHandle,
    bake_file: Path,
    refresh_seconds: float,
    stall_after_seconds: float,
    ssh: SshClientFiles | None = None,
    client: ClientCert | None = None,
    node_exporters: Mapping[str, str] | None = None,
) -> Path:
    """A fleet file in the brief's format. With `ssh`/`client`, remote nodes are reached over
    ssh or TLS as their `reach` says; without, every node through its unix socket.
    `node_exporters`: node name -> the /metrics its vitals are read from."""
    remote_shape = ssh is not None and client is not None
    lines = [
        "# The dev fleet on this machine (devfleet); removed by `devfleet down`.",
        f"bake_file = {_toml(str(bake_file))}",
        f"refresh_seconds = {float(refresh_seconds)}",
        f"stall_after_seconds = {float(stall_after_seconds)}",
    ]
    if remote_shape:
        assert ssh is not None
        lines.append(f"ssh_config = {_toml(str(ssh.config))}  # instead of ~/.ssh/config")
    lines += [
        "",
        "[registry]",
        f"url = {_toml(registry.url)}",
        "",
        "[webdav]",
        f"url = {_toml(webdav.url)}",
        f"path = {_toml(str(webdav.workdir / 'dav'))}",
        "",
        "# Tags name this fleet's registry, so a push from the console lands in it (every node",
        "# reaches it as 127.0.0.1: the netns nodes through their forwarders).",
        "[variables]",
        f"REGISTRY = {_toml(registry.address)}",
        f"SCCACHE_WEBDAV_ENDPOINT = {_toml(webdav.url)}",
    ]
    for e in engines:
        lines += ["", "[[nodes]]", f"name = {_toml(e.name)}"]
        remote = remotes.get(e.name)
        if remote_shape and remote is not None and remote.reach == "ssh":
            lines.append(f"docker_host = {_toml(remote.ssh_host)}")
        elif remote_shape and remote is not None:
            assert client is not None
            lines.append(f"docker_host = {_toml(remote.tls_host)}")
            lines.append(f"tls_ca = {_toml(str(client.ca))}")
            lines.append(f"tls_cert = {_toml(str(client.cert))}")
            lines.append(f"tls_key = {_toml(str(client.key))}")
        else:
            lines.append(f"docker_host = {_toml(e.docker_host)}")
        if e.gfx:
            lines.append(f"gfx = {_toml(e.gfx)}")
        # The loader takes any unix:// node for the local machine; only the host-namespace
        # node is "this machine" (host CPU, memory, disk), the others stand for remote nodes.
        lines.append(f"local = {'true' if e.netns is None else 'false'}")
        exporter = (node_exporters or {}).get(e.name)
        if exporter:
            lines.append(f"node_exporter = {_toml(exporter)}")
    path.write_text("\n".join(lines) + "\n")
    return path


def create_contexts(docker_config: Path, remotes: list[RemoteNode], client: ClientCert) -> None:
    """A docker config folder of the fleet's own holding a real `docker context` per remote
    node, made by `docker context create` as a person would: the ssh node's and the TLS one's
    (its certificates copied into the context store). Nothing else is in it (no logins)."""
    import subprocess

    docker_config.mkdir(parents=True, exist_ok=True)
    env = child_env({"DOCKER_CONFIG": str(docker_config)})
    for remote in remotes:
        host = f"host={remote.ssh_host}"
        if remote.reach == "tls":
            host = f"host={remote.tls_host},ca={client.ca},cert={client.cert},key={client.key}"
        done = subprocess.run(
            ["docker", "context", "create", remote.name, "--docker", host],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
        if done.returncode != 0 and "already exists" not in done.stderr:
            raise FleetError(f"docker context create {remote.name}: {done.stderr.strip()}")


def stop_remotes(remotes: list[RemoteNode]) -> None:
    """Stop every remote node's parts; the first failure is raised at the end."""
    errors: list[BaseException] = []
    for remote in remotes:
        try:
            remote.stop()
        except Exception as exc:
            errors.append(exc)
    with contextlib.suppress(IndexError):
        raise errors[0]
