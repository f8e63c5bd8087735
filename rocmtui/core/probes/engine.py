"""Talking to one Docker engine through the docker SDK, in abandonable threads.

The docker SDK is blocking, so every engine call runs in a thread through a `ThreadGate`: the
coroutine returns at the deadline whatever the thread does, and a node whose previous probe
thread is still stuck gets no new thread (it is reported down, "no answer for Ns"), so stuck
threads never pile up. `docker.DockerClient` is always built with a pinned API version (the
default `None` makes a network call in the constructor) and a timeout; ssh:// engines go
through `sshdial` (BatchMode ssh in its own session, killed when its probe is abandoned).

Every refresh asks each engine /_ping and, unless the prober was made with
`count_containers=False` (the console's monitor: no screen shows the count), the running
containers.
A failure names the step that failed (`failure.Step`: dns, connect, host key, auth, engine),
classified from ssh's words, the TLS error, or the socket error; a probe that ran out of time
asks the kernel whether its connection is the one not answering (`tcpstate`): then it is the
link (`connect`), else the engine.

dockerd 20.10 runs `runc --version` and `docker-init --version` for every /version and /info,
which makes those ~10x dearer on the engine's side (100 nodes: 1.8 s instead of 0.45 s), so
they are asked once per engine version (the `Server` header of /_ping names it), at most every
`STATIC_TTL` seconds, and shared by every node on the same endpoint (`EngineStatic`). An
engine not yet asked is asked them beside its first /_ping, not after it.
"""

from __future__ import annotations

import asyncio
import errno
import time
from dataclasses import dataclass, replace
from typing import Any

from rocmtui.core import tcpstate
from rocmtui.core.probes._common import Stuck, ThreadGate, fmt_seconds, one_line, remaining
from rocmtui.core.probes.endpoints import Endpoint
from rocmtui.core.probes.failure import ReachError, Step, network_failure, tls_failure
from rocmtui.core.probes.sshdial import DEFAULT_PERSIST, SSHDialer, SSHMasters

API_VERSION = "1.41"  # dockerd 20.10; pinned so the client never asks the engine first
LINK_CHECK_TIMEOUT = 0.3  # s a timed-out tcp engine's host gets to accept a connection
STATIC_TTL = 600.0


@dataclass(frozen=True, slots=True)
class EngineFacts:
    """What one engine said: /_ping and running containers now, the rest from `EngineStatic`."""

    latency: float  # seconds /_ping took
    engine_version: str | None
    api_version: str | None
    os_arch: str | None
    containers_running: int | None
    docker_root_dir: str | None


@dataclass(frozen=True, slots=True)
class EngineStatic:
    """What an engine's /version (and, for local nodes, /info) said."""

    server: str  # the /_ping Server header it was fetched under ("Docker/20.10.24 (linux)")
    engine_version: str | None
    api_version: str | None
    os_arch: str | None
    docker_root_dir: str | None


@dataclass(frozen=True, slots=True)
class _Live:
    latency: float
    server: str
    api_version: str | None
    running: int | None  # None: not asked


class EngineError(Exception):
    """The engine did not answer properly; `str()` is the one-line reason, `step` the step of
    reaching it that failed (None when not known)."""

    def __init__(self, reason: str, step: Step | None = None, timed_out: bool = False) -> None:
        super().__init__(reason)
        self.step = step
        self.timed_out = timed_out  # the client's own timeout: the link or the engine, to see


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


def _dialer(endpoint: Endpoint, timeout: float, masters: SSHMasters | None) -> SSHDialer | None:
    """For ssh:// endpoints, the dialer that will own the ssh child (cheap, loop-safe)."""
    if not endpoint.base_url.startswith("ssh://"):
        return None
    return SSHDialer(endpoint.base_url, timeout, masters, endpoint.ssh_config)


def _host_of(endpoint: Endpoint) -> str:
    """The engine's host as the operator wrote it (for reasons)."""
    import urllib.parse

    parsed = urllib.parse.urlsplit(endpoint.base_url)
    return parsed.hostname or endpoint.base_url


