"""The node probe: is the engine up (docker SDK), what builder does it offer, how is the host.

The docker SDK is blocking, so every engine probe runs in a thread through a `ThreadGate`:
the coroutine returns at the deadline whatever the thread does, and a node whose previous
probe thread is still stuck gets no new thread (it is reported `down`, "no answer for Ns")
so stuck threads never pile up. `docker.DockerClient` is always built with a pinned API
version (the default `None` makes a network call in the constructor) and a timeout.
ssh:// engines go through `sshdial` (BatchMode ssh in its own session, killed on abandon).
"""

from __future__ import annotations

import asyncio
import errno
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rocmtui.core.config import NodeConfig
from rocmtui.core.probes._common import Stuck, ThreadGate, fmt_seconds, one_line, remaining
from rocmtui.core.probes.builders import BROKEN_BUILDER_STATUSES, BuildxLs, engine_builder
from rocmtui.core.probes.endpoints import Endpoint, EndpointError, resolve_endpoint
from rocmtui.core.probes.host import HostProber
from rocmtui.core.snapshots import BuilderInfo, HostStats, NodeSnapshot
from rocmtui.core.states import NodeState

API_VERSION = "1.41"  # dockerd 20.10; pinned so the client never asks the engine first


@dataclass(frozen=True, slots=True)
class EngineFacts:
    """What one engine said to /_ping, /version and /info."""

    latency: float  # seconds /_ping took
    engine_version: str | None
    api_version: str | None
    os_arch: str | None
    containers_running: int | None
    docker_root_dir: str | None


class EngineError(Exception):
    """The engine did not answer properly; `str()` is the one-line reason."""


_ERRNO_WORDS = {
    errno.ECONNREFUSED: "connection refused",
    errno.ENOENT: "no such socket",
    errno.EACCES: "permission denied",
    errno.ECONNRESET: "connection reset",
    errno.EHOSTUNREACH: "host unreachable",
    errno.ENETUNREACH: "network unreachable",
}


def describe_error(exc: BaseException, timeout: float) -> str:
    """A short reason for an SDK/requests exception, found by walking its causes."""
    import docker.errors  # the caller already paid for the import
    import requests.exceptions

    seen: list[BaseException] = []
    cur: BaseException | None = exc
    while cur is not None and len(seen) < 12:
        seen.append(cur)
        reason = getattr(cur, "reason", None)  # urllib3 MaxRetryError keeps the real one here
        cur = reason if isinstance(reason, BaseException) else (cur.__cause__ or cur.__context__)
    for item in seen:
        if isinstance(item, docker.errors.APIError):
            status = item.status_code or "?"
            return one_line(f"engine error {status}: {item.explanation or item}")
        if isinstance(item, requests.exceptions.Timeout | TimeoutError):
            return f"no answer in {fmt_seconds(timeout)}"
    for item in seen:
        if isinstance(item, OSError) and item.errno in _ERRNO_WORDS:
            return _ERRNO_WORDS[item.errno]
    for item in seen:
        name = type(item).__name__
        if name in ("RemoteDisconnected", "IncompleteRead") or (
            isinstance(item, ConnectionError) and not item.errno
        ):
            return "connection closed by the engine"
    return one_line(str(exc) or type(exc).__name__)


def _client(endpoint: Endpoint, timeout: float) -> tuple[Any, Any]:
    """A DockerClient for `endpoint` and, for ssh://, the dialer that owns the ssh child."""
    import docker
    import docker.tls

    if endpoint.base_url.startswith("ssh://"):
        from rocmtui.core.probes.sshdial import SSH_BASE_URL, SSHDialAdapter, SSHDialer

        dialer = SSHDialer(endpoint.base_url, timeout)
        # A unix base URL makes the SDK build no ssh transport of its own (paramiko).
        client = docker.DockerClient(
            base_url="unix:///nonexistent", version=API_VERSION, timeout=timeout
        )
        client.api.mount(SSH_BASE_URL, SSHDialAdapter(dialer, timeout))
        client.api.base_url = SSH_BASE_URL
        return client, dialer
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
        base_url=endpoint.base_url, version=API_VERSION, timeout=timeout, tls=tls
    )
    return client, None


def _ask_engine(client: Any, dialer: Any, timeout: float) -> EngineFacts:
    """Blocking: /_ping, /version, /info. Runs in a probe thread; closes the client."""
    try:
        started = time.perf_counter()
        if not client.api.ping():
            raise EngineError("engine answered /_ping without OK")
        latency = time.perf_counter() - started
        version = client.api.version()
        info = client.api.info()
    except EngineError:
        raise
    except Exception as exc:
        said = dialer.stderr_line() if dialer is not None else None
        raise EngineError(said or describe_error(exc, timeout)) from None
    finally:
        client.close()
        if dialer is not None:
            dialer.reap()
    os_name, arch = version.get("Os"), version.get("Arch")
    running = info.get("ContainersRunning")
    return EngineFacts(
        latency=latency,
        engine_version=_str(version.get("Version")),
        api_version=_str(version.get("ApiVersion")),
        os_arch=f"{os_name}/{arch}" if os_name and arch else None,
        containers_running=running if isinstance(running, int) else None,
        docker_root_dir=_str(info.get("DockerRootDir")),
    )


