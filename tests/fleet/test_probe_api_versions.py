"""Engines of every age: the API version is negotiated per engine from what it answers.

Docker 29 refuses clients below API 1.44 ("client version 1.41 is too old"); a pinned version
turned a whole fleet `down` on upgrade. Units check the rule; real engines (today's with the
1.44 minimum, and 20.10) check that each is spoken to at a version it accepts, with no extra
round trip, and that the refusal path (an engine whose minimum was not known) recovers."""

from __future__ import annotations

import pytest

from devfleet import CURRENT_MIN_144, OLD_ENGINE, EngineHandle
from devfleet.dockerd import docker_api
from rocmtui.core.config.fleetfile import NodeConfig
from rocmtui.core.probes import NodeProber, api_versions
from rocmtui.core.probes.api_versions import (
    NEWEST_TESTED,
    ApiTooOld,
    negotiate,
    note,
    refused_minimum,
)
from rocmtui.core.states import NodeState


def test_negotiation_caps_at_the_newest_tested_and_respects_the_minimum() -> None:
    assert negotiate("1.41") == "1.41"  # dockerd 20.10
    assert negotiate("1.51", "1.44") == "1.51"  # 28.5 with Docker 29's minimum
    assert negotiate("1.52", "1.44") == NEWEST_TESTED  # 29.0: never above what was read
    assert negotiate("1.60", "1.55") == "1.55"  # an engine too new: its own minimum
    assert negotiate(None) == NEWEST_TESTED  # no header: what rocmtui knows best
    assert negotiate(None, "1.44") == max("1.44", NEWEST_TESTED)
    with pytest.raises(ApiTooOld, match=r"1\.23 is older than 1\.24"):
        negotiate("1.23")
    assert negotiate("garbage", "also garbage") == NEWEST_TESTED


def test_an_engine_newer_than_rocmtui_knows_says_so_in_one_line() -> None:
    assert note("1.51", "1.44") is None and note("1.41", None) is None
    line = note("1.60", "1.55")
    assert line is not None and "\n" not in line
    assert "1.55" in line and NEWEST_TESTED in line


def test_the_refusal_names_the_minimum() -> None:
    class Refusal(Exception):
        explanation = (
            "client version 1.41 is too old. Minimum supported API version is 1.44, please"
            " upgrade your client to a newer version"
        )

    assert refused_minimum(Refusal()) == "1.44"
    assert refused_minimum(ValueError("connection refused")) is None


def _node(engine: EngineHandle) -> NodeConfig:
    return NodeConfig(name=engine.name, docker_host=engine.docker_host, gfx="gfx1201")


@pytest.mark.fleet
async def test_an_engine_with_docker_29s_minimum_is_ok(
    engine_factory: object,
) -> None:
    """Today's engine with the minimum at 1.44 refuses the old pinned 1.41 (checked here, so
    the test can fail), and the probe speaks to it at a version it accepts: `ok`, its
    running containers counted (a versioned call), its versions on the snapshot."""
    engine: EngineHandle = engine_factory(kind=CURRENT_MIN_144, import_base=False)  # type: ignore[operator]
    status, body = docker_api(engine.socket, "GET", "/v1.41/version")
    assert status == 400 and b"Minimum supported API version is 1.44" in body
    prober = NodeProber()
    try:
        snap = await prober.probe(_node(engine), deadline=10.0)
    finally:
        prober.close()
    assert snap.state is NodeState.OK, snap.reason
    assert snap.containers_running == 0
    assert snap.api_min_version == "1.44" and snap.api_used == NEWEST_TESTED
    assert snap.engine_version and not snap.engine_version.startswith("20.10")
    assert snap.api_note is None
    assert snap.builder is not None and snap.builder.buildkit_version


@pytest.mark.fleet
async def test_a_refusal_is_answered_at_the_minimum_it_names(
    engine_factory: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Had rocmtui only known versions below the engine's minimum, the engine's refusal names
    its minimum and the same probe asks again there: `ok`, not `down`."""
    engine: EngineHandle = engine_factory(kind=CURRENT_MIN_144, import_base=False)  # type: ignore[operator]
    monkeypatch.setattr(api_versions, "NEWEST_TESTED", "1.41")
    prober = NodeProber()
    try:
        snap = await prober.probe(_node(engine), deadline=10.0)
        again = await prober.probe(_node(engine), deadline=10.0, previous=snap)
    finally:
        prober.close()
    assert snap.state is NodeState.OK, snap.reason
    assert snap.api_used == "1.44" and snap.containers_running == 0
    assert again.state is NodeState.OK and again.api_used == "1.44"


@pytest.mark.fleet
async def test_dockerd_2010_is_spoken_to_at_its_own_version(engine_factory: object) -> None:
    engine: EngineHandle = engine_factory(kind=OLD_ENGINE, import_base=False)  # type: ignore[operator]
    prober = NodeProber()
    try:
        snap = await prober.probe(_node(engine), deadline=10.0)
    finally:
        prober.close()
    assert snap.state is NodeState.OK, snap.reason
    assert snap.engine_version and snap.engine_version.startswith("20.10")
    assert snap.api_version == "1.41" and snap.api_used == "1.41"
    assert snap.containers_running == 0
