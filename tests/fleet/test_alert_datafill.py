"""The data root alert, all real and on loopback: a node whose data root is a small tmpfs that
its build fills; `rocmtui monitor` serves its vitals, a real Prometheus scrapes it every second
and evaluates the shipped rule RocmtuiDataRootFillingUp, a real Alertmanager (the shipped
alertmanager.yml, group_wait shortened) notifies a webhook sink of this test; and the node's
silent build gets the `disk` verdict. Every process is stopped by pid.

The rule watches the rate: at the 2 minute window here, any build using this small disk at
a pace that empties it within the hour fires it, the image's layers as much as the fill (a run
without the fill fired it too); what this test proves is that the shipped expression, evaluated
by a real Prometheus on the monitor's real metric, reaches Alertmanager for the node whose build
fills its data root, and that the node is seen full.

The shipped rule holds 5 minutes (`for: 5m`) over a 30 minute window
(`predict_linear(...[30m], 3600)`): a test cannot wait that long, so it runs a copy of the shipped
rule file in which only those two durations are shortened; the expression is otherwise the
shipped one's, read from the shipped file, so this test follows any change to it. (The project
has no YAML library: the copy is rewritten inside that one rule's lines, each field exactly once,
and Prometheus' own parse of it, /api/v1/rules, is checked against what was meant.)
"""

from __future__ import annotations

import json
import re
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devfleet import ServiceHandle, start_alertmanager, start_monitor, start_prometheus
from tests.support.jobs import bake, job_json, log_has, started_job, wait_for
from tests.support.prometheus import (
    DEPLOY,
    WebhookSink,
    alertmanager_config,
    prometheus_config,
    query,
)
from tests.support.realparts import require
from tests.support.smallengine import small_disk_engine

pytestmark = [pytest.mark.fleet, pytest.mark.slow]
ALERT = "RocmtuiDataRootFillingUp"
WINDOW = "2m"  # shipped: 30m
HOLD = "5s"  # shipped: 5m


def shortened_rules(dest: Path) -> str:
    """Write the shipped rule file to `dest` with ALERT's window and hold shortened; its
    shortened expression."""
    text = (DEPLOY / "rocmtui-alerts.yml").read_text()
    head, mark, rest = text.partition(f"- alert: {ALERT}\n")
    assert mark, f"{ALERT} is not in the shipped rules"
    after = re.search(r"(?m)^\s*- alert: ", rest)  # the next rule, if any
    body, tail = (rest[: after.start()], rest[after.start() :]) if after else (rest, "")
    found = re.search(r"(?m)^\s*expr: (.*)$", body)
    assert found, body
    expr, windows = re.subn(r"\[30m\]", f"[{WINDOW}]", found.group(1))
    body, exprs = re.subn(r"(?m)^(\s*expr: ).*$", lambda m: m.group(1) + expr, body)
    body, holds = re.subn(r"(?m)^(\s*for: )5m$", rf"\g<1>{HOLD}", body)
    assert (windows, exprs, holds) == (1, 1, 1), "the shipped rule changed shape: " + body
    dest.write_text(head + mark + body + tail)
    return expr


def loaded_rule(prometheus: ServiceHandle) -> dict[str, Any]:
    with urllib.request.urlopen(f"{prometheus.url}/api/v1/rules", timeout=10) as answer:
        groups = json.loads(answer.read())["data"]["groups"]
    return next(r for g in groups for r in g["rules"] if r.get("name") == ALERT)


@pytest.fixture
def small_disk_fleet(tmp_path: Path, base_tar: Path) -> Iterator[tuple[Path, str]]:
    """An engine of its own (in a netns) whose data root is on a 160 MiB tmpfs, and a fleet
    file naming only it, refreshed every second: (fleet file, node name)."""
    require("root", "dockerd", "netns", "docker-buildx", "prometheus", "alertmanager")
    with small_disk_engine(
        tmp_path, base_tar, "fill", "refresh_seconds = 1.0\nstall_after_seconds = 8\n"
    ) as made:
        yield made


def test_a_build_filling_its_data_root_fires_the_alert_at_alertmanager(
    small_disk_fleet: tuple[Path, str], tmp_path: Path
) -> None:
    config, node = small_disk_fleet
    rules = tmp_path / "rocmtui-alerts.yml"
    expr = shortened_rules(rules)
    sink = WebhookSink()
    started: list[ServiceHandle] = []
    try:
        started.append(monitor := start_monitor(tmp_path / "monitor", config))
        started.append(
            alertmanager := start_alertmanager(
                tmp_path / "alertmanager", lambda port: alertmanager_config(sink)
            )
        )
        started.append(
            prometheus := start_prometheus(
                tmp_path / "prometheus",
                lambda port: prometheus_config(monitor, alertmanager, rules),
            )
        )
        rule = wait_for("Prometheus to load the rule", lambda: loaded_rule(prometheus), 30)
        assert rule["duration"] == 5 and rule["query"].replace(" ", "") == expr.replace(" ", "")
        assert f"[{WINDOW}]" in rule["query"] and "predict_linear(" in rule["query"]
        free = f'rocmtui_node_data_root_free_bytes{{node="{node}"}}'
        wait_for(  # a steady level first: the slope is the build's doing
            "a few scrapes of the node's free space",
            lambda: [r for r in query(prometheus, f"count_over_time({free}[1m]) >= 3")],
            60,
        )
        assert not query(prometheus, f'ALERTS{{alertname="{ALERT}"}}')

        job_id = bake(
            config, "demo-base", "--arch", "gfx1201", "--node", node,
            "--set", "DEMO_STEPS=4", "--set", "DEMO_SLEEP=0.05",
            "--set", "DEMO_SILENT_SECONDS=fill:400:90",
            "--set", f"DEMO_NONCE={uuid.uuid4().hex[:8]}",
        )  # fmt: skip
        log = Path(started_job(config, job_id)["log"])
        wait_for("the build's first step", lambda: log_has(log, b"Building HIP object"), 120)

        def firing() -> list[dict[str, Any]]:
            return [
                a for a in sink.alerts()
                if a["labels"].get("alertname") == ALERT and a["status"] == "firing"
            ]  # fmt: skip

        alert = wait_for(f"{ALERT} at the webhook", firing, 120)[0]
        assert alert["labels"]["node"] == node and alert["labels"]["severity"] == "warning"
        assert alert["annotations"]["summary"] == f"The data root of {node} fills within the hour"
        assert job_id not in json.dumps(sink.bodies)

        job = wait_for(
            "the filled build stalled",
            lambda: (lambda j: j if j["state"] == "stalled" else None)(job_json(config, job_id)),
            120,
        )
        assert job["verdict"] == "disk", job["verdict_line"]
        assert job["verdict_line"].startswith("disk: "), job["verdict_line"]
        # the data root as Prometheus saw it: full (the fill stops at "no space left")
        assert query(prometheus, f"min_over_time({free}[5m]) < {16 << 20}"), "never nearly full"
        silent = f'rocmtui_builds_silent{{node="{node}",verdict="disk"}} == 1'
        wait_for("the disk verdict in Prometheus", lambda: query(prometheus, silent), 60)
    finally:
        sink.stop()
        for part in reversed(started):
            part.stop(grace=5.0)