def _str(value: object) -> str | None:
    return one_line(value, 80) if isinstance(value, str) and value else None


class NodeProber:
    """Probes nodes; keeps the state that must outlive one round (stuck threads, caches).

    One instance per process is enough (`DEFAULT_NODE_PROBER`); the monitor uses its own.
    """

    def __init__(
        self,
        *,
        builders: BuildxLs | None = None,
        host: HostProber | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.gate = ThreadGate()
        self.builders = builders or BuildxLs()
        self.host = host or HostProber(self.gate)
        self._env = env

    async def engine(self, node: NodeConfig, endpoint: Endpoint, deadline: float) -> EngineFacts:
        """Ask the engine, abandoning the thread at `deadline` seconds (raises EngineError)."""
        sdk_timeout = max(0.2, deadline)
        client, dialer = _client(endpoint, sdk_timeout)
        key = f"engine:{node.name}:{endpoint.base_url}"
        try:
            return await self.gate.run(
                key,
                lambda: _ask_engine(client, dialer, sdk_timeout),
                deadline,
                on_abandon=dialer.kill if dialer is not None else None,
            )
        except Stuck as stuck:
            client.close()
            raise EngineError(
                f"no answer for {fmt_seconds(time.monotonic() - stuck.since)}"
                " (previous probe still stuck)"
            ) from None
        except TimeoutError:
            raise EngineError(f"no answer in {fmt_seconds(deadline)}") from None

    async def probe(
        self,
        node: NodeConfig,
        *,
        deadline: float,
        previous: NodeSnapshot | None = None,
        now: float | None = None,
        disk_path: Path | None = None,
    ) -> NodeSnapshot:
        """One node's snapshot, taken within `deadline` seconds (never raises).

        `disk_path` is the filesystem to report for a local node whose engine did not say
        where its data lives (normally the console's state dir).
        """
        now = time.time() if now is None else now
        deadline_at = time.monotonic() + deadline
        env = os.environ if self._env is None else self._env
        try:
            endpoint = resolve_endpoint(node, env)
        except EndpointError as exc:
            return _snapshot(node, now, previous, NodeState.UNKNOWN, one_line(exc))

        named: asyncio.Task[BuilderInfo] | None = None
        if node.builder:
            named = asyncio.ensure_future(
                self.builders.builder(node.builder, node, endpoint, deadline)
            )
        facts: EngineFacts | None = None
        reason: str | None = None
        try:
            facts = await self.engine(node, endpoint, deadline)
        except EngineError as exc:
            reason = str(exc)
        except Exception as exc:  # a bug or an odd endpoint must not end the round
            reason = one_line(f"probe failed: {type(exc).__name__}: {exc}")
        builder: BuilderInfo | None = None
        if named is not None:
            builder = await named
        elif facts is not None:
            builder = engine_builder(endpoint.builder_name, facts.engine_version, facts.os_arch)
        host: HostStats | None = None
        if node.local:
            # The engine's data dir is what a PyTorch build fills; else the console's state dir.
            path = Path(facts.docker_root_dir) if facts and facts.docker_root_dir else None
            host = await self.host.stats(path or disk_path or Path("/"), remaining(deadline_at))
        if facts is None:
            return _snapshot(
                node, now, previous, NodeState.DOWN, reason, builder=builder, host=host
            )
        state = NodeState.OK
        if builder is not None and builder.status in BROKEN_BUILDER_STATUSES:
            state, reason = NodeState.DOWN, one_line(f"builder {builder.name}: {builder.error}")
        return _snapshot(node, now, previous, state, reason, facts, builder, host)


def _snapshot(
    node: NodeConfig,
    now: float,
    previous: NodeSnapshot | None,
    state: NodeState,
    reason: str | None,
    facts: EngineFacts | None = None,
    builder: BuilderInfo | None = None,
    host: HostStats | None = None,
) -> NodeSnapshot:
    """Assemble a snapshot, carrying last_ok_at / down_since over from `previous`."""
    last_ok: float | None
    if state is NodeState.OK:
        last_ok, down_since = now, None
    else:
        last_ok = previous.last_ok_at if previous is not None else None
        was_down = previous is not None and previous.state is NodeState.DOWN
        down_since = (
            (previous.down_since if was_down and previous and previous.down_since else now)
            if state is NodeState.DOWN
            else None
        )
    return NodeSnapshot(
        name=node.name,
        gfx=node.gfx,
        endpoint=one_line(node.endpoint, 120),
        state=state,
        probed_at=now,
        reason=reason,
        latency=facts.latency if facts else None,
        engine_version=facts.engine_version if facts else None,
        api_version=facts.api_version if facts else None,
        os_arch=facts.os_arch if facts else None,
        containers_running=facts.containers_running if facts else None,
        builder=builder,
        host=host,
        last_ok_at=last_ok,
        down_since=down_since,
    )


DEFAULT_NODE_PROBER = NodeProber()
"""The process-wide prober: stuck threads are a per-process fact, so one-shot callers share it."""


async def probe_node(
    node: NodeConfig,
    *,
    deadline: float,
    previous: NodeSnapshot | None = None,
    now: float | None = None,
) -> NodeSnapshot:
    """Probe one node with the process-wide `DEFAULT_NODE_PROBER`."""
    return await DEFAULT_NODE_PROBER.probe(node, deadline=deadline, previous=previous, now=now)
