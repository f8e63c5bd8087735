"""A full disk loses nothing: a real build whose log fills the state folder's disk.

The state folder is a small tmpfs the test mounts (and unmounts after); a real demo build on
the session fleet writes into it while a filler file takes the rest of the space, and keeps
printing after that. The record must say at once that the log stopped; the build must go on
to its true outcome; `jobs` and `logs` must read the store and the log on the full disk; and
the true outcome must be readable within seconds of bake's exit with the disk still full: from
the job's reserve (the log never writes into it), or, with that taken too, from the job's
outcome slot; and again once space is freed. The supervisor ends on SIGTERM once bake has
ended (never SIGKILL), and a reader records the outcome it left in the slot.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import uuid
from pathlib import Path

import pytest

from devfleet import DevFleet
from tests.support.fulldisk import STILL_FULL, fleet_file_on, gone, job
from tests.support.jobs import bake, run_cli, wait_for
from tests.support.realparts import require
from tests.support.smalldisk import fill, free_bytes

pytestmark = [pytest.mark.fleet, pytest.mark.slow]


def recorded(shown: dict[str, object]) -> bool:
    """The job shows an outcome its supervisor wrote (not a reader's view of an ended bake)."""
    message = str(shown["message"])
    return shown["state"] in ("succeeded", "failed") and "not yet" not in message


def build_into_a_full_disk(config: Path, state: Path) -> tuple[str, dict[str, object]]:
    """Start a demo build with a lot of output, then take every free byte: returns the job
    id and its first record (pids) once the log has stopped and the record says so."""
    job_id = bake(
        config,
        "demo-pytorch",
        "--arch",
        "gfx1201",
        "--node",
        "snoc-strix",
        "--set",
        "DEMO_STEPS=900",
        "--set",
        "DEMO_SLEEP=0.01",
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
    running = wait_for(
        "the record to say the log stopped",
        lambda: (j := job(config, job_id))["message"] and j,
        30,
    )
    assert running["state"] == "running"  # never lost, never stalled: it is building
    assert re.fullmatch(
        r"log stopped: state disk full at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC; the build goes on",
        str(running["message"]),
    ), running["message"]
    assert not gone(first["bake_pid"], first["bake_start"])  # it still prints into the pipe
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
    wait_for("bake to end", lambda: gone(first["bake_pid"], first["bake_start"]), 300, 0.05)
    done = wait_for(
        "the true outcome, the disk still full",
        lambda: recorded(j := job(config, job_id)) and j,
        30,
    )
    assert free_bytes(small_disk) < STILL_FULL
    assert done["state"] == "succeeded", done
    assert done["exit_code"] == 0
    assert re.match(
        r"log incomplete: disk full at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(\d+ bytes of output",
        str(done["message"]),
    ), done["message"]
    log = Path(str(done["log"])).read_bytes()
    assert b"# rocmtui: the log stops holding lines here: disk full at" in log
    sup = (first["supervisor_pid"], first["supervisor_start"])
    wait_for("the supervisor to exit", lambda: gone(*sup), 30)
    assert not (small_disk / "state" / "jobs" / job_id / "reserve").exists()
    (small_disk / "filler").unlink()
    again = job(config, job_id)  # the same outcome with room to spare
    assert {k: again[k] for k in ("state", "exit_code", "message", "ended_at")} == {
        k: done[k] for k in ("state", "exit_code", "message", "ended_at")
    }


def test_an_outcome_with_no_room_at_all_is_read_at_once_and_recorded_once_space_is_freed(
    tmp_path: Path, fleet: DevFleet, small_disk: Path
) -> None:
    require("docker-buildx")
    config = fleet_file_on(tmp_path, fleet, small_disk / "state")
    job_id, first = build_into_a_full_disk(config, small_disk)
    filler = fill(small_disk)  # the reserve the supervisor gave back: taken too
    sup = (first["supervisor_pid"], first["supervisor_start"])
    try:
        wait_for("bake to end", lambda: gone(first["bake_pid"], first["bake_start"]), 300, 0.05)
        shown = wait_for(
            "the outcome from the job's outcome slot",
            lambda: "not yet in the job store" in str((j := job(config, job_id))["message"]) and j,
            30,
        )
        assert free_bytes(small_disk) < STILL_FULL
        # bake's own metadata write met the full disk too: whatever bake said is what is kept
        assert shown["state"] in ("succeeded", "failed"), shown
        assert (shown["state"] == "succeeded") == (shown["exit_code"] == 0), shown
        assert "log incomplete: disk full at" in str(shown["message"])
        assert "not yet in the job store: state disk full" in str(shown["message"])
        assert not gone(*sup)  # it waits for room to record the outcome in the store
        # bake has ended: a SIGTERM ends the supervisor (after one last try), no SIGKILL
        assert isinstance(sup[0], int)
        os.kill(sup[0], signal.SIGTERM)
        wait_for("the supervisor to end on SIGTERM", lambda: gone(*sup), 30)
        after = job(config, job_id)  # nobody holds the lock now: the slot, never `lost`
        assert (after["state"], after["exit_code"]) == (shown["state"], shown["exit_code"])
        filler.unlink()
        done = wait_for(
            "the outcome recorded in the store after space was freed",
            lambda: (
                "not yet in the job store" not in str((j := job(config, job_id))["message"]) and j
            ),
            30,
        )
        assert (done["state"], done["exit_code"]) == (shown["state"], shown["exit_code"])
        assert "log incomplete: disk full at" in str(done["message"])
        record = json.loads(Path(str(done["job_dir"]), "record.json").read_text())
        assert record["state"] == done["state"] and record["ended_at"] is not None
    finally:
        with contextlib.suppress(FileNotFoundError):
            filler.unlink()
