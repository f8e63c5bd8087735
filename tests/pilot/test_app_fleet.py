"""Pilot tests of the fleet screen on recorded data: what the panels, the status line, the panes
and the notifications say; keys, read-only, faults. Recorded data goes in as the feeds post it
(tests/support/snapshots/harness.py); what comes out is the screen's text
(tests/support/blackbox.py).
"""

from __future__ import annotations

import gc
import io
import re
import time

import pytest
from msgspec.structs import replace
from rich.console import Console

from rocmtui.console import keys
from rocmtui.console.backend.access import FleetBackend, ReadOnlyError
from rocmtui.console.backend.views import BakePlan, BakeRequest
from rocmtui.console.intents import BakeRequested
from rocmtui.console.messages import FleetUpdated, JobsUpdated, PanelFailed
from rocmtui.console.screens.help import help_table
from rocmtui.console.textual_private import FooterKey
from rocmtui.core.snapshots import HostStats
from rocmtui.core.states import JobState
from tests.support.blackbox import (
    cell,
    panel,
    row,
    screen_text,
    status_line,
    toasts,
    until,
    until_text,
)
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, post_feed, recorded_app
from tests.support.snapshots.plans import PLAN

SIZE = (120, 40)
VLLM, PYTORCH = "20251130-1120-vllm-gfx950", "20251130-1101-pytorch-gfx1201"


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


async def test_stalled_node_is_first_and_loud() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await feed(app, pilot, stalled=True)
        shown = await until_text(pilot, r"Build stalled")
        first = panel(shown, "Nodes")[1]
        # the silence before the (long) job cell; no ETA for a build that does not move
        assert re.match(r" ‼ stalled +snoc-think .*silent 16m40s +demo-pytorch .*\[12345/23456\]",
                        first), first  # fmt: skip
        assert "ETA" not in first
        job = panel(shown, "Jobs")[1]
        assert job.lstrip().startswith("‼ stalled")
        # the evidence says how long it has been silent: not said twice ("out 16m40s ago")
        assert job.count("16m40s") == 1 and "silent 16m40s; builder" in job
        assert "1 stalled" in status_line(shown)


async def test_services_and_jobs_show_every_column_at_200x60() -> None:
    """At 200 columns nothing a wide terminal has room for is cut away: the services' answer
    (why a service is slow or down) and the job ids (side by side they were cut)."""
    app = recorded_app()
    async with app.run_test(size=(200, 60)) as pilot:
        await feed(app, pilot)
        shown = screen_text(app)
        for line in panel(shown, "Services")[1:]:
            assert not line.endswith("…"), line
        assert row(shown, "Services", "zot").endswith("readyz ok")
        ids = [line.split()[-1] for line in panel(shown, "Jobs")[1:]]
        assert ids == [
            j.record.id
            for j in sorted(recorded.jobs(), key=lambda j: (not j.active, -j.record.started_at))
        ]


