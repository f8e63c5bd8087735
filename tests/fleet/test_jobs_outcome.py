"""The outcome's room and what readers say of a build that has ended: real processes, real files.

* The log writer on a small tmpfs the test mounts: once the disk is full it gives its reserve
  back and never writes into that room again (more output, our own notes), and resumes only
  once there is room for both the reserve and more lines.
* A reader (`control.live_record`) whose job's "bake" (a real child process of this test) has
  exited while its "supervisor" (this test, holding the job's flock) has recorded nothing: it
  says "ended; outcome not yet recorded" with the exit code while the kernel still holds it,
  never `running`; the outcome slot's outcome once there is one; and once the lock is gone
  it records the slot's outcome in the store.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from rocmtui.core.jobs import locks
from rocmtui.core.jobs.control import JobNotRunning, cancel_job, live_record
from rocmtui.core.jobs.logwriter import (
    MARKER_BYTES,
    RESERVE_BYTES,
    RESUME_FREE,
    LogWriter,
    Reserve,
)
from rocmtui.core.jobs.outcome import NOT_IN_STORE, OutcomeSlot, read_outcome
from rocmtui.core.jobs.procstat import proc_stat, start_time
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState
from tests.support.jobs import job_record, wait_for
from tests.support.realparts import require
from tests.support.smalldisk import fill, free_bytes, small_tmpfs

SIZE = 2 * 1024 * 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 2 MiB tmpfs, unmounted at the end."""
    require("root")
    with small_tmpfs(tmp_path / "small", SIZE) as point:
        yield point


