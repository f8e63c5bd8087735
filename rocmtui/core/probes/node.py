"""The node probe: is the engine up, what builder does it offer, how is the local host.

`NodeProber.probe` runs the engine probe (`engine.EngineProber`: docker SDK in abandonable
threads) and, for a node naming a `builder`, the shared `buildx ls` (`builders.BuildxLs`)
concurrently; a node on its engine's own builder gets its builder state from the engine
answer with no subprocess. Local nodes add host readings (`host.HostProber`). The snapshot
carries `last_ok_at` / `down_since` over from the previous one.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping
from pathlib import Path

from rocmtui.core.config.fleetfile import NodeConfig
from rocmtui.core.probes._common import ThreadGate, remaining
from rocmtui.core.probes.api_versions import note as api_note
from rocmtui.core.probes.builders import BROKEN_BUILDER_STATUSES, BuildxLs, engine_builder
from rocmtui.core.probes.endpoints import EndpointError, resolve_endpoint
from rocmtui.core.probes.engine_fail import EngineError
from rocmtui.core.probes.engine_prober import EngineFacts, EngineProber
from rocmtui.core.probes.failure import ReachStep
from rocmtui.core.probes.host import HostProber
from rocmtui.core.probes.ssh.master import DEFAULT_PERSIST
from rocmtui.core.snapshots import BuilderInfo, HostStats, NodeSnapshot
from rocmtui.core.states import NodeState
from rocmtui.core.text.sanitize import one_line


class NodeProber:
    """Probes nodes; keeps the state that must outlive one round (stuck threads, caches).

    One instance per process is enough (`DEFAULT_NODE_PROBER`); the monitor uses its own.
    `count_containers=False` leaves the running containers unasked (`containers_running` None).
    """

    def __init__(
        self,
        *,
        builders: BuildxLs | None = None,
        host: HostProber | None = None,
        env: Mapping[str, str] | None = None,
        count_containers: bool = True,
        ssh_persist: float = DEFAULT_PERSIST,
        ssh_reuse: bool = True,
    ) -> None:
        self.gate = ThreadGate()
        self.engines = EngineProber(self.gate, count_containers, ssh_persist, ssh_reuse)
        self.builders = builders or BuildxLs()
        self.host = host or HostProber(self.gate)
        self._env = env
        self._root_dirs: dict[str, Path] = {}  # endpoint -> the engine's DockerRootDir

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
            return _snapshot(
                node, now, previous, NodeState.UNKNOWN, one_line(exc), step=ReachStep.CONFIG
            )
        via = endpoint.via

        named: asyncio.Task[BuilderInfo] | None = None
        if node.builder:
            named = asyncio.ensure_future(
                self.builders.builder(node.builder, node, endpoint, deadline)
            )
        # Host readings run beside the engine probe, so a hung local engine does not hide
        # them; the disk is the engine's data dir when known (a PyTorch build fills that).
        guess = self._root_dirs.get(endpoint.base_url) or disk_path or Path("/")
        reading: asyncio.Task[HostStats | None] | None = None
        if node.local:
            reading = asyncio.ensure_future(self.host.stats(guess, deadline))
        facts: EngineFacts | None = None
        reason: str | None = None
        step: str | None = None
        try:
            facts = await self.engines.facts(node.name, endpoint, deadline, node.local)
        except EngineError as exc:
            reason, step = str(exc), exc.step
        except Exception as exc:  # a bug or an odd endpoint must not end the round
            reason = one_line(f"probe failed: {type(exc).__name__}: {exc}")
        builder: BuilderInfo | None = None
        if named is not None:
            try:
                builder = await named
            except Exception as exc:  # never let the builder side end the round
                builder = BuilderInfo(node.builder or "?", "?", "unknown", one_line(exc))
        elif facts is not None:
            builder = engine_builder(endpoint.builder_name, facts.engine_version, facts.os_arch)
        host: HostStats | None = None
        if reading is not None:
            host = await reading
            root = Path(facts.docker_root_dir) if facts and facts.docker_root_dir else None
            if root is not None and root != guess:
                self._root_dirs[endpoint.base_url] = root
                host = await self.host.stats(root, remaining(deadline_at)) or host
        if facts is None:
            return _snapshot(
                node, now, previous, NodeState.DOWN, reason, None, builder, host, via, step
            )
        state = NodeState.OK
        if builder is not None and builder.status in BROKEN_BUILDER_STATUSES:
            state, reason = NodeState.DOWN, one_line(f"builder {builder.name}: {builder.error}")
            step = ReachStep.ENGINE
        return _snapshot(node, now, previous, state, reason, facts, builder, host, via, step)

    def close(self) -> None:
        """End the ssh connections kept for the nodes (`ssh -O exit`)."""
        self.engines.close()


def _snapshot(
    node: NodeConfig,
    now: float,
    previous: NodeSnapshot | None,
    state: NodeState,
    reason: str | None,
    facts: EngineFacts | None = None,
    builder: BuilderInfo | None = None,
    host: HostStats | None = None,
    via: str | None = None,
    step: str | None = None,
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
        via=via,
        failed_step=str(step) if step and state is not NodeState.OK else None,
        api_min_version=facts.api_min_version if facts else None,
        api_used=facts.api_used if facts else None,
        api_note=api_note(facts.api_version, facts.api_min_version) if facts else None,
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
