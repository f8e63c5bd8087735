"""Node probes against real dockerd engines (the shared fleet and engines of our own), hung
sockets, a dripping "engine", docker contexts and buildx builders. Bounds are the deadline plus
a generous margin. ssh:// and TLS engines on real hosts: tests/fleet/test_remote_probes.py."""

from __future__ import annotations

import asyncio
import os
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from devfleet import (
    ENGINE_KINDS,
    DevFleet,
    DripServer,
    EngineHandle,
    HungTcpListener,
    HungUnixSocket,
)
from rocmtui.core.config.fleetfile import NodeConfig, parse_config
from rocmtui.core.probes import (
    BuildxLs,
    HostProber,
    NodeProber,
    buildkit_for_engine,
    probe_node,
)
from rocmtui.core.probes.api_versions import NEWEST_TESTED
from rocmtui.core.states import NodeState
from tests.support.realparts import require

DEADLINE = 2.0
MARGIN = 1.5  # scheduling slack on a loaded 2-core machine; never a speed assertion


def wait_until(check: Callable[[], object], timeout: float, what: str) -> None:
    """Poll `check` until truthy or fail after `timeout` seconds."""
    end = time.monotonic() + timeout
    while not check():
        if time.monotonic() > end:
            pytest.fail(f"{what} not met within {timeout}s")
        time.sleep(0.05)


def docker(*args: str) -> str:
    """Run the docker CLI (in the test's DOCKER_CONFIG); its stdout."""
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.fleet
async def test_fleet_nodes_all_ok(fleet: DevFleet) -> None:
    """The fleet's real shape: a local node, one over ssh, one over TLS, mid-upgrade (two on
    today's engine, one of them with Docker 29's minimum API, one kept on 20.10). The first
    probe of an ssh node logs in: a generous deadline, this is about what the probes say."""
    config = parse_config(fleet.config_path)
    snaps = await asyncio.gather(*(probe_node(n, deadline=DEADLINE + 6) for n in config.nodes))
    assert len(snaps) == 3
    for node, snap in zip(config.nodes, snaps, strict=True):
        assert snap.state is NodeState.OK, snap
        assert snap.name == node.name and snap.gfx == node.gfx
        kind = ENGINE_KINDS[fleet.engine(node.name).kind]
        assert snap.engine_version
        if kind.current:
            assert not snap.engine_version.startswith("20.10"), snap.engine_version
            assert snap.api_used == NEWEST_TESTED, snap
            assert snap.builder is not None and snap.builder.buildkit_version
        else:
            assert snap.engine_version.startswith("20.10")
            assert snap.api_version == "1.41" and snap.api_used == "1.41"
        if kind.min_api:
            assert snap.api_min_version == kind.min_api
        assert snap.os_arch == "linux/amd64"
        assert snap.containers_running is not None and snap.latency is not None
        assert snap.builder is not None and snap.builder.status == "running"
        assert snap.builder.driver == "docker" and snap.builder.name == "default"
        assert snap.builder.buildkit_version == buildkit_for_engine(snap.engine_version)
        assert snap.last_ok_at == snap.probed_at and snap.down_since is None
        # host figures only for the node the console runs on
        assert (snap.host is not None) == node.local
    local = next(s for s in snaps if s.host is not None)
    assert local.host is not None and local.host.mem_total > 0 and local.host.cpu_count >= 1
    assert Path(local.host.disk_path).exists()


async def test_host_cpu_covers_the_time_since_the_last_reading(tmp_path: Path) -> None:
    """The local node's CPU figure is the host's use since the previous reading, not over the
    few milliseconds of one probe round (which read 0, 50 or 100% on an idle machine: every
    round re-opened the window). Real psutil, real /proc/stat: one core is kept busy for
    longer than the minimum window, then a new round starts (and primes) and reads."""
    host = HostProber()
    host.prime()  # a round starts
    first = await host.stats(tmp_path, DEADLINE)
    assert first is not None and first.cpu_percent is None  # a window of ~nothing: no figure
    end = time.monotonic() + HostProber.MIN_WINDOW + 0.3
    while time.monotonic() < end:  # this thread busy: one of the host's cores
        pass
    host.prime()  # the next round starts: the window opened above stays open
    second = await host.stats(tmp_path, DEADLINE)
    assert second is not None and second.cpu_percent is not None
    assert second.cpu_percent >= 100 / second.cpu_count * 0.6, second


