"""The nodes panel's Output column on a node that is down: a bare age there read as a live
build's ("2s" beside "✗ down"), so it says what it is, from recorded fleet data (snoc-think's
engine refused for four minutes while its pytorch build is still on record as running): keys
in, the screen's text out (tests/support/blackbox.py)."""

from __future__ import annotations

import time

import pytest

from rocmtui.console.messages import JobsUpdated
from rocmtui.core.states import JobState
from tests.support.blackbox import cell, until_text
from tests.support.snapshots import recorded
from tests.support.snapshots.harness import feed, post_feed, recorded_app


@pytest.fixture(autouse=True)
def _utc(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()


@pytest.mark.parametrize("width", [80, 120])
async def test_a_down_nodes_output_says_last_seen_never_a_bare_age(width: int) -> None:
    app = recorded_app()
    async with app.run_test(size=(width, 30)) as pilot:
        await feed(app, pilot, think_down=True)
        shown = await until_text(pilot, r"✗ down +snoc-think")
        # the build's last line came 2 s ago: said as the last one seen, not as a live age
        assert cell(shown, "Nodes", r"snoc-think", "Output") == "last 2s ago", shown
        assert cell(shown, "Nodes", r"snoc-strix", "Output") == "1s", shown  # up: as before
        # no build on record there: nothing to age, a dash
        post_feed(app, JobsUpdated(recorded.jobs()[1:]))
        shown = await until_text(pilot, r"✗ down +snoc-think +—")
        assert cell(shown, "Nodes", r"snoc-think", "Output") == "—", shown


async def test_a_stalled_build_on_a_down_node_stays_loud() -> None:
    app = recorded_app()
    async with app.run_test(size=(120, 30)) as pilot:
        await feed(app, pilot, think_down=True, stalled=True)
        shown = await until_text(pilot, r"✗ down +snoc-think")
        assert recorded.jobs(stalled=True)[0].record.state is JobState.STALLED
        assert cell(shown, "Nodes", r"snoc-think", "Output") == "silent 16m40s", shown


async def test_a_build_on_a_down_node_shows_no_rate_or_eta_in_the_jobs_panel() -> None:
    """The jobs panel's Progress said "[12345/23456] 11.4/s ETA 16m15s out 2s ago" for the
    build on the down node, as if it went on: the counter stays, the rate and ETA go, and the
    cell says the node is down and when the last line came."""
    app = recorded_app()
    async with app.run_test(size=(160, 30)) as pilot:
        await feed(app, pilot, think_down=True)
        shown = await until_text(pilot, r"✗ down +snoc-think")
        torch = cell(shown, "Jobs", r"demo-pytorch", "Progress")
        assert torch == "[12345/23456] · node down last out 2s ago", shown
        vllm = cell(shown, "Jobs", r"demo-vllm +gfx950", "Progress")
        assert vllm == "[310/1200] 3.2/s ETA 4m38s out 1s ago", shown  # its node is up