async def test_a_cancelled_job_says_only_what_its_state_word_does_not() -> None:
    """A cancelled bake exits 1 (or 143) because of the signal, and its message "cancelled" is
    the state word again: the progress cell read "exit 1 cancelled". It is empty now; a
    message that says more (the supervisor was killed, a signal) is still shown."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        base = recorded.jobs()[0]
        ended = {"state": JobState.CANCELLED, "ended_at": recorded.NOW, "exit_code": 1}
        cancelled = recorded.changed(base, id="c1", message="cancelled", **ended)
        signalled = recorded.changed(base, id="c2", message="stopped by a signal", **ended)
        post_feed(app, JobsUpdated((cancelled, signalled)))
        shown = await until_text(pilot, r"⊘ cancelled .* c2 *$")
        assert cell(shown, "Jobs", r" c1$", "Progress") == "", shown
        assert cell(shown, "Jobs", r" c2$", "Progress") == "stopped by a signal", shown


async def test_an_interim_round_shows_who_has_not_answered_yet() -> None:
    """Half a second into a round that waits on an engine that never answered yet, the monitor
    sends what answered; the targets with no verdict read '… probing', the status line names
    them, and the latency history gets no point until the round's own snapshot."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        history = cell(screen_text(app), "Services", "zot", "History")
        snap = replace(recorded.fleet(), pending=("snoc-think", "webdav"))
        post_feed(app, FleetUpdated(snap))
        shown = await until_text(pilot, r"… probing +snoc-think")
        assert re.search(r"✓ ok +snoc-gaming", shown)
        assert row(shown, "Services", "webdav").lstrip().startswith("… probing")
        assert row(shown, "Services", "zot").lstrip().startswith("✓ ok")
        assert cell(shown, "Services", "zot", "History") == history  # no point for an interim
        assert "waiting for snoc-think, webdav" in status_line(shown)
        assert "probed" not in status_line(shown)
        post_feed(app, FleetUpdated(recorded.fleet()))  # the round's end
        shown = await until_text(pilot, r"✓ ok +snoc-think|▶ building +snoc-think")
        assert cell(shown, "Services", "zot", "History") != history  # one point per round
        assert "… probing" not in "\n".join(panel(shown, "Nodes"))
        assert "probed" in status_line(shown)
        # a node with a stalled build keeps its alarm while its engine is being probed
        post_feed(app, JobsUpdated(recorded.jobs(stalled=True)))
        post_feed(app, FleetUpdated(snap))
        await until_text(pilot, r"‼ stalled +snoc-think")


async def test_a_frozen_engine_keeps_its_verdict_and_its_age_while_probed_again() -> None:
    """An engine that froze reads `✗ down` with its age on every refresh: while the next probe
    is in flight, the interim snapshot keeps the last verdict, and so does the screen; the
    status line keeps the fleet's verdict and the age of its last whole round, never flipping
    to "waiting for snoc-think" and back."""
    now = [recorded.NOW]
    app = recorded_app(clock=lambda: now[0])
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot, think_down=True)
        shown = await until_text(pilot, r"✗ down +snoc-think")
        assert "probed 0s ago" in status_line(shown)
        now[0] += 3
        again = recorded.fleet(now=now[0] - 0.5, think_down=True)
        kept = next(n for n in recorded.fleet(think_down=True).nodes if n.name == "snoc-think")
        interim = replace(
            again,
            nodes=tuple(kept if n.name == "snoc-think" else n for n in again.nodes),
            probing=("snoc-think",),
        )
        post_feed(app, FleetUpdated(interim))
        shown = await until_text(pilot, r"probed 3s ago")
        line = row(shown, "Nodes", "snoc-think")
        assert line.lstrip().startswith("✗ down") and "… probing" not in line, line
        assert "waiting for" not in status_line(shown)


async def test_stall_rings_once_per_new_stall(monkeypatch: pytest.MonkeyPatch) -> None:
    app = recorded_app()
    rings: list[int] = []
    monkeypatch.setattr(app, "bell", lambda: rings.append(1))
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot, stalled=False)
        assert rings == []
        for _ in range(3):  # the same stall reported three times rings once
            post_feed(app, JobsUpdated(recorded.jobs(stalled=True)))
            await pilot.pause()
        await until_text(pilot, r"‼ stalled +snoc-think")
        assert rings == [1]


async def test_down_node_says_since_when_and_why() -> None:
    app = recorded_app()
    async with app.run_test(size=(200, 40)) as pilot:
        await feed(app, pilot, think_down=True)
        shown = await until_text(pilot, r"✗ down +snoc-think")
        line = row(shown, "Nodes", "snoc-think")
        assert "since 11:25:52 (4m08s)" in line and "Connection refused" in line
        # the others still show their own state
        others = [ln.split()[:3] for ln in panel(shown, "Nodes")[1:] if "snoc-think" not in ln]
        assert others == [["▶", "building", "snoc-strix"], ["✓", "ok", "snoc-gaming"]]


