"""The fleet monitor: one probe round = every node and both services, concurrently.

`probe_fleet(config)` runs one round and returns a `FleetSnapshot`; the whole round is
bounded by `config.probe_deadline_seconds` plus `ROUND_MARGIN`, whatever any target does.
`FleetMonitor` runs rounds every `refresh_seconds` for the console and publishes each
snapshot to a callback; it never imports Textual (the console and the CLI share it).

Node states from probes are `ok`, `down` or `unknown`. `building` and `stalled` come from
the jobs, not from the engines: pass `node_overlay`, a function that receives each probed
`NodeSnapshot` and returns it, or a copy made with `replace(snap, state=...)`.
It runs on the event loop for every node of every round, so it must be quick and must not
block; if it raises, the probed snapshot is kept as it was. The snapshot itself, answers and
placeholders, is assembled by `roundsnapshot.RoundAssembly`; this module starts and bounds
the round's probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from msgspec.structs import replace

from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig
from rocmtui.core.paths import state_dir
from rocmtui.core.probes import (
    DEFAULT_NODE_PROBER,
    BuildxLs,
    HttpClients,
    NodeProber,
    probe_registry,
    probe_webdav,
)
from rocmtui.core.probes.roundsnapshot import NodeOverlay, RoundAssembly
from rocmtui.core.retry import backoff
from rocmtui.core.snapshots import FleetSnapshot, NodeSnapshot, ServiceSnapshot
from rocmtui.core.states import NodeState, ServiceState
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.vitals import inround as vitals_in_round
from rocmtui.core.vitals.nodevitals import NodeVitals

if TYPE_CHECKING:
    from rocmtui.core.history.discover import HistoryWatch
    from rocmtui.core.vitals.gather import VitalsProber

Publish = Callable[[FleetSnapshot], Awaitable[None] | None]

ROUND_MARGIN = 0.5  # seconds a round may run past the probe deadline (scheduling slack)
BUILDER_REFRESH = 30.0  # seconds a `buildx ls` answer is reused by the monitor
INTERIM_AFTER = 0.5  # seconds into a round still waiting on a target: publish what answered

log = logging.getLogger(__name__)


@dataclass
class Probers:
    """The long-lived state behind probes: stuck threads, buildx cache, HTTP clients."""

    nodes: NodeProber = field(default_factory=lambda: DEFAULT_NODE_PROBER)
    http: HttpClients | None = None  # None: fresh clients each round (one-shot callers)
    # BuildKit's build history on each node (builds started elsewhere); None: not watched
    history: HistoryWatch | None = None
    # a one-shot caller (`status`): every node's history is asked now and waited for
    history_now: bool = False
    # every node's vitals (rocmtui.core.vitals), gathered beside its probe; False: none
    with_vitals: bool = True
    vitals: VitalsProber | None = None
    # a one-shot caller: seconds between a node's two first readings, so that its rates (CPU)
    # are there at once; 0 (the monitor): rates from the previous round
    vitals_window: float = 0.0

    def __post_init__(self) -> None:
        if self.with_vitals and self.vitals is None:
            # on first use: only a round with vitals needs their probers
            from rocmtui.core.vitals.gather import VitalsProber

            engines = self.nodes.engines
            self.vitals = VitalsProber(engines, self.http, self.nodes.gate)
            self.vitals.window = self.vitals_window
        # the history looks go over the node probes' kept ssh connections: one login per
        # node for both (a prober that logs in per probe, bench_remote's anchor, lends none)
        engines = self.nodes.engines
        if self.history is not None and self.history.masters is None and engines.ssh_reuse:
            self.history.masters = engines.masters


async def _node(
    probers: Probers,
    node: NodeConfig,
    deadline: float,
    previous: NodeSnapshot | None,
    now: float,
    disk: Path,
) -> NodeSnapshot:
    """One node's probe, then (when watched) its build history, within the round's bounds."""
    started = time.monotonic()
    snap = await probers.nodes.probe(
        node, deadline=deadline, previous=previous, now=now, disk_path=disk
    )
    return await _history(probers, node, snap, deadline - (time.monotonic() - started))


async def _history(
    probers: Probers, node: NodeConfig, snap: NodeSnapshot, left: float
) -> NodeSnapshot:
    """The node's snapshot with its build history when watched, within `left` seconds."""
    watch = probers.history
    if watch is None:
        return snap
    left = max(0.0, left)
    try:
        if probers.history_now:
            return await asyncio.wait_for(watch.ask(node, snap), left)
        return await watch.watch(node, snap, wait=min(left, 1.5))
    except TimeoutError:
        return snap
    except Exception:
        log.exception("build history of %s", node.name)
        return snap


async def _service(
    kind: str,
    url: str,
    deadline: float,
    previous: ServiceSnapshot | None,
    now: float,
    http: HttpClients | None,
) -> ServiceSnapshot:
    probe = probe_registry if kind == "registry" else probe_webdav
    return await probe(url, deadline=deadline, previous=previous, now=now, clients=http)


