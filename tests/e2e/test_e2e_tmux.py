"""End to end: the real console in a real terminal (tmux) against the real local fleet.

Each test runs its own tmux server (`-S`, a socket in a private temporary directory, removed
with it), types keys with `send-keys`, reads the screen with `capture-pane -p`, and waits on
what the screen says, never on a bare sleep. Builds are real `docker buildx bake` runs of
bake/demo.hcl on the fleet's engines.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from devfleet import DevFleet, DripServer, EngineHandle, HungUnixSocket
from tests.support.terminal import (
    Terminal,
    cli,
    console_env,
    fleet_file,
    job_json,
    login_entry,
    registry_host,
    wait_job,
)

pytestmark = [pytest.mark.fleet, pytest.mark.slow]


def test_single_arch_rebuild_on_a_netns_node(
    fleet: DevFleet, terminal: Terminal, tmp_path: Path
) -> None:
    """r, Enter, y on a job row rebuilds it for one arch on its node: compile lines show live,
    it succeeds, and the image it pushed is in the registry."""
    host = registry_host(fleet)
    config = fleet_file(fleet, tmp_path, refresh_seconds=1.0)
    env = console_env(tmp_path, REGISTRY=host, DEMO_NONCE=uuid.uuid4().hex[:8], DEMO_SLEEP="0.1")
    login_entry(env, host)
    # another operator built it before (from the command line, with another nonce)
    first = cli(
        env,
        config,
        "bake",
        "demo-pytorch-push",
        "--arch",
        "gfx1201",
        "--node",
        "snoc-think",
        "--yes",
        "--set",
        f"REGISTRY={host}",
        "--set",
        "DEMO_SLEEP=0",
    )
    first_id = first.split()[0] if first.split() else ""
    terminal.start(env, config)
    terminal.wait_text(r"✓ ok +snoc-think|▶ building +snoc-think", 60)
    terminal.wait_text(r"✓ succeeded +demo-pytorch-push +gfx1201 +snoc-think", 180)
    terminal.keys("Tab", "Tab")  # nodes -> services -> jobs
    terminal.keys("r")  # 1: the rebuild dialog, filled from the job, Start focused
    terminal.wait_text(r"target demo-pytorch-push .*arch gfx1201 .*node snoc-think", 30)
    terminal.keys("Enter")  # 2: start
    terminal.wait_text(r"Push demo-pytorch-push for gfx1201", 10)
    terminal.keys("y")  # 3: the explicit second confirmation a push needs
    shown = terminal.wait_text(r"▶ running +demo-pytorch-push gfx1201 on snoc-think", 60)
    shown = terminal.wait(
        lambda s: re.search(r"\[\d+/\d+\] Building HIP object", s) and "▶ running" in s,
        "compile lines while it runs",
        120,
    )
    assert "Building HIP object" in shown
    terminal.wait_text(r"✓ succeeded +demo-pytorch-push gfx1201 on snoc-think", 240)
    jobs = [j for j in job_json(env, config) if j["id"] != first_id]
    assert jobs and jobs[0]["state"] == "succeeded" and jobs[0]["node"] == "snoc-think"
    digest = str(jobs[0]["digest"])
    assert digest.startswith("sha256:")
    tags = json.load(urllib.request.urlopen(
        f"http://{host}/v2/rocm-bake/demo-pytorch/tags/list", timeout=10))  # fmt: skip
    assert "rocm7.2.2-gfx1201" in tags["tags"]
    request = urllib.request.Request(
        f"http://{host}/v2/rocm-bake/demo-pytorch/manifests/{digest}",
        method="HEAD",
        headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json, "
                 "application/vnd.oci.image.manifest.v1+json, "
                 "application/vnd.oci.image.index.v1+json, "
                 "application/vnd.docker.distribution.manifest.list.v2+json"},
    )  # fmt: skip
    assert urllib.request.urlopen(request, timeout=10).status == 200


def test_a_stopped_engine_turns_down_while_the_others_update(
    fleet: DevFleet,
    terminal: Terminal,
    tmp_path: Path,
    engine_factory: Callable[..., EngineHandle],
) -> None:
    extra = engine_factory(name="snoc-spare", gfx="gfx1250")
    config = fleet_file(fleet, tmp_path, [extra], refresh_seconds=1.0)
    terminal.start(console_env(tmp_path), config)
    terminal.wait_text(r"✓ ok +snoc-spare", 60)
    extra.stop()
    shown = terminal.wait_text(r"✗ down +snoc-spare .*since \d\d:\d\d:\d\d", 60)
    for node in ("snoc-strix", "snoc-think", "snoc-gaming"):
        assert re.search(rf"✓ ok +{node}", shown), shown
    # the others keep updating: the round's age stays small while snoc-spare stays down, over
    # three redraws of the screen
    for _ in range(3):
        shown = terminal.wait_text(r"probed [0-2]s ago", 15)
        assert re.search(r"✗ down +snoc-spare", shown)
        terminal.wait(lambda now, before=shown: now != before, "the next redraw", 15)
    assert "late" not in shown.split("Services")[0].split("snoc-spare")[0]


def test_a_silent_build_shows_stalled(fleet: DevFleet, terminal: Terminal, tmp_path: Path) -> None:
    config = fleet_file(fleet, tmp_path, refresh_seconds=1.0, stall_after_seconds=3)
    env = console_env(tmp_path)
    terminal.start(env, config)
    terminal.wait_text(r"✓ ok +snoc-gaming", 60)
    out = cli(
        env,
        config,
        "bake",
        "demo-base",
        "--arch",
        "gfx1201",
        "--node",
        "snoc-gaming",
        "--set",
        f"DEMO_NONCE={uuid.uuid4().hex[:8]}",
        "--set",
        "DEMO_SILENT_SECONDS=20",
    )
    job_id = out.split()[0]
    try:
        shown = terminal.wait_text(r"‼ stalled +snoc-gaming", 120)
        assert "stalled" in shown.splitlines()[0]  # the status line says so too
        assert re.search(r"‼ stalled +demo-base +gfx1201 +snoc-gaming", shown)
        # and it is the first node row, where it cannot be missed
        rows = [ln for ln in shown.splitlines() if re.search(r"snoc-(strix|think|gaming) ", ln)]
        assert "snoc-gaming" in rows[0]
    finally:  # target slots are machine-wide: free this one for the next test
        subprocess.run(
            [sys.executable, "-m", "rocmtui", "cancel", job_id, "--config", str(config)],
            env=env,
            capture_output=True,
            timeout=120,
        )


def test_builds_outlive_the_terminal(fleet: DevFleet, terminal: Terminal, tmp_path: Path) -> None:
    """Start a build from the console, kill the terminal mid-build, open a new console: the
    build is still running and its log is whole. (40 lines 0.4 s apart: the build outlasts the
    restart of the console with room to spare.)"""
    config = fleet_file(fleet, tmp_path, refresh_seconds=1.0)
    env = console_env(tmp_path, DEMO_NONCE=uuid.uuid4().hex[:8], DEMO_SLEEP="0.4")
    terminal.start(env, config)
    terminal.wait_text(r"✓ ok +snoc-gaming", 60)
    terminal.keys("Down", "Down", "b")  # the bake dialog on snoc-gaming
    terminal.wait_text(r"target demo-base .*node snoc-gaming", 30)
    terminal.keys("C-s")  # start
    terminal.wait_text(r"\[\d+/41\] Building HIP object", 90)
    terminal.kill_session()  # SIGHUP to the console, as when ssh drops
    jobs = job_json(env, config)
    assert jobs[0]["state"] == "running", jobs
    job_id = str(jobs[0]["id"])
    terminal.start(env, config)
    # the bake file's GFX_ARCH (gfx950), as `rocmtui bake` builds it, whatever the node's GPU
    terminal.wait_text(r"▶ running +demo-base +gfx950 +snoc-gaming", 60)
    terminal.keys("Tab", "Tab", "Enter")  # the job's log pane
    terminal.wait_text(r"demo-base gfx950 on snoc-gaming", 20)
    terminal.wait_text(r"\[\d+/41\] Building HIP object", 30)
    final = wait_job(env, config, job_id, {"succeeded"}, 240)
    log = Path(str(final.get("log_path") or Path(str(final["job_dir"])) / "log")).read_text()
    counters = {int(m) for m in re.findall(r"\[(\d+)/41\] Building HIP object", log)}
    assert counters == set(range(1, 41)), "lines were lost while no console was attached"
    terminal.wait_text(r"✓ succeeded", 30)


def test_a_hung_node_and_a_dripping_registry_change_what_is_shown_not_the_keys(
    fleet: DevFleet,
    terminal: Terminal,
    tmp_path: Path,
    hung_unix_socket: HungUnixSocket,
    drip_server: DripServer,
) -> None:
    """A node whose engine accepts and never answers, and a registry that drips one byte every
    half second: their rows say so within the deadline, the other rows keep updating, and the
    console answers keys meanwhile."""
    config = fleet_file(fleet, tmp_path, refresh_seconds=1.0)
    text = config.read_text().replace(str(fleet.registry.url), drip_server.url)  # type: ignore[union-attr]
    text += f'\n[[nodes]]\nname = "snoc-hung"\ndocker_host = "{hung_unix_socket.docker_host}"\n'
    config.write_text(text)
    terminal.start(console_env(tmp_path), config)
    shown = terminal.wait_text(r"(✗ down|\? unknown) +snoc-hung", 60)
    assert re.search(r"✓ ok +snoc-think", shown)
    terminal.wait_text(r"(✗ down|▲ degraded|◔ slow) +zot", 60)
    for _ in range(3):  # keys are answered at once while the hung probes run
        sent = time.monotonic()
        terminal.keys("?")
        terminal.wait_text(r"remap any of them", 5)
        assert time.monotonic() - sent < 5
        terminal.keys("Escape")
        terminal.wait(lambda s: "remap any of them" not in s, "help closed", 5)
    terminal.wait_text(r"probed [0-3]s ago", 15)


def test_a_finished_builds_pane_shows_its_steps_at_once_in_a_fresh_console(
    fleet: DevFleet, terminal: Terminal, tmp_path: Path
) -> None:
    """A build that ended before the console started: its row, Enter. The step outline and the
    final counter used to stay empty until some other build ran (the job store's answer came
    before the pane was on screen, and a finished build's later answers are all the same)."""
    config = fleet_file(fleet, tmp_path, refresh_seconds=1.0)
    env = console_env(tmp_path)
    out = cli(env, config, "bake", "demo-base", "--arch", "gfx1201", "--node", "snoc-gaming",
              "--set", "DEMO_STEPS=6", "--set", f"DEMO_NONCE={uuid.uuid4().hex[:8]}")  # fmt: skip
    job_id = out.split()[0]
    log = Path(str(wait_job(env, config, job_id, {"succeeded"}, 120)["log"]))
    # built an hour ago: its progress reads the same every round (no rate left to fall)
    os.utime(log, (time.time() - 3600, time.time() - 3600))
    terminal.start(env, config)
    terminal.wait_text(rf"✓ succeeded .*{job_id}", 60)
    terminal.wait_text(r"ROCM_VERSION +default", 30)  # settled: the bake file is read too
    terminal.keys("Tab", "Tab", "Enter")
    shown = terminal.wait_text(r"^✓ #\d+ +[\d.]+s RUN", 10)
    assert re.search(r"^ \[(\d+)/\1\]", shown, re.M), shown  # the final counter
