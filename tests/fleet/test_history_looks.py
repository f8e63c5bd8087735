"""How a process asks its nodes' BuildKit history: one look per engine, a few at a time, and a
history folder any later process of the same state folder can use again.

The looks run the real docker CLI. The engines are unreachable addresses (the look fails in
milliseconds, which is all these tests need: what is counted is looks started and how many run
at once); the one that is watched for overlap goes through a docker-buildx where the docker CLI
looks for plugins first, which notes its start and end around the real one."""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

import pytest

from rocmtui.core.bake.plugin import buildx_plugin
from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig, load_config
from rocmtui.core.history.buildx import history_environment, node_workdir
from rocmtui.core.history.discover import LOOKS_AT_ONCE, HistoryWatch
from rocmtui.core.snapshots import NodeSnapshot
from rocmtui.core.states import NodeState
from tests.support.realparts import require

pytestmark = pytest.mark.fleet


def fleet(tmp_path: Path, hosts: list[str], extra: str = "") -> FleetConfig:
    lines = [f'state_dir = "{tmp_path / "state"}"', extra]
    for i, host in enumerate(hosts):
        lines.append(f'[[nodes]]\nname = "n{i}"\ndocker_host = "{host}"')
    path = tmp_path / "rocmtui.toml"
    path.write_text("\n".join(lines) + "\n")
    return load_config(path)


def answered(node: NodeConfig) -> NodeSnapshot:
    """The probe's word that the node's engine answered, as today's engine does."""
    return NodeSnapshot(
        name=node.name,
        gfx=None,
        endpoint=node.endpoint,
        state=NodeState.OK,
        probed_at=time.time(),
        engine_version="28.5.2",
    )


async def ask_all(watch: HistoryWatch, config: FleetConfig) -> list[NodeSnapshot]:
    return list(await asyncio.gather(*(watch.ask(n, answered(n)) for n in config.nodes)))


def test_nodes_naming_one_engine_share_one_look(tmp_path: Path) -> None:
    require("docker-buildx")
    one, other = "tcp://127.0.0.1:9", "tcp://127.0.0.1:7"
    config = fleet(tmp_path, [one, one, other, one])
    watch = HistoryWatch(config, interval=0, local=None, spawn=False)
    snaps = asyncio.run(ask_all(watch, config))
    assert watch.runs == 2  # one per engine, not one per node
    notes = [s.history_note for s in snaps]
    assert all(n and "history unavailable" in n for n in notes), notes
    assert notes[0] == notes[1] == notes[3]  # what the shared look found, on each of its rows


def test_at_most_a_few_looks_run_at_once(tmp_path: Path) -> None:
    require("docker-buildx")
    real = buildx_plugin(os.environ)
    assert real is not None
    config_dir = tmp_path / "docker-config"  # where the docker CLI looks for plugins first
    plugins = config_dir / "cli-plugins"
    plugins.mkdir(parents=True)
    notes = tmp_path / "looks"
    (plugins / "docker-buildx").write_text(
        f'#!/bin/sh\necho "start $$" >> {notes}\nsleep 0.3\n{real} "$@"\nrc=$?\n'
        f'echo "end $$" >> {notes}\nexit $rc\n'
    )
    (plugins / "docker-buildx").chmod(0o755)
    hosts = [f"tcp://127.0.0.1:{9000 + i}" for i in range(12)]
    config = fleet(tmp_path, hosts)
    env = {**os.environ, "DOCKER_CONFIG": str(config_dir)}
    watch = HistoryWatch(config, interval=0, local=None, spawn=False, env=env)
    asyncio.run(ask_all(watch, config))
    assert watch.runs == 12
    running = most = 0
    for line in notes.read_text().splitlines():
        running += 1 if line.startswith("start") else -1
        most = max(most, running)
    assert most == LOOKS_AT_ONCE, notes.read_text()


def test_the_history_folder_is_made_again_by_the_next_process(tmp_path: Path) -> None:
    """Every console and `status` of a state folder shares its nodes' history folder: the
    second to prepare a TLS node's (links to the certificates) or an ssh node's (its wrapper)
    brings it up to date instead of failing on what the first made (`File exists`)."""
    pem = tmp_path / "pem"
    pem.mkdir()
    for name in ("ca.pem", "cert.pem", "key.pem"):
        (pem / name).write_text(name)
    config = fleet(tmp_path, [])
    tls = NodeConfig(
        "gaming",
        docker_host="tcp://127.0.0.1:2376",
        tls_ca=str(pem / "ca.pem"),
        tls_cert=str(pem / "cert.pem"),
        tls_key=str(pem / "key.pem"),
    )
    ssh = NodeConfig("think", docker_host="ssh://ci@snoc-think")
    envs = {}
    for node in (tls, ssh):
        workdir = node_workdir(tmp_path / "state", node)
        first = history_environment(node, config, os.environ, workdir)
        envs[node.name] = history_environment(node, config, os.environ, workdir, "/run/x/0")
        assert envs[node.name] == first
    certs = Path(envs["gaming"]["DOCKER_CERT_PATH"])
    assert [(certs / n).read_text() for n in ("ca.pem", "cert.pem", "key.pem")] == [
        "ca.pem",
        "cert.pem",
        "key.pem",
    ]
    think = node_workdir(tmp_path / "state", ssh)
    assert "ControlPath=/run/x/0" in (think / "bin" / "ssh").read_text()  # the second's
    assert os.access(think / "bin" / "ssh", os.X_OK)
    assert not [*think.rglob(".*.tmp"), *certs.rglob(".*.tmp")]


def test_a_look_nobody_waits_for_starts_when_the_round_is_over(tmp_path: Path) -> None:
    """A monitor's look at its interval is not awaited by the round, so it waits for the round
    to end (`round_done`) instead of running beside the round's probes; a look a round waits
    for (interval 0 here, a new local build process in a monitor) starts at once."""
    require("docker-buildx")
    config = fleet(tmp_path, ["tcp://127.0.0.1:9", "tcp://127.0.0.1:7"])

    async def round_of(watch: HistoryWatch) -> tuple[int, int]:
        for node in config.nodes:
            await watch.watch(node, answered(node))
        await asyncio.sleep(0.5)  # the round's probes would still be running: time to start
        during = watch.runs
        watch.round_done()
        await watch.settle(15.0)
        return during, watch.runs

    later = HistoryWatch(config, interval=60.0, local=None, spawn=False)
    assert asyncio.run(round_of(later)) == (0, 2)
    now = HistoryWatch(config, interval=0, local=None, spawn=False)
    assert asyncio.run(round_of(now)) == (2, 2)
