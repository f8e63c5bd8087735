"""Pilot tests of the fleet screen on recorded data: state, messages, keys, read-only, faults."""

from __future__ import annotations

import gc
import io
import os
import re
import time
from dataclasses import replace

import pytest
from rich.console import Console
from textual.widgets import TabbedContent
from textual.widgets._footer import FooterKey

from rocmtui.app.backend import FleetBackend, ReadOnlyError
from rocmtui.app.dialogs.bake import BakeDialog, BakeRequest
from rocmtui.app.dialogs.confirm import ConfirmDialog
from rocmtui.app.messages import FleetUpdated, JobsUpdated, PanelFailed
from rocmtui.app.model import BakePlan
from rocmtui.app.screens.help import HelpScreen, help_table
from rocmtui.app.screens.logs import LogsScreen, pane_id
from rocmtui.app.widgets.fleet import FleetPanel
from rocmtui.core.snapshots import HostStats
from rocmtui.core.states import JobState
from tests.snapshots import recorded
from tests.snapshots.harness import feed, recorded_app

SIZE = (120, 40)


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


def cells(app: object, panel: str) -> list[list[str]]:
    """The plain text of every cell of a panel's table, row by row."""
    table = app.fleet_screen.query_one(f"#{panel}", FleetPanel).table  # type: ignore[attr-defined]
    return [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]


async def test_stalled_node_is_first_and_loud() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot, stalled=True)
        nodes = cells(app, "nodes")
        assert nodes[0][0] == "‼ stalled" and nodes[0][1] == "snoc-think"
        assert "silent 16m40s" in nodes[0][3]  # the silence before the (long) job cell
        assert "[12345/23456]" in nodes[0][4] and "ETA" not in nodes[0][4]
        jobs = cells(app, "jobs")
        assert jobs[0][0] == "‼ stalled"
        # the evidence says how long it has been silent: not said twice ("out 16m40s ago")
        assert jobs[0][4].count("16m40s") == 1 and "silent 16m40s; builder" in jobs[0][4]
        status = str(app.fleet_screen.query_one("#statusbar").render())
        assert "1 stalled" in status
        assert [n.title for n in app._notifications] == ["Build stalled"]


async def test_services_and_jobs_show_every_column_at_200x60() -> None:
    """At 200 columns nothing a wide terminal has room for is scrolled away: the services'
    answer (why a service is slow or down) and the job ids (side by side they were cut)."""
    app = recorded_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await feed(app, pilot)
        for panel in ("services", "jobs"):
            table = app.fleet_screen.query_one(f"#{panel}", FleetPanel).table
            assert table.virtual_size.width <= table.scrollable_content_region.width, panel
            assert table.max_scroll_x == 0, panel


async def test_a_cancelled_job_says_only_what_its_state_word_does_not() -> None:
    """A cancelled bake exits 1 (or 143) because of the signal, and its message "cancelled" is
    the state word again: the progress cell read "exit 1 cancelled". It is empty now; a
    message that says more (the supervisor was killed, a signal) is still shown."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        base = recorded.jobs()[0]
        ended = {"state": JobState.CANCELLED, "ended_at": recorded.NOW, "exit_code": 1}
        cancelled = replace(base, id="c1", message="cancelled", **ended)
        signalled = replace(base, id="c2", message="stopped by a signal", **ended)
        app.fleet_screen.post_message(JobsUpdated((cancelled, signalled)))
        await pilot.pause()
        rows = {row[-1]: row for row in cells(app, "jobs")}
        assert rows["c1"][0] == "⊘ cancelled" and rows["c1"][4] == ""
        assert rows["c2"][4] == "stopped by a signal"


async def test_a_frozen_node_keeps_its_verdict_while_it_is_probed_again() -> None:
    """A node whose engine is frozen was `✗ down` at the end of a round; the next round's
    interim snapshot still probes it: it stays `✗ down` with its age (it flipped to
    `… probing` and back on every refresh), and the status line keeps "probed"."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        down = recorded.fleet(think_down=True)
        await feed(app, pilot, think_down=True)
        app.fleet_screen.post_message(FleetUpdated(replace(down, probing=("snoc-think",))))
        await pilot.pause()
        nodes = {row[1]: row for row in cells(app, "nodes")}
        assert nodes["snoc-think"][0] == "✗ down"
        status = str(app.fleet_screen.query_one("#statusbar").render())
        assert "probed" in status and "waiting for" not in status


