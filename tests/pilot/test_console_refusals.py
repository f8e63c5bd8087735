"""The console does what the operator sees, and nothing else (#17): black-box, on the real
backend. Keys go in through Pilot; the screen's text and the job store come out.

- A launch that pushes always asks, naming the registries of the tags bake resolved, whatever
  was pressed while bake was still answering; a plan is never started before bake resolved it.
- `r` rebuilds exactly what the job built: its name (a group too), arch, node and variables.
- A user action acts at once, even while views hold every thread of asyncio's default pool.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rocmtui.console.app import RocmTui
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.control import list_jobs
from tests.support.blackbox import screen_text, until, until_text
from tests.support.jobs import bake, offline_config, wait_state

SIZE = (120, 40)
QUESTION = r"Push demo-pytorch-push for (\S+) to (\S+)\?"


def jobs(config: Path) -> list[Any]:
    """The job store, as `rocmtui jobs` reads it."""
    return list_jobs(load_config(config), limit=None)


def login(host: str) -> None:
    """A docker config entry for `host` (its presence is all a launch checks)."""
    path = Path(os.environ["DOCKER_CONFIG"]) / "config.json"
    path.write_text(json.dumps({"auths": {host: {}}}))


async def pick_pushing_target(pilot: Any) -> None:
    """In the dialog's target list (demo-base, demo-pytorch, demo-vllm, demo-pytorch-push ...),
    choose demo-pytorch-push with the arrow keys, as a person does."""
    await pilot.press("enter", *["down"] * 3, "enter")


async def test_p_while_bake_resolves_cannot_skip_the_push_question(tmp_path: Path) -> None:
    """Choose demo-pytorch-push, press `p` and ctrl+s before bake has answered: the launch
    waits for bake, then asks, naming the registry its tag names; nothing starts unasked.
    (It used to stay "resolving…", and ctrl+s launched with no question at all.)"""
    config = offline_config(tmp_path)
    app = RocmTui(load_config(config))
    async with app.run_test(size=SIZE) as pilot:
        await until_text(pilot, r"Variables")
        await pilot.press("b")
        await until_text(pilot, r"bake --print \(lines")
        await pick_pushing_target(pilot)
        await pilot.press("p", "ctrl+s")  # at once: bake has not answered yet
        await until_text(pilot, QUESTION)
        assert jobs(config) == []  # asked, not started
        await pilot.press("enter")  # not the confirmation key
        await pilot.pause()  # the key is handled: the question is still asked
        assert re.search(QUESTION, screen_text(app)) and jobs(config) == []
        await pilot.press("escape")  # no: back in the dialog, nothing started
        await until_text(pilot, QUESTION, absent=True)
        assert jobs(config) == []


async def test_the_push_question_names_the_registry_bake_resolved(tmp_path: Path) -> None:
    """The question names the hosts of the tags bake resolved (snoc-strix:8080 by the bake
    file's REGISTRY; a REGISTRY set in the dialog's variables moves it), never the fleet
    file's registry URL. Answering y starts the pushing build with those variables."""
    config = offline_config(tmp_path)
    config.write_text(config.read_text() + '\n[registry]\nurl = "http://127.0.0.1:46297"\n')
    app = RocmTui(load_config(config))
    async with app.run_test(size=SIZE) as pilot:
        await until_text(pilot, r"Variables")
        await pilot.press("b")
        await until_text(pilot, r"bake --print \(lines")
        await pick_pushing_target(pilot)
        await until_text(pilot, r"push: to \S+ \(its output is a registry\)")  # resolved
        await pilot.press("ctrl+s")
        shown = await until_text(pilot, QUESTION)
        asked = re.search(QUESTION, shown)
        assert asked is not None and asked.groups() == ("gfx950", "snoc-strix:8080"), shown
        await pilot.press("escape")
        await until_text(pilot, QUESTION, absent=True)
        # the variables field: REGISTRY for this build only
        await pilot.press("tab", "tab", "tab")  # target -> arch -> node -> variables
        await pilot.press(*"REGISTRY=127.0.0.1:5999", "enter")
        await until_text(pilot, r"push: to 127\.0\.0\.1:5999 ")
        login("127.0.0.1:5999")
        await pilot.press("ctrl+s")
        asked = re.search(QUESTION, await until_text(pilot, QUESTION))
        assert asked is not None and asked.group(2) == "127.0.0.1:5999"
        await pilot.press("y")
        started = await until(pilot, lambda: jobs(config), "the pushing job in the store")
        await until_text(pilot, rf"job {started[0].id}")  # and its log pane opens
    assert [(j.target, j.arch, j.push, j.overrides) for j in started] == [
        ("demo-pytorch-push", "gfx950", True, {"REGISTRY": "127.0.0.1:5999"})
    ]


