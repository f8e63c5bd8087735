"""The history screen's step panel (issue 38: "a step's duration and cache hit across the last
builds of that target × arch") on real builds: three builds of the timeline bake file on
today's engine (a namespace of its own, stopped by pid), then the console driven by Pilot on
that fleet: `h`, `S`, and what the screen says."""

from __future__ import annotations

import asyncio
import re
import time
from pathlib import Path

import pytest

from devfleet import EngineHandle
from devfleet.processes import wait_for
from rocmtui.console.app import RocmTui
from rocmtui.console.screens.history import HistoryScreen
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.history.stepstore import load_steps
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.text.units import fmt_when
from tests.support.blackbox import screen_text, until_text
from tests.support.timelinebuilds import (  # noqa: F401 (fixtures shared with test_timeline_real)
    QUICK,
    _own_processes_stopped,
    engine,
    fleet_file,
    own_build,
)

pytestmark = pytest.mark.fleet


def row_of(text: str, needle: str) -> str:
    return next(line for line in text.splitlines() if needle in line)


async def test_S_on_the_history_screen_shows_each_step_across_the_last_builds(
    engine: EngineHandle,  # noqa: F811
    tmp_path: Path,
) -> None:
    fleet = fleet_file(tmp_path, engine)
    nonce = str(time.time_ns())
    quick = {**QUICK, "SERIAL_TWO": "3"}
    first = own_build(fleet, TL_NONCE=nonce, **quick)
    same = own_build(fleet, TL_NONCE=nonce, **quick)  # nothing changed: all cached
    changed = own_build(fleet, TL_NONCE=nonce, FLAVOUR="chocolate", **quick)
    store = JobStore.for_config(load_config(fleet))
    for job in (first, same, changed):  # kept by each supervisor just after its outcome
        wait_for(lambda j=job: load_steps(store, j.id), 120, f"job {job.id}'s steps kept")
    app = RocmTui(load_config(fleet))
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("h")
        await until_text(pilot, r"timeline\s+gfx1201\s+tl", 60)
        assert isinstance(app.screen, HistoryScreen)
        await pilot.press("S")
        text = await until_text(pilot, r"begin two chocolate", 120)
        # each column names its build's node and start, newest first
        for label, job in (("now", changed), ("-1", same), ("-2", first)):
            assert f"{label} tl {fmt_when(job.started_at, time.time())}" in text, text
        # the step FLAVOUR changed: ran now (3 s of sleep at least), cached in the build
        # before, ran in the first; marked on the critical path (*) and as a miss (!)
        final = row_of(text, "begin two chocolate")
        assert re.search(r"\*!\s", final), final
        cells = re.findall(r"(\d+(?:\.\d+)?s|cached|-)(?=\s|│|$)", final.split("chocolate")[-1])
        assert cells[:3][1] == "cached" and cells[0] != "cached" and cells[2] != "cached", final
        assert float(cells[0].rstrip("s")) >= 3.0, final
        # the first serial step: cached twice after it ran once, no miss
        one = row_of(text, f"begin one {nonce}")
        assert one.count("cached") == 2 and "!" not in one.split("[")[0], one
        # slowest first: the step with a 3 s sleep above the one with none
        lines = text.splitlines()
        assert lines.index(final) < lines.index(one), text
        # a build more, the history read again (ctrl+r): the panel follows, now all cached
        fourth = await asyncio.to_thread(
            own_build, fleet, TL_NONCE=nonce, FLAVOUR="chocolate", **quick
        )
        await asyncio.to_thread(
            wait_for, lambda: load_steps(store, fourth.id), 120, "the fourth build's steps"
        )
        await pilot.press("ctrl+r")
        when = fmt_when(fourth.started_at, time.time())
        text = await until_text(pilot, rf"now tl {re.escape(when)}", 60)
        final = row_of(text, "begin two chocolate")
        cells = re.findall(r"(\d+(?:\.\d+)?s|cached|-)(?=\s|│|$)", final.split("chocolate")[-1])
        assert cells[:4][0::2] == ["cached", "cached"], final  # now and -2: cached
        assert "cached" not in cells[:4][1::2], final  # -1 and -3: ran
        assert not re.search(r"\*!\s", final), final  # cached now: no miss
        # S again: the plots come back, the panel goes
        await pilot.press("S")
        await until_text(pilot, r"begin two chocolate", 20, absent=True)
        assert "Steps across the last builds" not in screen_text(app)
