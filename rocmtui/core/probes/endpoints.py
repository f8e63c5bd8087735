"""Where a node's engine answers: `docker_host`, a docker context, or the local default.

Contexts are read from the docker CLI's own store, `$DOCKER_CONFIG/contexts/meta/<sha256 of the
name>/meta.json` (TLS material under `contexts/tls/<same>/docker/`), which costs a file read
instead of a `docker context inspect` subprocess. Only the `currentContext` key of
`config.json` is ever read, never its credentials.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path

from msgspec import Struct
from msgspec.structs import replace

from rocmtui.core.config.fleetfile import NodeConfig

DEFAULT_SOCKET = "unix:///var/run/docker.sock"


class EndpointError(Exception):
    """The node's endpoint cannot be worked out (missing context, unreadable metadata)."""


class Endpoint(Struct, frozen=True):
    """A resolved engine address, ready for `docker.DockerClient(base_url=...)`."""

    base_url: str
    builder_name: str  # the name buildx gives the engine's own (docker-driver) builder
    ca_cert: str | None = None
    client_cert: str | None = None
    client_key: str | None = None
    skip_tls_verify: bool = False
    context: str | None = None  # the docker context it came from
    ssh_config: str | None = None  # `ssh -F` for ssh:// (the fleet file's ssh_config)

    @property
    def tls(self) -> bool:
        """True when a client certificate or CA is configured."""
        return bool(self.ca_cert or self.client_cert)

    @property
    def transport(self) -> str:
        """How the engine is reached: unix, ssh, tls, tcp (plain), npipe or fd."""
        scheme = self.base_url.split("://", 1)[0] if "://" in self.base_url else "unix"
        if scheme in ("tcp", "https", "http"):
            return "tls" if self.tls or scheme == "https" else "tcp"
        return scheme

    @property
    def via(self) -> str:
        """`transport`, prefixed `context/` for a node named by a docker context."""
        return f"context/{self.transport}" if self.context else self.transport


def docker_config_dir(env: Mapping[str, str] | None = None) -> Path:
    """`$DOCKER_CONFIG`, else `~/.docker`."""
    env = os.environ if env is None else env
    if env.get("DOCKER_CONFIG"):
        return Path(env["DOCKER_CONFIG"])
    return Path(env.get("HOME") or Path.home()) / ".docker"


def _current_context(config_dir: Path, env: Mapping[str, str]) -> str | None:
    if env.get("DOCKER_CONTEXT"):
        return env["DOCKER_CONTEXT"]
    try:
        data = json.loads((config_dir / "config.json").read_text("utf-8"))
    except (OSError, ValueError):
        return None
    current = data.get("currentContext") if isinstance(data, dict) else None
    return current if isinstance(current, str) and current else None


def context_endpoint(name: str, env: Mapping[str, str] | None = None) -> Endpoint:
    """The docker endpoint of context `name` (`default` is the local engine)."""
    env = os.environ if env is None else env
    if name == "default":
        return Endpoint(env.get("DOCKER_HOST") or DEFAULT_SOCKET, builder_name="default")
    config_dir = docker_config_dir(env)
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()
    meta_path = config_dir / "contexts" / "meta" / digest / "meta.json"
    try:
        meta = json.loads(meta_path.read_text("utf-8"))
    except FileNotFoundError:
        raise EndpointError(f"no docker context named {name!r}") from None
    except (OSError, ValueError) as exc:
        raise EndpointError(f"docker context {name!r} unreadable: {exc}") from None
    endpoints = meta.get("Endpoints") if isinstance(meta, dict) else None
    docker_ep = endpoints.get("docker") if isinstance(endpoints, dict) else None
    if not isinstance(docker_ep, dict):
        raise EndpointError(f"docker context {name!r} has no docker endpoint")
    host = docker_ep.get("Host")
    if not isinstance(host, str) or not host:
        raise EndpointError(f"docker context {name!r} has no docker endpoint")
    tls_dir = config_dir / "contexts" / "tls" / digest / "docker"
    ca, cert, key = (tls_dir / f for f in ("ca.pem", "cert.pem", "key.pem"))
    return Endpoint(
        base_url=host,
        builder_name=name,
        ca_cert=str(ca) if ca.is_file() else None,
        client_cert=str(cert) if cert.is_file() and key.is_file() else None,
        client_key=str(key) if cert.is_file() and key.is_file() else None,
        skip_tls_verify=bool(docker_ep.get("SkipTLSVerify")),
        context=name,
    )


def resolve_endpoint(node: NodeConfig, env: Mapping[str, str] | None = None) -> Endpoint:
    """The engine address of `node`, the way the docker CLI would pick it (an ssh:// one with
    the fleet file's `ssh_config`, for `ssh -F`)."""
    env = os.environ if env is None else env
    if node.docker_host:
        endpoint = Endpoint(
            node.docker_host,
            builder_name="default",
            ca_cert=node.tls_ca,
            client_cert=node.tls_cert,
            client_key=node.tls_key,
        )
    elif node.context:
        endpoint = context_endpoint(node.context, env)
    elif env.get("DOCKER_HOST"):
        endpoint = Endpoint(env["DOCKER_HOST"], builder_name="default")
    else:
        current = _current_context(docker_config_dir(env), env)
        if current and current != "default":
            endpoint = context_endpoint(current, env)
        else:
            endpoint = Endpoint(DEFAULT_SOCKET, builder_name="default")
    if node.ssh_config and endpoint.base_url.startswith("ssh://"):
        endpoint = replace(endpoint, ssh_config=node.ssh_config)
    return endpoint
