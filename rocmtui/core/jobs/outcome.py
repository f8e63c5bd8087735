"""A job's outcome kept where no full disk can refuse it, and what a reader makes of a build
that has ended with no outcome in the job store yet.

The job store (SQLite and record.json) needs fresh room for every change; a full state disk
refuses it. So the supervisor takes `OutcomeSlot` at the job's start: a small file
(`jobs/<id>/outcome`) whose blocks are allocated then and overwritten in place when bake ends
(no new block is needed, so a full disk cannot refuse it). Readers take what it holds when the
job store has no outcome: the job shows its true state at once, and the first reader that can
write the store records it there (also after the supervisor is gone, even killed).

`ended_view`: a reader that finds the supervisor alive but bake gone, and no outcome at all,
says so ("ended; outcome not yet recorded: ...") with bake's exit code when it can be read,
never `running`: bake is a zombie until its supervisor reaps it (the kernel keeps the code in
/proc), and the supervisor puts the code in the slot the moment it has reaped it, before it
works out the rest (metadata, the failed step from the log, which can take a while). That view
waits `SAY_ENDED_AFTER` seconds from bake's end: within it the supervisor records the whole
outcome (a few ms), and a reader that said `succeeded` with no digest yet would mislead
whoever acts on the word.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from msgspec.structs import replace

from rocmtui.core.diskroom import condition
from rocmtui.core.jobs.procstat import proc_stat
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.sharing import open_file, sharing_of
from rocmtui.core.states import JobState

OUTCOME_BYTES = 8192  # the fields below, the message capped to fit
_FIELDS = ("state", "exit_code", "ended_at", "digest", "error_step", "message")
_PID_FIELDS = ("supervisor_pid", "supervisor_start", "bake_pid", "bake_start")
_EARLY_FIELDS = ("signalled",)  # bake ended by a signal that was not a cancel
NOT_IN_STORE = "not yet in the job store"
SAY_ENDED_AFTER = 2.0  # seconds after bake's end before a reader says it ended without outcome


def outcome_path(job_dir: Path) -> Path:
    """The job's outcome slot."""
    return job_dir / "outcome"


class OutcomeSlot:
    """The outcome's room, taken at the job's start and written in place at its end."""

    def __init__(self, job_dir: Path, size: int = OUTCOME_BYTES) -> None:
        self.path = outcome_path(job_dir)
        self.size = size
        self.held = False
        try:
            mode = sharing_of(job_dir).file_mode
            fd = open_file(self.path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC, mode)
        except OSError:
            return
        try:
            os.posix_fallocate(fd, 0, size)  # zeros: read as "no outcome yet"
            self.held = True
        except OSError:  # no room even now: the outcome then waits for the store
            with contextlib.suppress(OSError):
                os.unlink(self.path)
        finally:
            os.close(fd)

    def write(self, fields: Mapping[str, Any]) -> bool:
        """Overwrite the slot with `fields` (JSON padded to the slot's size); True when it
        reached the disk."""
        if not self.held:
            return False
        data = encode(fields, self.size)
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CLOEXEC)
        except OSError:
            return False
        try:
            os.pwrite(fd, data, 0)
            os.fdatasync(fd)
        except OSError:
            return False
        finally:
            os.close(fd)
        return True


def encode(fields: Mapping[str, Any], size: int = OUTCOME_BYTES) -> bytes:
    """`fields` as JSON padded with spaces to `size` bytes (a long message is cut to fit)."""
    data = {k: fields.get(k) for k in (*_FIELDS, *_PID_FIELDS, *_EARLY_FIELDS) if k in fields}
    if isinstance(data.get("state"), JobState):
        data["state"] = str(data["state"])
    raw = json.dumps(data, sort_keys=True).encode()
    while len(raw) > size and isinstance(data.get("message"), str) and data["message"]:
        message = data["message"]
        data["message"] = message[: max(0, len(message) - (len(raw) - size) - 8)] + "…"
        if data["message"] == "…":
            data["message"] = None
        raw = json.dumps(data, sort_keys=True).encode()
    if len(raw) > size:  # pragma: no cover - the fixed fields alone never come near
        data.pop("error_step", None)
        raw = json.dumps(data, sort_keys=True).encode()[:size]
    return raw.ljust(size, b" ")


