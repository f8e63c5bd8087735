"""The loop behind the published screen: the matrix and versions, slowly and on demand.

It runs in a named thread worker of the screen and asks `matrix_child` (a child process) for a
new answer when the screen first opens, when the operator asks (`ctrl+r`), when a pushing job
ends (the fleet screen says so), and otherwise every `[matrix] refresh_seconds` (300 by
default): never one registry request per tag per repaint. Each round is announced and its
answer (or why there is none) posted as a message; the screen renders the last answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from textual.message import Message
from textual.worker import get_current_worker

from rocmtui.console.backend.matrix_child import Child, Published, PublishedFailed

Post = Callable[[Message], object]
PUSH_SETTLE = 1.0  # s after a push ends: its supervisor's registry check goes first


class PublishedUpdated(Message):
    """A new matrix (and version check) came."""

    def __init__(self, published: Published) -> None:
        super().__init__()
        self.published = published

    def can_replace(self, message: Message) -> bool:
        """Only the newest answer matters."""
        return isinstance(message, PublishedUpdated)


class PublishedRound(Message):
    """A round started (`started`) or failed (`error`): the status line says so."""

    def __init__(self, started: float | None = None, error: str | None = None) -> None:
        super().__init__()
        self.started = started
        self.error = error


class MatrixFeed:
    """Owns the wake-up event and the child; the screen runs `loop` as its worker."""

    def __init__(
        self, config_path: object, env: dict[str, str], refresh: float, deadline: float, post: Post
    ) -> None:
        self.config_path = config_path
        self.env = env
        self.refresh = refresh
        self.timeout = deadline * 2 + 60  # bake --print per arch, the fill, the version check
        self.post = post
        self.wake = threading.Event()
        self.stopping = threading.Event()
        self.child = Child()
        self.next_at: float | None = None  # wall time of the next slow round

    def poke(self, delay: float = 0.0) -> None:
        """A round now (or after `delay` seconds)."""
        if delay > 0:
            timer = threading.Timer(delay, self.wake.set)
            timer.daemon = True
            timer.start()
        else:
            self.wake.set()

    def stop(self) -> None:
        """End the loop and kill a running child."""
        self.stopping.set()
        self.wake.set()
        self.child.stop()

    def loop(self) -> None:
        """Rounds until stopped (a worker thread)."""
        worker = get_current_worker()
        while not (self.stopping.is_set() or worker.is_cancelled):
            self.post(PublishedRound(started=time.time()))
            try:
                published = self.child.fetch(self.config_path, self.env, self.timeout)  # type: ignore[arg-type]
            except PublishedFailed as exc:
                if self.stopping.is_set():
                    return
                self.post(PublishedRound(error=str(exc)))
            else:
                self.post(PublishedUpdated(published))
            self.next_at = time.time() + self.refresh
            deadline = time.monotonic() + self.refresh
            while not (self.stopping.is_set() or worker.is_cancelled):
                left = deadline - time.monotonic()
                if left <= 0 or self.wake.wait(min(left, 0.5)):
                    self.wake.clear()
                    break
