"""The blocking docker SDK calls an engine probe makes in its thread.

Split from the prober (`engine_prober.EngineProber`, which runs these in abandonable threads
and caches what they said) so what is asked of an engine stands apart from how it is
scheduled. `docker.DockerClient` is always built with an explicit API version (the default
`None` makes a network call in the constructor) and a timeout; ssh:// engines go through
`ssh.dial` (sessions over the node's kept connection). /_ping and /version are unversioned
paths every engine serves; the versioned call (running containers) is made at the version
negotiated from /_ping's `Api-Version` header (`api_versions.negotiate`). Other parts of the
core that talk to an engine directly (prune, a remote job's checks) build their client here.
"""

from __future__ import annotations

import time
from typing import Any

import docker
import docker.tls
from msgspec import Struct

from rocmtui.core.probes.api_versions import (
    FIRST_CONTACT,
    ApiTooOld,
    negotiate,
    refused_minimum,
)
from rocmtui.core.probes.endpoints import Endpoint
from rocmtui.core.probes.engine_fail import EngineError, engine_failure
from rocmtui.core.probes.failure import ReachStep
from rocmtui.core.probes.ssh.dial import SSHDialer
from rocmtui.core.probes.ssh.master import SSHMasters
from rocmtui.core.text.sanitize import one_line


class EngineStatic(Struct, frozen=True):
    """What an engine's /version (and, for local nodes, /info) said."""

    server: str  # the /_ping Server header it was fetched under ("Docker/20.10.24 (linux)")
    engine_version: str | None
    api_version: str | None
    os_arch: str | None
    docker_root_dir: str | None
    api_min_version: str | None = None


class Live(Struct, frozen=True):
    """What /_ping (and the running containers) said, this probe."""

    latency: float
    server: str
    api_version: str | None
    running: int | None  # None: not asked
    api_used: str | None = None
    api_min_version: str | None = None  # learnt from a refusal, when the engine sent one


def dialer_for(endpoint: Endpoint, timeout: float, masters: SSHMasters | None) -> SSHDialer | None:
    """For ssh:// endpoints, the dialer that will own the ssh child (cheap, loop-safe)."""
    if not endpoint.base_url.startswith("ssh://"):
        return None
    return SSHDialer(endpoint.base_url, timeout, masters, endpoint.ssh_config)


def client_for(endpoint: Endpoint, timeout: float, dialer: SSHDialer | None) -> Any:
    """A DockerClient for `endpoint` (blocking imports: call it in a probe thread)."""
    if dialer is not None:
        # on first use: kept off `status`
        from rocmtui.core.probes.ssh.adapter import SSH_BASE_URL, SSHDialAdapter

        # A unix base URL makes the SDK build no ssh transport of its own (paramiko).
        client = docker.DockerClient(
            base_url="unix:///nonexistent", version=FIRST_CONTACT, timeout=timeout
        )
        client.api.mount(SSH_BASE_URL, SSHDialAdapter(dialer, timeout))
        client.api.base_url = SSH_BASE_URL
        client.api.trust_env = False
        return client
    tls: Any = None
    if endpoint.tls:
        cert = (
            (endpoint.client_cert, endpoint.client_key)
            if endpoint.client_cert and endpoint.client_key
            else None
        )
        verify: Any = False if endpoint.skip_tls_verify else (endpoint.ca_cert or True)
        tls = docker.tls.TLSConfig(client_cert=cert, ca_cert=endpoint.ca_cert, verify=verify)
    client = docker.DockerClient(
        base_url=endpoint.base_url, version=FIRST_CONTACT, timeout=timeout, tls=tls
    )
    # requests re-reads ~/.netrc and the proxy variables on every call otherwise: CPU on every
    # round, and an engine on the mesh must never be reached through an HTTP proxy.
    client.api.trust_env = False
    return client


def _str(value: object) -> str | None:
    return one_line(value, 80) if isinstance(value, str) and value else None


def finish_call(client: Any, dialer: Any) -> None:
    """Close the client and reap its ssh session, if any."""
    client.close()
    if dialer is not None:
        dialer.reap()


def ask_live(
    client: Any,
    dialer: SSHDialer | None,
    timeout: float,
    containers: bool,
    host: str = "?",
    known_min: str | None = None,
) -> Live:
    """Blocking: /_ping (with its headers) and, when `containers`, the running containers.

    The versioned call is made at the version negotiated from this /_ping (and `known_min`,
    the engine's minimum when known); an engine that refuses it for being too old names its
    minimum, and the call is made once more at that version."""
    api = client.api
    minimum = known_min
    try:
        started = time.perf_counter()
        # requests' own get(): the SDK's ping() hides the headers that name the engine
        ping = api.get(f"{api.base_url}/_ping", timeout=timeout)
        latency = time.perf_counter() - started
        if ping.status_code == 400 and "HTTPS server" in ping.text:
            raise EngineError(
                f"{host} wants TLS: give the node tls_ca, tls_cert and tls_key", ReachStep.AUTH
            )
        if ping.status_code != 200 or ping.text.strip() != "OK":
            raise EngineError(
                one_line(f"engine answered /_ping with HTTP {ping.status_code}"), ReachStep.ENGINE
            )
        newest = _str(ping.headers.get("Api-Version"))
        try:
            used = negotiate(newest, minimum)
        except ApiTooOld as exc:
            raise EngineError(str(exc), ReachStep.ENGINE) from None
        api._version = used
        running: int | None = None
        if containers:
            try:
                running = len(api.containers(filters={"status": "running"}, quiet=True))
            except Exception as exc:
                floor = refused_minimum(exc)
                if floor is None or floor == used:
                    raise
                minimum = floor
                used = api._version = negotiate(newest, minimum)
                running = len(api.containers(filters={"status": "running"}, quiet=True))
    except EngineError:
        raise
    except Exception as exc:
        raise engine_failure(exc, dialer, timeout, host) from None
    return Live(
        latency=latency,
        server=ping.headers.get("Server", ""),
        api_version=newest,
        running=running,
        api_used=used,
        api_min_version=minimum,
    )


def ask_static(
    client: Any, dialer: SSHDialer | None, timeout: float, server: str, info: bool, host: str = "?"
) -> EngineStatic:
    """Blocking: /version, and /info when `info` — both unversioned, so that they answer
    before the version is negotiated, whatever the engine's minimum."""
    api = client.api
    try:
        version = api.version(api_version=False)
        answer: dict[str, Any] = {}
        if info:
            reply = api.get(f"{api.base_url}/info", timeout=timeout)
            reply.raise_for_status()
            answer = reply.json()
    except Exception as exc:
        raise engine_failure(exc, dialer, timeout, host) from None
    os_name, arch = version.get("Os"), version.get("Arch")
    return EngineStatic(
        server=server,
        engine_version=_str(version.get("Version")),
        api_version=_str(version.get("ApiVersion")),
        os_arch=f"{os_name}/{arch}" if os_name and arch else None,
        docker_root_dir=_str(answer.get("DockerRootDir")),
        api_min_version=_str(version.get("MinAPIVersion")),
    )
