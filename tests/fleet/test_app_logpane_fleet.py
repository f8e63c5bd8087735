"""A log pane on the real fleet: a build that finished before its pane was opened still gets
its BuildKit step outline, every step finished, and its final counter without a stale rate or
ETA (the job store reports progress for jobs with an open pane, not only for running ones)."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from rocmtui.console.app import RocmTui
from rocmtui.console.intents import LogRequested
from rocmtui.console.screens.fleet import FleetScreen
from rocmtui.core.config.fleetfile import load_config
from tests.support.jobs import (
    bake,
    lock_dir,  # noqa: F401 - fixture
    wait_state,
)

pytestmark = pytest.mark.fleet


async def test_a_finished_build_opened_later_shows_its_whole_outline(config: Path) -> None:
    nonce = f"DEMO_NONCE={os.getpid()}-{time.time_ns()}"
    args = ["demo-base", "--arch", "gfx1201", "--node", "snoc-think"]
    job_id = bake(config, *args, "--set", "DEMO_STEPS=6", "--set", nonce)
    record = wait_state(config, job_id, ["succeeded", "failed", "lost"])
    assert record["state"] == "succeeded"
    log_tail = "".join(Path(record["log"]).read_text(errors="replace").splitlines(True)[-40:])

    app = RocmTui(load_config(config))
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.screen
        assert isinstance(screen, FleetScreen)
        for _ in range(100):
            if any(j.record.id == job_id for j in screen.data.jobs):
                break
            await pilot.pause(0.1)
        job = next(j for j in screen.data.jobs if j.record.id == job_id)
        assert job.progress is None  # finished, and no pane open: nothing read for it
        screen.post_message(LogRequested(job_id))
        await pilot.pause()
        pane = app.logs_screen.panes[job_id]
        for _ in range(100):  # the next job-store round, asked for when the pane opened
            if pane.outline._shown:
                break
            await pilot.pause(0.1)
        steps = pane.outline._shown
        assert steps, "no step outline for the finished build"
        assert {s.status for s in steps} <= {"done", "cached"}, (steps, log_tail)
        assert any("RUN" in s.name for s in steps)
        labels = [str(node.label) for node in pane.outline.root.children]
        assert all(label.startswith(("✓", "≡")) for label in labels), labels
        # a step's duration comes before its name, which runs past the outline's edge
        timed = [str(n.label) for n in pane.outline.root.children if n.data.duration is not None]
        assert timed and all(re.match(r"^. #\d+ +[\d.]+s \S", t) for t in timed), timed
        header = str(pane.header.render())
        assert "succeeded" in header and "]" in header  # the final compile counter
        assert "ETA" not in header and "/s" not in header  # no rate or ETA once it has ended
