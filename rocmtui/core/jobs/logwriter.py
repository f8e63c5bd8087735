"""The job's log as the supervisor writes it: bake's output, kept until the disk refuses it.

bake writes into a pipe the supervisor drains; this object writes what it reads to the log.
When a write fails (a full disk above all: a PyTorch log on a full /var), the build must go on
and its outcome must still be recorded, so:

- the log says where and why it stops holding lines: a marker line written into a page the log
  took for itself at the start (`marker_room`, given back just before);
- output is still read and dropped (bake never blocks on a full pipe), and the log's time stamp
  still moves (a dropping build is not a silent one: it must not read as stalled);
- the job's `Reserve` (space taken at start) is given back at once: that room is the outcome's
  (the record's "log stopped" line, bake's metadata file, the outcome itself), never the log's.
  The log holds lines only while the reserve is held: nothing of ours (lines, gap notes, the
  footer) is written into the log while it is released;
- writing resumes, with a line saying how much was not kept, only once the file system has
  `RESUME_FREE` bytes free again *and* the reserve could be taken back first, tried every
  `RETRY_SECONDS`; a later full disk then releases it again;
- `stopped_line` is the record's "log stopped: ..." line (said at once), `incomplete` its
  "log incomplete: disk full at ..." line (said with the outcome);
- the last `DROPPED_TAIL` bytes of what was dropped stay in memory (`dropped_tail`): a build
  that fails while the log is stopped is still told apart by its failed step.
"""

from __future__ import annotations

import contextlib
import errno
import os
import time
from pathlib import Path

from rocmtui.core.text.units import fmt_utc_stamp

RETRY_SECONDS = 5.0
TOUCH_SECONDS = 1.0
RESERVE_BYTES = 256 * 1024  # the outcome (sqlite WAL pages, record.json) and bake's metadata
MARKER_BYTES = 4096  # the log's own room for its stop marker
RESUME_FREE = 4 * RESERVE_BYTES
DROPPED_TAIL = 512 * 1024  # the end of the output not kept, for the failed step
_FULL = {errno.ENOSPC, errno.EDQUOT}


class Reserve:
    """Space taken on the state disk at the job's start, released when the disk fills (and
    taken again before the log resumes)."""

    def __init__(self, path: Path, size: int = RESERVE_BYTES) -> None:
        self.path = path
        self.size = size
        self.held = False
        self.take()

    def take(self) -> bool:
        """Take the space (again); True when it is held."""
        if self.held:
            return True
        path, size = self.path, self.size
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
        except OSError:
            return False
        try:
            os.posix_fallocate(fd, 0, size)
            self.held = True
        except OSError:  # no room even now, or a file system without fallocate
            with contextlib.suppress(OSError):
                os.unlink(path)
        finally:
            os.close(fd)
        return self.held

    def release(self) -> None:
        """Give the space back (once)."""
        if self.held:
            with contextlib.suppress(OSError):
                os.unlink(self.path)
            self.held = False


