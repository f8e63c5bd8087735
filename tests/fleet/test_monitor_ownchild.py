"""The monitor process's wire format: a FleetSnapshot survives snapshot_json -> JSON line ->
decode."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from devfleet import DevFleet
from rocmtui.console.app import RocmTui
from rocmtui.console.backend.access import FleetBackend
from rocmtui.console.screens.fleet import FleetScreen
from rocmtui.console.widgets.common import StatusLine
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.hostmonitor import ownchild
from rocmtui.core.hostmonitor.ownchild import decode
from rocmtui.core.snapshots import FleetSnapshot
from rocmtui.core.snapshotviews import snapshot_json
from tests.support.snapshots import recorded


def test_a_snapshot_survives_the_pipe() -> None:
    for snap in (recorded.fleet(), recorded.fleet(think_down=True)):
        line = json.dumps(snapshot_json(snap, now=recorded.NOW))
        assert decode(json.loads(line)) == snap


def test_unknown_fields_from_a_newer_core_are_ignored() -> None:
    data = snapshot_json(recorded.fleet(), now=recorded.NOW)
    data["nodes"][0]["something_new"] = 1
    data["registry"]["also_new"] = "x"
    assert decode(data).nodes[0].name == "snoc-strix"


@pytest.mark.fleet
def test_the_monitor_child_rounds_on_request_and_ends_with_its_input(fleet: DevFleet) -> None:
    """Real probes of the real fleet through the child: a round on start, one more per line
    written to it, and it ends when its input ends (the console closed or died)."""
    child = ownchild.start(fleet.config_path)
    try:
        # a round slower than INTERIM_AFTER (a loaded machine) first sends an interim snapshot
        # naming what it still probes: only whole rounds count here
        rounds = (s for s in ownchild.rounds(child) if not getattr(s, "probing", ()))
        first = next(rounds)
        assert isinstance(first, FleetSnapshot)
        assert {n.name for n in first.nodes} == {"snoc-strix", "snoc-think", "snoc-gaming"}
        ownchild.poke(child)
        second = next(rounds)
        assert isinstance(second, FleetSnapshot) and second.taken_at > first.taken_at
        assert child.stdin is not None
        child.stdin.close()
        assert child.wait(timeout=15) == 0
    finally:
        ownchild.stop(child, grace=1.0)


@pytest.mark.fleet
def test_the_monitor_child_ends_when_its_input_is_not_a_pipe(fleet: DevFleet) -> None:
    """Started by hand with stdin at /dev/null it does one round and ends (it used to wait
    forever: the event loop cannot watch /dev/null)."""
    done = subprocess.run(
        [sys.executable, "-m", "rocmtui.core.hostmonitor.ownchild", str(fleet.config_path)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=30,
    )
    assert done.returncode == 0
    # one round: its whole snapshot last, after an interim one if the round was slow
    *interim, whole = [decode(json.loads(line)) for line in done.stdout.splitlines()]
    assert len(interim) <= 1 and all(s.probing for s in interim), interim
    assert isinstance(whole, FleetSnapshot) and not whole.probing


@pytest.mark.fleet
@pytest.mark.alone  # counts rounds in a window: on a loaded machine a third one lands in it
async def test_a_round_that_came_while_textual_started_is_in_the_first_frame(
    fleet: DevFleet,
) -> None:
    """The console adopts a child started before Textual; a round it has already sent is on
    the screen when the screen mounts, and is not shown a second time when the relay starts."""
    config = load_config(fleet.config_path)
    backend = FleetBackend(config)
    child = ownchild.start(config.source)
    backend.adopt_monitor(child)
    first = backend.rounds._first
    assert first is not None and first.done.wait(30), "the child sent no round in 30 s"
    app = RocmTui(config, backend=backend)
    try:
        await watch_the_first_frame(app, first.item)
    finally:
        ownchild.stop(child, grace=1.0)


async def watch_the_first_frame(app: RocmTui, item: object) -> None:
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        shown = screen.data.fleet
        # before any message was handled: that round, or a later one the child sent while
        # Textual started (a first round with an ssh node comes in two: what answered half a
        # second in, then the whole round)
        assert isinstance(item, FleetSnapshot)
        assert shown is not None and (shown is item or shown.taken_at >= item.taken_at)
        # the round's age, or (an interim first round, a slow machine) what it still waits for
        said = str(screen.query_one("#statusbar", StatusLine).render())
        assert "probed" in said or (shown.pending and "waiting for" in said), said
        app.backend.refresh_now()
        for _ in range(150):  # the next round comes through the relay
            await pilot.pause(0.1)
            if screen.data.fleet is not None and screen.data.fleet.taken_at > shown.taken_at:
                break
        assert screen.data.fleet is not None and screen.data.fleet.taken_at > shown.taken_at
        # one latency sample per round: the first round was not relayed a second time
        assert [len(v) for v in screen.history.values()] == [2, 2]
