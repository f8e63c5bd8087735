"""One probe round over the real fleet (`probe_fleet`) and the refresh loop (`FleetMonitor`):
healthy, one node dead or hung while the rest answer on time, a stopped registry, rounds that
never overlap, back-off for a failing target, and the jobs overlay hook."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from msgspec.structs import replace

from devfleet import DevFleet, EngineHandle, HungTcpListener, HungUnixSocket, ServiceHandle
from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig, ServiceConfig, parse_config
from rocmtui.core.hostmonitor.wire import decode
from rocmtui.core.probes import round as monitor_module
from rocmtui.core.probes.round import FleetMonitor, probe_fleet
from rocmtui.core.snapshots import FleetSnapshot, NodeSnapshot
from rocmtui.core.snapshotviews import snapshot_json
from rocmtui.core.states import NodeState, ServiceState

DEADLINE = 2.0
MARGIN = 1.5  # scheduling slack on a loaded 2-core machine; never a speed assertion


def fleet_config(fleet: DevFleet, *extra: NodeConfig, **changes: object) -> FleetConfig:
    """The fleet's own rocmtui.toml, with extra nodes and field changes."""
    config = parse_config(fleet.config_path)
    changes.setdefault("probe_deadline_seconds", DEADLINE)
    return replace(config, nodes=config.nodes + extra, **changes)  # type: ignore[arg-type]


@pytest.mark.fleet
async def test_all_healthy(fleet: DevFleet) -> None:
    config = fleet_config(fleet)
    snap = await probe_fleet(config)
    assert snap.healthy, snap
    assert [n.state for n in snap.nodes] == [NodeState.OK] * 3
    assert snap.registry.state is ServiceState.OK and snap.webdav.state is ServiceState.OK
    assert snap.duration < DEADLINE + MARGIN
    data = snapshot_json(snap)
    assert data["healthy"] is True and all("age" in n for n in data["nodes"])


@pytest.mark.fleet
async def test_dead_and_hung_nodes_do_not_delay_the_round(
    fleet: DevFleet, engine_factory: Callable[..., EngineHandle]
) -> None:
    stopped = engine_factory(import_base=False)
    stopped.stop()
    with HungUnixSocket() as hung_unix, HungTcpListener() as hung_tcp:
        config = fleet_config(
            fleet,
            NodeConfig("stopped", docker_host=stopped.docker_host),
            NodeConfig("hung-unix", docker_host=hung_unix.docker_host),
            NodeConfig("hung-tcp", docker_host=hung_tcp.docker_host),
        )
        started = time.monotonic()
        snap = await probe_fleet(config)
        took = time.monotonic() - started
    assert took < DEADLINE + MARGIN
    states = {n.name: n.state for n in snap.nodes}
    assert states == {
        "snoc-strix": NodeState.OK,
        "snoc-think": NodeState.OK,
        "snoc-gaming": NodeState.OK,
        "stopped": NodeState.DOWN,
        "hung-unix": NodeState.DOWN,
        "hung-tcp": NodeState.DOWN,
    }
    assert not snap.healthy
    assert snap.node("hung-tcp").reason == f"no answer in {DEADLINE:g}s"  # type: ignore[union-attr]


@pytest.mark.fleet
async def test_stopped_registry_is_down(
    fleet: DevFleet, registry_factory: Callable[..., ServiceHandle]
) -> None:
    registry = registry_factory()
    registry.stop()
    config = fleet_config(fleet, registry=ServiceConfig(registry.url))
    snap = await probe_fleet(config)
    assert snap.registry.state is ServiceState.DOWN
    assert snap.webdav.state is ServiceState.OK
    assert all(n.state is NodeState.OK for n in snap.nodes)
    assert not snap.healthy


async def run_monitor(
    monitor: FleetMonitor, published: list[FleetSnapshot], rounds: int, whole: bool = True
) -> None:
    """Run `monitor` until it has published `rounds` snapshots (with `whole`, not counting
    interim ones; or fail after a while)."""
    task = asyncio.ensure_future(monitor.run())
    try:
        end = time.monotonic() + 60
        while sum(not (whole and s.interim) for s in published) < rounds:
            assert time.monotonic() < end, f"only {len(published)} snapshots published"
            assert not task.done(), task
            await asyncio.sleep(0.05)
    finally:
        monitor.stop()
        await asyncio.wait_for(task, DEADLINE + 10)


async def monitor_with_a_hung_node(
    fleet: DevFleet, deadline: float, snapshots: int
) -> tuple[FleetMonitor, list[FleetSnapshot]]:
    """Run a monitor at a 0.2 s refresh on the fleet plus a node "hung" that accepts and never
    answers, until it has published `snapshots` snapshots; the monitor and what it published."""
    with HungUnixSocket() as hung:
        config = fleet_config(
            fleet,
            NodeConfig("hung", docker_host=hung.docker_host),
            refresh_seconds=0.2,
            probe_deadline_seconds=deadline,
        )
        published: list[FleetSnapshot] = []
        monitor = FleetMonitor(config, published.append)
        await run_monitor(monitor, published, snapshots, whole=False)
    return monitor, published


@pytest.mark.fleet
async def test_monitor_rounds_never_overlap(fleet: DevFleet) -> None:
    """Rounds take ~1 s (a hung node) while the refresh is 0.2 s: ticks are dropped."""
    monitor, published = await monitor_with_a_hung_node(fleet, deadline=1.0, snapshots=6)
    rounds = [s for s in published if not s.interim]  # each round's final snapshot
    for before, after in itertools.pairwise(rounds):
        assert after.taken_at >= before.taken_at + before.duration - 0.01
    assert monitor.dropped > 0
    assert monitor.latest is rounds[-1]


