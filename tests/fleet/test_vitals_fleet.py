"""Node vitals on the real dev fleet: each source really answering (node_exporter for the host
node, the kept ssh connection for snoc-think, the engine API for the TLS node), a build that
burns CPU seen in its own node's engine tree and not another's, a node_exporter stopped
mid-run, and an ssh link black-holed mid-run.

The nodes share one kernel (HAZARDS.md), so host-wide figures read the same everywhere: what
tells nodes apart is each engine's process tree, which these tests use. Every link taken down
is brought back in `finally`; every process started is stopped by pid.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from msgspec.structs import replace

from devfleet import DevFleet
from devfleet.exporters import ExporterHandle, start_node_exporter
from rocmtui.core.config.fleetfile import FleetConfig, parse_config
from rocmtui.core.probes import NodeProber as NodeProberForSsh
from rocmtui.core.probes.round import Probers, probe_fleet
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.vitals import procfs
from rocmtui.core.vitals.nodevitals import NodeVitals
from tests.support.jobs import run_cli, write_config
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet]
DEADLINE = 3.0
MARGIN = 1.5  # scheduling slack on a loaded 2-core machine; never a speed assertion


def _config(tmp_path: Path, fleet: DevFleet, exporters: dict[str, str] | None = None) -> Path:
    """The session fleet's file (ssh, TLS, local), with `exporters` named for those nodes."""
    path = write_config(tmp_path, fleet)
    text = path.read_text()
    for name, url in (exporters or {}).items():
        text = re.sub(
            rf'(?m)^(name = "{name}"\n(?:(?!\[\[nodes\]\]).*\n)*?)(local = \w+\n)',
            rf"\1\2node_exporter = {json.dumps(url)}\n",
            text,
        )
    path.write_text(text)
    return path


async def _round(config: FleetConfig, probers: Probers, previous: FleetSnapshot | None = None
                 ) -> tuple[FleetSnapshot, dict[str, NodeVitals]]:  # fmt: skip
    started = time.monotonic()
    snap = await probe_fleet(config, previous=previous, probers=probers, deadline=DEADLINE)
    assert time.monotonic() - started < DEADLINE + 0.5 + MARGIN  # the round's deadline kept
    vitals = {n.name: n.vitals for n in snap.nodes if n.vitals is not None}
    assert set(vitals) == {n.name for n in config.nodes}
    return snap, vitals


async def _rounds_until(config: FleetConfig, probers: Probers, done: object, limit: float = 40.0
                        ) -> tuple[FleetSnapshot, dict[str, NodeVitals]]:  # fmt: skip
    """Rounds a second apart (as the monitor's) until `done(vitals)` holds, or fail at `limit`."""
    snap: FleetSnapshot | None = None
    give_up = time.monotonic() + limit
    while True:
        snap, vitals = await _round(config, probers, snap)
        if done(vitals):  # type: ignore[operator]
            return snap, vitals
        assert time.monotonic() < give_up, {k: (v.source, v.error, v.missing) for k, v in
                                            vitals.items()}  # fmt: skip
        await asyncio.sleep(1.0)


def _probers() -> Probers:
    from rocmtui.core.probes import HttpClients, NodeProber

    return Probers(nodes=NodeProber(), http=HttpClients())


async def _close(probers: Probers) -> None:
    if probers.http is not None:
        await probers.http.aclose()
    if probers.vitals is not None:
        await probers.vitals.aclose()
    probers.nodes.close()