async def test_an_interim_round_shows_who_is_still_being_probed() -> None:
    """Half a second into a round that waits on a hung engine the monitor sends what answered;
    the targets it still waits for read '… probing', and the status line names them."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        before = {kind: len(points) for kind, points in app.fleet_screen.history.items()}
        snap = replace(recorded.fleet(), pending=("snoc-think", "webdav"))
        app.fleet_screen.post_message(FleetUpdated(snap))
        await pilot.pause()
        assert {k: len(p) for k, p in app.fleet_screen.history.items()} == before
        nodes = {row[1]: row for row in cells(app, "nodes")}
        assert nodes["snoc-think"][0] == "… probing" and nodes["snoc-gaming"][0] == "✓ ok"
        services = {row[1].split()[0]: row for row in cells(app, "services")}
        assert services["webdav"][0] == "… probing" and services["zot"][0] == "✓ ok"
        status = str(app.fleet_screen.query_one("#statusbar").render())
        assert "waiting for snoc-think, webdav" in status and "probed" not in status
        before = {kind: len(points) for kind, points in app.fleet_screen.history.items()}
        app.fleet_screen.post_message(FleetUpdated(recorded.fleet()))  # the round's end
        await pilot.pause()
        after = {kind: len(points) for kind, points in app.fleet_screen.history.items()}
        assert after == {kind: n + 1 for kind, n in before.items()}  # one point per round
        assert "… probing" not in [row[0] for row in cells(app, "nodes")]
        assert "probed" in str(app.fleet_screen.query_one("#statusbar").render())
        # a node with a stalled build keeps its alarm while its engine is being probed
        app.fleet_screen.post_message(JobsUpdated(recorded.jobs(stalled=True)))
        app.fleet_screen.post_message(FleetUpdated(snap))
        await pilot.pause()
        assert {row[1]: row[0] for row in cells(app, "nodes")}["snoc-think"] == "‼ stalled"


async def test_stall_rings_once_per_new_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    app = recorded_app()
    rings: list[int] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot, stalled=False)
        assert rings == []
        for _ in range(3):  # the same stall reported three times rings once
            app.fleet_screen.post_message(JobsUpdated(recorded.jobs(stalled=True)))
            await pilot.pause()
        assert rings == [1]


async def test_down_node_says_since_when_and_why() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot, think_down=True)
        row = next(r for r in cells(app, "nodes") if r[1] == "snoc-think")
        assert row[0] == "✗ down"
        assert "since 11:25:52 (4m08s)" in row[4]
        assert "Connection refused" in row[4]
        # the others still show their own state
        assert [r[0] for r in cells(app, "nodes") if r[1] != "snoc-think"] == ["▶ building", "✓ ok"]


async def test_late_data_says_so() -> None:
    now = [recorded.NOW]
    app = recorded_app()
    app.clock = lambda: now[0]
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        assert not any("late" in r[-1] for r in cells(app, "nodes"))
        now[0] += 60  # no probe round for a minute
        app.fleet_screen.render_all()
        await pilot.pause()
        assert all(r[-1].startswith("late 1m0") for r in cells(app, "nodes"))
        assert "late" in str(app.fleet_screen.query_one("#statusbar").render())


async def test_hostile_values_are_text_not_markup_or_escapes() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot, hostile=True)
        row = next(r for r in cells(app, "variables") if r[0] == "EVIL")
        assert row[2].startswith("[/] [link=http://x]y[/link]")
        assert "\x1b" not in row[2] and "\x07" not in row[2]
        secret = next(r for r in cells(app, "variables") if r[0] == "HF_TOKEN")
        assert "SECRET" not in "".join(secret) and "redacted" in secret[2]
        assert next(r for r in cells(app, "variables") if r[0] == "VLLM_VERSION")[1] == "● env"


async def test_a_fault_stays_in_its_panel() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        app.fleet_screen.post_message(PanelFailed("jobs", "job store: database is locked"))
        await pilot.pause()
        jobs = app.fleet_screen.query_one("#jobs", FleetPanel)
        assert jobs.fault is not None and "database is locked" in jobs.fault
        assert app.fleet_screen.query_one("#nodes", FleetPanel).fault is None
        # a node snapshot the panel cannot render: the nodes panel says so, the rest goes on
        snap = recorded.fleet()
        bad_host = HostStats(1, 1, 1, 1, 1, 1, 1, 1, "/", None, 1)  # type: ignore[arg-type]
        broken = replace(snap, nodes=(replace(snap.nodes[0], host=bad_host), *snap.nodes[1:]))
        app.fleet_screen.post_message(FleetUpdated(broken))
        await pilot.pause()
        fault = app.fleet_screen.query_one("#nodes", FleetPanel).fault
        assert fault is not None and "cannot show this panel" in fault
        assert cells(app, "services")[0][1].startswith("zot")
        assert app.is_running


async def test_enter_on_jobs_opens_panes_and_escape_keeps_them() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        app.fleet_screen.query_one("#jobs-table").focus()
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, LogsScreen)
        vllm, pytorch = "20251130-1120-vllm-gfx950", "20251130-1101-pytorch-gfx1201"
        assert list(app.logs_screen.panes) == [vllm]  # newest running job on top
        await pilot.press("escape")
        await pilot.press("down", "l")
        await pilot.pause()
        assert list(app.logs_screen.panes) == [vllm, pytorch]
        tabs = app.logs_screen.query_one(TabbedContent)
        titles = [str(tabs.get_tab(pane_id(job)).label) for job in (vllm, pytorch)]
        # each tab says its job's state and where it ran: one target and arch on two nodes is
        # two panes
        assert titles == ["▶ demo-vllm gfx950 snoc-strix", "▶ demo-pytorch gfx1201 snoc-think"]
        current = app.logs_screen.current()
        assert current is not None and current.job.id == pytorch
        await pilot.press("right_square_bracket")
        current = app.logs_screen.current()
        assert current is not None and current.job.id == vllm
        await pilot.press("x")
        await pilot.pause()
        assert list(app.logs_screen.panes) == [pytorch]


async def test_log_pane_header_keeps_its_progress_line_at_80x24() -> None:
    """The header is two lines: the job, then where the build is. At 80 columns the first
    line is longer than the screen; it wrapped and pushed the counter, rate, ETA and silence
    (or the failed step) out of the header. Each line is now cut at the edge instead."""
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, pilot)
        app.fleet_screen.query_one("#jobs-table").focus()
        await pilot.press("down", "l")
        await pilot.pause()
        pane = app.logs_screen.current()
        assert pane is not None
        await pilot.pause()
        lines = ["".join(s.text for s in pane.header.render_line(y)) for y in range(2)]
        assert lines[0].lstrip().startswith("▶ running") and lines[0].rstrip().endswith("…")
        assert lines[1].lstrip().startswith("[12345/23456] 11.4/s ETA 16m15s"), lines


async def test_rebuild_is_r_then_enter_with_the_job_prefilled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    app = recorded_app()
    started: list[BakePlan] = []
    monkeypatch.setattr(app.fleet_screen, "launch", started.append)
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        app.fleet_screen.query_one("#jobs-table").focus()
        await pilot.press("down", "r")  # the second job: pytorch on snoc-think
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, BakeDialog)
        assert dialog.choice() == ("demo-pytorch", "gfx1201", "snoc-think", False, ())
        assert app.focused is not None and app.focused.id == "bake-start"
        await pilot.press("enter")  # started once bake has resolved it
        for _ in range(200):
            if started:
                break
            await pilot.pause(0.05)
        assert [(p.target, p.arch, p.node, p.push) for p in started] == [
            ("demo-pytorch", "gfx1201", "snoc-think", False)
        ]


async def test_pushing_target_needs_a_second_explicit_key(monkeypatch: pytest.MonkeyPatch) -> None:
    app = recorded_app()
    started: list[BakePlan] = []
    monkeypatch.setattr(app.fleet_screen, "launch", started.append)
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("b")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, BakeDialog)
        dialog.query_one("#bake-target").value = "demo-pytorch-push"
        dialog.query_one("#bake-start").focus()
        await pilot.press("enter")  # before bake answers: it asks once the plan is resolved
        for _ in range(200):
            if isinstance(app.screen, ConfirmDialog):
                break
            await pilot.pause(0.05)
        assert isinstance(app.screen, ConfirmDialog)
        assert dialog.plan is not None and dialog.plan.push
        await pilot.press("enter")  # Enter is not the confirmation key
        await pilot.press("escape")
        await pilot.pause()
        assert started == [] and isinstance(app.screen, BakeDialog)
        await pilot.press("enter")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert [(p.target, p.push) for p in started] == [("demo-pytorch-push", True)]


async def test_target_list_shows_every_name_whole_at_70x24() -> None:
    """At 70 columns the target field is ~16 cells wide; its list opens as wide as the longest
    target, so `demo-pytorch-push` is neither wrapped nor cut (it was: "demo-pytorch-pus", "h")."""
    app = recorded_app()
    async with app.run_test(size=(70, 24)) as pilot:
        await feed(app, pilot)
        await pilot.press("b")
        await pilot.pause()
        dialog = app.screen
        assert isinstance(dialog, BakeDialog)
        field = dialog.query_one("#bake-target")
        field.focus()
        await pilot.press("enter")
        await pilot.pause()
        overlay = field.query_one("SelectOverlay")
        assert overlay.display
        names = [str(overlay.get_option_at_index(i).prompt) for i in range(overlay.option_count)]
        longest = max(names, key=len)
        assert longest == "demo-pytorch-push"
        assert field.size.width < len(longest) + 4  # the field itself is too narrow for it
        assert overlay.content_region.width >= len(longest)
        assert overlay.content_region.height == len(names)  # one line each: nothing wrapped


async def test_read_only_hides_and_refuses() -> None:
    app = recorded_app(read_only=True)
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        shown = {b.binding.action for b in app.screen.active_bindings.values() if b.enabled}
        assert not {"bake", "rebuild", "cancel_job"} & shown
        assert "open_log" in shown
        await pilot.press("b", "r", "c")
        await pilot.pause()
        assert app.screen is app.fleet_screen
        # each hidden key says why it did nothing
        said = [n.message for n in app._notifications]
        assert said == [
            "Read-only console: Bake (b) is off.",
            "Read-only console: Rebuild (r) is off.",
            "Read-only console: Cancel (c) is off.",
        ]
        app.fleet_screen.open_bake(BakeRequest())
        await pilot.pause()
        assert app.screen is app.fleet_screen
        commands = [c.title for c in app.get_system_commands(app.screen)]
        assert "Bake…" not in commands and "Log" in commands
        with pytest.raises(ReadOnlyError):
            app.backend.launch(BakePlan("demo-base", "gfx950", "snoc-strix", False))
        with pytest.raises(ReadOnlyError):
            app.backend.cancel("anything")


async def test_palette_lists_each_command_once() -> None:
    """The catalog's "Keys" and "Quit" are not listed again as Textual's own (whose "Keys"
    opened a different, Textual help panel); Textual's others stay."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        for screen in (app.fleet_screen, app.logs_screen):
            titles = [c.title for c in app.get_system_commands(screen)]
            assert len(titles) == len(set(titles)), titles
            keys_help = [c for c in app.get_system_commands(screen) if c.title == "Keys"]
            assert [c.help for c in keys_help] == ["key ?"]
            assert "Theme" in titles and "Quit" in titles


