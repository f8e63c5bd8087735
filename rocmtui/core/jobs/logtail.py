"""Follow a job's log from any process: bounded reads, truncation and rotation survived.

`FileTail` reads a file by name in chunks of at most `chunk_size` bytes, so memory does not
grow with the log (lines are cut to size by the sanitiser's `StreamDecoder`). Like `tail -F`:
- truncation (the file shrinks below what was read): start again from its beginning;
- rotation (the name now points at another inode): read the old file to its end, then the
  new one from its beginning.

`follow_job` yields chunks until the job ends (its outcome recorded or its supervisor gone),
then reads what is left and stops.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from rocmtui.core.jobs import locks
from rocmtui.core.jobs.record import JobRecord
from rocmtui.core.jobs.store import JobStore
from rocmtui.core.logs.tail import at_path, replaced

CHUNK_SIZE = 256 * 1024
POLL_SECONDS = 0.1
END_CHECK_SECONDS = 0.5


class FileTail:
    """Incremental reader of one log file by name (see the module doc)."""

    def __init__(
        self,
        path: Path,
        chunk_size: int = CHUNK_SIZE,
        on_event: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.chunk_size = chunk_size
        self.on_event = on_event
        self.offset = 0
        self._fd: int | None = None
        self._ino: tuple[int, int] | None = None

    def close(self) -> None:
        """Close the file (the follower can be used again; it reopens by name)."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FileTail:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _event(self, what: str) -> None:
        if self.on_event is not None:
            self.on_event(what)

    def _open(self) -> bool:
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return False
        info = os.fstat(fd)
        self._fd, self._ino, self.offset = fd, (info.st_dev, info.st_ino), 0
        return True

    def read(self) -> bytes:
        """Up to `chunk_size` new bytes (b"" when there is nothing new right now)."""
        if self._fd is None and not self._open():
            return b""
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size < self.offset:
            self._event("truncated")
            self.offset = 0
        data = os.pread(self._fd, self.chunk_size, self.offset)
        if data:
            self.offset += len(data)
            return data
        # at the end of the file we hold: has the name moved on to a new file?
        try:
            found, gone = at_path(self.path, self._fd)
        except OSError:
            return b""
        if gone:
            return b""  # removed, maybe about to be re-created: keep the old one for now
        if self._ino is None or replaced(found, self._ino):
            self._event("rotated")
            self.close()
            self._open()
            return self.read()
        return b""


def follow_job(
    store: JobStore,
    record: JobRecord,
    follow: bool = True,
    poll: float = POLL_SECONDS,
    chunk_size: int = CHUNK_SIZE,
    on_event: Callable[[str], None] | None = None,
) -> Iterator[bytes]:
    """Chunks of the job's log from its start. With `follow`, wait for more until the job
    ends (outcome recorded, or its supervisor gone), then drain and stop."""
    ended = record.ended_at is not None or not follow
    last_check = time.monotonic()
    with FileTail(record.log_path, chunk_size, on_event) as reader:
        while True:
            data = reader.read()
            if data:
                yield data
                continue
            if ended:
                return
            now = time.monotonic()
            if now - last_check >= END_CHECK_SECONDS:
                last_check = now
                ended = _job_ended(record)
                if ended:
                    continue  # one more pass reads what was written before the end
            time.sleep(poll)


def _job_ended(record: JobRecord) -> bool:
    """True once nobody holds the job's lock. The launcher takes the lock before the job is
    visible, so a free lock means the supervisor has finished (or is gone: lost)."""
    return not locks.is_locked(record.lock_path)