async def test_each_source_answers_with_plausible_figures(fleet: DevFleet, tmp_path: Path) -> None:
    require("node-exporter")
    config = parse_config(_config(tmp_path, fleet))
    assert config.node("snoc-strix").node_exporter  # type: ignore[union-attr]
    probers = _probers()
    try:

        def rated(v: dict[str, NodeVitals]) -> bool:
            return all(v[n].host_cpu_percent is not None for n in ("snoc-strix", "snoc-think"))

        _, vitals = await _rounds_until(config, probers, rated)
    finally:
        await _close(probers)
    strix, think, gaming = vitals["snoc-strix"], vitals["snoc-think"], vitals["snoc-gaming"]
    assert (strix.source, think.source, gaming.source) == ("node_exporter", "ssh", "engine")
    cpus = os.cpu_count() or 1
    for v in (strix, think):
        assert v.error is None, v
        assert v.cpu_count == cpus and v.mem_total_bytes
        assert v.host_cpu_percent is not None and 0 <= v.host_cpu_percent <= 100 * cpus
        assert v.mem_used_percent is not None and 0 < v.mem_used_percent < 100
        assert v.load1 is not None and v.oom_kills_total is not None
        assert v.psi_io_some_avg10 is not None  # this kernel has PSI
        # each engine's data root is a folder of the fleet's own; its filesystem has room
        assert v.data_root and str(fleet.workdir) in v.data_root
        assert v.data_root_free_bytes and v.data_root_total_bytes
        assert v.data_root_free_bytes <= v.data_root_total_bytes
        assert v.build_cache_bytes is not None
    # node_exporter has no per-process CPU: the local node's engine tree comes from /proc here
    assert strix.engine_cpu_percent is not None and strix.engine_processes
    assert not any("per-process" in m for m in strix.missing), strix.missing
    # the ssh node's engine tree: its dockerd and the containerd it runs, at least
    assert think.engine_processes and think.engine_processes >= 2
    assert think.engine_cpu_percent is not None
    # the OOM kills of each engine's own memory cgroup, read over ssh and here
    assert think.engine_oom_kills_total == 0 and strix.engine_oom_kills_total == 0
    # the TLS node: what its engine API tells, and one line on the rest
    assert gaming.build_cache_bytes is not None and gaming.data_root
    assert gaming.cpu_count == cpus and gaming.mem_total_bytes
    assert gaming.host_cpu_percent is None and gaming.data_root_free_bytes is None
    assert len(gaming.missing) == 1 and "TLS" in gaming.missing[0]


@contextlib.contextmanager
def _burning_build(fleet: DevFleet, node: str, tmp_path: Path) -> Iterator[None]:
    """A build on `node` whose RUN step burns a core silently for up to 90 s; cancelled (its
    client killed by pid) at the end."""
    context = tmp_path / "burn"
    context.mkdir()
    (context / "Dockerfile").write_text(
        "FROM rocm-base:local\n"
        f"RUN echo {time.time_ns()} && timeout 90 sh -c 'while :; do :; done' || true\n"
    )
    env = {**os.environ, "DOCKER_HOST": fleet.engine(node).docker_host}
    env.pop("DOCKER_CONTEXT", None)
    log = (tmp_path / "build.log").open("wb")
    proc = subprocess.Popen(
        ["docker", "buildx", "build", "--progress=plain", "--no-cache", str(context)],
        stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env,
        start_new_session=True,
    )  # fmt: skip
    try:
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, 9)
        proc.wait(timeout=30)
        log.close()


@pytest.mark.alone  # floods a core, and reads each engine tree's share
async def test_a_build_burning_cpu_shows_in_its_own_node_s_engine_tree(
    fleet: DevFleet, tmp_path: Path
) -> None:
    """The build runs on snoc-think (over ssh's /proc read); snoc-strix is read from /proc here
    (no exporter named, a local node), so both have an engine tree to compare."""
    require("docker-buildx")
    config = parse_config(write_config(tmp_path, fleet))
    # no exporter: snoc-strix read from /proc here, an engine tree of its own to compare
    config = replace(config, nodes=tuple(replace(n, node_exporter=None) for n in config.nodes))
    probers = _probers()
    try:
        with _burning_build(fleet, "snoc-think", tmp_path):

            def busy(v: dict[str, NodeVitals]) -> bool:
                # a loop gets what a loaded 2-core machine leaves it: 10% of a core is plenty
                # to tell from an idle engine's ticking (and ~100% when the machine is idle)
                top = v["snoc-think"].busiest
                return top is not None and top.name == "sh" and top.cpu_percent >= 10.0

            _, vitals = await _rounds_until(config, probers, busy, limit=60)
            think, strix = vitals["snoc-think"], vitals["snoc-strix"]
            assert think.engine_cpu_percent is not None and think.engine_cpu_percent >= 10.0
            assert strix.source == "local" and strix.engine_cpu_percent is not None
            # the other node's engine is idle: the build is not seen there
            assert strix.engine_cpu_percent < think.engine_cpu_percent, (strix, think)
            assert strix.busiest is None or strix.busiest.name != "sh", strix.busiest
    finally:
        await _close(probers)