class LogWriter:
    """Writes bake's output to the log on `fd` (see the module doc)."""

    def __init__(
        self, fd: int, reserve: Reserve | None = None, marker_room: Reserve | None = None
    ) -> None:
        self.fd = fd
        self.reserve = reserve
        self.marker_room = marker_room
        self.kept = 0  # bytes of output written
        self.dropped = 0  # bytes of output not kept, in all
        self.first_stop: tuple[float, str] | None = None  # when and why it first stopped
        self._stopped_at: float | None = None  # while not holding lines
        self._dropped_now = 0
        self.dropped_tail = bytearray()  # the last DROPPED_TAIL bytes not kept (memory only)
        self._next_try = 0.0
        self._touched = 0.0

    @property
    def holding(self) -> bool:
        """True while output reaches the log."""
        return self._stopped_at is None

    @property
    def stopped_line(self) -> str | None:
        """The record's line while the log is not holding lines (None while it is)."""
        if self._stopped_at is None or self.first_stop is None:
            return None
        why = self.first_stop[1]
        where = "state disk full" if why == "disk full" else f"state disk: {why}"
        return f"log stopped: {where} at {fmt_utc_stamp(self._stopped_at)}; the build goes on"

    @property
    def incomplete(self) -> str | None:
        """One line for the job's record when some output was not kept."""
        if self.first_stop is None:
            return None
        when, why = self.first_stop
        kept = f"{self.dropped} bytes of output not kept"
        return f"log incomplete: {why} at {fmt_utc_stamp(when)} ({kept})"

    def write(self, data: bytes) -> None:
        """Write bake's output, or drop it while the log cannot take it."""
        if not data:
            return
        if not self.holding and not self._resume():
            self.dropped += len(data)
            self._dropped_now += len(data)
            self._keep_tail(data)
            self._touch()
            return
        try:
            self._write_all(data)
        except _Short as short:
            self._stop(short.cause, len(data) - short.written)

    def _keep_tail(self, data: bytes) -> None:
        self.dropped_tail += data[-DROPPED_TAIL:]
        if len(self.dropped_tail) > DROPPED_TAIL:
            del self.dropped_tail[: len(self.dropped_tail) - DROPPED_TAIL]

    def note(self, line: str) -> bool:
        """A line of our own (the footer); best effort. True when it was written. While the
        log is stopped it is written only if the log can resume (never into the reserve)."""
        if not self.holding and not self._resume(force=True):
            return False
        try:
            self._write_all(f"\n# rocmtui: {line}\n".encode())
        except _Short:
            return False
        return True

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        written = 0
        while written < len(view):
            try:
                n = os.write(self.fd, view[written:])
            except InterruptedError:
                continue
            except OSError as exc:
                raise _Short(written, exc) from None
            written += n
            self.kept += n

    def _stop(self, cause: OSError, lost: int) -> None:
        now = time.time()
        why = "disk full" if cause.errno in _FULL else (cause.strerror or str(cause))
        if self.first_stop is None:
            self.first_stop = (now, why)
        self._stopped_at = now
        self._dropped_now = lost
        self.dropped += lost
        self._next_try = time.monotonic() + RETRY_SECONDS
        marker = (
            f"\n# rocmtui: the log stops holding lines here: {why} at {fmt_utc_stamp(now)} after "
            f"{self.kept} bytes; the build goes on, and this log resumes once there is room\n"
        )
        if self.marker_room is not None:
            self.marker_room.release()  # the log's own page: room for the marker
        with contextlib.suppress(OSError):
            os.write(self.fd, marker.encode())
        if self.reserve is not None:
            # after the marker: the room is the outcome's, and nothing of the log goes into it
            self.reserve.release()

    def _resume(self, force: bool = False) -> bool:
        """Start holding lines again if the disk has room (tried every RETRY_SECONDS; `force`:
        now) and the reserve can be taken back first."""
        if not force and time.monotonic() < self._next_try:
            return False
        self._next_try = time.monotonic() + RETRY_SECONDS
        try:
            st = os.fstatvfs(self.fd)
            room = st.f_bavail * st.f_frsize
        except OSError:
            room = 0
        if room < RESUME_FREE:
            return False
        if self.reserve is not None and not self.reserve.take():
            return False  # the outcome's room comes first
        if self.marker_room is not None:
            self.marker_room.take()  # for the next stop's marker (best effort)
        assert self._stopped_at is not None
        gap = (
            f"\n# rocmtui: {self._dropped_now} bytes of output were not kept from "
            f"{fmt_utc_stamp(self._stopped_at)} to {fmt_utc_stamp(time.time())}\n"
        )
        try:
            os.write(self.fd, gap.encode())
        except OSError:
            if self.reserve is not None:
                self.reserve.release()
            return False
        self._stopped_at = None
        self._dropped_now = 0
        return True

    def _touch(self) -> None:
        """Move the log's modification time: the build is not silent, only not kept."""
        now = time.monotonic()
        if now - self._touched >= TOUCH_SECONDS:
            self._touched = now
            with contextlib.suppress(OSError, NotImplementedError):
                os.utime(self.fd)


class _Short(Exception):
    """A write that stopped part-way: how much of the data went out, and why not the rest."""

    def __init__(self, written: int, cause: OSError) -> None:
        super().__init__(cause)
        self.written = written
        self.cause = cause
