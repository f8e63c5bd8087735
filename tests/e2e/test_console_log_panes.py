"""The console with many log panes open, as an operator drives it: keys typed into a real
terminal (tmux), the screen read back. Jobs are real ones, started by `rocmtui bake` on a fleet
file whose engine is not there, so each fails at once and leaves bake's error in its log.

Five panes opened with `l` once starved the console (issue 17): each pane held a thread of the
default pool for as long as it followed its log, and the fifth pane stayed blank.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.jobs import bake, offline_config, wait_state
from tests.support.realparts import require
from tests.support.terminal import Terminal, console_env

pytestmark = pytest.mark.slow

PANES = 5
STATUS = re.compile(r"\blog │ [\d,]+–[\d,]+ of [\d,]+ │ FOLLOW")  # the pane's log status line


@pytest.fixture
def terminal() -> Iterator[Terminal]:
    require("tmux")
    term = Terminal()
    try:
        yield term
    finally:
        term.close()


def pane_shows_its_log(screen: str, job_id: str) -> bool:
    """The pane on show is `job_id`'s, with its log's text and status line."""
    return f"job {job_id}" in screen and "# rocmtui job" in screen and bool(STATUS.search(screen))


def test_five_log_panes_opened_with_l_all_show_their_log(
    terminal: Terminal, tmp_path: Path
) -> None:
    require("docker-buildx")
    config = offline_config(tmp_path)
    jobs = []
    for _ in range(PANES):
        job_id = bake(config, "demo-base", "--arch", "gfx1201", "--node", "snoc-think")
        wait_state(config, job_id, ["failed", "lost", "succeeded"])
        jobs.append(job_id)
    jobs.reverse()  # the Jobs panel lists the newest first
    terminal.start(console_env(tmp_path), config)
    terminal.wait(lambda s: all(j in s for j in jobs), "the five jobs in the Jobs panel")
    terminal.keys("Tab", "Tab")  # nodes -> services -> jobs
    for n, job_id in enumerate(jobs):
        terminal.keys("l")
        terminal.wait(lambda s, j=job_id: pane_shows_its_log(s, j), f"pane {n + 1} ({job_id})")
        terminal.keys("Escape", "Down")  # back to the fleet, the next job
    terminal.keys("L")  # the panes again: every one shows its log, the fifth too
    for job_id in [jobs[-1], *jobs[:-1]]:
        terminal.wait(lambda s, j=job_id: pane_shows_its_log(s, j), f"the pane of {job_id}")
        terminal.keys("]")
