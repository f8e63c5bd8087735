"""The intents a key sends up, in order, captured where they arrive (harlequin's functional
tests are the model: a `message_hook` records every message the App's pumps dispatch).

The console runs on recorded data; its backend is a stand-in (`StandInBackend`) that answers
`bake --print` with a recorded plan and records launches and cancels instead of running
docker: what is pinned here is the walk of messages, keys in, intents out. The same walks on
the real backend are in tests/pilot/test_console_key_walks.py. The last test runs the log screen on
its
own, in a small App, over a recorded job list: it needs no other screen.
"""

from __future__ import annotations

import io
import re
import threading
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from rich.console import Console
from textual import on
from textual.app import App

from rocmtui.console import keys
from rocmtui.console.backend.views import BakePlan, BakeRequest, BakeView, JobView
from rocmtui.console.intents import (
    BakeRequested,
    CancelRequested,
    Intent,
    PanesChanged,
    RebuildRequested,
)
from rocmtui.console.screens.help import help_table
from rocmtui.console.screens.logs import LogsScreen
from rocmtui.core.config.fleetfile import FleetConfig, load_config
from rocmtui.core.states import JobState
from tests.support.blackbox import recorder, until, until_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import RecordedPlans, feed
from tests.support.snapshots.plans import PLAN

SIZE = (120, 40)
VLLM, PYTORCH = "20251130-1120-vllm-gfx950", "20251130-1101-pytorch-gfx1201"


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


class StandInBackend(RecordedPlans):
    """A stand-in for docker: `bake --print` answers with the recorded plan; a launch is
    recorded and comes back as a running job; a cancel is recorded."""

    def __init__(self, config: FleetConfig) -> None:
        super().__init__(config, PLAN)
        self.launched: list[BakePlan] = []
        self.cancelled: list[str] = []

    def launch(self, plan: BakePlan, push_confirmed: bool = False) -> JobView:
        """Record the plan; the job it would have started."""
        self.launched.append(plan)
        return JobView(
            recorded.job(
                "20251130-1130-started",
                plan.target,
                plan.arch or "",
                plan.node,
                JobState.RUNNING,
                recorded.NOW,
                recorded.ROOT / "tests" / "support" / "snapshots" / "logs" / "vllm.log",
            )
        )

    def cancel(self, job_id: str) -> None:
        """Record the cancel."""
        self.cancelled.append(job_id)


def console(keys: dict[str, str] | None = None) -> tuple[Any, StandInBackend]:
    from rocmtui.console.app import RocmTui

    config = recorded.config(keys=keys)
    backend = StandInBackend(config)
    app = RocmTui(config, backend=backend, live=False, clock=lambda: recorded.NOW)
    return app, backend


def walk(seen: list[Any]) -> list[str]:
    """The recorded messages' kinds, in order."""
    return [type(m).__name__ for m in seen]


async def test_r_then_enter_on_a_job_row_sends_one_rebuild_then_the_pane_opens() -> None:
    """The dialog's plan goes straight to the launch and the started job straight to its log
    pane: nothing goes back up through the App on the way."""
    app, backend = console()
    seen, hook = recorder(Intent)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "down")  # the jobs panel: pytorch on snoc-think
        await pilot.pause()
        seen.clear()  # the feed's own (jobs changed) are not this walk
        await pilot.press("r")
        await until_text(pilot, r"▶ +\"GFX_ARCH\": \"gfx1201\"")  # bake resolved it
        assert walk(seen) == ["RebuildRequested"]
        await pilot.press("enter")
        await until(pilot, lambda: any(isinstance(m, PanesChanged) for m in seen), "a pane")
        assert app.logs_screen.current().job.record.id == "20251130-1130-started"
    rebuild, *rest = seen
    assert isinstance(rebuild, RebuildRequested)
    job = recorded.jobs()[0]
    assert rebuild.request == BakeRequest.rebuild(job)
    launched = [(p.target, p.arch, p.node) for p in backend.launched]
    assert launched == [("demo-pytorch", "gfx1201", "snoc-think")]
    # the new row goes out as a new job list, then the pane asks for its progress
    assert sorted(walk(rest)) == ["JobsChanged", "PanesChanged"]


