"""Why a build failed, on real builds of the dev fleet: a compiler error in a RUN step (the
demo's `DEMO_FAIL`) and a push to a registry nobody listens on. `rocmtui jobs` says why and
what to do next under the job's row and in `--json`; the console says it in the failure's
notice, the job's row and its log pane, keys in and screen text out."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from tests.support.blackbox import console, toasts, until_text
from tests.support.jobs import (
    bake,
    job_json,
    lock_dir,  # noqa: F401 - fixture
    login_entry,
    quick,
    run_cli,
    wait_state,
)

pytestmark = [pytest.mark.fleet, pytest.mark.slow]
NODE = "snoc-think"  # an engine in a network namespace of its own
ARCH = "gfx1201"


def _nonce() -> str:
    return f"DEMO_NONCE={os.getpid()}-{time.time_ns()}"


def test_a_compiler_error_and_an_unreachable_registry_each_say_why(config: Path) -> None:
    failing = bake(
        config, "demo-base", "--arch", ARCH, "--node", NODE, *quick(),
        "--set", "DEMO_FAIL=base", "--set", _nonce(),
    )  # fmt: skip
    closed = "127.0.0.1:9"  # the discard port: nothing listens there, in the node's netns too
    login_entry(closed)  # the launcher asks for a login entry before a push; this one is empty
    pushing = bake(
        config, "demo-base", "--arch", ARCH, "--node", NODE, *quick(), "--push", "--yes",
        "--set", f"REGISTRY={closed}", "--set", _nonce(),
    )  # fmt: skip
    for job_id in (failing, pushing):
        assert wait_state(config, job_id, ["succeeded", "failed", "lost"])["state"] == "failed"

    compiled = job_json(config, failing)["failure"]
    assert compiled["cause"] == "command", compiled
    assert "error: use of undeclared identifier" in compiled["evidence"]
    assert compiled["why"].startswith("the build's own command failed (exit 1): /src/")
    pushed = job_json(config, pushing)["failure"]
    assert pushed["cause"] == "registry-down", pushed
    assert "connection refused" in pushed["evidence"] and closed in pushed["evidence"]

    table = run_cli(config, "jobs").stdout.splitlines()
    row = next(i for i, line in enumerate(table) if line.startswith(failing))
    assert table[row + 1].startswith("    why: the build's own command failed (exit 1): /src/")
    assert table[row + 2] == "    next: read the step's output in its log, fix, then rebuild"
    row = next(i for i, line in enumerate(table) if line.startswith(pushing))
    assert table[row + 1] == "    why: the registry could not be reached"


async def test_the_console_says_why_in_the_notice_the_row_and_the_log(config: Path) -> None:
    app = console("--config", config)
    async with app.run_test(size=(160, 48), notifications=True) as pilot:
        await until_text(pilot, r"snoc-think", timeout=60)
        job_id = bake(
            config, "demo-base", "--arch", ARCH, "--node", NODE, *quick(),
            "--set", "DEMO_FAIL=base", "--set", _nonce(),
        )  # fmt: skip
        shown = await until_text(pilot, r"Build failed", timeout=120)
        notice = toasts(shown)  # a notice wraps its words across its lines
        assert "failed (exit 1) at [demo-base" in notice, shown  # the step, said once
        assert "the build's own command failed (exit 1): /src/" in notice, shown
        assert "next: read the step's output in its log" in notice, shown
        shown = await until_text(pilot, r"✗ failed .*exit 1 its command failed at \[demo-base")
        await pilot.press("tab", "tab", "enter")  # the jobs table, its newest row: this job
        shown = await until_text(pilot, rf"job {job_id}")
        await until_text(pilot, r"error: use of undeclared identifier")
        assert "next: read the step's output in its log" in shown
