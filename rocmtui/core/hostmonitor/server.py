"""The monitor's unix socket: every attached console gets the hello, the latest snapshot at
once, then each new one; a line from a console asks for a round.

A console that reads slowly only ever has the newest snapshot waiting for it (older ones are
dropped, not queued), and one that stops reading for `write_deadline` seconds is let go: no
console can hold the monitor's memory or its loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import Callable

from rocmtui.core.hostmonitor.place import MonitorPlace
from rocmtui.core.hostmonitor.wire import Hello, hello_line

log = logging.getLogger(__name__)

MAX_CONSOLES = 64
REQUEST_LIMIT = 4096  # bytes of one line from a console (it only ever sends newlines)
SOCKET_MODE = 0o660  # the state folder's group may attach; nobody else


class MonitorSocketError(OSError):
    """The socket cannot be made (its text names the path and why)."""


def bind_socket(place: MonitorPlace) -> socket.socket:
    """The listening socket at `place.socket`, replacing a stale one (the caller holds the
    place's lock, so whatever is there was left by a monitor that died). Mode 0660, group of
    the state folder."""
    problem = place.socket_path_problem()
    if problem:
        raise MonitorSocketError(problem)
    path = place.socket
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    old = os.umask(0o177)  # never, not even for an instant, connectable by others
    try:
        sock.bind(str(path))
        os.chmod(path, SOCKET_MODE)
        group = place.folder.stat().st_gid
        if os.stat(path).st_gid != group:
            with contextlib.suppress(PermissionError):  # not a member: the default group stays
                os.chown(path, -1, group)
        sock.listen(MAX_CONSOLES)
    except OSError as exc:
        sock.close()
        raise MonitorSocketError(f"cannot listen on {path}: {exc.strerror or exc}") from None
    finally:
        os.umask(old)
    return sock


class _Console:
    """One attached console: the newest line not yet sent, and its writer."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self.writer = writer
        self.waiting: bytes | None = None
        self.ready = asyncio.Event()

    def offer(self, line: bytes) -> None:
        self.waiting = line  # a newer snapshot replaces one not sent yet
        self.ready.set()

    async def send_loop(self, write_deadline: float) -> None:
        while True:
            await self.ready.wait()
            self.ready.clear()
            line, self.waiting = self.waiting, None
            if line is None:
                continue
            self.writer.write(line)
            await asyncio.wait_for(self.writer.drain(), write_deadline)


class SnapshotHub:
    """Serves the monitor's snapshots to the consoles attached to its socket."""

    def __init__(
        self,
        hello: Callable[[], Hello],
        request_round: Callable[[], None],
        write_deadline: float = 30.0,
    ) -> None:
        self.hello = hello
        self.request_round = request_round
        self.write_deadline = write_deadline
        self.latest: bytes | None = None
        self.consoles: set[_Console] = set()
        self._server: asyncio.base_events.Server | None = None
        self._sessions: set[asyncio.Task[object]] = set()

    @property
    def attached(self) -> int:
        """How many consoles are attached now."""
        return len(self.consoles)

    async def start(self, sock: socket.socket) -> None:
        """Serve on a bound, listening socket (`bind_socket`)."""
        self._server = await asyncio.start_unix_server(
            self._session, sock=sock, limit=REQUEST_LIMIT
        )

    def publish(self, line: bytes) -> None:
        """A new snapshot line for every console (and for the next to attach)."""
        self.latest = line
        for console in self.consoles:
            console.offer(line)

    async def _session(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if len(self.consoles) >= MAX_CONSOLES:
            log.warning("refused a console: %d attached already", MAX_CONSOLES)
            writer.close()
            return
        me = asyncio.current_task()
        if me is not None:
            self._sessions.add(me)
        console = _Console(writer)
        self.consoles.add(console)
        writer.write(hello_line(self.hello()))
        if self.latest is not None:
            console.offer(self.latest)
        sender = asyncio.ensure_future(console.send_loop(self.write_deadline))
        listener = asyncio.ensure_future(self._requests(reader))
        try:
            await asyncio.wait({sender, listener}, return_when=asyncio.FIRST_COMPLETED)
        finally:  # nothing awaited here: a session cancelled at shutdown ends as cleanly
            self.consoles.discard(console)
            for task in (sender, listener):
                task.cancel()
                task.add_done_callback(_retrieve)
            writer.close()
            if me is not None:
                self._sessions.discard(me)

    async def _requests(self, reader: asyncio.StreamReader) -> None:
        """Each line asks for a round; the end of input (or a line too long) ends the session."""
        with contextlib.suppress(ConnectionError, ValueError, asyncio.LimitOverrunError):
            while await reader.readline():
                self.request_round()

    async def close(self) -> None:
        """Stop accepting and end every session (consoles see the end of input at once)."""
        if self._server is not None:
            self._server.close()
        for console in list(self.consoles):
            console.writer.close()
        if self._sessions:
            await asyncio.wait(set(self._sessions), timeout=2.0)


def _retrieve(task: asyncio.Future[None]) -> None:
    """A console gone mid-write is no news: its error is read so asyncio does not log it."""
    if not task.cancelled():
        task.exception()