async def test_b_then_ctrl_s_sends_one_bake_then_the_pane_opens() -> None:
    app, backend = console()
    seen, hook = recorder(Intent)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await feed(app, pilot)
        seen.clear()
        await pilot.press("b")  # the nodes panel has the focus: its first row, snoc-strix
        await until_text(pilot, r"bake --print")
        await pilot.press("ctrl+s")
        await until(pilot, lambda: any(isinstance(m, PanesChanged) for m in seen), "a pane")
        shown = app.logs_screen.current().job.record
    kinds = walk(seen)
    assert kinds[:1] == ["BakeRequested"]
    assert sorted(kinds[1:]) == ["JobsChanged", "PanesChanged"]
    bake = seen[0]
    assert isinstance(bake, BakeRequested) and bake.request == BakeRequest(node="snoc-strix")
    # the first target, on that node: exactly the plan the dialog showed is launched
    assert [(p.target, p.node) for p in backend.launched] == [("demo-base", "snoc-strix")]
    assert shown.id == "20251130-1130-started"


async def test_c_then_y_in_a_log_pane_sends_cancel_and_the_core_cancels() -> None:
    app, backend = console()
    seen, hook = recorder(Intent)
    async with app.run_test(size=SIZE, message_hook=hook) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "l")  # the newest running job's pane
        await until_text(pilot, rf"job {VLLM}")
        assert walk(seen)[-2:] == ["LogRequested", "PanesChanged"]
        seen.clear()
        await pilot.press("c")
        await until_text(pilot, rf"Cancel demo-vllm gfx950 on snoc-strix \({VLLM}\)\?")
        assert walk(seen) == ["CancelRequested"]
        await pilot.press("y")
        await until(pilot, lambda: backend.cancelled, "the cancel to reach the backend")
    (cancel,) = seen  # the yes cancels at once: nothing more goes up
    assert isinstance(cancel, CancelRequested) and cancel.job.record.id == VLLM
    assert backend.cancelled == [VLLM]


class LogsAlone(App[None]):
    """The log screen and nothing else: what it sends up is recorded here."""

    CSS_PATH: ClassVar[list[Any]] = []

    def __init__(self, jobs: tuple[JobView, ...]) -> None:
        super().__init__()
        self.jobs = jobs
        self.intents: list[Intent] = []
        self.logs = LogsScreen(clock=lambda: recorded.NOW, read_only=False, keymap={})

    def on_mount(self) -> None:
        for job in self.jobs:  # before it is shown: the last opened comes forward
            self.logs.open_job(job)
        self.push_screen(self.logs)

    @on(Intent)
    def _intent(self, intent: Intent) -> None:
        self.intents.append(intent)


async def test_the_log_screen_runs_alone_over_a_recorded_job_list() -> None:
    """No fleet screen, no console App: given jobs, it shows their panes, takes new states,
    and what its keys ask goes up as intents."""
    jobs = recorded.jobs()[:2]  # pytorch (running), vllm (running)
    app = LogsAlone(jobs)
    async with app.run_test(size=SIZE) as pilot:
        shown = await until_text(pilot, rf"job {VLLM}")  # the last opened is in front
        assert "▶ demo-pytorch gfx1201 snoc-think" in shown
        await until(pilot, lambda: [i for i in app.intents if isinstance(i, PanesChanged)], "")
        assert set(app.intents[-1].job_ids) == {PYTORCH, VLLM}  # type: ignore[attr-defined]
        app.intents.clear()
        await pilot.press(keys.BY_ID["logs.rebuild"].key, keys.BY_ID["logs.cancel"].key)
        await until(pilot, lambda: len(app.intents) >= 2, "two intents")
        rebuild, cancel = app.intents
        assert isinstance(rebuild, RebuildRequested)
        assert rebuild.request == BakeRequest.rebuild(jobs[1])
        assert isinstance(cancel, CancelRequested) and cancel.job.record.id == VLLM
        ended = recorded.changed(jobs[1], state=JobState.CANCELLED, ended_at=recorded.NOW)
        app.logs.update_jobs((jobs[0], ended))
        await until_text(pilot, r"⊘ cancelled +demo-vllm")
        app.intents.clear()
        await pilot.press("c")  # an ended job's pane: nothing to cancel, nothing sent
        await pilot.pause()
        assert app.intents == []


