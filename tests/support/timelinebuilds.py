"""The timeline tests' engine and own builds, shared by test_timeline_real.py and
test_steptrend_real.py: today's engine with rocm-base:local (a module-scoped fixture: each
module that imports it gets its own), the processes a test's state folder started stopped at
its end (autouse where imported), a fleet file naming the engine, and rocmtui's own build of
the timeline target."""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import EngineHandle, processes, start_engine
from devfleet.dockerd import CURRENT_ENGINE
from rocmtui.core.config.fleetfile import load_config
from rocmtui.core.jobs.control import get_job
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.states import JobState
from tests.support.realparts import require

BAKE = Path(__file__).resolve().parents[1] / "bakefiles" / "timeline" / "timeline.hcl"
QUICK = {"SERIAL_ONE": "0", "LONG": "0", "SHORT": "0", "SERIAL_TWO": "0"}


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
