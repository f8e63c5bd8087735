"""Faults from outside are said in the panel they hit, worded for the operator, and the
console goes on: a monitor process killed under it, a bake file that does not parse."""

from __future__ import annotations

import os
import re
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from devfleet import DevFleet
from rocmtui.console.app import RocmTui
from rocmtui.console.backend.access import MonitorFailed
from rocmtui.console.backend.refresh import failure_text
from rocmtui.console.screens.fleet import FleetScreen
from rocmtui.console.widgets.panels import FleetPanel
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.hostmonitor.sources import ChildSource
from rocmtui.core.snapshots import FleetSnapshot
from tests.support.blackbox import until
from tests.support.jobs import engineless_fleet


def test_own_errors_are_said_as_worded_and_others_keep_their_type() -> None:
    assert failure_text(MonitorFailed.ended(-9)) == "the monitor process was killed by SIGKILL"
    assert failure_text(MonitorFailed.ended(3)) == "the monitor process exited with status 3"
    locked = sqlite3.OperationalError("database is locked")
    assert failure_text(locked) == "OperationalError: database is locked"


@pytest.mark.fleet
async def test_a_killed_monitor_is_said_in_its_panels_and_started_again(
    fleet: DevFleet, tmp_path: Path
) -> None:
    """The OOM killer (or an operator's kill) ends the monitor process: the nodes and services
    panels say how it ended and when it starts again, it does, rounds resume, the fault goes;
    a second kill after it recovered waits one refresh again, not a longer backoff."""
    text = fleet.config_path.read_text()
    fleet_file = tmp_path / "fleet.toml"
    fleet_file.write_text(re.sub(r"(?m)^refresh_seconds = .*$", "refresh_seconds = 1.0", text))
    app = RocmTui(load_config(fleet_file))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        await until(pilot, lambda: screen.all_mounted, "every panel, after the first frame")
        nodes = screen.query_one("#nodes", FleetPanel)
        services = screen.query_one("#services", FleetPanel)

        await until(pilot, lambda: screen.data.fleet is not None, "a first round")
        said = "fleet monitor: the monitor process was killed by SIGKILL; starting it again in"
        for kill in range(2):
            link = app.backend.rounds.feed
            assert isinstance(link, ChildSource) and link.alive()
            child = link.child
            killed_at = time.time()
            os.kill(child.pid, signal.SIGKILL)
            await until(pilot, lambda: nodes.fault is not None, "the nodes panel's fault")
            assert nodes.fault == f"{said} 1s", (kill, nodes.fault)
            assert services.fault == nodes.fault

            def resumed(since: float = killed_at) -> bool:
                fleet = screen.data.fleet
                return nodes.fault is None and fleet is not None and fleet.taken_at > since

            await until(pilot, resumed, "a round from the new monitor process")
            assert app.backend.rounds.feed is not link and services.fault is None
            assert screen.data.fleet is not None
            names = {n.name for n in screen.data.fleet.nodes}
            assert names == {"snoc-strix", "snoc-think", "snoc-gaming"}


async def faults_shown(fleet_file: Path, panel: str) -> tuple[dict[str, str | None], FleetSnapshot]:
    """Open the console on `fleet_file` until `panel` shows a fault and a probe round is in:
    every panel's fault then, and the round."""
    app = RocmTui(load_config(fleet_file))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        await until(pilot, lambda: screen.all_mounted, "every panel, after the first frame")
        panels = {p.id or "": p for p in screen.query(FleetPanel)}
        await until(pilot, lambda: panels[panel].fault is not None, f"the {panel} panel's fault")
        await until(pilot, lambda: screen.data.fleet is not None, "a probe round")
        assert screen.data.fleet is not None
        return {name: p.fault for name, p in panels.items()}, screen.data.fleet


async def test_a_broken_bake_file_is_said_once_in_the_variables_panel(tmp_path: Path) -> None:
    """The variables panel names the file and the line, once; the nodes go on being probed."""
    bake_file = tmp_path / "rocm-bake.hcl"
    bake_file.write_text('variable "ROCM_VERSION" {\n  default = \n}\n')
    fleet_file = engineless_fleet(tmp_path, "snoc-strix", bake_file=bake_file, refresh_seconds=1.0)
    faults, fleet = await faults_shown(fleet_file, "variables")
    fault = faults["variables"]
    assert fault is not None and fault.startswith(f"{bake_file}:2: "), fault
    assert fault.count("rocm-bake.hcl") == 1, fault
    assert fleet.nodes[0].state == "down" and faults["nodes"] is None


async def test_a_corrupt_job_store_is_said_in_the_jobs_panel(tmp_path: Path) -> None:
    """The jobs panel names the database file; the nodes go on being probed."""
    state = tmp_path / "state"
    state.mkdir()
    (state / "jobs.sqlite").write_text("not a database\n")
    fleet_file = engineless_fleet(tmp_path, "snoc-strix", state_dir=state, refresh_seconds=1.0)
    faults, fleet = await faults_shown(fleet_file, "jobs")
    assert faults["jobs"] == f"job store: {state / 'jobs.sqlite'}: file is not a database"
    assert fleet.nodes[0].state == "down" and faults["nodes"] is None