def test_the_log_never_writes_into_the_room_it_gave_back(small_disk: Path) -> None:
    reserve = Reserve(small_disk / "reserve")
    marker_room = Reserve(small_disk / "reserve.log", MARKER_BYTES)
    assert reserve.held and marker_room.held
    fd = os.open(small_disk / "log", os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        log = LogWriter(fd, reserve, marker_room)
        chunk = b"[1/2] Building HIP object " + b"x" * 4000 + b"\n"
        while log.holding:  # the build prints until the disk is full
            log.write(chunk)
        assert not reserve.held and not reserve.path.exists()
        text = (small_disk / "log").read_bytes()
        assert b"# rocmtui: the log stops holding lines here: disk full at" in text
        assert log.stopped_line is not None
        assert log.stopped_line.startswith("log stopped: state disk full at ")
        assert log.stopped_line.endswith("; the build goes on")
        room = free_bytes(small_disk)
        assert room >= RESERVE_BYTES  # the reserve's room is free again
        size = os.fstat(fd).st_size
        for _ in range(200):  # the build keeps printing; our own lines want in too
            log.write(chunk)
        assert not log.note("job x succeeded")  # not into the outcome's room
        assert os.fstat(fd).st_size == size
        assert free_bytes(small_disk) == room
        assert log.dropped > 200 * len(chunk) - 1
        # space freed: the log resumes only with the reserve taken back first
        os.ftruncate(fd, 0)
        assert free_bytes(small_disk) >= RESUME_FREE + RESERVE_BYTES
        assert log.note("resumed")
        assert log.holding and reserve.held and reserve.path.exists()
        assert b"bytes of output were not kept from" in (small_disk / "log").read_bytes()
        assert log.incomplete is not None and log.incomplete.startswith("log incomplete: disk full")
        assert log.stopped_line is None
    finally:
        os.close(fd)
        reserve.release()
        marker_room.release()


def _record(store: JobStore, bake: subprocess.Popen[bytes]) -> JobRecord:
    def make(job_id: str, job_dir: Path) -> JobRecord:
        return job_record(
            job_id,
            job_dir,
            node="snoc-strix",
            endpoint="unix:///nowhere",
            started_at=time.time() - 60,  # its last sign of life a minute ago: no log
            supervisor_pid=os.getpid(),
            supervisor_start=start_time(os.getpid()),
            bake_pid=bake.pid,
            bake_start=start_time(bake.pid),
        )

    return store.create(make)


def test_a_reader_never_shows_an_ended_build_as_running(tmp_path: Path) -> None:
    store = JobStore(tmp_path / "state")
    bake = subprocess.Popen(["sh", "-c", "read line; exit 3"], stdin=subprocess.PIPE)
    lock_fd = None
    try:
        record = _record(store, bake)
        lock_fd = locks.try_lock(record.lock_path)  # this test is the job's "supervisor"
        assert lock_fd is not None
        assert live_record(store, record, 900.0).state is JobState.RUNNING
        assert bake.stdin is not None
        bake.stdin.close()  # bake exits 3; nobody reaps it yet: a zombie

        def zombie() -> bool:
            stat = proc_stat(bake.pid)
            return stat is not None and stat.state == "Z"

        wait_for("bake to exit", zombie, 30, poll=0.02)
        shown = live_record(store, record, 900.0)
        assert shown.state is JobState.FAILED
        assert shown.exit_code == 3
        assert shown.message is not None
        assert shown.message.startswith("ended; outcome not yet recorded: ")
        assert shown.message.endswith("bake exit code 3")
        assert store.get(record.id).ended_at is None  # a reader's view, not recorded
        bake.wait()  # reaped: the code is gone from /proc
        shown = live_record(store, record, 900.0)
        assert shown.state is JobState.LOST  # not `running`: the state word is unknown
        assert shown.message is not None and "exit code unknown" in shown.message
        # the supervisor put its outcome in the slot (the store had no room): shown at once
        slot = OutcomeSlot(record.path)
        assert slot.held and read_outcome(record.path) is None  # allocated: zeros
        # the supervisor reaped bake: its code goes into the slot before anything else
        assert slot.write({"exit_code": 3, "ended_at": time.time(), "signalled": False})
        assert read_outcome(record.path) is None  # not an outcome yet
        # within SAY_ENDED_AFTER its supervisor is recording the whole outcome: not said yet
        assert live_record(store, record, 900.0).state is JobState.RUNNING
        assert slot.write({"exit_code": 3, "ended_at": time.time() - 5, "signalled": False})
        shown = live_record(store, record, 900.0)
        assert (shown.state, shown.exit_code) == (JobState.FAILED, 3)
        assert shown.message is not None and shown.message.endswith("bake exit code 3")
        assert slot.write({"exit_code": 143, "ended_at": time.time() - 5, "signalled": True})
        assert live_record(store, record, 900.0).state is JobState.CANCELLED  # a stray SIGTERM
        outcome = {
            "state": JobState.FAILED,
            "exit_code": 3,
            "ended_at": time.time(),
            "digest": None,
            "error_step": "[2/3] RUN make",
            "message": "x" * 20000,  # cut to fit the slot
        }
        assert slot.write(outcome)
        assert os.path.getsize(slot.path) == slot.size
        shown = live_record(store, record, 900.0)
        assert (shown.state, shown.exit_code, shown.error_step) == (
            JobState.FAILED,
            3,
            "[2/3] RUN make",
        )
        assert shown.message is not None and NOT_IN_STORE in shown.message
        with pytest.raises(JobNotRunning):  # nothing left to cancel: it has ended
            cancel_job(None, record.id, store=store)
        # the supervisor ends without writing the store: the next reader records the slot's
        os.close(lock_fd)
        lock_fd = None
        recorded = live_record(store, record, 900.0)
        assert recorded.state is JobState.FAILED and recorded.exit_code == 3
        stored = store.get(record.id)
        assert stored.ended_at is not None and stored.state is JobState.FAILED
        assert stored.message is not None and NOT_IN_STORE not in stored.message
    finally:
        if lock_fd is not None:
            os.close(lock_fd)
        with contextlib.suppress(ProcessLookupError):
            bake.kill()
        bake.wait()


def test_the_outcome_slot_is_written_on_a_disk_with_no_byte_free(small_disk: Path) -> None:
    job_dir = small_disk / "job"
    job_dir.mkdir()
    slot = OutcomeSlot(job_dir)
    assert slot.held
    filler = fill(small_disk)  # nothing left at all
    try:
        assert free_bytes(small_disk) == 0
        assert slot.write({"state": "succeeded", "exit_code": 0, "ended_at": 1.0})
        kept = read_outcome(job_dir)
        assert kept is not None and kept["state"] is JobState.SUCCEEDED
    finally:
        filler.unlink()
