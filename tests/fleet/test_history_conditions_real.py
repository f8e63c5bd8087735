"""The four cache conditions arranged for real on the dev fleet (issue 29), and classified from
what the builds' logs say, not from their durations.

demo-vllm (a COPY and three RUN steps, each RUN printing sccache's statistics as Debian's
sccache 0.4 prints them with `DEMO_CACHE_HITS` percent hits: the real WebDAV store cannot run
here) is built by `rocmtui bake` on snoc-gaming four times:

- cold: the builder's cache pruned, a new DEMO_NONCE, 4% sccache hits: every step runs;
- warm: another DEMO_NONCE (its RUN steps run again; the COPY is still cached), 92% hits;
- hot: the same NONCE, another VLLM_VERSION: only the last RUN runs;
- frozen: exactly the same again: every step cached.

Then `rocmtui history --json` must say so, with the evidence.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
from pathlib import Path

import pytest

from devfleet import DevFleet
from tests.support.jobs import bake, job_json, run_cli, wait_for, wait_state
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet]
NODE = "snoc-gaming"
FAST = ("--set", "DEMO_STEPS=25", "--set", "DEMO_SLEEP=0")  # 25: 4% and 92% exactly


def _prune(fleet: DevFleet) -> None:
    """Empty the node's BuildKit cache (what `cold` needs)."""
    engine = fleet.engine(NODE)
    done = subprocess.run(
        ["docker", "-H", engine.docker_host, "builder", "prune", "-af"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def _supervisor_gone(config: Path, job_id: str) -> bool:
    """The job's supervisor has exited (so it wrote sccache.json, if any, before)."""
    pid = job_json(config, job_id)["supervisor_pid"]
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    return False


def _build(config: Path, *sets: str) -> str:
    args = [a for s in sets for a in ("--set", s)]
    job = bake(config, "demo-vllm", "--node", NODE, *FAST, *args)
    assert wait_state(config, job, ["succeeded", "failed"])["state"] == "succeeded"
    wait_for(f"job {job}'s supervisor to exit", lambda: _supervisor_gone(config, job), 60)
    return job


def test_the_four_conditions_arranged_for_real(config: Path, fleet: DevFleet) -> None:
    require("docker-buildx")
    nonce = secrets.token_hex(4)
    _prune(fleet)
    cold = _build(config, f"DEMO_NONCE={nonce}-a", "DEMO_CACHE_HITS=4")
    warm = _build(config, f"DEMO_NONCE={nonce}-b", "DEMO_CACHE_HITS=92")
    hot = _build(config, f"DEMO_NONCE={nonce}-b", "DEMO_CACHE_HITS=92", "VLLM_VERSION=0.33.9")
    frozen = _build(config, f"DEMO_NONCE={nonce}-b", "DEMO_CACHE_HITS=92", "VLLM_VERSION=0.33.9")
    # a build is listed the moment it ends, `settling` until its evidence is read again
    # SETTLE_SECONDS (30 s) after its end: ask until all four have settled
    wanted = {cold: "cold", warm: "warm", hot: "hot", frozen: "frozen"}

    def read() -> dict[str, dict[str, object]] | None:
        done = run_cli(config, "history", "--json", "--target", "demo-vllm", "--node", NODE)
        assert done.returncode in (0, 1), done.stderr
        builds = {b["job_id"]: b for b in json.loads(done.stdout)["builds"]}
        settled = set(wanted) <= set(builds) and not any(builds[j]["settling"] for j in wanted)
        return builds if settled else None

    builds = wait_for("the cost book to hold the four builds settled", read, 120, poll=2.0)
    said = {job: builds[job]["condition"] for job in wanted}
    assert said == wanted, {job: builds[job]["evidence"] for job in wanted}
    assert builds[cold]["evidence"] == "cold: 0/4 steps cached, sccache 4% hits"
    assert builds[warm]["evidence"] == "warm: 1/4 steps cached, sccache 92% hits"
    assert builds[hot]["evidence"] == "hot: 3/4 steps cached, sccache 92% hits"
    assert builds[frozen]["evidence"] == "frozen: 4/4 steps cached, no sccache statistics"
    assert {builds[j]["origin"] for j in wanted} == {"rocmtui"}
