"""Every file rocmtui writes while builds run, on a full state disk and a read-only state folder.

Two small tmpfs mounts the test makes (and unmounts): one filled to the last byte, one
remounted read-only, each holding a state folder with a finished job already recorded. For the
job store, the monitor's lock and socket, the debug log and the console's prefs file: the
command goes on (or refuses) with one clear line naming the file and the condition, and
nothing false is left behind (no half-written file, no traceback per record, no monitor that
will not stop). The job's own log and outcome are in test_jobs_fulldisk.py and
test_jobs_outcome.py.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet.processes import short_dir
from rocmtui.console import prefs
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState
from tests.support.jobs import job_record, offline_config, rocmtui_argv, wait_for
from tests.support.realparts import require
from tests.support.smalldisk import fill, free_bytes, remount_read_only, small_tmpfs

SIZE = 1024 * 1024


def _finished(job_id: str, job_dir: Path) -> JobRecord:
    return job_record(
        job_id,
        job_dir,
        endpoint="unix:///nonexistent/d.sock",
        started_at=time.time() - 60,
        ended_at=time.time(),
        state=JobState.SUCCEEDED,
        exit_code=0,
    )


@pytest.fixture(params=["full", "read-only"])
def state_home(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """(condition, mount point): XDG_STATE_HOME on a tmpfs that is full or read-only, with a
    state folder (`rocmtui/`) holding one finished job and the console's prefs."""
    require("root")
    # a short mount point: the monitor's socket lives in the state folder, and a unix socket's
    # path has room for 107 bytes (a worker's tmp_path under pytest-xdist is 11 bytes longer)
    home = short_dir("rtdisk")
    try:
        with small_tmpfs(home / "disk", SIZE) as point:
            store = JobStore(point / "rocmtui")
            store.create(_finished)
            env = {"XDG_STATE_HOME": str(point), "HOME": str(tmp_path)}
            assert prefs.save(env, theme="nord") is None
            if request.param == "full":
                fill(point)
                assert free_bytes(point) == 0
            else:
                remount_read_only(point)
            yield (
                ("state disk full" if request.param == "full" else "state folder read-only"),
                point,
            )
    finally:
        shutil.rmtree(home, ignore_errors=True)  # the mount is gone: only the empty point


def run(config: Path, point: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "XDG_STATE_HOME": str(point),
        "ROCMTUI_STATE_DIR": str(point / "rocmtui"),
    }
    return subprocess.run(
        rocmtui_argv(config, *args), env=env, capture_output=True, text=True, timeout=60
    )


def test_the_job_store_reads_and_refuses_writes_with_the_condition(
    tmp_path: Path, state_home: tuple[str, Path]
) -> None:
    condition, point = state_home
    config = offline_config(tmp_path)
    listed = run(config, point, "jobs", "--json")
    assert listed.returncode == 0, listed.stderr
    assert [j["state"] for j in json.loads(listed.stdout)] == ["succeeded"]
    refused = run(config, point, "bake", "demo-base", "--node", "snoc-think", "--yes")
    assert refused.returncode != 0
    line = refused.stderr.strip()
    assert "jobs.sqlite" in line and f"({condition})" in line, line
    assert "Traceback" not in refused.stderr


def test_the_debug_log_says_once_that_it_is_not_written(
    tmp_path: Path, state_home: tuple[str, Path]
) -> None:
    condition, point = state_home
    config = offline_config(tmp_path)
    done = run(config, point, "--debug", "jobs")
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr  # never logging's "--- Logging error ---" per record
    assert lines[0].startswith("rocmtui: the debug log is not written: ")
    assert "rocmtui.log" in lines[0] and f"({condition})" in lines[0]


def test_the_monitor_runs_or_refuses_with_the_condition_and_stops_on_sigterm(
    tmp_path: Path, state_home: tuple[str, Path]
) -> None:
    condition, point = state_home
    config = offline_config(tmp_path)
    env = {**os.environ, "XDG_STATE_HOME": str(point), "ROCMTUI_STATE_DIR": str(point / "rocmtui")}
    out = tmp_path / "monitor.out"
    with open(out, "w") as sink:
        proc = subprocess.Popen(
            rocmtui_argv(config, "monitor", "--no-metrics"), env=env, stdout=sink, stderr=sink
        )
    try:
        if condition == "state folder read-only":
            assert proc.wait(timeout=60) == 1
            text = out.read_text()
            assert "cannot lock " in text and f"({condition})" in text, text
            return
        wait_for("the monitor to say it runs", lambda: "consoles attach at" in out.read_text(), 60)
        text = out.read_text()
        assert "who runs this monitor is not written into its lock" in text, text
        assert f"({condition})" in text
        assert (point / "rocmtui").glob("monitor-*.sock")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 0
        assert not list((point / "rocmtui").glob("monitor-*.sock"))  # nothing stale left
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=30)


def test_the_console_prefs_are_kept_whole_and_the_failure_said(
    tmp_path: Path, state_home: tuple[str, Path]
) -> None:
    condition, point = state_home
    env = {"XDG_STATE_HOME": str(point), "HOME": str(tmp_path)}
    said = prefs.save(env, theme="dracula", outline_width=40)
    assert said is not None
    assert said.startswith("outline_width, theme not remembered for next time: ")
    assert f"({condition})" in said
    assert prefs.load(env) == {"theme": "nord"}  # the old file, whole
    assert [p.name for p in (point / "rocmtui").iterdir() if p.name.startswith(".")] == []
