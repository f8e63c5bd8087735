"""The history, runs and timeline screens read the job store through the console's door
(`rocmtui.console.backend.books`): on a real job store file that is not a database, each says
why in its status line, as its one-line reason; the timeline of a job the store does not have
says so. Each screen runs alone in a small App, live (it reads), over a fleet file of one
engineless node.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from textual.app import App
from textual.screen import Screen

from rocmtui.console.screens.history import HistoryScreen
from rocmtui.console.screens.runs import RunsScreen
from rocmtui.console.screens.timeline import TimelineScreen
from rocmtui.core.config.fleetfile import FleetConfig, load_config
from tests.support.blackbox import until_text
from tests.support.jobs import engineless_fleet

JOB = "20251130-1120-beef"  # an id as the store makes them, of no job in it
SIZE = (240, 30)  # wide: the reason names the store by its full path


class Alone(App[None]):
    """One screen and nothing else."""

    CSS_PATH: ClassVar[list[Any]] = []

    def __init__(self, screen: Screen[Any]) -> None:
        super().__init__()
        self.alone = screen

    def on_mount(self) -> None:
        self.push_screen(self.alone)


def fleet(tmp_path: Path, corrupt: bool) -> FleetConfig:
    state = tmp_path / "state"
    state.mkdir()
    if corrupt:
        (state / "jobs.sqlite").write_text("not a database\n")
    return load_config(engineless_fleet(tmp_path, "snoc-strix", state_dir=state))


def screens(config: FleetConfig) -> list[Screen[Any]]:
    common: dict[str, Any] = {"live": True, "read_only": False, "keymap": {}}
    return [
        HistoryScreen(config, **common),
        RunsScreen(config, **common),
        TimelineScreen(config, JOB, "gone", running=False, **common),
    ]


async def test_a_job_store_that_is_not_a_database_is_said_on_each_screen(
    tmp_path: Path,
) -> None:
    for screen in screens(fleet(tmp_path, corrupt=True)):
        async with Alone(screen).run_test(size=SIZE) as pilot:
            await until_text(pilot, r"file is not a database")


async def test_the_timeline_of_a_job_the_store_does_not_have_says_so(tmp_path: Path) -> None:
    timeline = screens(fleet(tmp_path, corrupt=False))[2]
    async with Alone(timeline).run_test(size=SIZE) as pilot:
        # the why, whole, in the panel; the status line points at it
        shown = await until_text(pilot, rf"No steps to show: no job matches '{JOB}'")
        assert f"timeline · {JOB} · no steps (below)" in shown
