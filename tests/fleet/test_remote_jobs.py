"""Builds on a remote node, end to end on real hosts: `rocmtui bake` here, `docker buildx bake`
talking to snoc-think's engine over ssh (the job's own `bin/ssh` adds the fleet's options and
`-F <the fleet's ssh config>`: bake's docker runs plain `ssh`, and OpenSSH would read the
passwd home's ~/.ssh, never $HOME), the log streaming into the job's file here.

The link is black-holed by taking the node's veth end down (no reset); every test that does
brings it back in `finally`. Slot locks, state and docker config are the test's own.
"""

from __future__ import annotations

import os
import time
import urllib.request
import uuid
from pathlib import Path
from typing import Any

import pytest

from devfleet import DevFleet, processes
from devfleet.links import VethLink
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.remote import endpoint_of, engine_busy
from rocmtui.core.private import job_folder
from tests.support.jobs import (
    bake,
    job_json,
    log_has,
    login_entry,
    registry_host,
    run_cli,
    session_pids,
    started_job,
    wait_for,
    wait_state,
)

pytestmark = [pytest.mark.fleet, pytest.mark.slow]
LINK_TIMEOUT = 8.0
#: the bound the README states: the timeout, a keepalive interval (a quarter of it) to notice,
#: the supervisor's check period twice and bake's grace after SIGTERM; plus slack for this
#: shared machine
LINK_BOUND = LINK_TIMEOUT + LINK_TIMEOUT / 4 + 2 * 2 + 5 + 10


def with_link_timeout(config: Path) -> Path:
    """The test's fleet file, giving up on a dead link after LINK_TIMEOUT seconds."""
    config.write_text(f"link_timeout_seconds = {LINK_TIMEOUT}\n" + config.read_text())
    return config


def think_busy(config: Path) -> int:
    """Build cache records snoc-think's engine reports in use, asked over ssh as rocmtui does."""
    loaded = load_config(config)
    node = loaded.node("snoc-think")
    assert node is not None
    return engine_busy(endpoint_of(node, loaded, os.environ), 10.0)


def no_job_ssh_left(sid: int) -> bool:
    """No ssh started through the wrapper of the job whose supervisor led session `sid` is
    left (its options are the job's own). Only that job's session is looked at: a follower of a
    build started elsewhere, or another test session's job, runs an ssh with the same options."""
    return not [p for p in session_pids(sid) if p in processes.pids_mentioning("ControlPath=none")]


def test_a_build_on_the_ssh_node_pushes_here_and_its_cancel_is_checked_on_the_engine(
    fleet: DevFleet, config: Path
) -> None:
    host = registry_host(fleet)
    login_entry(host)
    pushed = bake(
        config, "demo-pytorch-push", "--arch", "gfx1201", "--node", "snoc-think", "--yes",
        "--set", f"REGISTRY={host}", "--set", f"DEMO_NONCE={uuid.uuid4().hex[:8]}",
        "--set", "DEMO_SLEEP=0",
    )  # fmt: skip
    job = wait_state(config, pushed, ["succeeded", "failed"], 240)
    assert job["state"] == "succeeded", Path(job["log"]).read_text()[-2000:]
    assert job["endpoint"] == "ssh://ci@snoc-think"
    # bake's ssh got the fleet's options, from a private folder, never the shared state folder
    job_dir = Path(job["job_dir"])
    assert job_folder(job_dir.parent.parent, job_dir.name).joinpath("bin", "ssh").is_file()
    assert not (job_dir / "bin").exists()
    # pushed by snoc-think's engine, through its namespace, to the registry on this host
    request = urllib.request.Request(
        f"http://{host}/v2/rocm-bake/demo-pytorch/manifests/{job['digest']}",
        method="HEAD",
        headers={"Accept": "application/vnd.docker.distribution.manifest.v2+json, "
                 "application/vnd.oci.image.manifest.v1+json, "
                 "application/vnd.oci.image.index.v1+json"},
    )  # fmt: skip
    assert urllib.request.urlopen(request, timeout=10).status == 200

    slow = bake(
        config, "demo-base", "--arch", "gfx1201", "--node", "snoc-think",
        "--set", f"DEMO_NONCE={uuid.uuid4().hex[:8]}", "--set", "DEMO_SLEEP=0.3",
    )  # fmt: skip
    slow_job = started_job(config, slow)
    log = Path(slow_job["log"])
    wait_for("compile lines from snoc-think", lambda: log_has(log, b"Building HIP object"), 90)
    assert think_busy(config) > 0  # the build runs there, not here
    done = run_cli(config, "cancel", slow)
    assert done.returncode == 0, done.stderr
    final = job_json(config, slow)
    assert final["state"] == "cancelled"
    assert "snoc-think's engine: no build running" in final["message"], final["message"]
    assert think_busy(config) == 0  # checked on the engine, not only the local process
    wait_for("the job's ssh to end", lambda: no_job_ssh_left(slow_job["supervisor_pid"]), 10)