@pytest.fixture
def think_exporter(fleet: DevFleet, tmp_path: Path) -> Iterator[ExporterHandle]:
    """A node_exporter of this test's own in snoc-think's namespace (the session fleet's is
    left alone), on its link address, port 9101; stopped by pid."""
    require("node-exporter")
    engine = fleet.engine("snoc-think")
    assert engine.netns is not None
    handle = start_node_exporter(
        tmp_path, "snoc-think", engine.netns, fleet.remote("snoc-think").address, 9101
    )
    try:
        yield handle
    finally:
        handle.stop()


async def test_a_node_exporter_stopped_mid_run_falls_back_to_ssh_and_says_so(
    fleet: DevFleet, tmp_path: Path, think_exporter: ExporterHandle
) -> None:
    config = parse_config(_config(tmp_path, fleet, {"snoc-think": think_exporter.url}))
    probers = _probers()
    try:
        snap, vitals = await _round(config, probers)
        think = vitals["snoc-think"]
        assert think.source == "node_exporter" and think.error is None, think
        # host figures from the exporter, the engine tree from the ssh connection
        assert think.engine_processes and think.engine_processes >= 2
        assert not any("per-process" in m for m in think.missing), think.missing
        think_exporter.stop()
        snap, vitals = await _round(config, probers, snap)
        think = vitals["snoc-think"]
        assert think.source == "ssh", think
        assert think.error is not None
        assert think.error.startswith("node_exporter: connection refused"), think.error
        assert think.error.endswith("figures from ssh")
        assert think.mem_used_percent is not None and think.engine_processes
    finally:
        await _close(probers)


async def test_an_ssh_link_black_holed_mid_run_keeps_the_deadline_and_the_last_figures(
    fleet: DevFleet, tmp_path: Path
) -> None:
    """snoc-think's veth down: its ssh read hangs; the round ends at its deadline, the node's
    previous vitals stay with the reason, and the other nodes' vitals are fresh."""
    config = parse_config(_config(tmp_path, fleet))
    probers = _probers()
    link = fleet.remote("snoc-think").link
    try:
        # the first round's login may outlast its deadline on a loaded machine: rounds until
        # the kept connection answers
        snap, before = await _rounds_until(
            config, probers, lambda v: v["snoc-think"].source == "ssh"
        )
        link.down()
        try:
            snap, after = await _round(config, probers, snap)
        finally:
            link.up()
        think = after["snoc-think"]
        assert think.error, think
        assert think.error.startswith(("vitals: no answer", "ssh vitals:")), think.error
        # the figures the node last gave, with their time (the console shows their age)
        assert think.taken_at == before["snoc-think"].taken_at
        assert think.mem_total_bytes == before["snoc-think"].mem_total_bytes
        assert after["snoc-strix"].taken_at > before["snoc-strix"].taken_at
        assert after["snoc-strix"].error is None
    finally:
        await _close(probers)


