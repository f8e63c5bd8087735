"""What the operator asks for runs on a thread of its own, never on asyncio's default pool.

Textual's thread workers run on the event loop's default executor, min(32, cores + 4) threads
(six on a 2-core host), shared by every view that reads in a thread: the job store, the bake
file, log panes following their files. When views hold every one of those threads, anything
else submitted there waits in the queue: a bake dialog stuck on "resolving", a Start or a
Cancel that ran a minute late. An action the operator asked for (resolve the plan they are
looking at, start a build, cancel one) acts at once instead: `run_on_own_thread` starts a new
thread for it and the caller awaits the result on the loop. Actions are few and short-lived,
so a thread each costs nothing a pool would save.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


async def run_on_own_thread(call: Callable[[], T], *, name: str, daemon: bool = False) -> T:
    """Run `call` on a new thread named `name` and await its result (or its exception).

    `daemon=False` (starting or cancelling a build) lets the call finish even when the console
    exits meanwhile; a read that only feeds the screen may be a daemon. If the awaiting
    worker is cancelled the thread still runs to its end; its result is dropped.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[Any], None], value: Any) -> None:
        if not done.done():  # the awaiting worker may have been cancelled meanwhile
            outcome(value)

    def run() -> None:
        outcome: Callable[[Any], None]
        try:
            value: Any = call()
            outcome = done.set_result
        except BaseException as exc:  # handed to the awaiting coroutine, raised there
            value, outcome = exc, done.set_exception
        with contextlib.suppress(RuntimeError):  # the loop has closed: nobody is waiting
            loop.call_soon_threadsafe(settle, outcome, value)

    threading.Thread(target=run, name=name, daemon=daemon).start()
    return await done
