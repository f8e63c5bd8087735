"""Files a console delivers to the browser (the palette's Screenshot): fetched, or dropped.

textual-serve's download manager keeps a delivery until the browser fetches it, and the
console keeps the file's bytes until then; a delivery nobody fetches (a page that never asks,
a route that is missing) is held until the session ends, one more with every screenshot.
`BoundedDownloads` drops a delivery not fetched within `DELIVERY_KEEP` seconds: it reads it
to the end and discards it, which is what makes the console let go of the bytes too.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from typing import Any

from textual_serve.download_manager import DownloadManager

log = logging.getLogger("rocmtui.serve")
DELIVERY_KEEP = 10.0  # seconds; the page asks for a delivery as soon as it is told of it


class BoundedDownloads(DownloadManager):
    """textual-serve's download manager, with deliveries nobody fetches dropped."""

    def __init__(self, keep: float = DELIVERY_KEEP) -> None:
        super().__init__()
        self.keep = keep
        self.dropped = 0
        self._fetching: set[str] = set()
        self._timers: set[asyncio.Task[None]] = set()

    async def create_download(self, **kwargs: Any) -> None:
        """Record the delivery, and its deadline."""
        await super().create_download(**kwargs)
        timer = asyncio.create_task(self._drop_later(str(kwargs["delivery_key"])))
        self._timers.add(timer)
        timer.add_done_callback(self._timers.discard)

    async def download(self, delivery_key: str) -> AsyncGenerator[bytes, None]:
        """The delivery's chunks (a fetch in progress is never dropped under it)."""
        self._fetching.add(delivery_key)
        try:
            async for chunk in super().download(delivery_key):
                yield chunk
        finally:
            self._fetching.discard(delivery_key)

    async def _drop_later(self, key: str) -> None:
        await asyncio.sleep(self.keep)
        if key in self._fetching:
            return
        try:
            await self.get_download_metadata(key)
        except KeyError:
            return  # fetched
        async for _chunk in self.download(key):
            pass
        self.dropped += 1
        log.info("a delivery not fetched within %g s was dropped", self.keep)
