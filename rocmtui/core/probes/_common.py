"""Helpers every probe shares: one-line reasons, deadlines, and abandonable threads.

The docker SDK and psutil are blocking. A blocking call that hangs (an ssh:// host that never
answers, a socket that accepts and stays silent, a dead NFS mount) cannot be cancelled in
Python, so each one runs in a thread of its own that the caller *abandons* at the deadline:
the awaiting coroutine returns on time and the thread finishes (or not) on its own. To keep
a pile of stuck threads from growing without bound, `ThreadGate` runs at most one thread per
key (one per node): while a key's previous thread is still stuck, no new one is started and
the caller is told how long it has been stuck.
"""

from __future__ import annotations

import _thread
import asyncio
import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


class Stuck(Exception):
    """A key's previous thread has not come back; no new one was started."""

    def __init__(self, since: float) -> None:
        self.since = since  # monotonic time the stuck thread started
        super().__init__(f"stuck since {since}")


@dataclass
class _Running:
    started: float  # monotonic; the entry exists exactly while the thread runs


class ThreadGate:
    """Runs blocking calls in threads of their own, at most one in flight per key.

    The threads are daemonic: the process never waits for an abandoned one at exit.

    `await gate.run(key, fn, timeout)` returns fn's result, raises what fn raised, raises
    `TimeoutError` when fn has not finished after `timeout` seconds (the thread is abandoned,
    not killed; `on_abandon` may unblock it, e.g. by killing an ssh child), or raises `Stuck`
    when the key's previous thread is still running. The number of live threads is bounded
    by the number of distinct keys.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, _Running] = {}

    def stuck_since(self, key: str) -> float | None:
        """Monotonic start time of `key`'s thread if one is still running."""
        with self._lock:
            running = self._running.get(key)
            return running.started if running else None

    def in_flight(self) -> int:
        """How many threads this gate has running now (stuck ones included)."""
        with self._lock:
            return len(self._running)

    async def run(
        self,
        key: str,
        fn: Callable[[], T],
        timeout: float,
        on_abandon: Callable[[], None] | None = None,
    ) -> T:
        """Run `fn` in a thread under `timeout`; see the class docstring."""
        future: concurrent.futures.Future[T] = concurrent.futures.Future()

        def body() -> None:
            # The key is released before the answer is delivered: the awaiting side may ask
            # again the moment it has the answer, and must not find this finished thread
            # still registered (it was reported `Stuck`, a node `down`, on a busy machine).
            try:
                result = fn()
            except BaseException as exc:  # delivered to the awaiting side
                release()
                # InvalidStateError: the caller gave up at the same moment
                with contextlib.suppress(concurrent.futures.InvalidStateError):
                    future.set_exception(exc)
            else:
                release()
                with contextlib.suppress(concurrent.futures.InvalidStateError):
                    future.set_result(result)

        def release() -> None:
            with self._lock:
                if self._running.get(key) is running:
                    del self._running[key]

        with self._lock:
            previous = self._running.get(key)
            if previous is not None:
                raise Stuck(previous.started)
            running = _Running(time.monotonic())
            self._running[key] = running
        # The low-level start does not wait for the new thread to be scheduled, which
        # `threading.Thread.start` does (~2 ms each under GIL contention, x100 nodes).
        _thread.start_new_thread(body, ())
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), max(0.0, timeout))
        except TimeoutError:
            if on_abandon is not None:
                on_abandon()
            raise


def remaining(deadline_at: float) -> float:
    """Seconds left until the monotonic `deadline_at` (never negative)."""
    return max(0.0, deadline_at - time.monotonic())
