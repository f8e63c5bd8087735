"""Fleet runs on the dev fleet with real builds (issue 39): `rocmtui run` of the demo group on
the three nodes, drawn by `rocmtui runs show`: lanes and bars match the jobs' own start and end
times, a run in flight grows, and the comparison with the run before names the build a longer
sleep made slower."""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

import pytest

from devfleet import DevFleet
from tests.support.jobs import job_json, run_cli, wait_for, wait_state
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet]
NODES = ("snoc-strix", "snoc-think", "snoc-gaming")


def _run(config: Path, *sets: str) -> dict[str, Any]:
    args = [a for s in sets for a in ("--set", s)]
    done = run_cli(config, "run", "default", "--json", *args)
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    assert [n["node"] for n in data["nodes"]] == list(NODES)
    assert all(n["started"] for n in data["nodes"]), data
    return data


def _show(config: Path, run_id: str) -> dict[str, Any]:
    done = run_cli(config, "runs", "show", run_id, "--json")
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def test_a_fleet_run_drawn_grown_and_compared(config: Path, fleet: DevFleet) -> None:
    require("docker-buildx")
    nonce = secrets.token_hex(4)
    first = _run(config, f"DEMO_NONCE={nonce}", "DEMO_STEPS=5", "DEMO_SLEEP=0.3")
    # in flight: the bars grow
    one = _show(config, first["run_id"])
    assert one["running"] and [ln["node"] for ln in one["lanes"]] == list(NODES)
    two = wait_for(
        "the running run's wall to grow",
        lambda: (d := _show(config, first["run_id"]))["wall_seconds"] > one["wall_seconds"] and d,
        60,
        poll=0.5,
    )
    assert two["wall_seconds"] > one["wall_seconds"]
    for node in first["nodes"]:
        assert node["arch"] == {"snoc-strix": "gfx1151"}.get(node["node"], "gfx1201")
        wait_state(config, node["job_id"], ["succeeded", "failed"])
    done = _show(config, first["run_id"])
    assert not done["running"]
    for lane in done["lanes"]:
        (bar,) = lane["builds"]
        job = job_json(config, bar["job_id"])
        assert job["node"] == lane["node"] and job["state"] == "succeeded"
        assert bar["started_at"] == job["started_at"] and bar["ended_at"] == job["ended_at"]
        assert lane["busy_seconds"] == round(job["ended_at"] - job["started_at"], 1)
    assert done["wall_seconds"] == round(
        max(b["ended_at"] for ln in done["lanes"] for b in ln["builds"])
        - min(b["started_at"] for ln in done["lanes"] for b in ln["builds"]),
        1,
    )
    assert len(done["chain"]) == 1

    # the same run with a longer sleep in every step: slower everywhere, and said so
    second = _run(config, f"DEMO_NONCE={nonce}-2", "DEMO_STEPS=5", "DEMO_SLEEP=1.5")
    for node in second["nodes"]:
        wait_state(config, node["job_id"], ["succeeded", "failed"])
    shown = _show(config, second["run_id"])
    assert shown["compared_with"] == first["run_id"]
    slower = [c for c in shown["changes"] if c["slower"]]
    assert slower and slower[0]["target"] == "default"
    assert slower[0]["line"].endswith(", slower)")
    listed = run_cli(config, "runs", "--json")
    assert [r["id"] for r in json.loads(listed.stdout)] == [second["run_id"], first["run_id"]]
    text = run_cli(config, "runs", "show", second["run_id"])
    assert text.returncode == 0 and f"against {first['run_id']}: slower: " in text.stdout


def test_a_run_launched_while_a_node_is_down_says_why_its_lane_is_empty(
    config: Path, fleet: DevFleet, tmp_path: Path
) -> None:
    require("docker-buildx")
    text = config.read_text()
    gone = re.sub(
        r'(name = "snoc-gaming"\ndocker_host = )"[^"]*"', r'\1"tcp://127.0.0.1:1"', text
    )  # loopback port 1 refuses: the node probes down
    assert gone != text
    down = tmp_path / "down.toml"
    down.write_text(gone)
    sets = ("--set", f"DEMO_NONCE={secrets.token_hex(4)}", "--set", "DEMO_STEPS=3",
            "--set", "DEMO_SLEEP=0")  # fmt: skip
    done = run_cli(down, "run", "default", "--nodes", "snoc-think,snoc-gaming", "--json", *sets)
    assert done.returncode == 1, done.stderr  # not every chosen node started
    data = json.loads(done.stdout)
    starts = {n["node"]: n for n in data["nodes"]}
    assert starts["snoc-think"]["started"] and not starts["snoc-gaming"]["started"]
    assert starts["snoc-gaming"]["why_not"].startswith("down")
    assert "snoc-gaming: not started: down" in done.stderr
    wait_state(down, starts["snoc-think"]["job_id"], ["succeeded", "failed"])
    shown = _show(down, data["run_id"])
    lanes = {ln["node"]: ln for ln in shown["lanes"]}
    assert list(lanes) == ["snoc-think", "snoc-gaming"]
    assert lanes["snoc-gaming"]["builds"] == []
    assert lanes["snoc-gaming"]["note"].startswith("did not start: down")
    # the same run read with the fleet file that no longer names snoc-gaming
    removed = tmp_path / "removed.toml"
    removed.write_text(re.sub(r'\[\[nodes\]\]\nname = "snoc-gaming"[^\[]*', "", text))
    lanes = {ln["node"]: ln for ln in _show(removed, data["run_id"])["lanes"]}
    assert lanes["snoc-gaming"]["note"].endswith("no longer in the fleet file")