async def test_read_only_says_why_a_remapped_or_log_pane_key_did_nothing() -> None:
    app = recorded_app(read_only=True, keys={"fleet.bake": "B"})
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("b", "B")  # b is nothing now; B is the hidden bake
        await pilot.pause()
        app.fleet_screen.query_one("#jobs-table").focus()
        await pilot.press("l")  # a log pane: its cancel is hidden too
        await pilot.pause()
        assert isinstance(app.screen, LogsScreen)
        await pilot.press("c")
        await pilot.pause()
        assert [n.message for n in app._notifications] == [
            "Read-only console: Bake (B) is off.",
            "Read-only console: Cancel (c) is off.",
        ]
        assert isinstance(app.screen, LogsScreen)


def test_read_only_backend_refuses_even_without_the_console() -> None:
    backend = FleetBackend(recorded.config(read_only=True))
    with pytest.raises(ReadOnlyError):
        backend.launch(BakePlan("demo-base", "gfx950", "snoc-strix", False))


async def test_keys_are_remapped_from_the_fleet_file() -> None:
    app = recorded_app(keys={"fleet.logs": "L", "nonsense.id": "z"})
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("L")
        await pilot.pause()
        assert isinstance(app.screen, LogsScreen)
        assert any("nonsense.id" in str(n.message) for n in app._notifications)


