"""A probe round's snapshot, assembled from its targets' answers.

Split from the round (`round.py`, whose `probe_fleet` starts the targets' tasks and waits on
them) so what a snapshot says about a target that has not answered stands on its own: the
answer when its task is done; else its last verdict when it was skipped or (in an interim
snapshot) is still being asked; else a placeholder saying why. The jobs' `node_overlay`
is applied to each node here; if it raises, the probed snapshot is kept as it was.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar, cast

from rocmtui.core.config.fleetfile import FleetConfig
from rocmtui.core.snapshots import FleetSnapshot, NodeSnapshot, ServiceSnapshot
from rocmtui.core.states import NodeState, ServiceState
from rocmtui.core.text.sanitize import one_line
from rocmtui.core.vitals import inround as vitals_in_round
from rocmtui.core.vitals.nodevitals import NodeVitals

T = TypeVar("T", NodeSnapshot, ServiceSnapshot)
NodeOverlay = Callable[[NodeSnapshot], NodeSnapshot]

log = logging.getLogger(__name__)


def _overlay(snapshot: NodeSnapshot, overlay: NodeOverlay | None) -> NodeSnapshot:
    if overlay is None:
        return snapshot
    try:
        return overlay(snapshot)
    except Exception:
        log.exception("node overlay failed for %s", snapshot.name)
        return snapshot


@dataclass
class RoundAssembly:
    """One round's targets and their tasks, as `probe_fleet` started them."""

    config: FleetConfig
    now: float  # the round's wall-clock time: every snapshot's `taken_at`
    started: float  # monotonic: the round's duration
    previous: FleetSnapshot | None
    skip: frozenset[str]
    tasks: dict[str, asyncio.Task[NodeSnapshot] | asyncio.Task[ServiceSnapshot]]
    gathering: dict[str, asyncio.Task[NodeVitals | None]]  # each node's vitals
    services: tuple[tuple[str, str], ...]  # (kind, url) of the registry and webdav
    node_overlay: NodeOverlay | None

    def __post_init__(self) -> None:
        self.prev_nodes = {n.name: n for n in self.previous.nodes} if self.previous else {}

    def snapshot(self, waiting: bool) -> FleetSnapshot:
        """The round's snapshot; `waiting`: an interim one, unfinished probes still run."""
        probing: list[str] = []  # still being asked (an interim snapshot)
        pending: list[str] = []  # ... with no verdict to show meanwhile

        def pick(key: str, name: str, old: T | None) -> T | None:
            """A target's answer; else, when it was skipped or (in an interim snapshot) is
            still being probed, its last verdict; else None (a placeholder is due)."""
            task = self.tasks.get(key)
            asking = waiting and task is not None and not task.done()
            if asking:
                probing.append(name)
                if old is None:
                    pending.append(name)
            if task is not None and task.done() and not task.cancelled() and not task.exception():
                return cast("T", task.result())
            return old if name in self.skip or asking else None

        def why(name: str) -> str:  # a placeholder's reason
            return "no answer yet" if name in pending else "probe round overran"

        nodes: list[NodeSnapshot] = []
        for node in self.config.nodes:  # task keys are prefixed: a node may be called "registry"
            snap = pick(f"node:{node.name}", node.name, self.prev_nodes.get(node.name))
            if snap is None:
                state = NodeState.UNKNOWN if node.name in pending else NodeState.DOWN
                endpoint = one_line(node.endpoint, 120)
                snap = NodeSnapshot(
                    node.name, node.gfx, endpoint, state, self.now, reason=why(node.name)
                )
            if node.name not in probing:  # a node still asked keeps its last verdict whole
                old = self.prev_nodes.get(node.name)
                snap = vitals_in_round.attach(snap, self.gathering.get(node.name), old, waiting)
            nodes.append(_overlay(snap, self.node_overlay))
        svc: dict[str, ServiceSnapshot] = {}
        for kind, url in self.services:
            answer = pick(kind, kind, getattr(self.previous, kind) if self.previous else None)
            if answer is None:
                answer = ServiceSnapshot(kind, url, ServiceState.DOWN, self.now, reason=why(kind))
            svc[kind] = answer
        return FleetSnapshot(
            taken_at=self.now,
            nodes=tuple(nodes),
            registry=svc["registry"],
            webdav=svc["webdav"],
            duration=time.monotonic() - self.started,
            pending=tuple(pending),
            probing=tuple(probing),
        )