def _client(endpoint: Endpoint, timeout: float, dialer: SSHDialer | None) -> Any:
    """A DockerClient for `endpoint` (blocking imports: call it in a probe thread)."""
    import docker
    import docker.tls

    if dialer is not None:
        from rocmtui.core.probes.sshadapter import SSH_BASE_URL, SSHDialAdapter

        # A unix base URL makes the SDK build no ssh transport of its own (paramiko).
        client = docker.DockerClient(
            base_url="unix:///nonexistent", version=API_VERSION, timeout=timeout
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
        base_url=endpoint.base_url, version=API_VERSION, timeout=timeout, tls=tls
    )
    # requests re-reads ~/.netrc and the proxy variables on every call otherwise: CPU on every
    # round, and an engine on the mesh must never be reached through an HTTP proxy.
    client.api.trust_env = False
    return client


def _str(value: object) -> str | None:
    return one_line(value, 80) if isinstance(value, str) and value else None


def _finish(client: Any, dialer: Any) -> None:
    client.close()
    if dialer is not None:
        dialer.reap()


def _fail(exc: Exception, dialer: SSHDialer | None, timeout: float, host: str) -> EngineError:
    """The engine error for `exc`, with the step that failed when it can be told."""
    if dialer is not None:
        said = dialer.failure()
        if said is not None:
            return EngineError(said.reason, said.step)
        return EngineError(describe_error(exc, timeout), Step.ENGINE)
    known = tls_failure(exc, host) or network_failure(exc, host)
    if known is not None:
        return EngineError(known.reason, known.step)
    reason = describe_error(exc, timeout)
    if "HTTP request to an HTTPS server" in reason or "Client sent an HTTP request" in reason:
        return EngineError(
            f"{host} wants TLS: give the node tls_ca, tls_cert and tls_key", Step.AUTH
        )
    step = Step.ENGINE if reason.startswith("engine error") else None
    return EngineError(reason, step, timed_out=reason.startswith("no answer in"))


def _ask_live(
    client: Any, dialer: SSHDialer | None, timeout: float, containers: bool, host: str = "?"
) -> _Live:
    """Blocking: /_ping (with its headers) and, when `containers`, the running containers."""
    api = client.api
    try:
        started = time.perf_counter()
        # requests' own get(): the SDK's ping() hides the headers that name the engine
        ping = api.get(f"{api.base_url}/_ping", timeout=timeout)
        latency = time.perf_counter() - started
        if ping.status_code == 400 and "HTTPS server" in ping.text:
            raise EngineError(
                f"{host} wants TLS: give the node tls_ca, tls_cert and tls_key", Step.AUTH
            )
        if ping.status_code != 200 or ping.text.strip() != "OK":
            raise EngineError(
                one_line(f"engine answered /_ping with HTTP {ping.status_code}"), Step.ENGINE
            )
        running = (
            len(api.containers(filters={"status": "running"}, quiet=True)) if containers else None
        )
    except EngineError:
        raise
    except Exception as exc:
        raise _fail(exc, dialer, timeout, host) from None
    return _Live(
        latency=latency,
        server=ping.headers.get("Server", ""),
        api_version=_str(ping.headers.get("Api-Version")),
        running=running,
    )


def _ask_static(
    client: Any, dialer: SSHDialer | None, timeout: float, server: str, info: bool, host: str = "?"
) -> EngineStatic:
    """Blocking: /version, and /info when `info`."""
    try:
        version = client.api.version()
        answer = client.api.info() if info else {}
    except Exception as exc:
        raise _fail(exc, dialer, timeout, host) from None
    os_name, arch = version.get("Os"), version.get("Arch")
    return EngineStatic(
        server=server,
        engine_version=_str(version.get("Version")),
        api_version=_str(version.get("ApiVersion")),
        os_arch=f"{os_name}/{arch}" if os_name and arch else None,
        docker_root_dir=_str(answer.get("DockerRootDir")),
    )


