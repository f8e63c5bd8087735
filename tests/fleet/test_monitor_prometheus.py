"""The monitor as Prometheus and Alertmanager see it, all real, all on loopback: Prometheus
scrapes `rocmtui monitor` with deploy/prometheus/'s config and rules (intervals shortened to a
second), Alertmanager runs deploy/prometheus/alertmanager.yml (group_wait shortened, its webhook
pointed at a small HTTP sink in this test). Storage in temp folders, every process stopped by
pid. The fleet is the session's real one, plus an engine of this test's own to stop.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devfleet import (
    DevFleet,
    EngineHandle,
    ServiceHandle,
    start_alertmanager,
    start_monitor,
    start_prometheus,
)
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.control import cancel_job, list_jobs
from rocmtui.core.jobs.views import record_json
from tests.support.jobs import bake, kill_job_leftovers, quick, wait_for, write_config
from tests.support.prometheus import WebhookSink, alertmanager_config, prometheus_config, query
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet, pytest.mark.slow]


def node_states(prometheus: ServiceHandle) -> dict[str, str]:
    """node -> its state word, as Prometheus has it now."""
    return {
        r["metric"]["node"]: r["metric"]["state"]
        for r in query(prometheus, "rocmtui_node_state == 1")
    }


@pytest.fixture
def parts(tmp_path: Path) -> Iterator[Callable[..., ServiceHandle]]:
    """Start parts (`parts(start_x, name, ...)`); all stopped by pid at the end, newest first."""
    require("prometheus", "alertmanager")
    started: list[ServiceHandle] = []

    def start(how: Callable[..., ServiceHandle], name: str, *args: Any) -> ServiceHandle:
        started.append(how(tmp_path / name, *args))
        return started[-1]

    try:
        yield start
    finally:
        for part in reversed(started):
            part.stop(grace=5.0)


def test_prometheus_scrapes_node_states_and_sees_an_engine_stop(
    fleet: DevFleet,
    engine_factory: Callable[..., EngineHandle],
    parts: Callable[..., ServiceHandle],
    tmp_path: Path,
) -> None:
    spare = engine_factory(name="spare", import_base=False)
    fleet_file = write_config(tmp_path, fleet)
    text = re.sub(r"(?m)^refresh_seconds = .*$", "refresh_seconds = 1.0", fleet_file.read_text())
    text += f'\n[[nodes]]\nname = "spare"\ndocker_host = "{spare.docker_host}"\ngfx = "gfx1201"\n'
    fleet_file.write_text(text)
    monitor = parts(start_monitor, "monitor", fleet_file)
    prometheus = parts(
        start_prometheus, "prometheus", lambda port: prometheus_config(monitor, None)
    )
    everyone = {"snoc-strix", "snoc-think", "snoc-gaming", "spare"}
    wait_for(
        "Prometheus to have every node's state",
        lambda: set(node_states(prometheus)) == everyone,
        60,
    )
    assert set(node_states(prometheus).values()) <= {"ok", "building"}
    assert [r["value"][1] for r in query(prometheus, 'up{job="rocmtui"}')] == ["1"]
    up = query(prometheus, 'rocmtui_service_up{service="registry"}')
    assert [r["value"][1] for r in up] == ["1"]
    spare.stop(grace=5.0)
    wait_for(
        "spare to be down in Prometheus", lambda: node_states(prometheus).get("spare") == "down", 60
    )
    assert query(prometheus, 'rocmtui_node_engine_up{node="spare"} == 0')
    assert node_states(prometheus)["snoc-think"] in ("ok", "building")


def test_a_stalled_build_alert_reaches_alertmanager_and_its_webhook(
    fleet: DevFleet, parts: Callable[..., ServiceHandle], tmp_path: Path
) -> None:
    require("docker-buildx")
    fleet_file = write_config(tmp_path, fleet, stall_after=2.0)
    text = re.sub(r"(?m)^refresh_seconds = .*$", "refresh_seconds = 1.0", fleet_file.read_text())
    fleet_file.write_text(text)
    sink = WebhookSink()
    try:
        monitor = parts(start_monitor, "monitor", fleet_file)
        alertmanager = parts(
            start_alertmanager, "alertmanager", lambda port: alertmanager_config(sink)
        )
        parts(start_prometheus, "prometheus", lambda port: prometheus_config(monitor, alertmanager))
        job_id = bake(
            fleet_file, "demo-base", "--arch", "gfx1201", "--node", "snoc-strix",
            *quick(steps=10, sleep=0.05), "--set", "DEMO_SILENT_SECONDS=30",
        )  # fmt: skip

        def stalled() -> list[dict[str, Any]]:
            return [
                a for a in sink.alerts()
                if a["labels"].get("alertname") == "RocmtuiBuilderStalled"
                and a["status"] == "firing"
            ]  # fmt: skip

        alert = wait_for("the stall alert at the webhook", stalled, 120)[0]
        assert alert["labels"]["node"] == "snoc-strix" and alert["labels"]["severity"] == "critical"
        assert alert["annotations"]["summary"] == "A build on snoc-strix is stalled"
        assert job_id not in json.dumps(sink.bodies)  # no job id ever becomes a label
    finally:
        sink.stop()
        loaded = load_config(fleet_file)
        for job in list_jobs(loaded, limit=None):
            if job.ended_at is None:
                cancel_job(loaded, job.id, grace=2.0)
            kill_job_leftovers(record_json(job))
