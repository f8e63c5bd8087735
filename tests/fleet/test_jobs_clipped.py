"""A build whose output BuildKit clipped: its silence is explained, not just alarmed.

BuildKit passes at most `BUILDKIT_STEP_LOG_MAX_SIZE` (2 MiB by default) of one step's output and
drops lines over 200 KiB/s; a PyTorch compile step prints far more, so on a stock engine its log
goes silent for hours while it compiles. The stall evidence says so, in BuildKit's own words.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from devfleet import EngineHandle
from devfleet.dockerd import EngineKind
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.control import cancel_job, list_jobs
from rocmtui.core.jobs.evidence import clipped_limit, stall_evidence
from tests.support.jobs import bake, wait_state

# captured from dockerd 28.5.2's BuildKit (`--progress=plain`) on this machine
RATE_CLIP = "#8 0.479 [output clipped, log limit 200KiB/s reached]"
SIZE_CLIP = "#8 12.031 [output clipped, log limit 2MiB reached]"


def test_a_size_clip_of_an_open_step_is_named() -> None:
    lines = ["#8 [demo-base 2/2] RUN fake-compile", "#8 0.2 [1/900] Building HIP object", SIZE_CLIP]
    assert clipped_limit(lines) == "2MiB"


def test_the_rate_clip_and_ended_steps_are_not_a_clip_now() -> None:
    assert clipped_limit(["#8 [x 1/1] RUN a", RATE_CLIP]) is None
    assert clipped_limit(["#8 [x 1/1] RUN a", SIZE_CLIP, "#8 DONE 3.1s"]) is None
    assert clipped_limit(["#9 [x 1/1] RUN b", "#9 0.1 [output clipped, log limit 2MiB]"]) is None


def test_the_evidence_line_says_why_the_log_is_silent(tmp_path: Path) -> None:
    log = tmp_path / "log"
    log.write_text("\n".join(["#8 [demo-base 2/2] RUN fake-compile pytorch", SIZE_CLIP, ""]))
    evidence = stall_evidence(log, 1000.0, None)
    assert evidence.startswith("silent 16m40s; step [demo-base 2/2] RUN fake-compile")
    assert "BuildKit clipped its output at 2MiB: silence expected" in evidence


@pytest.mark.fleet
@pytest.mark.slow
def test_a_real_clipped_build_that_goes_silent_is_stalled_with_the_reason(
    tmp_path: Path, engine_factory: Callable[..., EngineHandle]
) -> None:
    # today's engine with a 16 KiB step log limit: the demo's hipcc lines pass it in seconds
    engine = engine_factory(
        kind=EngineKind(
            "current-clip-16k", current=True, extra_env=(("BUILDKIT_STEP_LOG_MAX_SIZE", "16384"),)
        )
    )
    demo = Path(__file__).resolve().parents[2] / "bake" / "demo.hcl"
    config = tmp_path / "rocmtui.toml"
    config.write_text(
        f"bake_file = {json.dumps(str(demo))}\n"
        f"state_dir = {json.dumps(str(tmp_path / 'state'))}\n"
        "stall_after_seconds = 2.0\n"
        '[registry]\nurl = "http://127.0.0.1:9"\n[webdav]\nurl = "http://127.0.0.1:9/"\n'
        f'[[nodes]]\nname = "clipped"\ndocker_host = "{engine.docker_host}"\ngfx = "gfx1201"\n'
    )
    job_id = bake(
        config,
        "demo-base",
        "--node",
        "clipped",
        "--set",
        "DEMO_STEPS=200",
        "--set",
        "DEMO_SLEEP=0.01",
        "--set",
        "DEMO_SILENT_SECONDS=20",
        "--set",
        f"DEMO_NONCE={tmp_path.name}",
    )
    loaded = load_config(config)
    try:
        stalled: dict[str, Any] = wait_state(config, job_id, ["stalled"], timeout=120)
        assert "BuildKit clipped its output at 16KiB: silence expected" in stalled["evidence"]
        log = (tmp_path / "state" / "jobs" / job_id / "log").read_text()
        assert "[output clipped, log limit 16KiB reached]" in log
    finally:
        for job in list_jobs(loaded):
            if job.ended_at is None:
                cancel_job(loaded, job.id, grace=2.0)