async def probe_fleet(
    config: FleetConfig,
    *,
    now: float | None = None,
    previous: FleetSnapshot | None = None,
    node_overlay: NodeOverlay | None = None,
    probers: Probers | None = None,
    skip: frozenset[str] = frozenset(),
    deadline: float | None = None,
    interim: Publish | None = None,
) -> FleetSnapshot:
    """One probe round of the whole fleet, bounded by the probe deadline plus a margin.

    `deadline` overrides `config.probe_deadline_seconds` (the CLI passes what is left of
    the deadline after its own start-up).

    `previous` carries `last_ok_at` / `down_since` over. Targets named in `skip` (node
    names, "registry", "webdav") are not probed; their `previous` snapshot is reused as is
    (its age shows how old it is). `node_overlay` is the jobs hook described in the module
    docstring.

    `interim`, if given, receives a snapshot `INTERIM_AFTER` seconds into a round that is
    still waiting on some targets (a hung engine holds a round until the deadline): what has
    answered, and for the rest (`FleetSnapshot.probing`) their last verdict, kept as it was,
    or a placeholder for one that never answered (named in `pending` too). So one slow node
    never hides the others, not even in the console's first round, and never loses its verdict
    while it is asked again.
    """
    now = time.time() if now is None else now
    started = time.monotonic()
    probers = probers or Probers()
    deadline = config.probe_deadline_seconds if deadline is None else deadline
    disk = state_dir(config)
    probers.nodes.host.prime()
    prev_nodes = {n.name: n for n in previous.nodes} if previous else {}

    tasks: dict[str, asyncio.Task[NodeSnapshot] | asyncio.Task[ServiceSnapshot]] = {}
    # each node's vitals beside its probe, in a task of their own: a probe that overruns the
    # round loses its snapshot, never the vitals the verdicts read
    gathering: dict[str, asyncio.Task[NodeVitals | None]] = {}
    for node in config.nodes:
        if node.name in skip and node.name in prev_nodes:
            continue
        old = prev_nodes.get(node.name)
        tasks[f"node:{node.name}"] = asyncio.ensure_future(
            _node(probers, node, deadline, old, now, disk)
        )
        if probers.vitals is not None:
            # a monitor's first round of a node waits for its probe: the login and the docker
            # client's first import are the probe's, and must not be slowed into an interim
            after = tasks[f"node:{node.name}"] if old is None and interim is not None else None
            gathering[node.name] = asyncio.ensure_future(
                vitals_in_round.gather(probers.vitals, node, old, deadline, after)
            )
    services = (("registry", config.registry.url), ("webdav", config.webdav.url))
    for kind, url in services:
        old = getattr(previous, kind) if previous else None
        if kind in skip and old is not None:
            continue
        tasks[kind] = asyncio.ensure_future(_service(kind, url, deadline, old, now, probers.http))
    assemble = RoundAssembly(
        config, now, started, previous, skip, tasks, gathering, services, node_overlay
    ).snapshot

    limit = deadline + ROUND_MARGIN
    every: list[asyncio.Task[Any]] = [*tasks.values(), *gathering.values()]
    # an interim snapshot is for probes that hang; vitals still coming in do not need one
    if tasks and interim is not None and limit > INTERIM_AFTER:
        _, late = await asyncio.wait(tasks.values(), timeout=INTERIM_AFTER)
        if late:
            await _deliver(interim, assemble(waiting=True))
    if every:
        left = limit - (time.monotonic() - started)
        _, unfinished = await asyncio.wait(every, timeout=max(0.0, left))
        for task in unfinished:  # each probe bounds itself; this is the belt to those braces
            task.cancel()
    if probers.history is not None:
        probers.history.round_done()  # the looks nobody waited for start now
    if probers.http is None and probers.vitals is not None:
        await probers.vitals.aclose()  # a one-shot caller's clients, like the services'
    return assemble(waiting=False)


async def _deliver(publish: Publish, snapshot: FleetSnapshot) -> None:
    """Hand a snapshot to a plain or coroutine `publish`; an exception in it is logged."""
    try:
        outcome = publish(snapshot)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:
        log.exception("publishing a fleet snapshot failed")


def _history_watch(config: FleetConfig, seconds: float | None) -> HistoryWatch:
    # on first use: discovery brings the bake file's modules and sqlite3
    from rocmtui.core.history.discover import HISTORY_INTERVAL, HistoryWatch

    return HistoryWatch(config, interval=HISTORY_INTERVAL if seconds is None else seconds)


@dataclass
class _Backoff:
    failures: int = 0
    next_at: float = 0.0  # monotonic