async def test_c_on_an_ended_jobs_pane_says_it_is_not_running() -> None:
    """The footer offers `c Cancel` on every pane; on an ended build's it did nothing at all.
    It says why now, in the fleet screen's words, and still asks nothing."""
    ended = recorded.jobs()[2]  # demo-base, succeeded
    app = LogsAlone((ended,))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, rf"job {ended.record.id}")
        app.intents.clear()
        await pilot.press(keys.BY_ID["logs.cancel"].key)
        await until_text(pilot, r"demo-base is not running \(succeeded\)\.")
        assert not [i for i in app.intents if isinstance(i, CancelRequested)]


async def test_a_dialog_key_remapped_in_the_fleet_file_is_accepted_and_works(
    tmp_path: Path,
) -> None:
    """`bake.start = "F"` in `[keys]` is taken like `logview.follow = "F"`: no complaint, F
    starts the build (ctrl+s no longer does), the palette on the dialog names F, and `?`
    lists it."""
    fleet = tmp_path / "rocmtui.toml"
    fleet.write_text('bake_file = "bake.hcl"\n[keys]\nbake.start = "F"\nbake.push = "P"\n')
    remapped = load_config(fleet).keys
    assert keys.check_keymap(remapped) == (remapped, [])
    app, backend = console(keys=remapped)
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("b")
        await until_text(pilot, r"F start · P push on/off · esc back")
        await pilot.press("ctrl+p", *"Start")
        await until_text(pilot, r"Start\s+key F")
        await pilot.press("escape")
        await until_text(pilot, r"Search for commands", absent=True)
        await pilot.press("ctrl+s")  # the old key: nothing starts
        await pilot.pause()
        assert backend.launched == []
        await pilot.press("F")
        await until(pilot, lambda: backend.launched, "the launch")
    assert len(backend.launched) == 1
    console_text = Console(width=120, record=True, file=io.StringIO())
    console_text.print(help_table(app.keymap, False))
    assert re.search(r"F +Start ! +bake\.start", console_text.export_text())


class SlowBakeFile(StandInBackend):
    """A stand-in for the live backend whose bake file is read only when the test says so
    (`gate`): rounds and jobs are the recorded ones, no monitor process runs."""

    def __init__(self, config: FleetConfig) -> None:
        super().__init__(config)
        self.gate = threading.Event()
        self.stopped = threading.Event()

    def run_monitor(self, publish: Any, source_changed: Any = None) -> None:
        publish(recorded.fleet())
        self.stopped.wait(30)

    def stop_monitor(self) -> None:
        self.stopped.set()
        self.gate.set()

    def refresh_now(self) -> None:
        """Nothing to probe."""

    def take_first_round(self) -> None:
        return None

    def jobs(self, now: float | None = None) -> tuple[JobView, ...]:
        return recorded.jobs()

    def load_bake(self) -> BakeView:
        self.gate.wait(30)
        return recorded.bake()


async def test_r_before_the_bake_file_is_read_opens_one_dialog_when_it_is() -> None:
    """`r` pressed twice while the bake file is still being read (nothing seemed to happen):
    one RebuildRequested waits, the second adds nothing; when the file is in, one dialog
    opens, and one Escape is back on the fleet screen."""
    from rocmtui.console.app import RocmTui

    config = recorded.config()
    backend = SlowBakeFile(config)
    app = RocmTui(config, backend=backend, live=True, remember=False, clock=lambda: recorded.NOW)
    async with app.run_test(size=SIZE) as pilot:
        await until_text(pilot, rf"{PYTORCH}")
        await pilot.press("tab", "tab", "down", "r", "r")
        await pilot.press("question_mark")  # a round trip: both r were handled before it
        await until_text(pilot, r"remap any of them")
        await pilot.press("escape")
        shown = await until_text(pilot, r"─Nodes")
        assert "target demo-pytorch" not in shown  # still waiting for the file
        backend.gate.set()
        await until_text(pilot, r"target demo-pytorch .*arch gfx1201 .*node snoc-think")
        await pilot.press("escape")
        await until_text(pilot, r"─Nodes")
        await pilot.press("question_mark")  # a round trip: a second dialog would be on top
        await until_text(pilot, r"remap any of them")
        await pilot.press("escape")
        shown = await until_text(pilot, r"─Nodes")
        assert "target demo-pytorch" not in shown