async def test_r_on_a_group_job_rebuilds_that_group_its_arch_node_and_variables(
    tmp_path: Path,
) -> None:
    """`rocmtui bake all --arch gfx1201 --set DEMO_STEPS=3` ran; in the console its row, `r`,
    Enter starts `all` again, for gfx1201 on its node with DEMO_STEPS=3 (it used to offer
    demo-base, with Start focused)."""
    config = offline_config(tmp_path)
    first = bake(
        config, "all", "--arch", "gfx1201", "--node", "snoc-think", "--set", "DEMO_STEPS=3"
    )
    wait_state(config, first, ["failed", "succeeded", "lost"])  # no engine here: it fails
    app = RocmTui(load_config(config))
    async with app.run_test(size=SIZE) as pilot:
        await until_text(pilot, r"✗ failed +all +gfx1201 +snoc-think")
        await pilot.press("tab", "tab")  # nodes -> services -> jobs
        await pilot.press("r")
        shown = await until_text(pilot, r"target all .*arch gfx1201 .*node snoc-think")
        assert "DEMO_STEPS=3" in shown
        await pilot.press("enter")  # Start has the focus
        rebuilt = await until(
            pilot, lambda: [j for j in jobs(config) if j.id != first], "the rebuilt job"
        )
        await until_text(pilot, rf"job {rebuilt[0].id}")  # and its log pane opens
    assert [(j.target, j.arch, j.node, j.overrides) for j in rebuilt] == [
        ("all", "gfx1201", "snoc-think", {"DEMO_STEPS": "3"})
    ]


async def test_the_target_list_offers_groups_as_rocmtui_bake_takes_them(tmp_path: Path) -> None:
    """After the targets come the groups: `all` can be chosen, and bake resolves it."""
    app = RocmTui(load_config(offline_config(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await until_text(pilot, r"Variables")
        await pilot.press("b")
        await until_text(pilot, r"bake --print \(lines")
        await pilot.press("enter", *["down"] * 5, "enter")  # past the five demo-* targets
        shown = await until_text(pilot, r'^.*"demo-base": \{')
    assert "target all " in shown and "-- all" in shown
    assert "arch gfx950: GFX_ARCH's default" in shown


# ---------------------------------------------------------------- actions never wait on views


@contextlib.contextmanager
def views_hold_the_pool() -> Iterator[None]:
    """Fill asyncio's default executor the way open log panes do today (each pane's tail loop
    holds one of its min(32, cores + 4) threads for the pane's lifetime): more waiting calls
    than the pool has threads, all released on leaving (before the console exits, which waits
    for the pool)."""
    loop = asyncio.get_running_loop()
    release = threading.Event()
    for _ in range(40):
        loop.run_in_executor(None, release.wait)
    try:
        yield
    finally:
        release.set()


async def test_b_resolves_the_plan_while_views_hold_every_pool_thread(tmp_path: Path) -> None:
    app = RocmTui(load_config(offline_config(tmp_path)))
    async with app.run_test(size=SIZE) as pilot:
        await until_text(pilot, r"Variables")
        with views_hold_the_pool():
            await pilot.press("b")
            await until_text(pilot, r"bake --print \(lines", timeout=15)


@pytest.mark.fleet
async def test_c_y_cancels_while_views_hold_every_pool_thread(config: Path) -> None:
    nonce = f"DEMO_NONCE={os.getpid()}-{time.time_ns()}"
    job_id = bake(
        config, "demo-base", "--arch", "gfx1201", "--node", "snoc-think",
        "--set", "DEMO_SLEEP=0.5", "--set", "DEMO_STEPS=400", "--set", nonce,
    )  # fmt: skip
    app = RocmTui(load_config(config))
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await until_text(pilot, r"▶ running +demo-base +gfx1201 +snoc-think", timeout=60)
        with views_hold_the_pool():
            await pilot.press("tab", "tab", "c")  # the running job: the jobs panel's first row
            await until_text(pilot, r"Cancel demo-base gfx1201 on snoc-think")
            await pilot.press("y")
            await until(
                pilot,
                lambda: any(j.id == job_id and j.state == "cancelled" for j in jobs(config)),
                "the job cancelled in the store",
            )
            await until_text(pilot, rf"Job {job_id} cancelled")