async def test_late_data_says_so() -> None:
    now = [recorded.NOW]
    app = recorded_app(clock=lambda: now[0])
    async with app.run_test(size=(240, 40)) as pilot:  # wide enough for the nodes' Age
        await feed(app, pilot)
        assert "late" not in "\n".join(panel(screen_text(app), "Nodes"))
        now[0] += 60  # no probe round for a minute: the age ticker says so
        shown = await until_text(pilot, r"late 1m0")
        for node in ("snoc-strix", "snoc-think", "snoc-gaming"):
            assert cell(shown, "Nodes", node, "Age").startswith("late 1m0"), shown
        assert "late" in status_line(shown)


async def test_hostile_values_are_text_not_markup_or_escapes() -> None:
    app = recorded_app()
    async with app.run_test(size=(200, 40)) as pilot:
        await feed(app, pilot, hostile=True)
        shown = await until_text(pilot, r"EVIL")
        evil = row(shown, "Variables", r"^ EVIL ")
        assert "[/] [link=http://x]y[/link]" in evil
        assert "\x1b" not in shown and "\x07" not in shown
        secret = row(shown, "Variables", r"^ HF_TOKEN ")
        assert "SECRET" not in secret and "redacted" in secret
        assert re.match(r" VLLM_VERSION +● env ", row(shown, "Variables", "VLLM_VERSION"))


async def test_a_fault_stays_in_its_panel() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        post_feed(app, PanelFailed("jobs", "job store: database is locked"))
        shown = await until_text(pilot, r"⚠ job store: database is locked")
        assert panel(shown, "Jobs")[0].lstrip().startswith("⚠ job store")
        assert "⚠" not in "\n".join(panel(shown, "Nodes"))
        # a node snapshot the panel cannot render: the nodes panel says so, the rest goes on
        snap = recorded.fleet()
        bad_host = HostStats(1, 1, 1, 1, 1, 1, 1, 1, "/", None, 1)  # type: ignore[arg-type]
        broken = replace(snap, nodes=(replace(snap.nodes[0], host=bad_host), *snap.nodes[1:]))
        post_feed(app, FleetUpdated(broken))
        shown = await until_text(pilot, r"⚠ cannot show this panel")
        assert panel(shown, "Nodes")[0].lstrip().startswith("⚠ cannot show this panel")
        assert row(shown, "Services", "zot").lstrip().startswith("✓ ok")
        assert app.is_running


async def test_enter_on_jobs_opens_panes_and_escape_keeps_them() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "enter")  # the jobs panel: the newest running job
        # each tab says its job's state and where it ran: one target and arch on two nodes is
        # two panes
        await until_text(pilot, r"▶ demo-vllm gfx950 snoc-strix")
        await until_text(pilot, rf"demo-vllm gfx950 on snoc-strix +job {VLLM}")
        await pilot.press("escape")
        await until_text(pilot, r"─Nodes")
        await pilot.press("down", "l")
        shown = await until_text(pilot, rf"demo-pytorch gfx1201 on snoc-think +job {PYTORCH}")
        assert re.search(
            r"▶ demo-vllm gfx950 snoc-strix +▶ demo-pytorch gfx1201 snoc-think", shown
        ), shown
        await pilot.press("right_square_bracket")  # the next pane: around to the first
        await until_text(pilot, rf"demo-vllm gfx950 on snoc-strix +job {VLLM}")
        await pilot.press("x")  # closed: the other pane comes forward
        shown = await until_text(pilot, rf"job {PYTORCH}")
        assert "demo-vllm gfx950 snoc-strix" not in shown


