"""Talking to one Docker engine through the docker SDK, in abandonable threads.

The docker SDK is blocking, so every engine call runs in a thread through a `ThreadGate`: the
coroutine returns at the deadline whatever the thread does, and a node whose previous probe
thread is still stuck gets no new thread (it is reported down, "no answer for Ns"), so stuck
threads never pile up. `docker.DockerClient` is always built with an explicit API version (the
default `None` makes a network call in the constructor) and a timeout; ssh:// engines go
through `sshdial` (sessions over the node's kept connection, `sshmaster`; an abandoned probe's
session is killed). A failure names the step that failed (`engine_fail`). The calls themselves
(the client, /_ping, /version, /info) are in `engine_calls`; this module runs and caches them.

Every refresh asks each engine /_ping and, unless the prober was made with
`count_containers=False` (the console's monitor: no screen shows the count), the running
containers.

dockerd 20.10 runs `runc --version` and `docker-init --version` for every /version and /info,
which makes those ~10x dearer on the engine's side (100 nodes: 1.8 s instead of 0.45 s), so
they are asked once per engine version (the `Server` header of /_ping names it), at most every
`STATIC_TTL` seconds, and shared by every node on the same endpoint (`EngineStatic`). An
engine not yet asked is asked them beside its first /_ping, not after it.

The API version is negotiated per engine from what it answers, with no extra round trip:
/_ping and /version are unversioned paths every engine serves, and /_ping's `Api-Version`
header names the engine's newest version. Versioned calls then use
`api_versions.negotiate` of it: the engine's newest, capped at the newest rocmtui was tested
with (a newer one changes response shapes), raised to the engine's minimum when it says one
(Docker 29 refuses clients below 1.44; /version's `MinAPIVersion`, or the 400 that names it).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from msgspec import Struct
from msgspec.structs import replace

from rocmtui.core.probes import engine_calls
from rocmtui.core.probes._common import Stuck, ThreadGate, remaining
from rocmtui.core.probes.endpoints import Endpoint
from rocmtui.core.probes.engine_calls import EngineStatic
from rocmtui.core.probes.engine_fail import EngineError, LinkSteps, host_of
from rocmtui.core.probes.failure import ReachError, ReachStep
from rocmtui.core.probes.ssh.master import DEFAULT_PERSIST, SSHMasters
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds

STATIC_TTL = 600.0


class EngineFacts(Struct, frozen=True):
    """What one engine said: /_ping and running containers now, the rest from `EngineStatic`."""

    latency: float  # seconds /_ping took
    engine_version: str | None
    api_version: str | None
    os_arch: str | None
    containers_running: int | None
    docker_root_dir: str | None
    api_min_version: str | None = None  # the oldest the engine accepts (GET /version)
    api_used: str | None = None  # the version rocmtui speaks to it (negotiated)


class EngineProber:
    """Engine probes with their process-long state: the thread gate and the static cache."""

    def __init__(
        self,
        gate: ThreadGate | None = None,
        count_containers: bool = True,
        ssh_persist: float = DEFAULT_PERSIST,
        ssh_reuse: bool = True,
    ) -> None:
        self.gate = gate or ThreadGate()
        self.count_containers = count_containers
        self.masters = SSHMasters(persist=ssh_persist)  # one kept ssh connection per node
        self.ssh_reuse = ssh_reuse  # False: a login per probe (bench_remote's anchor)
        self.steps = LinkSteps(self.masters)
        self._static: dict[str, tuple[float, EngineStatic]] = {}  # endpoint -> (fetched, it)
        self._pending: dict[str, asyncio.Future[EngineStatic | None]] = {}
        self._clients: dict[tuple[str, float], Any] = {}  # (key, timeout) -> idle client
        self._minimums: dict[str, str] = {}  # endpoint -> the engine's minimum API version

    def close(self) -> None:
        """End the ssh connections this prober keeps (blocking, a few ms per node)."""
        self.masters.close()

    async def _threaded(self, key: str, endpoint: Endpoint, timeout: float, call: Any) -> Any:
        dialer = engine_calls.dialer_for(
            endpoint, max(0.2, timeout), self.masters if self.ssh_reuse else None
        )

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
                    self.steps.remember_address(endpoint)
                if client is None:
                    client = engine_calls.client_for(endpoint, max(0.2, timeout), dialer)
            except ReachError as exc:
                if dialer is not None:
                    dialer.reap()
                raise EngineError(exc.reason, exc.step) from None
            except Exception as exc:
                if dialer is not None:
                    dialer.reap()
                raise EngineError(
                    one_line(f"cannot make a docker client: {exc}"), ReachStep.CONFIG
                ) from None
            try:
                result = call(client, dialer)
            except EngineError as exc:
                engine_calls.finish_call(client, dialer)
                if exc.timed_out and exc.step is None:
                    exc.step = self.steps.after_timeout(endpoint, dialer)
                raise
            except BaseException:
                engine_calls.finish_call(client, dialer)
                raise
            if dialer is None:
                self._clients[reuse] = client
            else:
                engine_calls.finish_call(client, dialer)
            return result

        try:
            return await self.gate.run(
                key, body, timeout, on_abandon=dialer.kill if dialer is not None else None
            )
        except EngineError as exc:
            if exc.step is None and exc.timed_out:
                exc.step = self.steps.after_timeout(endpoint, dialer)
            raise
        except Stuck as stuck:
            raise EngineError(
                f"no answer for {fmt_seconds(time.monotonic() - stuck.since)}"
                " (previous probe still stuck)",
                self.steps.after_timeout(endpoint, dialer),
            ) from None
        except TimeoutError:
            raise EngineError(
                f"no answer in {fmt_seconds(timeout)}", self.steps.after_timeout(endpoint, dialer)
            ) from None

    async def call(self, key: str, endpoint: Endpoint, timeout: float, call: Any) -> Any:
        """`call(client, dialer)` in an abandonable thread against `endpoint`, within `timeout`
        seconds (raises EngineError): what other parts of the core (vitals) ask an engine."""
        return await self._threaded(key, endpoint, timeout, call)

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
                        lambda c, d: engine_calls.ask_static(
                            c, d, max(0.2, timeout), server, info, host_of(endpoint)
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
        url = endpoint.base_url
        cached = self._static.get(url)
        known_min = self._minimums.get(url) or (cached[1].api_min_version if cached else None)
        try:
            live: engine_calls.Live = await self._threaded(
                f"engine:{name}:{endpoint.base_url}",
                endpoint,
                deadline,
                lambda c, d: engine_calls.ask_live(
                    c,
                    d,
                    max(0.2, deadline),
                    self.count_containers,
                    host_of(endpoint),
                    known_min,
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
        if live.api_min_version:
            self._minimums[url] = live.api_min_version
        minimum = live.api_min_version or (static.api_min_version if static else None)
        return EngineFacts(
            latency=live.latency,
            engine_version=static.engine_version if static else None,
            api_version=live.api_version or (static.api_version if static else None),
            os_arch=static.os_arch if static else None,
            containers_running=live.running,
            docker_root_dir=static.docker_root_dir if static else None,
            api_min_version=minimum,
            api_used=live.api_used,
        )
