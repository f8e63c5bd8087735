"""A probe round's snapshot, assembled from its targets' answers."""

from __future__ import annotations

def _overlay(snapshot: NodeSnapshot, overlay: NodeOverlay | None) -> NodeSnapshot:
    if overlay is None:
        return snapshot
    try:
        return overlay(snapshot)
    except Exception:
        log.exception("node overlay failed for %s", snapshot.name)
        return snapshot

class RoundAssembly:
    def assemble(waiting: bool) -> FleetSnapshot:
        """The round's snapshot; `waiting`: an interim one, unfinished probes still run."""
        probing: list[str] = []  # still being asked (an interim snapshot)
        pending: list[str] = []  # ... with no verdict to show meanwhile

        def pick(key: str, name: str, old: T | None) -> T | None:
            """A target's answer; else, when it was skipped or (in an interim snapshot) is
            still being probed, its last verdict; else None (a placeholder is due)."""
            task = tasks.get(key)
            asking = waiting and task is not None and not task.done()
            if asking:
                probing.append(name)
                if old is None:
                    pending.append(name)
            if task is not None and task.done() and not task.cancelled() and not task.exception():
                return cast("T", task.result())
            return old if name in skip or asking else None

        def why(name: str) -> str:  # a placeholder's reason
            return "no answer yet" if name in pending else "probe round overran"

        nodes: list[NodeSnapshot] = []
        for node in config.nodes:  # task keys are prefixed: a node may be called "registry"
            snap = pick(f"node:{node.name}", node.name, prev_nodes.get(node.name))
            if snap is None:
                state = NodeState.UNKNOWN if node.name in pending else NodeState.DOWN
                endpoint = one_line(node.endpoint, 120)
                snap = NodeSnapshot(
                    node.name, node.gfx, endpoint, state, now, reason=why(node.name)
                )
            if node.name not in probing:  # a node still asked keeps its last verdict whole
                old = prev_nodes.get(node.name)
                snap = vitals_in_round.attach(snap, gathering.get(node.name), old, waiting)
            nodes.append(_overlay(snap, node_overlay))
        svc: dict[str, ServiceSnapshot] = {}
        for kind, url in services:
            answer = pick(kind, kind, getattr(previous, kind) if previous else None)
            if answer is None:
                answer = ServiceSnapshot(kind, url, ServiceState.DOWN, now, reason=why(kind))
            svc[kind] = answer
        return FleetSnapshot(
            taken_at=now,
            nodes=tuple(nodes),
            registry=svc["registry"],
            webdav=svc["webdav"],
            duration=time.monotonic() - started,
            pending=tuple(pending),
            probing=tuple(probing),
        )