class FleetMonitor:
    """Probes the fleet every `refresh_seconds` and publishes each `FleetSnapshot`.

    Rounds never overlap: a tick that comes while a round is still running is dropped. A
    target that keeps failing is probed less often (`retry.backoff`: after n failures in a
    row, every `refresh_seconds * 2**(n-1)` seconds, at most 30); in between, its last
    snapshot is republished with its growing age. `publish` may be a plain function or a
    coroutine function; an exception in it is logged and does not stop the monitor.
    It leaves each engine's running containers uncounted unless `count_containers`.
    """

    def __init__(
        self,
        config: FleetConfig,
        publish: Publish,
        *,
        node_overlay: NodeOverlay | None = None,
        builder_refresh_seconds: float = BUILDER_REFRESH,
        count_containers: bool = False,
        history: bool = True,
        history_seconds: float | None = None,
        vitals: bool = True,
    ) -> None:
        """`history`: watch each node's BuildKit history for builds started elsewhere (one
        `history ls` per node every `history_seconds`, default
        `history.discover.HISTORY_INTERVAL`, and at once when a build process appears on
        this host)."""
        self.config = config
        self.publish = publish
        self.node_overlay = node_overlay
        self.probers = Probers(
            # no running-container count: no screen shows it, and asking for it was one more
            # docker SDK request per node and round (a sixth of an idle monitor's samples)
            nodes=NodeProber(
                builders=BuildxLs(refresh_seconds=builder_refresh_seconds),
                count_containers=count_containers,
                # the kept ssh connection outlives a crashed console this long at most, and
                # never lapses between two rounds
                ssh_persist=max(60.0, 3 * config.refresh_seconds),
            ),
            http=HttpClients(),
            history=(
                _history_watch(config, history_seconds)
                if history and config.watch_history
                else None
            ),
            with_vitals=vitals,
        )
        self.latest: FleetSnapshot | None = None
        self.rounds = 0
        self.dropped = 0  # ticks skipped because a round was still running
        self.failed_rounds = 0  # rounds that raised (a bug): logged, and the next one runs
        self._backoff: dict[str, _Backoff] = {}
        self._wake = asyncio.Event()
        self._running = False
        self._round_lock = asyncio.Lock()

    def request_refresh(self) -> None:
        """Run a round as soon as the current one (if any) is done."""
        self._wake.set()

    def _skip(self) -> frozenset[str]:
        now = time.monotonic()
        return frozenset(k for k, b in self._backoff.items() if b.failures and b.next_at > now)

    def _record(self, snapshot: FleetSnapshot, skipped: frozenset[str], started: float) -> None:
        outcomes = [(n.name, n.state is not NodeState.DOWN) for n in snapshot.nodes]
        outcomes += [
            ("registry", snapshot.registry.state is not ServiceState.DOWN),
            ("webdav", snapshot.webdav.state is not ServiceState.DOWN),
        ]
        for key, good in outcomes:
            if key in skipped:
                continue
            failing = self._backoff.setdefault(key, _Backoff())
            if good:
                failing.failures = 0
            else:
                failing.failures += 1
                delay = backoff(self.config.refresh_seconds, failing.failures)
                # from the round's start, so a delay of one period means "the next round"
                failing.next_at = started + delay - 0.05

    async def round(self) -> FleetSnapshot:
        """Run one round now (waiting for a running one first) and publish it."""
        async with self._round_lock:
            started = time.monotonic()
            skipped = self._skip()
            snapshot = await probe_fleet(
                self.config,
                previous=self.latest,
                node_overlay=self.node_overlay,
                probers=self.probers,
                skip=skipped,
                interim=self.publish,
            )
            self._record(snapshot, skipped, started)
            if self.failed_rounds:
                snapshot = replace(snapshot, failed_rounds=self.failed_rounds)
            self.latest = snapshot
            self.rounds += 1
        await _deliver(self.publish, snapshot)
        return snapshot

    async def run(self) -> None:
        """Probe until `stop()` (or cancellation); the first round starts at once."""
        self._running = True
        period = self.config.refresh_seconds
        try:
            while self._running:
                started = time.monotonic()
                try:
                    await self.round()
                except Exception:  # a bug in one round must not end hours of monitoring
                    self.failed_rounds += 1
                    log.exception("probe round failed")
                    await self._publish_failure()
                elapsed = time.monotonic() - started
                missed = int(elapsed // period)
                self.dropped += missed
                wait = period * (missed + 1) - elapsed
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), wait)
        finally:
            self._running = False
            if self.probers.http is not None:
                await self.probers.http.aclose()
            if self.probers.vitals is not None:
                await self.probers.vitals.aclose()
            # `ssh -O exit` for each kept connection: a few ms each, off the loop
            await asyncio.get_running_loop().run_in_executor(None, self.probers.nodes.close)

    async def _publish_failure(self) -> None:
        """Say that a round raised: the last snapshot again (its age shows) with the count, or
        before any round came, every target `unknown` with the reason."""
        latest = self.latest
        if latest is None:
            now = time.time()
            why = "probe round failed (see the monitor's log)"
            latest = FleetSnapshot(
                taken_at=now,
                nodes=tuple(
                    NodeSnapshot(
                        n.name, n.gfx, one_line(n.endpoint, 120), NodeState.UNKNOWN, now, why
                    )
                    for n in self.config.nodes
                ),
                registry=ServiceSnapshot(
                    "registry", self.config.registry.url, ServiceState.DOWN, now, why
                ),
                webdav=ServiceSnapshot(
                    "webdav", self.config.webdav.url, ServiceState.DOWN, now, why
                ),
            )
        await _deliver(self.publish, replace(latest, failed_rounds=self.failed_rounds))

    def stop(self) -> None:
        """Ask `run()` to return after the current round."""
        self._running = False
        self._wake.set()