async def test_log_pane_header_keeps_its_progress_line_at_80x24() -> None:
    """The header is two lines: the job, then where the build is. At 80 columns the first
    line is longer than the screen; it wrapped and pushed the counter, rate, ETA and silence
    (or the failed step) out of the header. Each line is now cut at the edge instead."""
    app = recorded_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "down", "l")
        shown = await until_text(pilot, r"^ *▶ running .*… *$")
        lines = shown.splitlines()
        header = next(i for i, ln in enumerate(lines) if re.match(r"^ *▶ running ", ln))
        assert lines[header].rstrip().endswith("…")
        assert lines[header + 1].lstrip().startswith("[12345/23456] 11.4/s ETA 16m15s")


async def test_r_opens_the_dialog_ready_with_the_jobs_choice() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "down", "r")  # the second job: pytorch on snoc-think
        shown = await until_text(pilot, r"target demo-pytorch .*arch gfx1201 .*node snoc-think")
        assert "push: no" in shown or "push: decided when bake has resolved" in shown


async def test_target_list_shows_every_name_whole_at_70x24() -> None:
    """At 70 columns the target field is ~16 cells wide; its list opens as wide as the longest
    target, so `demo-pytorch-push` is neither wrapped nor cut (it was: "demo-pytorch-pus", "h")."""
    app = recorded_app()
    async with app.run_test(size=(70, 24)) as pilot:
        await feed(app, pilot)
        await pilot.press("b")
        await until_text(pilot, r"target ")
        await pilot.press("enter")  # the target field has the focus: its list opens
        shown = await until_text(pilot, r"demo-pytorch-push")
        # the list is drawn over the dialog: its options start in one column, one a line,
        # each name whole (followed by a blank, never cut or wrapped)
        lines = shown.splitlines()
        names = recorded.bake().targets
        first = next(i for i, ln in enumerate(lines) if re.search(rf"{names[0]} +▲", ln) is None
                     and names[0] in ln)  # fmt: skip
        at = lines[first].index(names[0])
        listed = [
            ln[at : at + len(name) + 1] for ln, name in zip(lines[first:], names, strict=False)
        ]
        assert listed == [f"{name} " for name in names], lines[first : first + len(names)]


def offered(shown: str, field: str, value: str) -> list[str]:
    """The arches of the dialog's open `field` list, drawn under it from where its `value`
    starts, one a line."""
    lines = shown.splitlines()
    at_row = next(i for i, ln in enumerate(lines) if f"{field} {value} " in ln)
    at = lines[at_row].index(f"{field} {value} ") + len(field) + 1
    out = []
    for line in lines[at_row + 1 :]:
        found = re.match(r"(gfx[0-9a-f]+)\s", line[at:])  # an arch name, nothing else
        if found is None:
            break
        out.append(found.group(1))
    return out


async def test_the_dialog_offers_the_arches_rocmtui_bake_accepts_on_each_node() -> None:
    """The arch list on a node is the bake file's arches, the fleet's three and the node's own
    GPU: exactly what the core's launch check (`rocmtui bake`) takes there."""
    from rocmtui.core.bake.file import load_bake
    from rocmtui.core.jobs.checks import FLEET_ARCHES, launch_arches

    bake = load_bake(recorded.config().bake_file)
    app = recorded_app(plan=PLAN)
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("b")  # on snoc-strix (gfx1151), the focused node
        await until_text(pilot, r"node snoc-strix")
        await pilot.press("tab", "enter")  # the arch field's list
        shown = await until_text(pilot, r"gfx1151")
        on_strix = offered(shown, "arch", "gfx950")
        assert on_strix == list(launch_arches(bake, "gfx1151"))
        assert set(FLEET_ARCHES) | {"gfx1151"} == set(on_strix)
        await pilot.press("escape", "tab")  # the list closed; the node field
        await pilot.press("enter", "down", "enter")  # snoc-think (gfx1201)
        await until_text(pilot, r"node snoc-think")
        await pilot.press("shift+tab", "enter")
        shown = await until_text(pilot, r"arch gfx950 +▲")
        assert offered(shown, "arch", "gfx950") == list(launch_arches(bake, "gfx1201"))