async def test_help_lists_the_catalog() -> None:
    app = recorded_app(keys={"fleet.bake": "B"})
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        console = Console(width=120, record=True, file=io.StringIO())
        console.print(help_table(app.screen.keymap, app.screen.read_only))
        text = console.export_text()
        assert "fleet.rebuild" in text and "logs.close" in text
        assert re.search(r"B +Bake… !", text)  # the remapped key, marked dangerous


async def test_help_covers_the_screen_and_leaves_nothing_behind() -> None:
    """Help is opaque (a busy log underneath is not re-composed into it), and opening and
    closing it neither rebuilds the footer below (its keys did not change) nor keeps old
    footer keys alive (Textual's data binding did)."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.pause()
        shown = list(app.fleet_screen.query(FooterKey))
        for _ in range(12):
            await pilot.press("question_mark")
            await pilot.pause()
            assert isinstance(app.screen, HelpScreen)
            assert app.screen.styles.background.a == 1  # the screen below is not blended in
            assert not app.fleet_screen.is_current  # nor repainted under the page
            await pilot.press("escape")
            await pilot.pause()
        await pilot.pause()
        attached = list(app.fleet_screen.query(FooterKey))
        assert attached, "the footer shows keys"
        assert attached == shown  # the same widgets: not rebuilt twelve times
        gc.collect()
        detached = [o for o in gc.get_objects() if isinstance(o, FooterKey) and not o.is_attached]
        assert len(detached) <= len(attached), (len(detached), len(attached))


async def test_quit_says_which_builds_keep_running() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        assert app.fleet_screen.is_current  # a translucent dialog: the fleet shows through
        question = str(app.screen.query_one("#confirm-question").render())
        assert (
            "20251130-1101-pytorch-gfx1201" in question and "20251130-1120-vllm-gfx950" in question
        )
        await pilot.press("q")
        await pilot.pause()
    assert [j.id for j in app.return_value or []] == [
        "20251130-1101-pytorch-gfx1201",
        "20251130-1120-vllm-gfx950",
    ]


async def test_quit_with_nothing_running_is_immediate() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot, with_jobs=False)
        await pilot.press("q")
        await pilot.pause()
    assert app.return_value == []


def test_styles_ship_inside_the_package() -> None:
    from rocmtui.app.app import STYLES

    assert (STYLES / "console.tcss").is_file() and (STYLES / "dialogs.tcss").is_file()
    assert os.path.realpath(STYLES).endswith("styles")


async def test_cancel_asks_then_goes_to_the_core() -> None:
    """c on a running job asks; y sends it to the core's cancel, whose answer is shown."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        app.fleet_screen.query_one("#jobs-table").focus()
        await pilot.press("c")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        assert "20251130-1120-vllm-gfx950" in str(
            app.screen.query_one("#confirm-question").render()
        )
        await pilot.press("escape")
        await pilot.pause()
        assert app.screen is app.fleet_screen and not app._notifications
        await pilot.press("c", "y")
        give_up = time.monotonic() + 30
        while time.monotonic() < give_up and not app._notifications:
            await pilot.pause(0.05)
        # the recorded job is not in this test's (empty) job store: the core says so
        messages = [(n.title, str(n.message)) for n in app._notifications]
        assert messages and messages[-1][0] == "Cancel failed"
        assert "20251130-1120-vllm-gfx950" in messages[-1][1]