def test_status_json_names_each_node_s_source_and_units(fleet: DevFleet, tmp_path: Path) -> None:
    """`rocmtui status --json` as a script reads it: every node's vitals, numbers with their
    units in the names, null when unknown, the source named; the rest of the shape as it was."""
    require("node-exporter")
    path = _config(tmp_path, fleet)
    give_up = time.monotonic() + 60
    while True:  # a loaded machine may leave the first login no time for a second reading
        done = run_cli(path, "status", "--json")
        assert done.returncode in (0, 1), done.stderr
        report = json.loads(done.stdout)
        nodes = {n["name"]: n for n in report["nodes"]}
        if nodes["snoc-think"]["vitals"]["source"] == "ssh":
            break
        assert time.monotonic() < give_up, nodes["snoc-think"]["vitals"]
    assert {"state", "age", "engine_version", "via"} <= set(nodes["snoc-strix"])
    sources = {name: n["vitals"]["source"] for name, n in nodes.items()}
    assert sources == {"snoc-strix": "node_exporter", "snoc-think": "ssh", "snoc-gaming": "engine"}
    for node in nodes.values():
        vitals = node["vitals"]
        assert "counters" not in vitals  # raw cumulative values stay inside
        assert isinstance(vitals["age"], float) and isinstance(vitals["missing"], list)
        for key, value in vitals.items():
            if key.endswith(("_bytes", "_percent", "_avg10", "_per_second")):
                assert value is None or isinstance(value, int | float), (key, value)
    gaming = nodes["snoc-gaming"]["vitals"]
    assert gaming["host_cpu_percent"] is None and gaming["data_root_free_bytes"] is None
    assert gaming["build_cache_bytes"] is not None and len(gaming["missing"]) == 1
    think = nodes["snoc-think"]["vitals"]
    assert think["data_root_used_percent"] is not None and think["mem_used_percent"] is not None


async def test_a_data_root_of_its_own_is_measured_by_every_source(
    fleet: DevFleet, tmp_path: Path
) -> None:
    """A data root on a 16 MiB tmpfs of its own (the nodes share one kernel, so a filesystem
    of its own is what tells a node's disk apart): node_exporter (in the host's namespace and
    in snoc-think's) and the local read each give that filesystem's size and room, and see it
    fill."""
    require("root", "node-exporter")
    from rocmtui.core.vitals.exporter import ExporterSource
    from rocmtui.core.vitals.sshsource import SshSource
    from tests.support.smalldisk import fill, small_tmpfs

    base = Path(tempfile.mkdtemp(prefix="rt-vd-", dir="/tmp"))
    base.chmod(0o755)
    size = 16 << 20
    config = parse_config(_config(tmp_path, fleet))
    think = config.node("snoc-think")
    assert think is not None and think.docker_host
    prober = NodeProberForSsh()
    exporter = ExporterSource()
    try:
        with small_tmpfs(base / "data", size) as root:
            (root / "buildkit").mkdir()
            data_root = str(root / "buildkit")

            async def readings() -> list[tuple[str, int | None, int | None]]:
                out = []
                for url in (fleet.exporter("snoc-strix").url, fleet.exporter("snoc-think").url):
                    r = await exporter.read(url, data_root, DEADLINE)
                    out.append((url, r.data_root_total_bytes, r.data_root_free_bytes))
                # the dev fleet's sshd runs in a private mount namespace of its own, where
                # this tmpfs is not: the ssh read says so, and never measures another disk
                r = await SshSource(prober.engines.masters).read(
                    think.docker_host or "", think.ssh_config, data_root, 5.0
                )
                assert r.data_root_total_bytes is None, r
                assert any("No such file" in m for m in r.missing), r.missing
                r = procfs.parse(procfs.read_local(data_root), data_root, None)
                out.append(("local", r.data_root_total_bytes, r.data_root_free_bytes))
                return out

            for source, total, free in await readings():
                assert total == size and free is not None and free > size // 2, source
            fill(root, leave=64 << 10)
            for source, total, free in await readings():
                assert total == size and free is not None and free <= 64 << 10, (source, free)
    finally:
        await exporter.aclose()
        prober.close()
        (base / "data").rmdir()
        base.rmdir()