async def test_read_only_hides_and_refuses() -> None:
    app = recorded_app(read_only=True)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await feed(app, pilot)
        footer = screen_text(app).splitlines()[-1]
        assert "Bake" not in footer and "Rebuild" not in footer and "Cancel" not in footer
        assert "l Log" in footer
        await pilot.press("b", "r", "c")
        # each hidden key says why it did nothing
        shown = await until_text(pilot, r"Cancel \(c\) is off")
        said = toasts(shown)
        for what in ("Bake (b)", "Rebuild (r)", "Cancel (c)"):
            assert f"Read-only console: {what} is off." in said
        app.clear_notifications()
        app.post_message(BakeRequested(BakeRequest()))  # asked anyhow: the owner refuses
        await until_text(pilot, r"Read-only console: builds cannot be started here")
        assert "─Nodes" in screen_text(app) and "target " not in screen_text(app)
        await pilot.press("ctrl+p", *"Bake")
        shown = await until_text(pilot, r"ctrl\+p|Bake")
        assert not re.search(r"Bake… +key b", shown)


def test_read_only_backend_refuses_even_without_the_console() -> None:
    backend = FleetBackend(recorded.config(read_only=True))
    with pytest.raises(ReadOnlyError):
        backend.launch(BakePlan("demo-base", "gfx950", "snoc-strix", False))
    with pytest.raises(ReadOnlyError):
        backend.cancel("anything")