@pytest.mark.fleet
async def test_a_hung_node_does_not_hide_the_others(
    fleet: DevFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A round waits for a hung engine until the deadline; INTERIM_AFTER into it (0.5 s, a
    second here for a loaded machine) the monitor publishes what answered. The hung node is
    still being probed: in the first round it has no verdict yet (a placeholder, named as
    pending); after that its last verdict stands, with its age, until the next one comes —
    a frozen engine reads `down` throughout, never down, probing, down, probing."""
    monkeypatch.setattr(monitor_module, "INTERIM_AFTER", 1.0)
    _, published = await monitor_with_a_hung_node(fleet, deadline=2.5, snapshots=4)
    first, final, second = published[:3]
    assert first.pending == ("hung",) and first.probing == ("hung",) and first.interim
    assert first.taken_at == final.taken_at
    assert first.duration < final.duration  # published while the round went on
    assert {n.name: n.state for n in first.nodes} == {
        "snoc-strix": NodeState.OK,
        "snoc-think": NodeState.OK,
        "snoc-gaming": NodeState.OK,
        "hung": NodeState.UNKNOWN,  # never answered: a placeholder
    }
    assert first.node("hung").reason == "no answer yet"  # type: ignore[union-attr]
    assert first.registry.state is ServiceState.OK and not first.healthy
    assert final.pending == final.probing == () and not final.interim
    assert final.node("hung").state is NodeState.DOWN  # type: ignore[union-attr]
    # the next round probes it again (the backoff waits one period): its last verdict stands,
    # not a "probing" placeholder, and nothing says it is still waited for
    assert second.probing == ("hung",) and second.pending == () and second.interim
    assert second.node("hung") == final.node("hung")
    assert second.taken_at > final.taken_at
    assert (snapshot_json(first)["pending"], snapshot_json(first)["probing"]) == (
        ["hung"],
        ["hung"],
    )
    relayed = decode(snapshot_json(second))  # what a console attached to the monitor gets
    assert (relayed.probing, relayed.pending) == (("hung",), ())
    assert relayed.node("hung").state is NodeState.DOWN  # type: ignore[union-attr]


@pytest.mark.fleet
async def test_monitor_backs_off_a_failing_node(fleet: DevFleet, tmp_path: Path) -> None:
    config = fleet_config(
        fleet,
        NodeConfig("gone", docker_host=f"unix://{tmp_path}/none.sock"),
        refresh_seconds=0.2,
    )
    published: list[FleetSnapshot] = []

    async def publish(snapshot: FleetSnapshot) -> None:  # a coroutine publisher works too
        published.append(snapshot)

    monitor = FleetMonitor(config, publish)
    await run_monitor(monitor, published, 12)
    # whole rounds only: a round slower than INTERIM_AFTER (a loaded machine) first publishes
    # an interim snapshot of the same round
    published = [s for s in published if not s.interim]
    gone_probes = {s.node("gone").probed_at for s in published}  # type: ignore[union-attr]
    strix_probes = {s.node("snoc-strix").probed_at for s in published}  # type: ignore[union-attr]
    assert len(strix_probes) == len(published)  # a healthy node: every round
    assert len(gone_probes) < len(published) - 3  # a failing one: less and less often
    last = published[-1].node("gone")
    assert last is not None and last.state is NodeState.DOWN
    assert last.down_since == published[0].node("gone").down_since  # type: ignore[union-attr]


@pytest.mark.fleet
async def test_monitor_applies_the_jobs_overlay(fleet: DevFleet) -> None:
    def overlay(snap: NodeSnapshot) -> NodeSnapshot:
        if snap.name == "snoc-think" and snap.state is NodeState.OK:
            return replace(snap, state=NodeState.BUILDING)
        if snap.name == "snoc-gaming":
            raise RuntimeError("a broken overlay must not break the round")
        return snap

    published: list[FleetSnapshot] = []
    # one round: no history look left running past the test (its own tests watch history)
    monitor = FleetMonitor(
        fleet_config(fleet), published.append, node_overlay=overlay, history=False
    )
    snap = await monitor.round()
    # the round's snapshot, after an interim one when the round was slow (a loaded machine)
    assert published[-1] == snap and all(s.interim for s in published[:-1])
    states = {n.name: n.state for n in snap.nodes}
    assert states["snoc-think"] is NodeState.BUILDING
    assert states["snoc-gaming"] is NodeState.OK
    assert snap.healthy  # building is a healthy state
    await monitor.probers.http.aclose()  # type: ignore[union-attr]


@pytest.mark.fleet
async def test_the_monitor_leaves_containers_uncounted(fleet: DevFleet) -> None:
    """No screen shows the running-container count, and asking every engine for it every
    round was one more request per node and round: the console's monitor leaves it unasked.
    `rocmtui status` (probe_fleet) and a monitor made with count_containers=True still ask."""
    config = fleet_config(fleet)
    for count in (False, True):
        monitor = FleetMonitor(config, lambda snap: None, count_containers=count)
        try:
            snap = await monitor.round()
        finally:
            await monitor.probers.http.aclose()  # type: ignore[union-attr]
        assert [n.state for n in snap.nodes] == [NodeState.OK] * 3, snap
        counts = [n.containers_running for n in snap.nodes]
        if count:
            assert all(isinstance(c, int) for c in counts), counts
        else:
            assert counts == [None] * 3, counts
    snap = await probe_fleet(config)
    assert all(isinstance(n.containers_running, int) for n in snap.nodes), snap
