"""A bake group still running on a dev-fleet node, drawn one bar per target (issue 39): `rocmtui
run all --nodes NODE` builds demo-base, demo-pytorch and demo-vllm in one bake whose steps
sleep; while it runs, `rocmtui runs show --json` has a bar per target that has started (named
for the group, its times as bake printed them, the lane says so) whose end grows to now, and
the console's Runs screen (`u`) draws a row per target, its chain naming targets. After the end
the bars stay one per target: from the targets' BuildKit records on today's engine
(snoc-think, over ssh), from bake's printed times on the old engine without build history
(snoc-gaming, over TLS)."""

from __future__ import annotations

import json
import re
import secrets
from pathlib import Path
from typing import Any

import pytest

from devfleet import DevFleet
from rocmtui.console.app import RocmTui
from rocmtui.console.screens.runs import RunsScreen
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.store import JobStore
from tests.support.blackbox import until_text
from tests.support.jobs import run_cli, wait_for, wait_state
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet]
TARGETS = ["demo-base", "demo-pytorch", "demo-vllm"]
LIVE_NOTE = "a group's target times as bake printed them"


def lane_of(config: Path, run_id: str) -> dict[str, Any]:
    """The run's one lane as `runs show --json` prints it."""
    shown = run_cli(config, "runs", "show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    data = json.loads(shown.stdout)
    (lane,) = data["lanes"]
    lane["running"] = data["running"]
    return dict(lane)


@pytest.mark.parametrize(("node", "records"), [("snoc-think", True), ("snoc-gaming", False)])
async def test_a_running_group_is_a_growing_bar_per_target(
    config: Path, fleet: DevFleet, node: str, records: bool
) -> None:
    require("docker-buildx")
    printed = run_cli(config, "run", "all", "--nodes", node, "--json",
                      "--set", f"DEMO_NONCE={secrets.token_hex(4)}", "--set", "DEMO_STEPS=10",
                      "--set", "DEMO_SLEEP=0.4")  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    started = json.loads(printed.stdout)
    (one,) = started["nodes"]
    assert one["started"], started
    run_id, job_id = started["run_id"], one["job_id"]
    store = JobStore.for_config(load_config(config))

    def two_running_targets() -> dict[str, Any] | None:
        lane = lane_of(config, run_id)
        bars = [b for b in lane["builds"] if b["of_group"] == "all"]
        running = [b for b in bars if b["ended_at"] is None]
        return lane if lane["running"] and len(bars) >= 2 and running else None

    lane = wait_for("a bar per target while the group runs", two_running_targets, 120, poll=0.5)
    assert lane["note"] == LIVE_NOTE
    assert {b["job_id"] for b in lane["builds"]} == {job_id}
    assert {b["target"] for b in lane["builds"]} <= set(TARGETS)
    before = {b["target"]: b["duration"] for b in lane["builds"] if b["ended_at"] is None}

    def grown() -> dict[str, Any] | None:
        later = lane_of(config, run_id)
        bars = {b["target"]: b for b in later["builds"]}
        longer = [t for t, d in before.items() if t in bars and bars[t]["duration"] > d]
        return later if longer else None

    wait_for("a running target's bar to grow", grown, 60, poll=0.5)

    # the console while it runs: `u`, and the lane is a row per target, each named at its end
    app = RocmTui(load_config(config))
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("u")
        pattern = r"▕\s+(" + "|".join(TARGETS) + r")\s*$"
        shown = await until_text(pilot, pattern + r"(?s:.*)" + pattern, 60)
        assert isinstance(app.screen, RunsScreen)
        assert store.get(job_id).ended_at is None, "the build ended before the screen drew it"
        rows = [ln for ln in shown.splitlines() if "▏" in ln and "▕" in ln]
        named = [ln.rstrip().rsplit(" ", 1)[-1] for ln in rows]
        assert len(named) >= 2 and set(named) <= set(TARGETS), shown
        assert rows[0].lstrip().startswith(node)
        assert LIVE_NOTE in shown
        # the chain that sets the run's length names the group's targets, not the group
        chain = re.search(r"set its length: (\S+) on ", shown)
        assert chain is not None and chain.group(1) in TARGETS, shown

    wait_state(config, job_id, ["succeeded"])

    def settled() -> dict[str, Any] | None:
        done = lane_of(config, run_id)
        bars = done["builds"]
        whole = len(bars) == len(TARGETS) and all(b["ended_at"] is not None for b in bars)
        from_records = done["note"] is None  # the records' spans, not the printed ones
        return done if whole and (from_records or not records) else None

    done = wait_for("a bar per target after the end", settled, 120, poll=0.5)
    assert sorted(b["target"] for b in done["builds"]) == TARGETS
    assert {b["state"] for b in done["builds"]} == {"succeeded"}
    assert {b["of_group"] for b in done["builds"]} == {"all"}
