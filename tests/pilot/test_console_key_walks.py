"""The operator's walks through the console, black-box, on the real backend (#18).

Keys go in through Pilot; the screen's text, the notifications and the job store come out
(tests/support/blackbox.py). The console is opened as `rocmtui ARGV` opens it, with its real monitor
process, job store and `docker buildx bake`. An offline fleet file (a node whose engine is not
there) serves where a build only has to start: it fails at once, and the row and the pane say
how bake reported it. The real dev fleet serves where a build has to run.

These tests pin what the console does, not how it is built: they hold through any
restructuring of the console's modules.
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.control import list_jobs
from tests.support.blackbox import console, toasts, until, until_text
from tests.support.jobs import bake, offline_config, wait_state

SIZE = (120, 40)
BAKE_SAYS = r"Cannot connect to the Docker daemon at unix:///nonexistent/d\.sock"


def jobs(config: Path) -> list[Any]:
    """The job store, as `rocmtui jobs` reads it."""
    return list_jobs(load_config(config), limit=None)


def failed_job(config: Path, *args: str) -> str:
    """`rocmtui bake ARGS` on the offline fleet, ended (it fails: no engine); its id."""
    job_id = bake(config, *args)
    wait_state(config, job_id, ["failed", "succeeded", "lost"])
    return job_id


async def test_b_then_ctrl_s_starts_a_build_whose_row_and_pane_say_how_it_failed(
    tmp_path: Path,
) -> None:
    config = offline_config(tmp_path)
    app = console("--config", config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, r"─Variables")
        await pilot.press("b")  # before the bake file is read, too: the dialog waits for it
        await until_text(pilot, r"bake --print \(lines")
        await pilot.press("ctrl+s")
        started = await until(pilot, lambda: jobs(config), "the job in the store")
        job = started[0]
        assert (job.target, job.arch, job.node) == ("demo-base", "gfx950", "snoc-think")
        await until_text(pilot, rf"job {job.id}")  # its pane opens by itself
        # and the console says so (the toast lands on the pane's screen a frame later)
        shown = await until_text(pilot, r"Build started|✗ failed")
        assert "Build started" in toasts(shown) or re.search(r"✗ failed", shown)
        shown = await until_text(pilot, r"✗ failed +demo-base gfx950 on snoc-think")
        await until_text(pilot, BAKE_SAYS)  # the log, as bake wrote it
        await pilot.press("escape")  # back to the fleet: the row says it too
        await until_text(pilot, rf"✗ failed +demo-base +gfx950 +snoc-think +exit 1 .*{job.id}")


async def test_r_then_enter_on_a_job_row_rebuilds_it_and_follows_its_pane(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    first = failed_job(config, "demo-vllm", "--arch", "gfx1201", "--set", "DEMO_STEPS=5")
    app = console("--config", config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, rf"✗ failed +demo-vllm +gfx1201 +snoc-think .*{first}")
        await pilot.press("tab", "tab", "r")  # nodes -> services -> jobs; the job's row
        shown = await until_text(pilot, r"target demo-vllm .*arch gfx1201 .*node snoc-think")
        assert "DEMO_STEPS=5" in shown
        await pilot.press("enter")  # Start has the focus
        rebuilt = await until(
            pilot, lambda: [j for j in jobs(config) if j.id != first], "the rebuilt job"
        )
        again = rebuilt[0]
        assert (again.target, again.arch, again.node, again.overrides) == (
            "demo-vllm", "gfx1201", "snoc-think", {"DEMO_STEPS": "5"}
        )  # fmt: skip
        await until_text(pilot, rf"✗ failed +demo-vllm gfx1201 on snoc-think +job {again.id}")
        await until_text(pilot, BAKE_SAYS)


async def test_l_opens_a_pane_escape_keeps_it_big_l_shows_it_x_closes_it(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    job_id = failed_job(config, "demo-base")
    app = console("--config", config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, rf"✗ failed .*{job_id}")
        await pilot.press("tab", "tab", "l")
        await until_text(pilot, BAKE_SAYS)
        await until_text(pilot, r"✗ demo-base gfx950 snoc-think")  # its tab
        await pilot.press("escape")
        await until_text(pilot, r"─Nodes")
        await pilot.press("L")  # the panes again, where they were
        await until_text(pilot, BAKE_SAYS)
        await pilot.press("x")  # closed: the build's record stays
        await until_text(pilot, r"No log open: select a job and press l\.")
        await pilot.press("escape")
        await until_text(pilot, rf"✗ failed .*{job_id}")


async def test_r_in_a_log_pane_rebuilds_that_panes_job(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    first = failed_job(config, "demo-base", "--arch", "gfx1201")
    app = console("--config", config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, rf"✗ failed .*{first}")
        await pilot.press("tab", "tab", "l")
        await until_text(pilot, BAKE_SAYS)
        await pilot.press("c")  # a failed build: nothing to cancel, nothing asked
        await pilot.press("r")  # (a question from c would be on top and take this r)
        shown = await until_text(pilot, r"target demo-base .*arch gfx1201 .*node snoc-think")
        assert "Cancel demo-base" not in shown
        await pilot.press("enter")
        rebuilt = await until(
            pilot, lambda: [j for j in jobs(config) if j.id != first], "the rebuilt job"
        )
        await until_text(pilot, rf"✗ failed +demo-base gfx1201 on snoc-think +job {rebuilt[0].id}")


async def test_c_on_a_job_that_ended_says_it_is_not_running(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    job_id = failed_job(config, "demo-base")
    app = console("--config", config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, rf"✗ failed .*{job_id}")
        await pilot.press("tab", "tab", "c")
        await until_text(pilot, r"demo-base is not running \(failed\)\.")


async def test_r_pressed_again_while_the_bake_file_is_read_opens_one_dialog(
    tmp_path: Path,
) -> None:
    """The bake file is read after the first round is drawn; `r` pressed before that waits for
    it. Pressed again meanwhile (nothing seemed to happen), it must not bring a second dialog:
    one Escape is back on the fleet screen."""
    config = offline_config(tmp_path)
    job_id = failed_job(config, "demo-base")
    app = console("--config", config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, rf"✗ failed .*{job_id}")
        await pilot.press("tab", "tab", "r", "r")
        await until_text(pilot, r"target demo-base .*arch gfx950 .*node snoc-think")
        await pilot.press("r")  # once more, the dialog open: nothing
        await until_text(pilot, r"bake --print \(lines")
        await pilot.press("escape")
        await until_text(pilot, r"─Nodes")
        await pilot.press("question_mark")  # a round trip: a second dialog would be on top
        await until_text(pilot, r"remap any of them")
        await pilot.press("escape")
        assert "target demo-base" not in await until_text(pilot, r"─Nodes")


async def test_q_with_nothing_running_quits_at_once(tmp_path: Path) -> None:
    config = offline_config(tmp_path)
    failed_job(config, "demo-base")
    app = console("--config", config)
    async with app.run_test(size=SIZE) as pilot:
        await until_text(pilot, r"✗ failed")
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, "the console to end")
    assert app.return_value == []


# ---------------------------------------------------------------- read-only reaches the console


@pytest.mark.parametrize("how", ["--read-only", "read_only = true"])
async def test_read_only_from_the_command_line_or_the_fleet_file_reaches_the_console(
    tmp_path: Path, how: str
) -> None:
    """`rocmtui --read-only` and `read_only = true` give the same console: it says READ-ONLY,
    every key that starts or stops a build says why it did nothing (in a log pane too), the
    palette does not offer them, and nothing reaches the job store."""
    config = offline_config(tmp_path)
    job_id = failed_job(config, "demo-base")
    if how.startswith("read_only"):
        config.write_text(f"{how}\n{config.read_text()}")
        app = console("--config", config)
    else:
        app = console(how, "--config", config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, r"READ-ONLY")
        await until_text(pilot, rf"✗ failed .*{job_id}")
        await pilot.press("b")
        await until_text(pilot, r"Read-only console: Bake \(b\) is off\.")
        await pilot.press("tab", "tab", "r")
        await until_text(pilot, r"Read-only console: Rebuild \(r\) is off\.")
        await pilot.press("c")
        await until_text(pilot, r"Read-only console: Cancel \(c\) is off\.")
        app.clear_notifications()
        await pilot.press("l")  # reading is allowed
        await until_text(pilot, BAKE_SAYS)
        await pilot.press("r")
        await until_text(pilot, r"Read-only console: Rebuild \(r\) is off\.")
        await pilot.press("ctrl+p", *"Rebuild")
        shown = await until_text(pilot, r"Rebuild|No matches")
        assert not re.search(r"Rebuild +key r", shown)
        await pilot.press("escape")
    assert [j.id for j in jobs(config)] == [job_id]


# ---------------------------------------------------------------- the real fleet: a running build


@pytest.mark.fleet
async def test_find_follow_and_c_y_in_a_running_builds_pane(config: Path) -> None:
    nonce = f"DEMO_NONCE={os.getpid()}-{time.time_ns()}"
    job_id = bake(
        config, "demo-base", "--arch", "gfx1201", "--node", "snoc-think",
        "--set", "DEMO_SLEEP=0.2", "--set", "DEMO_STEPS=600", "--set", nonce,
    )  # fmt: skip
    app = console("--config", config)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, rf"▶ running +demo-base +gfx1201 +snoc-think .*{job_id}", 60)
        await pilot.press("tab", "tab", "l")
        await until_text(pilot, r"Building HIP object", timeout=60)  # the log, followed
        await until_text(pilot, r"│ FOLLOW")
        await pilot.press("slash", *"HIP object", "enter")
        await until_text(pilot, r"/HIP object/ \d")
        await pilot.press("n")  # to a match: follow pauses there
        await until_text(pilot, r"│ paused │ /HIP object/ \d+/\d")
        await pilot.press("f")
        await until_text(pilot, r"│ FOLLOW │ /HIP object/")
        await pilot.press("c")
        await until_text(pilot, r"Cancel demo-base gfx1201 on snoc-think")
        await pilot.press("y")
        await until_text(pilot, rf"Job {job_id} cancelled")
        await until_text(pilot, r"⊘ cancelled +demo-base gfx1201 on snoc-think")
    assert wait_state(config, job_id, ["cancelled"])["state"] == "cancelled"
