"""Follow a key to the core: the owners a request passes on its way, across Textual's message
queues, screens' and workers' tasks, and threads (`install`).

A stack trace ends where a message is queued, a task created or a thread started; the path of
a key does not. So once `install`ed, each of those carriers records, on what it carries, the
path so far: a message the owners on the stack that posted it (and the path of the
message being handled when it was posted), a task, a thread or a callback queued with
`call_next` (how a dismissed screen's result reaches its callback) the same at its creation. A
handler runs with its message's path, a task's code with its creator's, a thread's with its
starter's; `path_here()` adds the owners on the stack now.

An owner is the class a function of `rocmtui` is defined in (`FleetScreen`, `RocmTui`,
`BakeDialog`, `FleetBackend` ...), or its module for a plain function; closures and lambdas
belong to the function they are written in. Textual, asyncio and threading are carriers, not
owners, and so is `rocmtui.console.backend.userthreads` (it starts a thread for its caller, as
a Textual worker starts a task). A hop is one owner handing on to the next.
"""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from textual.message import Message
from textual.message_pump import MessagePump
from textual.worker import Worker

import rocmtui
from rocmtui.console.textual_private import message_hooks

PACKAGE = str(Path(rocmtui.__file__).resolve().parent)
CARRIERS = frozenset({"rocmtui.console.backend.userthreads"})
PATH: ContextVar[tuple[str, ...]] = ContextVar("hop_path", default=())


def owner(frame: FrameType) -> str | None:
    """The owner of `frame`'s code, None outside `rocmtui` and for a carrier."""
    if not frame.f_code.co_filename.startswith(PACKAGE):
        return None
    module = str(frame.f_globals.get("__name__", ""))
    if module in CARRIERS:
        return None
    head = frame.f_code.co_qualname.split(".")[0]
    return head if isinstance(frame.f_globals.get(head), type) else module


def path_here(skip: int = 1) -> tuple[str, ...]:
    """The path that led here: the carried one, then the owners on this stack, outermost
    first, each once in a row."""
    frames: list[FrameType] = []
    frame: FrameType | None = sys._getframe(skip)
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    found = [name for name in map(owner, reversed(frames)) if name is not None]
    return collapse([*(PATH.get() or thread_path()), *found])


def collapse(names: list[str]) -> tuple[str, ...]:
    """Consecutive calls within one owner are one stop on the path."""
    out: list[str] = []
    for name in names:
        if not out or out[-1] != name:
            out.append(name)
    return tuple(out)


@contextmanager
def carried(path: tuple[str, ...]) -> Iterator[None]:
    token = PATH.set(path)
    try:
        yield
    finally:
        PATH.reset(token)


def install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make Textual's message queues, tasks and workers, and threads carry the path."""
    post = MessagePump.post_message
    dispatch, start_messages, start_worker = message_hooks()
    start_thread = threading.Thread.start
    call_next = MessagePump.call_next

    def post_message(self: MessagePump, message: Message) -> bool:
        message._hop_path = path_here(2)  # type: ignore[attr-defined]
        return post(self, message)

    async def dispatch_message(self: MessagePump, message: Message) -> None:
        with carried(getattr(message, "_hop_path", PATH.get())):
            await dispatch(self, message)

    def started_messages(self: MessagePump) -> None:
        with carried(path_here(2)):
            start_messages(self)

    def started_worker(self: Worker[Any], *args: Any, **kwargs: Any) -> None:
        with carried(path_here(2)):
            start_worker(self, *args, **kwargs)

    def called_next(self: MessagePump, callback: Any, *args: Any, **kwargs: Any) -> None:
        path = path_here(2)  # a screen's result goes to its requester this way, not as a post

        def carried_callback(*inner: Any, **named: Any) -> Any:
            with carried(path):
                result = callback(*inner, **named)
            if not inspect.isawaitable(result):
                return result

            async def awaited() -> Any:
                with carried(path):
                    return await result

            return awaited()

        call_next(self, carried_callback, *args, **kwargs)

    def thread_start(self: threading.Thread) -> None:
        self._hop_path = path_here(2)  # type: ignore[attr-defined]
        start_thread(self)

    monkeypatch.setattr(MessagePump, "post_message", post_message)
    monkeypatch.setattr(MessagePump, "_dispatch_message", dispatch_message)
    monkeypatch.setattr(MessagePump, "_start_messages", started_messages)
    monkeypatch.setattr(Worker, "_start", started_worker)
    monkeypatch.setattr(MessagePump, "call_next", called_next)
    monkeypatch.setattr(threading.Thread, "start", thread_start)


def thread_path() -> tuple[str, ...]:
    """The path that started this thread (empty on one started before `install`: a thread
    runs in a fresh context, so the path comes with the thread object)."""
    path: tuple[str, ...] = getattr(threading.current_thread(), "_hop_path", ())
    return path


def arrival(
    monkeypatch: pytest.MonkeyPatch, module: Any, name: str, paths: list[tuple[str, ...]]
) -> None:
    """Record in `paths` the path to each call of `module.name` (a function of the core),
    which then raises: the test is about the way there, not what the call does."""
    endpoint = f"{module.__name__}.{name}"

    def arrived(*args: Any, **kwargs: Any) -> Any:
        paths.append(collapse([*path_here(2), endpoint]))
        raise RuntimeError(f"{endpoint}: reached (the hop test stops here)")

    monkeypatch.setattr(module, name, arrived)
