"""The job index, its records and its locks, with real files, real SQLite and real processes
holding the locks (no engine needed)."""

from __future__ import annotations

import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rocmtui.core.jobs import locks
from rocmtui.core.jobs.control import live_record
from rocmtui.core.jobs.procstat import is_same_process, job_processes, proc_stat, start_time
from rocmtui.core.jobs.record import new_job_id
from rocmtui.core.jobs.store import (
    AmbiguousJob,
    JobNotFound,
    JobStore,
    JobStoreError,
    write_json_atomic,
)
from rocmtui.core.jobs.views import record_json
from rocmtui.core.states import JobState
from tests.support.jobs import engineless_fleet, hold_lock, make_job, run_cli, wait_for

DEMO_BAKE = Path(__file__).resolve().parents[2] / "bake" / "demo.hcl"


def test_ids_are_short_sortable_and_unique(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    ids = [make_job(store).id for _ in range(30)]
    assert len(set(ids)) == 30
    assert all(re.fullmatch(r"\d{8}-\d{4}-[0-9a-f]{4}", i) for i in ids)
    assert new_job_id(0).startswith("19700101-0000-")
    assert [r.id for r in store.list()] == ids[::-1]  # newest first


def test_index_is_wal_and_record_json_matches_row(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = make_job(store)
    with sqlite3.connect(store.db_path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    updated = store.update(job.id, exit_code=3, state=JobState.FAILED, ended_at=time.time())
    on_disk = json.loads(job.record_path.read_text())
    assert on_disk == record_json(updated)
    assert on_disk["state"] == "failed" and on_disk["exit_code"] == 3
    # a finished job is never overwritten by a late writer
    late = store.update(job.id, only_if_unfinished=True, state=JobState.CANCELLED)
    assert late.state is JobState.FAILED and store.get(job.id).state is JobState.FAILED
    assert not list(job.path.glob(".*.tmp"))  # no temporary file left behind


def test_atomic_write_never_shows_half_a_file(tmp_path: Path) -> None:
    path = tmp_path / "record.json"
    write_json_atomic(path, {"a": 1})
    inode = path.stat().st_ino
    write_json_atomic(path, {"a": "x" * 100_000})
    assert path.stat().st_ino != inode  # replaced by rename, not rewritten in place
    assert json.loads(path.read_text())["a"] == "x" * 100_000


def test_resolve_by_id_prefix_and_suffix(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    a, b = make_job(store), make_job(store)
    assert store.resolve(b.id[-4:]).id == b.id
    assert store.resolve(a.id).id == a.id
    assert store.resolve(a.id[-4:]).id == a.id
    common = a.id[:4]  # the year: both ids start with it
    with pytest.raises(AmbiguousJob):
        store.resolve(common)
    with pytest.raises(JobNotFound):
        store.resolve("ffff-not")
    with pytest.raises(JobNotFound):
        store.resolve("%")


def test_lock_tells_liveness_and_a_dead_holder_reads_as_lost(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = make_job(store)
    holder = hold_lock(job.lock_path)
    try:
        assert locks.is_locked(job.lock_path)
        assert live_record(store, job, stall_after=900).state is JobState.RUNNING
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert not locks.is_locked(job.lock_path)
    lost = live_record(store, job, stall_after=900)
    assert lost.state is JobState.LOST and lost.ended_at is not None
    assert store.get(job.id).state is JobState.LOST  # recorded, so every reader agrees


def test_silence_makes_stalled_and_new_output_makes_running(tmp_path: Path) -> None:
    store = JobStore(tmp_path)
    job = make_job(store)
    holder = hold_lock(job.lock_path)
    try:
        old = time.time() - 120
        os.utime(job.log_path, (old, old))
        now = old + 120  # fixed, so the age reads exactly 2m00s however slow the machine
        stalled = live_record(store, job, stall_after=60, now=now)
        assert stalled.state is JobState.STALLED and stalled.evidence == "silent 2m00s"
        gathered = live_record(store, job, stall_after=60, now=now, with_evidence=True)
        assert gathered.evidence == "silent 2m00s" and gathered.evidence_at == now
        again = live_record(
            store, store.get(job.id), stall_after=60, now=now + 5, with_evidence=True
        )
        assert again.evidence_at == gathered.evidence_at  # reused, not sampled again
        assert again.evidence == "silent 2m05s"  # only the age moved on, in the same format
        with open(job.log_path, "ab") as fh:
            fh.write(b"more output\n")
        assert live_record(store, job, stall_after=60).state is JobState.RUNNING
        assert store.get(job.id).state is JobState.RUNNING  # stalled is never stored
    finally:
        holder.kill()
        holder.wait()


def test_slot_lock_is_exclusive_across_processes_and_released_on_death(tmp_path: Path) -> None:
    slot = locks.slot_path(tmp_path, "snoc-think", "unix:///x", "tag:r/demo-base:gfx1201")
    other = locks.slot_path(tmp_path, "snoc-think", "unix:///x", "tag:r/demo-base:gfx950")
    elsewhere = locks.slot_path(tmp_path, "snoc-think", "unix:///y", "tag:r/demo-base:gfx1201")
    assert len({slot, other, elsewhere}) == 3
    holder = hold_lock(slot)
    try:
        assert locks.take_slot(slot) is None
        fd = locks.take_slot(other)
        assert fd is not None
        os.close(fd)
    finally:
        holder.kill()
        holder.wait()
    fd = locks.take_slot(slot)
    assert fd is not None
    locks.write_holder(fd, {"job_id": "x", "user": "u", "started_at": 1.0})
    held = locks.read_holder(slot, locks.SlotHolder)
    assert held is not None and held.job_id == "x" and held.user == "u"
    os.close(fd)


def test_pid_reuse_is_detected_by_start_time() -> None:
    me = os.getpid()
    mine = start_time(me)
    assert mine is not None and is_same_process(me, mine)
    assert not is_same_process(me, mine + 1)  # same number, another process's start time
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    assert proc_stat(child.pid) is None or proc_stat(child.pid).start != mine  # type: ignore[union-attr]


def test_job_processes_finds_a_session_and_its_helpers(tmp_path: Path) -> None:
    # a session leader with a child that moved to a process group of its own (like docker's
    # ssh helper): scanning by session finds both
    script = (
        "import os, subprocess, sys, time; "
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], "
        "process_group=0); print(p.pid, flush=True); time.sleep(600)"
    )
    leader = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert leader.stdout is not None
        helper = int(leader.stdout.readline())
        found = wait_for(
            "both processes",
            lambda: (p := job_processes(leader.pid, leader.pid)) and len(p) == 2 and p,
            10,
        )
        assert sorted(found) == sorted([leader.pid, helper])
        assert proc_stat(helper).pgid != leader.pid  # type: ignore[union-attr]
    finally:
        for pid in job_processes(leader.pid, leader.pid):
            os.kill(pid, signal.SIGKILL)
        leader.wait()


def test_node_overlay_marks_building_and_stalled_nodes(tmp_path: Path) -> None:
    from msgspec.structs import replace

    from rocmtui.core.config.fleetfile import FleetConfig, NodeConfig, ServiceConfig
    from rocmtui.core.jobs.overlay import NodeJobOverlay
    from rocmtui.core.snapshots import NodeSnapshot
    from rocmtui.core.states import NodeState

    config = FleetConfig(
        source=None,
        bake_file=tmp_path / "x.hcl",
        refresh_seconds=2.0,
        stall_after_seconds=60.0,
        probe_deadline_seconds=3.0,
        registry=ServiceConfig("http://127.0.0.1:1"),
        webdav=ServiceConfig("http://127.0.0.1:1/"),
        nodes=(NodeConfig("snoc-think"), NodeConfig("snoc-gaming")),
        state_dir=tmp_path,
    )
    store = JobStore(tmp_path)
    job = make_job(store)  # on snoc-think
    ok = NodeSnapshot("snoc-think", "gfx1201", "x", NodeState.OK, time.time())
    other = replace(ok, name="snoc-gaming")
    overlay = NodeJobOverlay(config, max_age=0)
    holder = hold_lock(job.lock_path)
    try:
        assert overlay(ok).state is NodeState.BUILDING
        assert overlay(other).state is NodeState.OK
        assert overlay(replace(ok, state=NodeState.DOWN)).state is NodeState.DOWN
        old = time.time() - 600
        os.utime(job.log_path, (old, old))
        stalled = overlay(ok)
        assert stalled.state is NodeState.STALLED and job.id in (stalled.reason or "")
    finally:
        holder.kill()
        holder.wait()
    assert overlay(ok).state is NodeState.OK  # the job is lost now, not running


def test_a_corrupt_database_is_named_by_the_store_and_the_commands(tmp_path: Path) -> None:
    """A jobs.sqlite that is not a database (a disk that filled, a bad copy) is said with its
    path by the store, and by `rocmtui jobs` and `rocmtui bake` as one line with exit 1: they
    printed a traceback ending in "file is not a database"."""
    state = tmp_path / "state"
    state.mkdir()
    db = state / "jobs.sqlite"
    db.write_text("not a database\n" * 100)
    with pytest.raises(JobStoreError, match=rf"^{re.escape(str(db))}: file is not a database$"):
        JobStore(state).list()
    fleet_file = engineless_fleet(tmp_path, bake_file=DEMO_BAKE, state_dir=state)
    for words in (["jobs"], ["bake", "demo-base", "--node", "snoc-think", "--yes"]):
        done = run_cli(fleet_file, *words)
        assert done.returncode == 1, (words, done.stderr)
        assert done.stderr == f"rocmtui: job store {db}: file is not a database\n", words
    assert db.read_text() == "not a database\n" * 100  # nothing written over it


def test_folders_that_cannot_be_made_are_one_line_each(tmp_path: Path) -> None:
    """A state folder or a lock folder where a file is: one line naming it and exit 1, where
    the commands printed a NotADirectoryError or FileExistsError traceback; no job is
    recorded for a launch that could not take its lock."""
    a_file = tmp_path / "a-file"
    a_file.write_text("")
    with pytest.raises(JobStoreError, match=r"/a-file/jobs: Not a directory$"):
        JobStore(a_file).list()
    done = run_cli(engineless_fleet(tmp_path, state_dir=a_file), "jobs")
    assert (done.returncode, done.stderr) == (
        1,
        f"rocmtui: job store {a_file}/jobs: Not a directory\n",
    )
    state = tmp_path / "state"
    fleet_file = engineless_fleet(tmp_path, bake_file=DEMO_BAKE, state_dir=state)
    env = {**os.environ, "ROCMTUI_LOCK_DIR": str(a_file)}
    done = run_cli(fleet_file, "bake", "demo-base", "--node", "snoc-think", "--yes", env=env)
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith("rocmtui bake: refused: lock folder "), done.stderr
    assert str(a_file) in done.stderr and len(done.stderr.splitlines()) == 1, done.stderr
    assert JobStore(state).list() == []
