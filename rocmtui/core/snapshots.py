"""Immutable snapshots that probes return and every display renders.

A snapshot is taken once and never changed; the monitor publishes a new `FleetSnapshot` per
refresh. Every snapshot carries the wall-clock time it was taken (`probed_at`, seconds since the
epoch) so that any display can show its age; `last_ok_at` remembers the last good answer so a
node that stopped answering can say since when.
"""

from __future__ import annotations

import time

from msgspec import Struct, field

from rocmtui.core.states import (
    HEALTHY_NODE_STATES,
    HEALTHY_SERVICE_STATES,
    NodeState,
    ServiceState,
)
from rocmtui.core.vitals.nodevitals import NodeVitals


class BuilderInfo(Struct, frozen=True):
    """One buildx builder node as `docker buildx ls --format json` (or the engine) reports it."""

    name: str
    driver: str
    status: str  # buildx's own word: running, inactive, stopped, error ...
    error: str | None = None
    buildkit_version: str | None = None
    platforms: tuple[str, ...] = ()


class HostStats(Struct, frozen=True):
    """CPU, memory, load and disk of the machine the console runs on (psutil).

    `cpu_percent` is None until a window long enough to mean something has passed (see
    rocmtui/core/probes/host.py): a one-shot probe has none."""

    cpu_percent: float | None
    cpu_count: int
    mem_percent: float
    mem_used: int
    mem_total: int
    load1: float
    load5: float
    load15: float
    disk_path: str
    disk_percent: float
    disk_free: int


class NodeSnapshot(Struct, frozen=True):
    """One BuildKit node: its engine, its builder, and (for the local node) the host."""

    name: str
    gfx: str | None
    endpoint: str  # DOCKER_HOST or context name, for display (never holds credentials)
    state: NodeState
    probed_at: float
    reason: str | None = None  # why down/unknown, one line, sanitised
    latency: float | None = None  # seconds the engine took to answer
    engine_version: str | None = None
    api_version: str | None = None  # the engine's newest API version
    os_arch: str | None = None
    containers_running: int | None = None
    builder: BuilderInfo | None = None
    host: HostStats | None = None
    last_ok_at: float | None = None
    down_since: float | None = None
    # how the engine is reached: unix, ssh, tls, tcp; "context/tls" for a context's
    via: str | None = None
    # for a node that is down or unknown, the step of reaching it that failed: dns, connect,
    # host key, auth, engine (or config); None when it answered or the step is not known
    failed_step: str | None = None
    api_min_version: str | None = None  # the oldest API version the engine accepts
    api_used: str | None = None  # the version rocmtui negotiated with it
    api_note: str | None = None  # one line when the engine is newer than rocmtui knows
    # why builds started elsewhere (make, cron, another host) are not visible on this node, in
    # one sanitised line: the engine keeps no build history (dockerd 20.10, BuildKit 0.8), the
    # buildx in use has no `history`, or the builder's history API answered an error. None when
    # its history is read (or not yet asked). Said once on the node's row, never as an error.
    history_note: str | None = None
    # the node's vitals from the first source that answered (rocmtui.core.vitals); None until
    # gathered
    vitals: NodeVitals | None = None

    def age(self, now: float | None = None) -> float:
        """Seconds since this snapshot was taken."""
        return max(0.0, (time.time() if now is None else now) - self.probed_at)


class ServiceSnapshot(Struct, frozen=True):
    """Zot (registry) or WebDAV health."""

    kind: str  # "registry" or "webdav"
    url: str
    state: ServiceState
    probed_at: float
    reason: str | None = None
    latency: float | None = None
    http_status: int | None = None
    identity: str | None = None  # Docker-Distribution-Api-Version or DAV header, as answered
    repositories: int | None = None  # registry catalog size, when readable
    extras: tuple[tuple[str, str], ...] = ()  # e.g. ("livez", "ok"), ("readyz", "ok")
    last_ok_at: float | None = None

    def age(self, now: float | None = None) -> float:
        """Seconds since this snapshot was taken."""
        return max(0.0, (time.time() if now is None else now) - self.probed_at)


class FleetSnapshot(Struct, frozen=True):
    """Everything one refresh learned: every node and both services."""

    taken_at: float
    nodes: tuple[NodeSnapshot, ...]
    registry: ServiceSnapshot
    webdav: ServiceSnapshot
    duration: float = 0.0  # seconds the whole probe round took
    problems: tuple[str, ...] = field(default=())  # extra reasons the fleet is unhealthy
    # An interim snapshot, taken while the round still waits on slow targets, names them in
    # `probing` (node names, "registry", "webdav"). Each keeps its last verdict, as the
    # previous round left it (its age says how old): a frozen engine reads `down` throughout,
    # never `down` and "probing" in turns. A target with no verdict yet (it never answered)
    # has a placeholder instead — a node `unknown`, a service `down`, both with the reason
    # "no answer yet" — and is named in `pending` too. A round's final snapshot has neither.
    pending: tuple[str, ...] = field(default=())
    # rounds of the monitor that raised so far (a bug: their traceback is in the monitor's log)
    failed_rounds: int = 0
    probing: tuple[str, ...] = field(default=())  # see `pending`

    @property
    def interim(self) -> bool:
        """Taken while the round still probes some targets (its own snapshot follows)."""
        return bool(self.probing or self.pending)

    @property
    def healthy(self) -> bool:
        """True when every node and both services are in a healthy state."""
        return (
            all(n.state in HEALTHY_NODE_STATES for n in self.nodes)
            and self.registry.state in HEALTHY_SERVICE_STATES
            and self.webdav.state in HEALTHY_SERVICE_STATES
            and not self.problems
        )

    def node(self, name: str) -> NodeSnapshot | None:
        """The node called `name`, if configured."""
        return next((n for n in self.nodes if n.name == name), None)
