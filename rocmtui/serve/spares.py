"""Consoles started before a browser asks for one.

A console's own start (Python, Textual, rocmtui, attaching to the monitor: ~0.3 s of CPU on a
quiet machine, seconds on a loaded one) is most of a page's wait for the fleet. The server
keeps `count` consoles started and attached, their first screen waiting in their pipe; a new
session takes one (it is resized to the browser's window at once) and another is started
behind it. Spares are not sessions: they count against no limit and no idle timeout, and end
with the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable

from rocmtui.serve.session import ConsoleSession

log = logging.getLogger("rocmtui.serve")
SPARE_SIZE = (120, 40)  # until the browser says its size


class SparePool:
    """Up to `count` started consoles, made by `make`."""

    def __init__(self, count: int, make: Callable[[], ConsoleSession]) -> None:
        self.count = count
        self.make = make
        self.ready: list[ConsoleSession] = []
        self._filling: asyncio.Task[None] | None = None
        self._closed = False
        self._reaping: set[asyncio.Task[None]] = set()

    def fill(self) -> None:
        """Start consoles until `count` wait (in the background)."""
        if self._closed or self.count < 1 or (self._filling and not self._filling.done()):
            return
        self._filling = asyncio.create_task(self._fill())

    async def _fill(self) -> None:
        while not self._closed and len(self.ready) < self.count:
            spare = self.make()
            try:
                await spare.prestart(*SPARE_SIZE)
            except OSError as exc:
                log.warning("a spare console could not start: %s", exc)
                return
            log.info("spare console pid %s started", spare.pid)
            self.ready.append(spare)

    def take(self) -> ConsoleSession | None:
        """A started console, if one is alive (and another is started behind it)."""
        while self.ready:
            spare = self.ready.pop(0)
            if spare.alive():
                self.fill()
                return spare
            reaping = asyncio.create_task(spare.stop())  # a dead spare: reaped, its group too
            self._reaping.add(reaping)
            reaping.add_done_callback(self._reaping.discard)
        self.fill()
        return None

    async def close(self) -> None:
        """End every spare (the server stops)."""
        self._closed = True
        if self._filling is not None:
            self._filling.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._filling
        spares, self.ready = self.ready, []
        await asyncio.gather(*(s.stop() for s in spares), return_exceptions=True)
