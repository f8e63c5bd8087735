"""A full disk loses nothing: a real build whose log fills the state folder's disk.

The state folder is a small tmpfs the test mounts (and unmounts after); a real demo build on
the session fleet writes into it while a filler file takes the rest of the space. The build
must go on to its true outcome, `jobs` and `logs` must read the store and the log on the full
disk, and the outcome must be recorded: at once from the job's reserve, or, with that taken
too, as soon as space is freed (the supervisor keeps it and retries).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from devfleet import DevFleet
from rocmtui.core.jobs.procstat import proc_stat
from tests.support.jobs import bake, run_cli, wait_for, write_config
from tests.support.realparts import require

pytestmark = [pytest.mark.fleet, pytest.mark.slow]
SIZE = 1024 * 1024  # the tmpfs: the store, the job's reserve (256 KB) and a little log


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 1 MiB tmpfs, unmounted at the end (after every process in it is gone)."""
    require("root")
    point = tmp_path / "small"
    point.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={SIZE},mode=0755", "rocmtui-test", str(point)],
        check=True,
        timeout=30,
    )
    try:
        yield point
    finally:
        done = subprocess.run(["umount", str(point)], capture_output=True, timeout=30)
        if done.returncode != 0:
            subprocess.run(["umount", "--lazy", str(point)], capture_output=True, timeout=30)
        assert done.returncode == 0, done.stderr


def free_bytes(path: Path) -> int:
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def fill(path: Path, leave: int = 0) -> Path:
    """Take all the space but `leave` bytes with a filler file (grown if it exists)."""
    filler = path / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        size = os.fstat(fd).st_size + max(0, free_bytes(path) - leave)
        with contextlib.suppress(OSError):
            os.posix_fallocate(fd, 0, size)
        block = b"\0" * 4096
        with contextlib.suppress(OSError):  # the last pages fallocate would not take
            os.lseek(fd, 0, os.SEEK_END)
            while free_bytes(path) > leave:
                os.write(fd, block)
    finally:
        os.close(fd)
    return filler


def fleet_file_on(tmp_path: Path, fleet: DevFleet, state: Path) -> Path:
    path = write_config(tmp_path, fleet)
    text = path.read_text().replace(str(tmp_path / "state"), str(state))
    path.write_text(text)
    return path


def job(config: Path, job_id: str) -> dict[str, object]:
    out = run_cli(config, "jobs", "--json")
    assert out.returncode == 0, out.stderr  # the store reads on a full disk
    found = next(j for j in json.loads(out.stdout) if j["id"] == job_id)
    assert isinstance(found, dict)
    return found


def gone(pid: object, start: object) -> bool:
    """The process `pid` started at `start` has ended (a reused pid does not count)."""
    assert isinstance(pid, int)
    stat = proc_stat(pid)
    return stat is None or stat.start != start


def build_into_a_full_disk(config: Path, state: Path) -> tuple[str, dict[str, object]]:
    """Start a demo build with a lot of output, then take every free byte: returns the job
    id and its record once bake has ended (its outcome may not be recorded yet)."""
    job_id = bake(
        config,
        "demo-pytorch",
        "--arch",
        "gfx1201",
        "--node",
        "snoc-strix",
        "--set",
        "DEMO_STEPS=600",
        "--set",
        "DEMO_SLEEP=0.005",
        "--set",
        f"DEMO_NONCE={uuid.uuid4().hex}",
    )
    first = wait_for(
        "the supervisor to record its pids",
        lambda: (j := job(config, job_id))["bake_pid"] and j,
        60,
    )
    reserve = Path(str(first["job_dir"])) / "reserve"
    assert reserve.is_file()  # the supervisor took its reserve at start
    fill(state)
    # the log's write failed: the supervisor gives its reserve back at that moment
    wait_for("the log to stop holding lines", lambda: not reserve.exists(), 120)
    running = job(config, job_id)
    assert running["state"] == "running"  # never lost, never stalled: it is building
    shown = run_cli(config, "logs", job_id)  # reads the log on the full disk
    assert shown.returncode == 1, shown.stderr  # running: not (yet) succeeded
    assert "# rocmtui job" in shown.stdout
    return job_id, first


def test_a_build_that_fills_the_disk_records_its_true_outcome(
    tmp_path: Path, fleet: DevFleet, small_disk: Path
) -> None:
    require("docker-buildx")
    config = fleet_file_on(tmp_path, fleet, small_disk / "state")
    job_id, first = build_into_a_full_disk(config, small_disk)
    done = wait_for(
        "the outcome",
        lambda: (j := job(config, job_id))["state"] != "running" and j,
        300,
    )
    assert done["state"] == "succeeded", done
    assert done["exit_code"] == 0
    assert re.match(
        r"log incomplete: disk full at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ bytes of output",
        str(done["message"]),
    ), done["message"]
    log = Path(str(done["log"])).read_bytes()
    assert b"# rocmtui: the log stops holding lines here: disk full at" in log
    assert not (small_disk / "state" / "jobs" / job_id / "reserve").exists()
    sup = (first["supervisor_pid"], first["supervisor_start"])
    wait_for("the supervisor to exit", lambda: gone(*sup), 30)


def test_an_outcome_with_no_room_at_all_is_written_once_space_is_freed(
    tmp_path: Path, fleet: DevFleet, small_disk: Path
) -> None:
    require("docker-buildx")
    config = fleet_file_on(tmp_path, fleet, small_disk / "state")
    job_id, first = build_into_a_full_disk(config, small_disk)
    filler = fill(small_disk)  # the reserve the supervisor gave back: taken too
    wait_for("bake to end", lambda: gone(first["bake_pid"], first["bake_start"]), 300)
    waiting = job(config, job_id)
    assert waiting["state"] == "running"  # the outcome waits in memory; the job is not lost
    assert not gone(first["supervisor_pid"], first["supervisor_start"])
    filler.unlink()
    done = wait_for(
        "the outcome after space was freed",
        lambda: (j := job(config, job_id))["state"] != "running" and j,
        120,
    )
    # bake's own metadata write met the full disk too: whatever bake said is what is kept
    assert done["state"] in ("succeeded", "failed"), done
    assert "log incomplete: disk full at" in str(done["message"])
    sup = (first["supervisor_pid"], first["supervisor_start"])
    wait_for("the supervisor to exit", lambda: gone(*sup), 30)
