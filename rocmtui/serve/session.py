"""One browser session's console process.

textual-serve's AppService starts the command through a shell and, to stop, asks the app to
quit and waits for it without a deadline: a console that does not answer would be kept for
ever, and a shell between the server and the console leaves the console behind when the shell
is killed. Here the console is started from an argument list in a session (process group) of
its own, and stopping it asks, waits `grace` seconds, then ends the whole group: SIGTERM, then
SIGKILL. Whatever the console started (its own monitor child, when the host's is gone) goes
with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import signal
import time
from asyncio.subprocess import Process
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from textual_serve.app_service import AppService

PR_SET_PDEATHSIG = 1
_PRCTL = ctypes.CDLL(None, use_errno=True).prctl  # looked up here: no dlopen after a fork
_SERVER = os.getpid()


def dying_with_server(sig: signal.Signals) -> Callable[[], None]:
    """For a child, between fork and exec: `sig` when the server dies, even by SIGKILL
    (otherwise its consoles and monitor were orphans, measured: all three left). A console
    takes SIGKILL: it keeps nothing (builds are detached), and Textual outlived a SIGTERM."""

    def arm() -> None:
        _PRCTL(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != _SERVER:  # the server died before the line above
            os.kill(os.getpid(), sig)

    return arm


class ConsoleSession(AppService):
    """A console process serving one websocket."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        grace: float = 3.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(" ".join(argv), **kwargs)
        self.argv = list(argv)
        self.extra_env = dict(env)
        self.grace = grace
        self.last_input = time.monotonic()
        self.ended = asyncio.Event()
        self._stopping = asyncio.Lock()  # the websocket's end and the server's shutdown race

    @property
    def pid(self) -> int | None:
        """The console's pid (also its process group's id), once started."""
        return None if self._process is None else self._process.pid

    def touched(self) -> None:
        """The browser sent a key, a click or a resize: the session is not idle."""
        self.last_input = time.monotonic()

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        environment = super()._build_environment(width, height)
        environment.update(self.extra_env)
        return environment

    async def _open_app_process(self, width: int = 80, height: int = 24) -> Process:
        environment = self._build_environment(width=width, height=height)
        self._process = process = await asyncio.create_subprocess_exec(
            *self.argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=environment,
            start_new_session=True,  # its own group: stopped whole, never left behind
            preexec_fn=dying_with_server(signal.SIGKILL),  # forked from the loop thread
        )
        assert process.stdin is not None
        self._stdin = process.stdin
        return process

    async def prestart(self, width: int, height: int) -> None:
        """Start the console before any browser asks (a spare): its output waits in the pipe
        until `adopt` gives it a websocket."""
        await self._open_app_process(width, height)

    async def adopt(self, websocket: Any, width: int, height: int) -> None:
        """Give a spare its browser: output flows from now on, at the browser's size."""
        self.remote_write_bytes = websocket.send_bytes
        self.remote_write_str = websocket.send_str
        self.remote_close = websocket.close
        self.last_input = time.monotonic()
        self._task = asyncio.create_task(self.run())
        await self.set_terminal_size(width, height)

    def alive(self) -> bool:
        """True while its process runs."""
        return self._process is not None and self._process.returncode is None

    async def stop(self) -> None:
        """Ask the console to quit; after `grace` seconds end its process group."""
        async with self._stopping:
            if self._task is None and self._process is not None:  # a spare nobody took
                self._task = asyncio.create_task(self.run())
            await self._stop()

    async def _stop(self) -> None:
        process = self._process
        if process is None or self.ended.is_set():
            return
        with contextlib.suppress(TimeoutError, ConnectionError, OSError):
            await asyncio.wait_for(super().stop(), self.grace)
            await asyncio.wait_for(process.wait(), self.grace)
        for sig in (signal.SIGTERM, signal.SIGKILL):
            if process.returncode is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, sig)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(process.wait(), self.grace)
        # anything the console left in its group (a probe child of its own) goes too
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        self.ended.set()
