"""`rocmtui bake TARGET --node auto` on the dev fleet with real builds (issue 39): the node that
built the target last (hot) wins over nodes that never did, and a down node is never chosen,
even the one whose cache is hot."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from devfleet import DevFleet
from tests.support.jobs import bake, run_cli, wait_for, wait_state
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet, pytest.mark.alone]  # a node's load is in its estimate
FAST = ("--arch", "gfx1201", "--set", "DEMO_STEPS=5", "--set", "DEMO_SLEEP=0")


def _auto(config: Path) -> dict[str, Any]:
    # a variable only the last stage reads, changed: the first stages cached, a hot rebuild
    # (the same variables again would be frozen: tests/unit/test_placement.py)
    again = ("--set", "VLLM_VERSION=0.33.1")
    done = run_cli(config, "bake", "demo-vllm", "--node", "auto", "--json", *FAST, *again)
    assert done.returncode == 0, done.stderr
    assert "--node auto chose: " in done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    assert data["started"] is True
    return data


def _in_cost_book(config: Path, job: str) -> bool:
    done = run_cli(config, "history", "--json", "--target", "demo-vllm")
    assert done.returncode in (0, 1), done.stderr
    return any(b["job_id"] == job for b in json.loads(done.stdout)["builds"])


def test_node_auto_chooses_the_hot_node_and_never_a_down_one(
    config: Path, fleet: DevFleet, tmp_path: Path
) -> None:
    require("docker-buildx")
    first = bake(config, "demo-vllm", "--node", "snoc-gaming", *FAST)
    assert wait_state(config, first, ["succeeded", "failed"])["state"] == "succeeded"
    # the cost book takes a build in once it has settled (30 s after its end)
    wait_for(f"{first} in the cost book", lambda: _in_cost_book(config, first), 120, poll=2)

    data = _auto(config)
    placement = data["placement"]
    assert placement["chosen"] == "snoc-gaming" == data["node"]
    nodes = {n["node"]: n for n in placement["nodes"]}
    assert set(nodes) == {"snoc-strix", "snoc-think", "snoc-gaming"}
    gaming = nodes["snoc-gaming"]
    assert gaming["condition"] == "hot" and gaming["eligible"]
    assert gaming["eta_seconds"] is not None  # as cold, at most: no hot build yet
    assert re.match(r"snoc-gaming: hot, about \S+, idle$", placement["why"])
    assert nodes["snoc-think"]["condition_why"].startswith("the fleet built it")
    assert wait_state(config, data["job_id"], ["succeeded", "failed"])["state"] == "succeeded"
    # the same variables again: nothing changed since snoc-gaming's last build, so frozen
    wait_for("the rebuild in the cost book", lambda: _in_cost_book(config, data["job_id"]), 120,
             poll=2)  # fmt: skip
    again = _auto(config)
    gaming = {n["node"]: n for n in again["placement"]["nodes"]}["snoc-gaming"]
    assert again["placement"]["chosen"] == "snoc-gaming", again["placement"]["why"]
    assert gaming["condition"] == "frozen"
    assert gaming["condition_why"].endswith("ago with the same variables")
    assert wait_state(config, again["job_id"], ["succeeded", "failed"])["state"] == "succeeded"

    # the same state folder, snoc-gaming's engine unreachable (loopback port 1 refuses): its
    # hot cache no longer counts
    text = config.read_text()
    gone = re.sub(
        r'(name = "snoc-gaming"\ndocker_host = )"[^"]*"',
        r'\1"tcp://127.0.0.1:1"',
        text,
    )
    assert gone != text
    down = tmp_path / "down.toml"
    down.write_text(gone)
    data = _auto(down)
    nodes = {n["node"]: n for n in data["placement"]["nodes"]}
    assert data["placement"]["chosen"] != "snoc-gaming"
    assert not nodes["snoc-gaming"]["eligible"]
    assert nodes["snoc-gaming"]["why_not"].startswith("down")
    assert wait_state(down, data["job_id"], ["succeeded", "failed"])["state"] == "succeeded"
