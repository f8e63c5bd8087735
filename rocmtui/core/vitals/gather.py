"""Gathering one node's vitals a round, from the first source that answers.

`VitalsProber.vitals` never raises and returns within its deadline. The order:

1. the node's node_exporter, when the fleet file names one; on an ssh:// node the ssh read
   runs beside it for the engine's process tree (node_exporter has no per-process CPU);
2. the node's kept ssh connection (`sshsource`), and the fallback when the exporter fails
   (the snapshot's `error` says the exporter failed and ssh answered);
3. this machine's /proc, read in-process, for a `local = true` node;
4. the engine API alone (`engineapi`), with one line naming what this node cannot give.

The engine's `/info` and `/system/df` (data root, build cache) come with every source. A node
whose sources all hang keeps its previous vitals (their `taken_at` shows their age) with the
reason in `error`; so does one whose better sources fail and leave only the engine API's
figures, for up to `KEEP_STALE` seconds.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Mapping

from msgspec.structs import replace

from rocmtui.core.config.fleetfile import NodeConfig
from rocmtui.core.probes._common import ThreadGate
from rocmtui.core.probes._http import HttpClients
from rocmtui.core.probes.endpoints import EndpointError, resolve_endpoint
from rocmtui.core.probes.engine_prober import EngineProber
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.text.units import fmt_seconds
from rocmtui.core.vitals import procfs
from rocmtui.core.vitals.engineapi import EngineInfo, EngineSource, engine_reading
from rocmtui.core.vitals.exporter import ExporterError, ExporterSource
from rocmtui.core.vitals.nodevitals import (
    SOURCE_ENGINE,
    SOURCE_LOCAL,
    SOURCE_NODE_EXPORTER,
    SOURCE_SSH,
    NodeVitals,
)
from rocmtui.core.vitals.reading import Reading, derive
from rocmtui.core.vitals.sshsource import SshSource, SshVitalsError

ENGINE_WAIT = 0.4  # share of the deadline the first round waits for the engine's data root
LOCAL_SHARE = 0.3  # seconds a read of this machine's /proc serves every local node asking
KEEP_STALE = 600.0  # seconds a node's last host figures stand in for a failing source
NO_TREE_EXPORTER = "engine cpu: node_exporter has no per-process CPU"


def _merge_engine(reading: Reading, info: EngineInfo | None) -> Reading:
    if info is None:
        return reading
    reading.build_cache_bytes = info.build_cache_bytes
    reading.data_root = reading.data_root or info.data_root
    reading.cpu_count = reading.cpu_count or info.cpu_count
    reading.mem_total_bytes = reading.mem_total_bytes or info.mem_total_bytes
    if info.build_cache_bytes is None:
        reading.missing.append(info.error or "build cache: the engine's /system/df gave none")
    return reading


class VitalsProber:
    """Every node's vitals; holds the sources' state across rounds (see the module doc)."""

    def __init__(
        self,
        engines: EngineProber,
        http: HttpClients | None = None,
        gate: ThreadGate | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.engine = EngineSource(engines)
        self.exporter = ExporterSource(http)
        self.ssh = SshSource(engines.masters) if engines.ssh_reuse else None
        self.gate = gate or engines.gate
        self._env = env
        # a one-shot caller (`status`) has no previous reading to take rates against: with a
        # window, a node's first reading is followed by a second this many seconds later
        self.window = 0.0
        self._local_reads: dict[str | None, asyncio.Future[str]] = {}
        self._local_at: dict[str | None, float] = {}

    async def vitals(
        self,
        node: NodeConfig,
        previous: NodeVitals | None,
        deadline: float,
        api_used: str | None = None,
        now: float | None = None,
    ) -> NodeVitals | None:
        """The node's vitals within `deadline` seconds (never raises; see the module doc)."""
        started = time.monotonic()
        first: NodeVitals | None = None
        try:
            first = await asyncio.wait_for(
                self._gather(node, previous, deadline, api_used, now), deadline
            )
            took = time.monotonic() - started
            left = deadline - took
            # a second reading takes about as long as the first did, less the engine's facts
            if previous is not None or not self.window or left < self.window + took + 0.1:
                return first
            await asyncio.sleep(self.window)  # the window the rates are taken over
            left = deadline - (time.monotonic() - started)
            return await asyncio.wait_for(self._gather(node, first, left, api_used, None), left)
        except TimeoutError:
            if first is not None:
                return first
            why = f"vitals: no answer in {fmt_seconds(deadline)}"
        except Exception as exc:  # a bug here must not take the node's probe down
            why = one_line(f"vitals failed: {type(exc).__name__}: {exc}")
        if previous is None:
            return NodeVitals(node=node.name, source=SOURCE_ENGINE, taken_at=time.time(), error=why)
        return replace(previous, error=why)

    async def _gather(
        self,
        node: NodeConfig,
        previous: NodeVitals | None,
        deadline: float,
        api_used: str | None,
        now: float | None,
    ) -> NodeVitals:
        started = time.monotonic()
        try:
            endpoint = resolve_endpoint(node, os.environ if self._env is None else self._env)
        except EndpointError as exc:
            endpoint = None
            endpoint_error = one_line(exc)
        info = None
        if endpoint is not None:
            # the data root is needed first by an exporter (which filesystem) and a local read
            # (which statvfs); the ssh script asks the node's docker for it by itself
            wait = deadline * ENGINE_WAIT if node.node_exporter or node.local else 0.0
            info = await self.engine.info(node.name, endpoint, api_used, wait)
        root = info.data_root if info else (previous.data_root if previous else None)

        def left() -> float:
            return max(0.05, deadline - (time.monotonic() - started) - 0.05)

        ssh_url = endpoint.base_url if endpoint and endpoint.transport == "ssh" else None
        ssh_task: asyncio.Task[Reading] | None = None
        if ssh_url and self.ssh is not None:
            ssh_task = asyncio.ensure_future(
                self.ssh.read(ssh_url, endpoint.ssh_config if endpoint else None, root, left())
            )
        errors: list[str] = []
        reading: Reading | None = None
        source = SOURCE_ENGINE
        try:
            if node.node_exporter:
                try:
                    reading = await self.exporter.read(node.node_exporter, root, left())
                    source = SOURCE_NODE_EXPORTER
                except ExporterError as exc:
                    errors.append(str(exc))
            if ssh_task is not None:
                try:
                    over_ssh = await ssh_task
                except SshVitalsError as exc:
                    errors.append(str(exc))
                else:
                    if reading is None:
                        reading, source = over_ssh, SOURCE_SSH
                    else:  # the exporter's host figures, ssh's engine tree
                        reading.tree = over_ssh.tree
                        reading.engine_oom_kills = over_ssh.engine_oom_kills
                        reading.missing += [m for m in over_ssh.missing if "engine" in m]
            elif reading is not None and not node.local:
                reading.missing.append(NO_TREE_EXPORTER + " and there is no ssh connection")
        finally:
            if ssh_task is not None and not ssh_task.done():
                ssh_task.cancel()
        if reading is not None and ssh_task is None and node.local:
            # the exporter's host figures, this machine's /proc for the engine tree
            here = await self._local(node, root, left(), errors)
            reading.tree = here.tree if here is not None else None
            reading.engine_oom_kills = here.engine_oom_kills if here is not None else None
            if here is None or here.tree is None:
                reading.missing.append(NO_TREE_EXPORTER + " and this machine's /proc gave none")
        if reading is None and node.local:
            reading = await self._local(node, root, left(), errors)
            source = SOURCE_LOCAL if reading is not None else source
        if reading is None:
            reading = engine_reading(info, _why_engine_only(node, ssh_url, endpoint is None))
            if endpoint is None:
                errors.append(endpoint_error)
        if endpoint is not None and info is None:  # asked beside the sources: in by now?
            info = self.engine.cached(node.name)
        reading = _merge_engine(reading, info)
        taken = time.time() if now is None else now
        error = "; ".join(errors) if errors else None
        if error and source == SOURCE_ENGINE and _worth_keeping(previous, taken):
            assert previous is not None  # the last host figures, their time showing their age
            return replace(previous, error=one_line(f"{error}; figures kept from before"))
        if error and source != SOURCE_ENGINE:
            error = one_line(f"{error}; figures from {source}")
        return derive(node.name, source, reading, taken, _same_source(previous, source), error)

    async def _local(
        self, node: NodeConfig, root: str | None, deadline: float, errors: list[str]
    ) -> Reading | None:
        """This machine's /proc read in an abandonable thread (statvfs may hang on a dead
        mount); None, the reason added to `errors`, when it fails. Local nodes of one round
        (the same machine) share one read per data root."""
        loop = asyncio.get_running_loop()
        shared = self._local_reads.get(root)
        if (
            shared is None
            or shared.get_loop() is not loop
            or (shared.done() and time.monotonic() - self._local_at.get(root, 0.0) > LOCAL_SHARE)
        ):
            self._local_at[root] = time.monotonic()
            shared = asyncio.ensure_future(
                self.gate.run(f"vitals-local:{root}", lambda: procfs.read_local(root), deadline)
            )
            # its failure is told to whoever still waits; one nobody waits for is let go
            shared.add_done_callback(lambda f: f.cancelled() or f.exception())
            self._local_reads[root] = shared
        try:
            text = await asyncio.wait_for(asyncio.shield(shared), deadline)
        except Exception as exc:
            errors.append(one_line(f"local /proc: {type(exc).__name__}"))
            return None
        return procfs.parse(text, root, _unix_socket(node))

    async def aclose(self) -> None:
        """Close the exporter's HTTP clients."""
        await self.exporter.aclose()


def _worth_keeping(previous: NodeVitals | None, now: float) -> bool:
    """Whether a node whose better sources all failed keeps `previous` rather than the engine's
    figures alone: host figures, not older than `KEEP_STALE` seconds."""
    return (
        previous is not None
        and previous.source != SOURCE_ENGINE
        and now - previous.taken_at <= KEEP_STALE
    )


def _same_source(previous: NodeVitals | None, source: str) -> NodeVitals | None:
    """The previous vitals when they came from `source`: rates across two sources' counters
    (node_exporter's CPU seconds against /proc's) would be nonsense."""
    return previous if previous is not None and previous.source == source else None


def _unix_socket(node: NodeConfig) -> str | None:
    host = node.docker_host or ""
    return host[len("unix://") :] if host.startswith("unix://") else None


def _why_engine_only(node: NodeConfig, ssh_url: str | None, no_endpoint: bool) -> str:
    if no_endpoint:
        return "host figures: the node's endpoint cannot be resolved"
    if ssh_url:
        return "host figures: the ssh connection gave none (see the error)"
    how = "a docker context" if node.context else "TLS/TCP"
    return (
        f"host cpu, memory, pressure, disk: an engine reached over {how} tells only its data "
        "root and build cache; name a node_exporter for this node"
    )