class EngineProber:
    """Engine probes with their process-long state: the thread gate and the static cache."""

    def __init__(
        self,
        gate: ThreadGate | None = None,
        count_containers: bool = True,
        ssh_persist: float = DEFAULT_PERSIST,
    ) -> None:
        self.gate = gate or ThreadGate()
        self.count_containers = count_containers
        self.masters = SSHMasters(persist=ssh_persist)  # one kept ssh connection per node
        self._addresses: dict[str, tuple[str, int] | None] = {}  # tcp URL -> resolved address
        self._static: dict[str, tuple[float, EngineStatic]] = {}  # endpoint -> (fetched, it)
        self._pending: dict[str, asyncio.Future[EngineStatic | None]] = {}
        self._clients: dict[tuple[str, float], Any] = {}  # (key, timeout) -> idle client

    def close(self) -> None:
        """End the ssh connections this prober keeps (blocking, a few ms per node)."""
        self.masters.close()

    def _link_step(self, endpoint: Endpoint, dialer: SSHDialer | None) -> Step:
        """After a timeout: `connect` when our connection to the engine's host has data out
        unacknowledged (the link), else `engine` (connected, and the engine is silent)."""
        if dialer is not None:
            pid = dialer.master_pid or self.masters.pid_of(dialer.target, dialer.ssh_config)
            if pid is None:
                return Step.CONNECT
            view = tcpstate.link_view([pid])
        else:
            import os

            address = self._addresses.get(endpoint.base_url)
            if address is None:
                return Step.CONNECT if endpoint.transport in ("tls", "tcp") else Step.ENGINE
            view = tcpstate.link_view([os.getpid()], remote=address)
        return Step.CONNECT if view is None or view.down else Step.ENGINE

    def _tcp_step(self, endpoint: Endpoint) -> Step:
        """Blocking (a probe thread), after the client's own timeout: does the engine's host
        still answer a connection at all? Yes: the engine is silent; no: the link."""
        import socket

        address = self._addresses.get(endpoint.base_url)
        if address is None:
            return Step.CONNECT
        try:
            with socket.create_connection(address, timeout=LINK_CHECK_TIMEOUT):
                return Step.ENGINE
        except OSError:
            return Step.CONNECT

    def _remember_address(self, endpoint: Endpoint) -> None:
        """Resolve a tcp:// engine's address once (in the probe thread: it may ask DNS)."""
        if endpoint.transport not in ("tls", "tcp") or endpoint.base_url in self._addresses:
            return
        import socket
        import urllib.parse

        parsed = urllib.parse.urlsplit(endpoint.base_url)
        found: tuple[str, int] | None = None
        try:
            infos = socket.getaddrinfo(parsed.hostname or "", parsed.port or 2376, 0, 1)
            found = (str(infos[0][4][0]), int(infos[0][4][1]))
        except (OSError, IndexError, ValueError):
            found = None
        self._addresses[endpoint.base_url] = found

    async def _threaded(self, key: str, endpoint: Endpoint, timeout: float, call: Any) -> Any:
        dialer = _dialer(endpoint, max(0.2, timeout), self.masters)

        reuse = (key, round(timeout, 1))

        def body() -> Any:
            # Built in the thread: the client (and the first `import docker`, ~0.3 s) never
            # holds up the event loop. A client whose last call succeeded is kept for the
            # key's next probe (its pooled connection saves ~1 ms of CPU per node and round);
            # one that failed, or an ssh one, is closed.
            client = self._clients.pop(reuse, None) if dialer is None else None
            try:
                if dialer is not None:
                    dialer.prepare()  # the node's kept ssh connection: started if not up
                else:
                    self._remember_address(endpoint)
                if client is None:
                    client = _client(endpoint, max(0.2, timeout), dialer)
            except ReachError as exc:
                if dialer is not None:
                    dialer.reap()
                raise EngineError(exc.reason, exc.step) from None
            except Exception as exc:
                if dialer is not None:
                    dialer.reap()
                raise EngineError(
                    one_line(f"cannot make a docker client: {exc}"), Step.CONFIG
                ) from None
            try:
                result = call(client, dialer)
            except EngineError as exc:
                _finish(client, dialer)
                if exc.timed_out and exc.step is None and dialer is None:
                    exc.step = self._tcp_step(endpoint)  # the client closed its socket already
                raise
            except BaseException:
                _finish(client, dialer)
                raise
            if dialer is None:
                self._clients[reuse] = client
            else:
                _finish(client, dialer)
            return result

        try:
            return await self.gate.run(
                key, body, timeout, on_abandon=dialer.kill if dialer is not None else None
            )
        except EngineError as exc:
            if exc.step is None and exc.timed_out:
                exc.step = self._link_step(endpoint, dialer)
            raise
        except Stuck as stuck:
            raise EngineError(
                f"no answer for {fmt_seconds(time.monotonic() - stuck.since)}"
                " (previous probe still stuck)",
                self._link_step(endpoint, dialer),
            ) from None
        except TimeoutError:
            raise EngineError(
                f"no answer in {fmt_seconds(timeout)}", self._link_step(endpoint, dialer)
            ) from None

    async def _static_for(
        self, endpoint: Endpoint, server: str, info: bool, timeout: float
    ) -> EngineStatic | None:
        """The cached static facts, fetched once for every node of the endpoint if stale."""
        url = endpoint.base_url
        cached = self._static.get(url)
        if cached is not None:
            fetched, static = cached
            fresh = time.monotonic() - fetched < STATIC_TTL
            if (
                fresh
                and server
                and static.server == server
                and (static.docker_root_dir or not info)
            ):
                return static
        pending = self._pending.get(url)
        loop = asyncio.get_running_loop()
        if pending is None or pending.done() or pending.get_loop() is not loop:

            async def fetch() -> EngineStatic | None:
                try:
                    static = await self._threaded(
                        f"static:{url}",
                        endpoint,
                        timeout,
                        lambda c, d: _ask_static(
                            c, d, max(0.2, timeout), server, info, _host_of(endpoint)
                        ),
                    )
                except EngineError:
                    return None
                self._static[url] = (time.monotonic(), static)
                return static  # type: ignore[no-any-return]

            pending = self._pending[url] = asyncio.ensure_future(fetch())
        try:
            return await asyncio.wait_for(asyncio.shield(pending), timeout)
        except TimeoutError:
            return None

    def _vouch(self, url: str, static: EngineStatic, server: str) -> EngineStatic:
        """Record the /_ping `server` that static facts fetched beside it belong to."""
        if static.server == server:
            return static
        static = replace(static, server=server)
        self._static[url] = (self._static[url][0], static)  # a fetch records before returning
        return static

    async def facts(
        self, name: str, endpoint: Endpoint, deadline: float, local: bool
    ) -> EngineFacts:
        """Ask the engine within `deadline` seconds (raises EngineError with the reason).

        Versions may be None when /version alone did not answer in time: the engine is up.
        """
        deadline_at = time.monotonic() + deadline
        # An engine not asked before (the first round, every one-shot `status`) is asked for
        # its static facts beside /_ping rather than after it: dockerd forks runc and
        # docker-init for /version and /info, so the two in turn added 30-90 ms to the round.
        early: asyncio.Future[EngineStatic | None] | None = None
        if endpoint.base_url not in self._static:
            early = asyncio.ensure_future(self._static_for(endpoint, "", local, deadline))
        try:
            live: _Live = await self._threaded(
                f"engine:{name}:{endpoint.base_url}",
                endpoint,
                deadline,
                lambda c, d: _ask_live(
                    c, d, max(0.2, deadline), self.count_containers, _host_of(endpoint)
                ),
            )
        except BaseException:
            if early is not None:
                early.cancel()
            raise
        if early is not None and (static := await early) is not None:
            static = self._vouch(endpoint.base_url, static, live.server)
        else:
            static = await self._static_for(endpoint, live.server, local, remaining(deadline_at))
        return EngineFacts(
            latency=live.latency,
            engine_version=static.engine_version if static else None,
            api_version=live.api_version or (static.api_version if static else None),
            os_arch=static.os_arch if static else None,
            containers_running=live.running,
            docker_root_dir=static.docker_root_dir if static else None,
        )
