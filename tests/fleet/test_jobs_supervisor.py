"""The supervisor's verdict comes from the exit code and the metadata file only.

These run the real supervisor (through `detach`, as `launch_job` does, holding the job's lock by
inheritance) in front of a small shell command standing in for bake, so the outcome rules are
checked without an engine: what the command prints never decides the state.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from rocmtui.core.jobs import locks
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.states import JobState
from tests.support.jobs import make_job, wait_for

REPO = Path(__file__).resolve().parents[2]


def supervise(tmp_path: Path, command: list[str], push: bool = False) -> JobRecord:
    """Start the supervisor for a fresh job running `command`; return the final record."""
    store = JobStore(tmp_path / "state")
    job = make_job(store)
    fd = locks.try_lock(job.lock_path)
    assert fd is not None
    log = os.open(job.log_path, os.O_WRONLY | os.O_APPEND)
    try:
        argv = [sys.executable, "-S", "-m", "rocmtui.core.jobs.detach"]
        argv += ["--store", str(store.root), "--job", job.id, *(["--push"] if push else [])]
        subprocess.run(
            [*argv, "--", *command],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=(fd,),
            start_new_session=True,
            env={**os.environ, "PYTHONPATH": str(REPO)},
            cwd=job.path,
            check=True,
            timeout=30,
        )
    finally:
        os.close(fd)  # the supervisor holds its own copy now
        os.close(log)
    return wait_for(
        "the supervisor's verdict",
        lambda: (r := store.get(job.id)).ended_at is not None and r,
        30,
        poll=0.05,
    )


def test_printed_errors_do_not_fail_a_build_that_exits_0(tmp_path: Path) -> None:
    script = 'echo "#9 ERROR: process did not complete"; echo "ERROR: failed to solve"; exit 0'
    record = supervise(tmp_path, ["sh", "-c", script])
    assert record.state is JobState.SUCCEEDED and record.exit_code == 0
    assert record.supervisor_pid and record.bake_pid and record.bake_start
    assert "#9 ERROR" in record.log_path.read_text()
    assert json.loads(record.record_path.read_text())["state"] == "succeeded"


def test_printed_success_does_not_pass_a_build_that_exits_non_zero(tmp_path: Path) -> None:
    record = supervise(tmp_path, ["sh", "-c", 'echo "#9 DONE 0.1s"; exit 3'])
    assert record.state is JobState.FAILED and record.exit_code == 3


def test_a_missing_bake_binary_is_failed_not_lost(tmp_path: Path) -> None:
    record = supervise(tmp_path, [str(tmp_path / "no-such-docker"), "buildx", "bake"])
    assert record.state is JobState.FAILED and record.exit_code == 127
    assert record.message and "could not start bake" in record.message


def test_digest_comes_from_the_metadata_file(tmp_path: Path) -> None:
    digest = "sha256:" + "ab" * 32
    meta = {"demo-base": {"containerimage.digest": digest}}
    script = f"printf '%s' '{json.dumps(meta)}' > metadata.json"
    record = supervise(tmp_path, ["sh", "-c", script], push=True)
    assert record.state is JobState.SUCCEEDED and record.digest == digest
    # a push that exits 0 without a digest in the metadata is not a success
    record = supervise(tmp_path, ["true"], push=True)
    assert record.state is JobState.FAILED and record.digest is None
    assert record.message and "digest" in record.message
