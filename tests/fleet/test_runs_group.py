"""A bake group built on one dev-fleet node, drawn one bar per target (issue 39): `rocmtui run
all --nodes snoc-think` builds demo-base, demo-pytorch and demo-vllm in one bake invocation (a
BuildKit record each); once it has ended, `rocmtui runs show --json` has a bar per target whose
start and end are that target's record's first step's start and last step's end, and the text
draws a row per target, as does the console's Runs screen (`u`)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pytest
from msgspec.structs import replace

from devfleet import DevFleet
from rocmtui.console.app import RocmTui
from rocmtui.console.screens.runs import RunsScreen
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.history.stepstore import replay_steps
from rocmtui.core.jobs.bakefiles import target_refs_from_metadata
from rocmtui.core.jobs.store import JobStore
from tests.support.blackbox import until_text
from tests.support.jobs import run_cli, wait_for, wait_state
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet]
TARGETS = ["demo-base", "demo-pytorch", "demo-vllm"]


async def test_a_group_on_one_node_is_a_bar_per_target(config: Path, fleet: DevFleet) -> None:
    require("docker-buildx")
    printed = run_cli(config, "run", "all", "--nodes", "snoc-think", "--json",
                      "--set", f"DEMO_NONCE={secrets.token_hex(4)}", "--set", "DEMO_STEPS=4",
                      "--set", "DEMO_SLEEP=0.2")  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    started = json.loads(printed.stdout)
    (node,) = started["nodes"]
    assert node["started"], started
    job_id = node["job_id"]
    wait_state(config, job_id, ["succeeded"])

    def shown() -> dict[str, object] | None:
        done = run_cli(config, "runs", "show", started["run_id"], "--json")
        assert done.returncode == 0, done.stderr
        data: dict[str, object] = json.loads(done.stdout)
        lane = data["lanes"][0]  # type: ignore[index]
        # bake's printed times first, then its records' spans (kept just after the outcome)
        return data if len(lane["builds"]) == len(TARGETS) and lane["note"] is None else None

    data = wait_for("a bar per target from the targets' records", shown, 120, poll=0.5)
    (lane,) = data["lanes"]  # type: ignore[misc]
    bars = {b["target"]: b for b in lane["builds"]}
    assert sorted(bars) == TARGETS
    assert {b["job_id"] for b in bars.values()} == {job_id}
    assert {b["of_group"] for b in bars.values()} == {"all"}
    assert lane["note"] is None  # one machine: the node's BuildKit clock is this host's

    # each bar against its target's own BuildKit record, read again from the node
    loaded = load_config(config)
    record = JobStore.for_config(loaded).get(job_id)
    refs = dict(target_refs_from_metadata(record.metadata_path))
    assert sorted(refs) == TARGETS
    for target, ref in refs.items():
        steps = replay_steps(loaded, replace(record, buildkit_ref=ref, outside=None)).steps
        first = min(s.started for s in steps if s.started is not None)
        last = max(s.completed for s in steps if s.completed is not None)
        bar = bars[target]
        assert bar["started_at"] == pytest.approx(first, abs=1e-3), target
        assert bar["ended_at"] == pytest.approx(last, abs=1e-3), target
        assert bar["state"] == "succeeded" and not bar["clamped"]
    assert bars["demo-vllm"]["ended_at"] >= bars["demo-base"]["ended_at"]  # it builds on base

    text = run_cli(config, "runs", "show", started["run_id"])
    assert text.returncode == 0, text.stderr
    rows = [ln for ln in text.stdout.splitlines() if ln.count("|") == 2]
    assert sorted(ln.rsplit(" ", 1)[-1] for ln in rows) == TARGETS
    assert rows[0].lstrip().startswith("snoc-think |")

    # the console: `u`, and the run's lane is a row per target, each named at its end
    app = RocmTui(loaded)
    async with app.run_test(size=(140, 40)) as pilot:
        await pilot.press("u")
        shown = await until_text(pilot, r"▕\s+demo-vllm\s*$", 60)
        assert isinstance(app.screen, RunsScreen)
        chart_rows = [ln for ln in shown.splitlines() if "▏" in ln and "▕" in ln]
        named = [ln.rstrip().rsplit(" ", 1)[-1] for ln in chart_rows]
        assert sorted(named) == TARGETS
        assert chart_rows[0].lstrip().startswith("snoc-think")
