"""End to end in tmux: a build started with plain `docker buildx bake` (as rocm-bake's Makefile
starts it) on the dev fleet's ssh node, today's engine, seen by the console as an operator sees
it: keys in, screen text out.

It shows as `building` with its target, arch and a growing `[i/N]`, marked `elsewhere`; `l`
opens its live log; `c` says only its client can cancel it; it goes silent past the stall
threshold and is `stalled` (and `status` exits 1); it ends and the row says so; `r` + Enter
rebuilds it through rocmtui, which appears once. The 20.10 node says on its row that builds
started elsewhere are not visible there."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from devfleet import DevFleet, processes
from rocmtui.core.config.fleetfile import load_config
from tests.support.terminal import Terminal, console_env, fleet_file, job_json

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "bake" / "demo.hcl"
pytestmark = [pytest.mark.fleet, pytest.mark.slow]


def test_a_plain_bake_on_the_ssh_node_is_seen_followed_and_rebuilt(
    fleet: DevFleet, terminal: Terminal, tmp_path: Path
) -> None:
    from rocmtui.core.history.buildx import history_environment

    config = fleet_file(
        fleet, tmp_path, refresh_seconds=1.0, stall_after_seconds=6, watch_history=True
    )
    env = console_env(tmp_path)
    loaded = load_config(config)
    node = loaded.node("snoc-think")
    assert node is not None
    # the operator's own shell: reaching snoc-think as rocmtui's launches do, no rocmtui
    bake_env = history_environment(node, loaded, os.environ, tmp_path / "operator")
    bake_env.update(GFX_ARCH="gfx1201", DEMO_NONCE=uuid.uuid4().hex[:8], DEMO_STEPS="200",
                    DEMO_SLEEP="0.3", DEMO_SILENT_SECONDS="14")  # fmt: skip
    terminal.start(env, config)
    terminal.wait_text(r"✓ ok +snoc-think", 60)
    # the 20.10 node (snoc-gaming, over TLS) says once why its builds are not seen
    terminal.wait_text(r"snoc-gaming.*not visible here", 30)
    bake = processes.spawn(
        ["docker", "buildx", "bake", "-f", str(DEMO), "--progress=plain", "--", "demo-pytorch"],
        tmp_path / "bake.log",
        env=bake_env,
        cwd=DEMO.parent,
    )
    try:
        first = terminal.wait_text(
            r"▶ building +snoc-think .*demo-pytorch gfx1201 \[(\d+)/\d+\]", 90
        )
        i = int(re.search(r"demo-pytorch gfx1201 \[(\d+)/", first).group(1))  # type: ignore[union-attr]
        terminal.wait(
            lambda s: (m := re.search(r"demo-pytorch gfx1201 \[(\d+)/", s)) and int(m[1]) > i,
            "a growing [i/N]",
            60,
        )
        assert re.search(r"\d{8}-\d{4}-\w+ elsewhere", terminal.screen())
        # nodes -> services -> jobs; Home: the top row, this build (running rows come first).
        # The cursor stays on the job it was on as rows come and go, and builds of earlier
        # tests on the session fleet are builds started elsewhere here too
        terminal.keys("Tab", "Tab", "Home")
        terminal.wait_text(r"(?m)^ *▶ running +demo-pytorch +gfx1201 +snoc-think .*elsewhere", 10)
        terminal.keys("c")
        terminal.wait_text(r"started elsewhere: only the client", 20)
        terminal.keys("l")
        terminal.wait_text(r"▶ running +demo-pytorch gfx1201 on snoc-think", 30)
        terminal.wait_text(r"Building HIP object", 60)
        terminal.keys("Escape")
        # halfway it goes silent for 14 s: past the 6 s threshold it is stalled
        terminal.wait_text(r"‼ stalled +snoc-think", 90)
        status = subprocess.run(
            [sys.executable, "-m", "rocmtui", "status", "--config", str(config)],
            env=env, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert status.returncode == 1 and "stalled" in status.stdout, status.stdout
        assert bake.wait(240) == 0, (tmp_path / "bake.log").read_text()[-2000:]
        terminal.wait_text(r"✓ succeeded +demo-pytorch +gfx1201 +snoc-think", 120)
        before = {str(j["id"]) for j in job_json(env, config)}
        terminal.keys("r")  # the jobs panel kept its focus, and its cursor the build's row
        terminal.wait_text(r"target demo-pytorch .*arch gfx1201 .*node snoc-think", 30)
        terminal.wait_text(r"set .*DEMO_NONCE=", 10)  # its build args, as it was built
        terminal.keys("Enter")
        terminal.wait_text(r"▶ running +demo-pytorch gfx1201 on snoc-think", 60)
        deadline = time.monotonic() + 60
        new: list[dict[str, object]] = []
        while time.monotonic() < deadline and not new:
            new = [j for j in job_json(env, config) if str(j["id"]) not in before]
            time.sleep(0.5)
        assert len(new) == 1, new  # rocmtui's own build, once: not also a build elsewhere
        assert not new[0].get("started_elsewhere")
    finally:
        if bake.poll() is None:
            bake.kill()
            bake.wait()
        for job in job_json(env, config):  # the rebuild this test started, if it still runs
            if job["state"] in ("running", "stalled") and not job.get("started_elsewhere"):
                subprocess.run(
                    [sys.executable, "-m", "rocmtui", "cancel", str(job["id"]),
                     "--config", str(config)],
                    env=env, capture_output=True, timeout=120,
                )  # fmt: skip