async def test_palette_lists_each_command_once() -> None:
    """The catalog's "Keys" and "Quit" are not listed again as Textual's own (whose "Keys"
    opened a different, Textual help panel); Textual's others stay."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        for prepare in ((), ("tab", "tab", "l")):  # the fleet screen, then a log pane
            await pilot.press(*prepare)
            for name, said in (("Keys", r"key \?"), ("Quit", r"key q"), ("Theme", r"\S")):
                await pilot.press("ctrl+p", *name)
                shown = await until_text(pilot, rf"^.*{name}\s+{said}")
                palette = shown.splitlines()[:-1]  # not the footer's keys
                listed = [ln for ln in palette if re.search(rf"\b{name}\b", ln)]
                assert len(listed) == 2, listed  # the typed text, and one command
                await pilot.press("escape")
                await until_text(pilot, r"Search for commands", absent=True)


async def test_read_only_says_why_a_remapped_or_log_pane_key_did_nothing() -> None:
    app = recorded_app(read_only=True, keys={"fleet.bake": "B"})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await feed(app, pilot)
        await pilot.press("b", "B")  # b is nothing now; B is the hidden bake
        await until_text(pilot, r"Read-only console: Bake \(B\) is off\.")
        await pilot.press("tab", "tab", "l")  # a log pane: its cancel is hidden too
        await until_text(pilot, rf"job {VLLM}")
        await pilot.press("c")
        shown = await until_text(pilot, r"Read-only console: Cancel \(c\) is off\.")
        assert "Bake (b)" not in toasts(shown)
        assert f"job {VLLM}" in shown  # still the pane


async def test_keys_are_remapped_from_the_fleet_file() -> None:
    app = recorded_app(keys={"fleet.logs": "V", "nonsense.id": "z"})
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await feed(app, pilot)
        await until_text(pilot, r"nonsense\.id: no such key id")
        await pilot.press("V")
        await until_text(pilot, r"No log open: select a job and press l\.")


async def test_keys_of_the_bake_dialog_are_remapped_too() -> None:
    """`bake.start` is a catalog id like any other: remapped, the dialog starts with the new
    key, and says so in its hint line; the old key does nothing."""
    # bake --print answers with a recorded plan: what is said about the push is its answer
    app = recorded_app(keys={"bake.start": "ctrl+g", "bake.push": "P"}, plan=PLAN)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await feed(app, pilot)
        await pilot.press("b")
        shown = await until_text(pilot, r"ctrl\+g start · P push on/off · esc back")
        assert "ctrl+s" not in shown
        await pilot.press("P")
        await until_text(pilot, r"push: to the registry \(--push\); Start asks first")


async def test_help_lists_the_catalog() -> None:
    keymap, _ = keys.check_keymap({"fleet.bake": "B"})
    console = Console(width=120, record=True, file=io.StringIO())
    console.print(help_table(keymap, False))
    text = console.export_text()
    assert "fleet.rebuild" in text and "logs.close" in text
    assert re.search(r"B +Bake… !", text)  # the remapped key, marked dangerous
    for key_id in ("bake.start", "bake.push", "confirm.yes", "quit.yes", "cell.close"):
        assert key_id in text, key_id  # every dialog's keys too
    app = recorded_app(keys={"fleet.bake": "B"})
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("question_mark")
        shown = await until_text(pilot, r"remap any of them")
        assert re.search(r"B +Bake… ! +fleet\.bake", shown)


async def test_help_covers_the_screen_and_leaves_nothing_behind() -> None:
    """Help is opaque (a busy log underneath is not re-composed into it), and opening and
    closing it neither rebuilds the footer below (its keys did not change) nor keeps old
    footer keys alive (Textual's data binding did)."""
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.pause()
        fleet = app.screen
        shown = list(fleet.query(FooterKey))
        gc.collect()  # footer keys of consoles that ran before this one, not yet collected
        before = sum(1 for o in gc.get_objects() if isinstance(o, FooterKey) and not o.is_attached)
        for _ in range(12):
            await pilot.press("question_mark")
            await until_text(pilot, r"remap any of them")
            assert "─Nodes" not in screen_text(app)  # the screen below is not blended in
            assert not fleet.is_current  # nor repainted under the page
            await pilot.press("escape")
            await until_text(pilot, r"─Nodes")
        await pilot.pause()
        attached = list(fleet.query(FooterKey))
        assert attached, "the footer shows keys"
        assert attached == shown  # the same widgets: not rebuilt twelve times
        gc.collect()
        detached = [o for o in gc.get_objects() if isinstance(o, FooterKey) and not o.is_attached]
        assert len(detached) - before <= len(attached), (len(detached), before, len(attached))


async def test_quit_says_which_builds_keep_running() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot)
        await pilot.press("q")
        shown = await until_text(pilot, r"These builds keep running")
        assert PYTORCH in shown and VLLM in shown
        assert "─Nodes" in shown  # a translucent dialog: the fleet shows through
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, "the console to end")
    assert [j.record.id for j in app.return_value or []] == [PYTORCH, VLLM]


async def test_quit_with_nothing_running_is_immediate() -> None:
    app = recorded_app()
    async with app.run_test(size=SIZE) as pilot:
        await feed(app, pilot, with_jobs=False)
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, "the console to end")
    assert app.return_value == []


def test_styles_ship_inside_the_package() -> None:
    from rocmtui.console.app import STYLES

    assert (STYLES / "console.tcss").is_file() and (STYLES / "dialogs.tcss").is_file()
    assert STYLES.resolve().name == "styles"


async def test_cancel_asks_then_goes_to_the_core() -> None:
    """c on a running job asks; y sends it to the core's cancel, whose answer is shown."""
    app = recorded_app()
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await feed(app, pilot)
        await pilot.press("tab", "tab", "c")
        shown = await until_text(pilot, rf"Cancel demo-vllm gfx950 on snoc-strix \({VLLM}\)\?")
        assert re.search(r" y +Cancel the build", shown)
        await pilot.press("escape")
        shown = await until_text(pilot, r"Cancel demo-vllm", absent=True)
        assert toasts(shown) == ""
        await pilot.press("c", "y")
        # the recorded job is not in this test's (empty) job store: the core says so
        shown = await until_text(pilot, r"Cancel failed", timeout=30)
        assert VLLM in toasts(shown)
