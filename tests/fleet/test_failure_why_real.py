"""Why a build failed, on real builds of the dev fleet: a compiler error in a RUN step (the
demo's `DEMO_FAIL`) and a push to a registry nobody listens on. `rocmtui jobs` says why and
what to do next under the job's row and in `--json`; the console says it in the failure's
notice, the job's row and its log pane, keys in and screen text out."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from rocmtui.console.intents import LogRequested
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


@pytest.mark.parametrize("node", ["snoc-think", "snoc-gaming"])  # ssh, today's engine; TLS, 20.10
def test_a_compiler_error_says_why_with_its_error_line(config: Path, node: str) -> None:
    failing = bake(
        config, "demo-base", "--arch", ARCH, "--node", node, *quick(),
        "--set", "DEMO_FAIL=base", "--set", _nonce(),
    )  # fmt: skip
    assert wait_state(config, failing, ["succeeded", "failed", "lost"])["state"] == "failed"
    compiled = job_json(config, failing)["failure"]
    assert compiled["cause"] == "command", compiled
    assert "error: use of undeclared identifier" in compiled["evidence"]
    assert compiled["why"].startswith("the build's own command failed (exit 1): /src/")
    table = run_cli(config, "jobs").stdout.splitlines()
    row = next(i for i, line in enumerate(table) if line.startswith(failing))
    assert table[row + 1].startswith("    why: the build's own command failed (exit 1): /src/")
    assert table[row + 2] == "    next: read the step's output in its log, fix, then rebuild"


def test_a_push_to_a_registry_nobody_listens_on_says_why(config: Path) -> None:
    closed = "127.0.0.1:9"  # the discard port: nothing listens there, in the node's netns too
    login_entry(closed)  # the launcher asks for a login entry before a push; this one is empty
    pushing = bake(
        config, "demo-base", "--arch", ARCH, "--node", NODE, *quick(), "--push", "--yes",
        "--set", f"REGISTRY={closed}", "--set", _nonce(),
    )  # fmt: skip
    assert wait_state(config, pushing, ["succeeded", "failed", "lost"])["state"] == "failed"
    pushed = job_json(config, pushing)["failure"]
    assert pushed["cause"] == "registry-down", pushed
    assert "connection refused" in pushed["evidence"] and closed in pushed["evidence"]
    table = run_cli(config, "jobs").stdout.splitlines()
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
        assert "its command failed; next: read the step's output in its log" in notice, shown
        shown = await until_text(pilot, r"✗ failed .*exit 1 its command failed at \[demo-base")
        # its log pane, asked for as Enter on its row asks (which row has the cursor depends
        # on the builds other tests made on this fleet, listed as started elsewhere)
        header = rf"✗ failed +demo-base gfx1201 on snoc-think +job {job_id}"
        app.screen.post_message(LogRequested(job_id))
        shown = await until_text(pilot, header)
        lines = shown.splitlines()
        at = next(i for i, line in enumerate(lines) if re.search(header, line))
        assert lines[at + 2].strip().startswith("the build's own command failed (exit 1): /src/")
        assert lines[at + 3].strip() == "next: read the step's output in its log, fix, then rebuild"