@pytest.mark.fleet
async def test_buildkit_version_matches_buildx(fleet: DevFleet) -> None:
    """The version derived from the engine is the word `buildx ls` itself prints: exactly on
    20.10; on today's engines the BuildKit minor its moby release vendors, which buildx prints
    as a full version — or as `v0.0.0+unknown` for Debian's build, whose BuildKit does not
    name itself (the column then still says which BuildKit runs)."""
    require("docker-buildx")
    for engine in fleet.engines:
        env = {**os.environ, "DOCKER_HOST": engine.docker_host}
        out = subprocess.run(
            ["docker", "buildx", "ls", "--format", "json"],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        ).stdout
        node = NodeConfig("x", docker_host=engine.docker_host)
        snap = await probe_node(node, deadline=DEADLINE)
        assert snap.builder is not None and snap.builder.buildkit_version, engine.name
        word = snap.builder.buildkit_version
        if ENGINE_KINDS[engine.kind].current:
            assert word.endswith(".x"), word
            minor = word.removesuffix(".x")
            assert f'"Version":"{minor}.' in out or '"Version":"v0.0.0+unknown"' in out, out
        else:
            assert f'"Version":"{word}"' in out


@pytest.mark.fleet
async def test_cold_engine_is_asked_its_version_beside_ping_then_once(
    fleet: DevFleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cold engine's /version and /info are asked while /_ping is still out (dockerd forks
    runc for them: after /_ping they lengthened every first round); after that they are
    asked once per engine version, not per probe. The calls are the real ones, timed."""
    from rocmtui.core.probes import engine_calls as engine_mod

    calls: list[tuple[str, float, float]] = []
    # /_ping answers in ~2 ms, so on a loaded machine the static thread could start only after
    # it even when both were asked at once. The live call therefore holds its answer until the
    # static call has started (or 1 s passed): asked together, static starts first; asked
    # after /_ping, it starts after the held answer, and the assertion below fails.
    static_started = threading.Event()

    def timed(kind: str, real: Callable[..., object]) -> Callable[..., object]:
        def call(*args: object) -> object:
            started = time.monotonic()
            if kind == "static":
                static_started.set()
            try:
                return real(*args)
            finally:
                if kind == "live":
                    static_started.wait(1.0)
                calls.append((kind, started, time.monotonic()))

        return call

    monkeypatch.setattr(engine_mod, "ask_live", timed("live", engine_mod.ask_live))
    monkeypatch.setattr(engine_mod, "ask_static", timed("static", engine_mod.ask_static))
    node = next(n for n in parse_config(fleet.config_path).nodes if n.local)
    prober = NodeProber()
    first = await prober.probe(node, deadline=DEADLINE)
    assert first.state is NodeState.OK and first.os_arch == "linux/amd64"
    assert first.host is not None and first.engine_version
    (live,) = [c for c in calls if c[0] == "live"]
    (static,) = [c for c in calls if c[0] == "static"]
    assert static[1] < live[2], calls  # asked before /_ping had answered
    for _ in range(2):
        again = await prober.probe(node, deadline=DEADLINE, previous=first)
        assert again.engine_version == first.engine_version
        assert again.os_arch == first.os_arch
    assert [c[0] for c in calls].count("static") == 1, calls


@pytest.mark.fleet
async def test_stopped_engine_is_down_within_one_deadline(
    engine_factory: Callable[..., EngineHandle],
) -> None:
    engine = engine_factory(import_base=False)
    node = NodeConfig("victim", docker_host=engine.docker_host, gfx="gfx1201")
    first = await probe_node(node, deadline=DEADLINE)
    assert first.state is NodeState.OK
    engine.stop()
    started = time.monotonic()
    snap = await probe_node(node, deadline=DEADLINE, previous=first)
    assert time.monotonic() - started < DEADLINE + MARGIN
    assert snap.state is NodeState.DOWN
    assert snap.reason is not None
    assert snap.reason.startswith(("no such socket: /", "connection refused: /")), snap.reason
    assert snap.last_ok_at == first.probed_at and snap.down_since == snap.probed_at
    again = await probe_node(node, deadline=DEADLINE, previous=snap)
    assert again.down_since == snap.down_since  # down since the first failed probe


@pytest.mark.parametrize("kind", ["unix", "tcp"])
async def test_hung_engine_is_bounded(kind: str) -> None:
    server = HungUnixSocket() if kind == "unix" else HungTcpListener()
    with server:
        # local: the host readings must not wait for (or vanish with) the hung engine
        node = NodeConfig(f"hung-{kind}", docker_host=server.docker_host, local=True)
        started = time.monotonic()
        snap = await probe_node(node, deadline=DEADLINE)
        took = time.monotonic() - started
        assert server.accepted >= 1
    assert snap.state is NodeState.DOWN
    assert snap.reason == f"no answer in {DEADLINE:g}s"
    assert took < DEADLINE + MARGIN
    assert snap.host is not None and snap.host.mem_total > 0


async def test_stuck_probe_thread_is_abandoned_not_repeated() -> None:
    """A dripping "engine" keeps the SDK reading forever (every byte resets its timeout):
    the probe returns at the deadline, and the next probe starts no more threads. A cold
    engine is asked /_ping and /version at once, so two threads are stuck, one per question."""
    prober = NodeProber()
    with DripServer() as drip:
        node = NodeConfig("drip", docker_host=f"tcp://{drip.address}")
        started = time.monotonic()
        first = await prober.probe(node, deadline=1.0)
        assert time.monotonic() - started < 1.0 + MARGIN
        assert first.state is NodeState.DOWN and first.reason == "no answer in 1s"
        assert prober.gate.in_flight() == 2
        second = await prober.probe(node, deadline=1.0, previous=first)
        assert second.state is NodeState.DOWN
        assert second.reason and "previous probe still stuck" in second.reason
        assert second.down_since == first.down_since
        assert prober.gate.in_flight() == 2  # still the same two threads
    # the drip server is gone: the stuck thread ends on its own
    wait_until(lambda: prober.gate.in_flight() == 0, 10, "the stuck thread to end")


@pytest.mark.fleet
async def test_context_node(fleet: DevFleet) -> None:
    require("docker")
    engine = fleet.local_engine
    docker("context", "create", "probe-ctx", "--docker", f"host={engine.docker_host}")
    snap = await probe_node(NodeConfig("c", context="probe-ctx"), deadline=DEADLINE)
    assert snap.state is NodeState.OK, snap
    assert snap.endpoint == "context:probe-ctx"
    assert snap.builder is not None and snap.builder.name == "probe-ctx"
    missing = await probe_node(NodeConfig("m", context="no-such-ctx"), deadline=DEADLINE)
    assert missing.state is NodeState.UNKNOWN
    assert missing.reason == "no docker context named 'no-such-ctx'"


@pytest.mark.fleet
async def test_named_builders_share_one_buildx_process(fleet: DevFleet, tmp_path: Path) -> None:
    """buildx lists every context as a docker-driver builder: a running one, one whose engine
    is gone (Err at builder level) and one that hangs. One `buildx ls` serves all nodes."""
    require("docker-buildx")
    engine = fleet.local_engine
    docker("context", "create", "good-b", "--docker", f"host={engine.docker_host}")
    docker("context", "create", "gone-b", "--docker", f"host=unix://{tmp_path}/none.sock")
    with HungUnixSocket() as hung:
        docker("context", "create", "hung-b", "--docker", f"host={hung.docker_host}")
        builders = BuildxLs()
        prober = NodeProber(builders=builders)
        nodes = [
            NodeConfig(f"n-{b}", docker_host=engine.docker_host, builder=b)
            for b in ("good-b", "gone-b", "hung-b", "no-such-b")
        ]
        started = time.monotonic()
        snaps = await asyncio.gather(*(prober.probe(n, deadline=DEADLINE) for n in nodes))
        took = time.monotonic() - started
    assert took < DEADLINE + MARGIN
    assert builders.runs == 1
    good, gone, hung_snap, nosuch = snaps
    assert good.state is NodeState.OK and good.builder is not None
    assert good.builder.status == "running" and good.builder.driver == "docker"
    assert good.builder.buildkit_version and "linux/amd64" in good.builder.platforms
    # the engine answers, but the builder the node must build with is broken: down
    assert gone.state is NodeState.DOWN and gone.builder is not None
    assert gone.builder.status == "error" and "Cannot connect" in (gone.builder.error or "")
    assert gone.reason and gone.reason.startswith("builder gone-b:")
    # buildx hung on this one: not known, but the engine is fine
    assert hung_snap.builder is not None and hung_snap.builder.status == "unknown"
    assert hung_snap.state is NodeState.OK
    assert nosuch.builder is not None and nosuch.builder.status in ("unknown", "missing")


@pytest.mark.fleet
async def test_named_builder_missing(fleet: DevFleet) -> None:
    require("docker-buildx")
    engine = fleet.local_engine
    node = NodeConfig("n", docker_host=engine.docker_host, builder="no-such-builder")
    snap = await NodeProber().probe(node, deadline=DEADLINE + 3)
    assert snap.builder is not None and snap.builder.status == "missing"
    assert snap.state is NodeState.DOWN
    assert snap.reason == "builder no-such-builder: no buildx builder named 'no-such-builder'"
