"""The bake dialog names the privileges a build asks bake for and grants them only on its
question's yes (#36): black-box, on the real backend and the dev fleet. Keys go in through
Pilot; the screen's text and the job store come out.

The bake file reads its context from `../pytorch`, outside its folder: today's bake refuses
that without `--allow fs.read=../pytorch`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from devfleet import DevFleet
from rocmtui.console.app import RocmTui
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.control import list_jobs
from tests.support.blackbox import until, until_text
from tests.support.jobs import wait_state, write_config
from tests.support.privileges import project
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet]

SIZE = (120, 40)
QUESTION = r"Grant outside for gfx1201 on snoc-strix:"


def jobs(config: Path) -> list[Any]:
    """rocmtui's own jobs in the store, as `rocmtui jobs` reads it (the console also records
    builds it finds in the shared fleet's history: started elsewhere, by other tests)."""
    return [j for j in list_jobs(load_config(config), limit=None) if not j.started_elsewhere]


async def test_the_dialog_names_the_read_asks_and_builds_only_on_yes(
    tmp_path: Path, fleet: DevFleet
) -> None:
    require("docker-buildx")
    config = write_config(tmp_path, fleet, bake_file=project(tmp_path))
    nonce = f"NONCE={os.getpid()}-dialog"
    app = RocmTui(load_config(config))
    async with app.run_test(size=SIZE) as pilot:
        await until_text(pilot, r"Variables")
        await pilot.press("b")  # on snoc-strix, the focused node; `outside` is the first target
        await until_text(pilot, r"target outside ")
        await pilot.press("tab", "tab", "tab", *nonce, "enter")  # the variables field
        shown = await until_text(pilot, r"asks bake for: fs\.read=\.\./pytorch; Start asks first")
        assert "--allow=fs.read=../pytorch" in shown  # the command as it will run, granted
        await pilot.press("ctrl+s")
        shown = await until_text(pilot, QUESTION)
        assert "--allow fs.read=../pytorch  read outside the bake file's folder" in shown
        assert jobs(config) == []  # asked, not started
        await pilot.press("escape")  # no: back in the dialog, nothing started
        await until_text(pilot, QUESTION, absent=True)
        assert jobs(config) == []
        await pilot.press("ctrl+s")
        await until_text(pilot, QUESTION)
        await pilot.press("y")
        started = await until(pilot, lambda: jobs(config), "the granted job in the store")
        await until_text(pilot, rf"job {started[0].id}")  # and its log pane opens
    assert [(j.target, j.node, j.allowed) for j in started] == [
        ("outside", "snoc-strix", ("fs.read=../pytorch",))
    ]
    job = wait_state(config, started[0].id, ["succeeded", "failed", "lost"], timeout=180)
    assert job["state"] == "succeeded", job

    # `r` on that job: says what it was granted, and asks again before anything starts
    app = RocmTui(load_config(config))
    async with app.run_test(size=SIZE) as pilot:
        await until_text(pilot, r"✓ succeeded +outside +gfx1201 +snoc-strix")
        await pilot.press("tab", "tab", "r")
        await until_text(pilot, r"the earlier build was granted: fs\.read=\.\./pytorch \(asked")
        await until_text(pilot, r"asks bake for: fs\.read=\.\./pytorch")
        await pilot.press("enter")  # Start has the focus
        await until_text(pilot, QUESTION)
        assert [j.id for j in jobs(config)] == [started[0].id]  # asked again, not started
        await pilot.press("escape")


async def test_a_read_only_console_starts_nothing_even_granted(
    tmp_path: Path, fleet: DevFleet
) -> None:
    """The core refuses: the dialog's yes on a read-only fleet starts no build."""
    require("docker-buildx")
    config = write_config(tmp_path, fleet, bake_file=project(tmp_path))
    loaded = load_config(config)
    from rocmtui.console.backend.access import FleetBackend
    from rocmtui.console.backend.calls import launch
    from rocmtui.core.jobs.refusals import ReadOnlyRefused

    backend = FleetBackend(loaded, env=dict(os.environ))
    bake = backend.bake()
    shown = backend.plan("outside", None, "snoc-strix", False)
    assert [p.grant for p in shown.privileges] == ["fs.read=../pytorch"]
    from msgspec.structs import replace

    granted = replace(shown, granted=("fs.read=../pytorch",))
    read_only = replace(loaded, read_only=True)
    with pytest.raises(ReadOnlyRefused):
        launch(read_only, bake, granted, dict(os.environ), push_confirmed=False)
    assert jobs(config) == []