def compiling_on(config: Path, node: str) -> tuple[str, Path]:
    """A slow demo build on `node` (its link timeout short), once it is compiling: (job, log)."""
    with_link_timeout(config)
    job_id = bake(
        config, "demo-pytorch", "--arch", "gfx1201", "--node", node,
        "--set", f"DEMO_NONCE={uuid.uuid4().hex[:8]}", "--set", "DEMO_SLEEP=0.25",
    )  # fmt: skip
    log = Path(started_job(config, job_id)["log"])
    wait_for("compile lines", lambda: log_has(log, b"Building HIP object"), 90)
    return job_id, log


def ended_by_dead_link(
    config: Path, link: VethLink, job_id: str, timeout: float
) -> tuple[dict[str, Any], float]:
    """Take the link down for good: the job's final record, and seconds from the cut to it."""
    link.down()
    cut = time.monotonic()
    ended = wait_state(config, job_id, ["failed", "succeeded", "cancelled", "lost"], timeout)
    return ended, time.monotonic() - cut


def test_a_link_blip_is_survived_and_a_dead_link_ends_the_build_with_evidence(
    fleet: DevFleet, config: Path
) -> None:
    """Mid-build, the link goes down for a few seconds: the record says so while it lasts,
    then the build goes on. Then it goes down for good: the build ends `failed` within the
    bound, with the link's evidence in its record and its log; never `running` forever."""
    link = fleet.remote("snoc-think").link
    job_id, log = compiling_on(config, "snoc-think")

    def lines() -> int:
        return log.read_bytes().count(b"Building HIP object")

    try:
        link.down()
        marked = wait_for(
            "the record to say the link is down",
            lambda: (j := job_json(config, job_id))["link_down_since"] and j,
            LINK_TIMEOUT,
        )
        assert marked["state"] == "running"
        assert marked["message"] is None
        link.up()
        wait_for("the mark to clear", lambda: not job_json(config, job_id)["link_down_since"], 20)
        seen = lines()
        wait_for("the build to go on after the blip", lambda: lines() > seen + 3, 30)
        assert job_json(config, job_id)["state"] == "running"

        failed, took = ended_by_dead_link(config, link, job_id, 90)
    finally:
        link.up()
    assert failed["state"] == "failed", failed
    assert failed["message"].startswith("link to snoc-think down since "), failed["message"]
    assert ": given up" in failed["message"]
    assert took < LINK_BOUND, f"ended {took:.0f}s after the link went down"
    text = log.read_text(errors="replace")
    assert "# rocmtui: link to snoc-think back after" in text  # the blip, in the log too
    assert "given up, ending bake" in text
    sid = job_json(config, job_id)["supervisor_pid"]
    wait_for("the job's ssh to end", lambda: no_job_ssh_left(sid), 15)


def test_a_dead_link_to_the_tls_node_ends_its_build_with_evidence(
    fleet: DevFleet, config: Path
) -> None:
    """The same bound on the TLS node (snoc-gaming, tcp:// with mutual TLS, no ssh keepalive
    to reveal a silent link): its build, mid-compile, is given up within the bound the README
    states, never `running` forever."""
    link = fleet.remote("snoc-gaming").link
    job_id, log = compiling_on(config, "snoc-gaming")
    try:
        failed, took = ended_by_dead_link(config, link, job_id, 120)
    finally:
        link.up()
    assert failed["state"] == "failed", failed
    assert failed["message"].startswith("link to snoc-gaming down since "), failed["message"]
    assert took < LINK_BOUND, f"ended {took:.0f}s after the link went down"
    assert "given up, ending bake" in log.read_text(errors="replace")
