"""Where the time went (issue 38), for real: a bake file of four steps of known length, two in
parallel (tests/bakefiles/timeline), built on today's engine (devfleet's CURRENT_ENGINE, in a
network namespace of its own, stopped by pid) by rocmtui and by plain `docker buildx bake`;
its steps read back from BuildKit's history and shown by `rocmtui history show`."""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from devfleet import EngineHandle, processes, start_engine
from devfleet.dockerd import CURRENT_ENGINE
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.control import get_job
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.states import JobState
from tests.support.jobs import run_cli
from tests.support.realparts import require

pytestmark = pytest.mark.fleet

BAKE = Path(__file__).resolve().parents[1] / "bakefiles" / "timeline" / "timeline.hcl"
SLEEPS = {"SERIAL_ONE": 8.0, "LONG": 12.0, "SHORT": 6.0, "SERIAL_TWO": 8.0}
STEP_OF = {"SERIAL_ONE": "begin one", "LONG": "begin long", "SHORT": "begin short",
           "SERIAL_TWO": "begin two"}  # fmt: skip
_BEGIN = re.compile(r"^#\d+ (\d+\.\d+) begin (one|long|short|two)\b", re.MULTILINE)
_WORD = {"one": "SERIAL_ONE", "long": "LONG", "short": "SHORT", "two": "SERIAL_TWO"}


def began(log: str) -> dict[str, float]:
    """Per step, when its command began inside it (seconds into the step, from the plain
    log): a container's start on this loaded machine (0.3-2 s, two at once) is no part of
    a sleep."""
    return {_WORD[m.group(2)]: float(m.group(1)) for m in _BEGIN.finditer(log)}


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory, base_tar: Path) -> Iterator[EngineHandle]:
    """Today's engine with rocm-base:local; stopped at the module's end."""
    require("current-engine", "netns", "busybox", "docker-buildx")
    handle = start_engine(
        tmp_path_factory.mktemp("tl"), "tl", True, "gfx1201",
        base_tar=base_tar, kind=CURRENT_ENGINE,
    )  # fmt: skip
    try:
        yield handle
    finally:
        handle.stop()


@pytest.fixture(autouse=True)
def _own_processes_stopped(tmp_path: Path) -> Iterator[None]:
    """Every process this test's state folder started (supervisors, followers), stopped by
    pid at the end, should one still run."""
    yield
    for pid in processes.pids_mentioning(str(tmp_path)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def fleet_file(tmp_path: Path, engine: EngineHandle) -> Path:
    path = tmp_path / "rocmtui.toml"
    path.write_text(
        f'bake_file = "{BAKE}"\nstate_dir = "{tmp_path / "state"}"\n'
        '[registry]\nurl = "http://127.0.0.1:9"\n[webdav]\nurl = "http://127.0.0.1:9/"\n'
        f'[[nodes]]\nname = "tl"\ndocker_host = "{engine.docker_host}"\ngfx = "gfx1201"\n'
    )
    return path


def own_build(fleet: Path, **overrides: str) -> JobRecord:
    """rocmtui's own build of the timeline target, waited for to its end."""
    from rocmtui.core.bake.file import load_bake
    from rocmtui.core.jobs.launch import launch_job

    config = load_config(fleet)
    job = launch_job(config, load_bake(BAKE), "timeline", "gfx1201", "tl", overrides=overrides)
    done = processes.wait_for(
        lambda: (j := get_job(job.id, config)).ended_at is not None and j, 180, "its end"
    )
    assert isinstance(done, JobRecord)
    assert done.state is JobState.SUCCEEDED, done.log_path.read_text()[-3000:]
    return done


def show(fleet: Path, job: str) -> dict[str, Any]:
    done = run_cli(fleet, "history", "show", job, "--json", timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def step_named(data: dict[str, Any], knob: str) -> dict[str, Any]:
    return next(s for s in data["steps"] if STEP_OF[knob] in s["name"] and "RUN" in s["name"])


def test_own_build_steps_durations_and_critical_path(engine: EngineHandle, tmp_path: Path) -> None:
    from rocmtui.core.history.stepstore import load_steps
    from rocmtui.core.jobs.store import JobStore

    fleet = fleet_file(tmp_path, engine)
    job = own_build(fleet, TL_NONCE=str(time.time_ns()))
    store = JobStore.for_config(load_config(fleet))
    # its supervisor keeps the steps as the build ends (BuildKit forgets records)
    processes.wait_for(lambda: load_steps(store, job.id), 120, "the steps kept")
    data = show(fleet, job.id)
    assert data["job_id"] == job.id and not data["running"]
    offsets = began(job.log_path.read_text())
    assert set(offsets) == set(SLEEPS), offsets
    for knob, seconds in SLEEPS.items():
        step = step_named(data, knob)
        assert not step["cached"], step
        assert abs(step["run"] - offsets[knob] - seconds) <= 0.1 * seconds, (knob, step, offsets)
    path = data["critical_path"]["names"]
    on_path = [k for k in SLEEPS if any(STEP_OF[k] in name for name in path)]
    assert on_path == ["SERIAL_ONE", "LONG", "SERIAL_TWO"], path
    assert 28.0 <= data["critical_path"]["run"] <= data["span"] + 0.01
    kept = load_steps(store, job.id)
    assert kept is not None and len(kept.steps) == len(data["steps"])
    text = run_cli(fleet, "history", "show", job.id)
    assert text.returncode == 0, text.stderr
    assert "critical path (*)" in text.stdout
    starred = [line for line in text.stdout.splitlines() if line.startswith("*")]
    assert any("begin long" in line for line in starred), text.stdout
    assert not any("begin short" in line for line in starred), text.stdout