def _read_slot(job_dir: Path) -> dict[str, Any] | None:
    """What the slot holds (None when empty, absent, or caught half-written)."""
    try:
        raw = outcome_path(job_dir).read_bytes().strip(b"\0 \n")
        data = json.loads(raw) if raw else None
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def read_outcome(job_dir: Path) -> dict[str, Any] | None:
    """The outcome the slot holds, as record fields; None when empty, absent, unreadable (a
    reader that caught a write half-way looks again later) or only bake's exit code so far."""
    data = _read_slot(job_dir)
    if data is None:
        return None
    try:
        state = JobState(data["state"])
    except (ValueError, KeyError, TypeError):
        return None
    if not state.finished or data.get("ended_at") is None:
        return None
    out = {k: data.get(k) for k in _FIELDS}
    out.update({k: data[k] for k in _PID_FIELDS if isinstance(data.get(k), int)})
    out["state"] = state
    return out


def with_kept_outcome(record: JobRecord, kept: Mapping[str, Any]) -> JobRecord:
    """`record` as its outcome slot says it ended, said to be not in the store yet."""
    message = kept.get("message")
    note = f"{NOT_IN_STORE}: {why_not_recorded(record)}"
    return replace(record, **{**kept, "message": f"{message}; {note}" if message else note})


def why_not_recorded(record: JobRecord) -> str:
    """Why an ended job has no outcome in the store, as far as a reader can tell."""
    return condition(record.path) or "its supervisor has not recorded it yet"


def bake_exit(record: JobRecord) -> tuple[bool, int | None]:
    """(bake has ended, its exit code when the kernel still holds it) for a job whose bake pid
    is recorded; (False, None) while bake runs or when no pid is recorded."""
    if not record.bake_pid or record.bake_start is None:
        return False, None
    stat = proc_stat(record.bake_pid)
    if stat is None or stat.start != record.bake_start:
        return True, None  # gone, and reaped by its supervisor
    if stat.state not in ("Z", "X"):
        return False, None
    status = _zombie_status(record.bake_pid)
    if status is None:
        return True, None
    if os.WIFSIGNALED(status):
        return True, 128 + os.WTERMSIG(status)
    return True, os.WEXITSTATUS(status)


def _zombie_status(pid: int) -> int | None:
    """`/proc/PID/stat` field 52: the wait status of an exited process (Linux 3.5+)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            raw = fh.read()
        fields = raw[raw.rfind(b")") + 2 :].split()
        return int(fields[52 - 3])
    except (OSError, IndexError, ValueError):
        return None


def _last_sign(record: JobRecord) -> float:
    try:
        return max(record.started_at, os.stat(record.log_path).st_mtime)
    except OSError:
        return record.started_at


def ended_view(record: JobRecord, now: float) -> JobRecord | None:
    """For an unfinished job whose supervisor lives: what a reader can say once bake has
    ended (its outcome slot, else what /proc says); None while bake runs."""
    kept = read_outcome(record.path)
    if kept is not None:
        return with_kept_outcome(record, kept)
    early = _read_slot(record.path) or {}
    signalled = early.get("signalled") is True
    code = early.get("exit_code")
    if isinstance(code, int) and isinstance(early.get("ended_at"), int | float):
        ended_at = float(early["ended_at"])
    else:
        ended, code = bake_exit(record)
        if not ended:
            return None
        ended_at = _last_sign(record)  # bake ended after its last output
    if now - ended_at < SAY_ENDED_AFTER:
        return None  # its supervisor is recording the outcome now
    now = ended_at
    said = f"ended; outcome not yet recorded: {why_not_recorded(record)}"
    if code is None:
        # the state word cannot be known: `lost` says so (never `running`); the supervisor
        # (or a later reader, from the outcome slot) still records the true one
        return replace(
            record, state=JobState.LOST, ended_at=now, message=f"{said}; exit code unknown"
        )
    if record.cancel_requested_at is not None or signalled:
        state = JobState.CANCELLED
    else:
        state = JobState.SUCCEEDED if code == 0 else JobState.FAILED
    return replace(
        record,
        state=state,
        exit_code=code,
        ended_at=now,
        message=f"{said}; bake exit code {code}",
    )


__all__ = [
    "OutcomeSlot",
    "bake_exit",
    "ended_view",
    "read_outcome",
    "why_not_recorded",
    "with_kept_outcome",
]
