"""What one client may ask of `rocmtui serve`, bounded: which Host it may name, how large a
window, how many console starts a second, how many password checks at once.

- Host: the Origin check compares a websocket's Origin with the request's own Host, and a page
  of attacker.example whose name is rebound to 127.0.0.1 sends a Host and an Origin that agree
  (DNS rebinding through the documented `ssh -L` tunnel). So every route first refuses a Host
  outside an allowlist: the bind address, localhost, 127.0.0.1, [::1] and the names the
  operator adds (`--allow-host`). The port is not compared: a tunnel may use another.
- Window sizes come from the page (query string, resize messages): a million columns would be
  a million-column screen in the console. Clamped to `MAX_COLUMNS` x `MAX_ROWS`.
- Console starts: a client opening sockets in a loop costs a process each; a token bucket per
  client address refuses it (429) past a burst, before anything starts.
- scrypt checks take ~16 MB and tens of ms each on a worker thread: `LimitedChecks` lets a
  few run at once, the rest wait.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

T = TypeVar("T")

MAX_COLUMNS = 500  # a 4K screen at a small font is ~480 columns
MAX_ROWS = 200
DEFAULT_SIZE = (80, 24)
START_BURST = 8.0  # console starts a client may make at once (tabs opened, a page reloaded)
START_PER_SECOND = 0.2  # ... and then one every 5 s (a console start costs ~1 s of a core)
CLIENTS_KEPT = 1024  # buckets remembered (the oldest are forgotten past this)
SAY_EVERY = 10.0  # seconds between log lines about one client's refused starts
CHECKS_AT_ONCE = 2  # scrypt checks running at once


def _number(value: object, default: int) -> int:
    try:
        return int(str(value))
    except ValueError:
        return default


def clamp_size(width: object, height: object) -> tuple[int, int]:
    """A window size from the page, as integers within 1..MAX (80x24 for what is no number)."""
    columns = _number(width, DEFAULT_SIZE[0])
    rows = _number(height, DEFAULT_SIZE[1])
    return max(1, min(columns, MAX_COLUMNS)), max(1, min(rows, MAX_ROWS))


def host_name(host: str | None) -> str:
    """The name in a Host header, lower case, without its port (`[::1]:80` -> `::1`)."""
    text = (host or "").strip().lower()
    if text.startswith("["):
        return text[1 : text.find("]")] if "]" in text else ""
    if text.count(":") > 1:
        return text  # a bare IPv6 address (a bind address, not a Host header)
    name, _, port = text.rpartition(":")
    return name if name and port.isdigit() else text


class HostAllowlist:
    """The Host names the server answers to."""

    LOCAL = ("localhost", "127.0.0.1", "::1")

    def __init__(self, bind: str, extra: Iterable[str] = ()) -> None:
        self.names = frozenset(
            host_name(name) or name.lower() for name in (*self.LOCAL, bind, *extra) if name
        ) - {"0.0.0.0", "::"}  # a wildcard bind is no name a browser should use

    def allows(self, host: str | None) -> bool:
        """True when the request's Host names this server."""
        return host_name(host) in self.names


class StartRate:
    """A token bucket per client address: `burst` starts at once, `per_second` after. A
    refused attempt forfeits what refilled since the client's last attempt: a client that
    keeps trying while refused (a flood) gets no start at all until it pauses, a person who
    waits a few seconds gets one."""

    def __init__(self, burst: float = START_BURST, per_second: float = START_PER_SECOND) -> None:
        self.burst = burst
        self.per_second = per_second
        self._buckets: dict[str, tuple[float, float]] = {}  # client -> (tokens, when)
        self._said: dict[str, tuple[float, int]] = {}  # client -> (last line, refused since)

    def allow(self, client: str | None, now: float | None = None) -> bool:
        """Take one start for `client`; False when it has none left."""
        now = time.monotonic() if now is None else now
        key = client or "?"
        held, when = self._buckets.pop(key, (self.burst, now))
        tokens = min(self.burst, held + (now - when) * self.per_second)
        allowed = tokens >= 1.0
        self._buckets[key] = (tokens - 1.0 if allowed else held, now)  # newest last
        while len(self._buckets) > CLIENTS_KEPT:
            del self._buckets[next(iter(self._buckets))]
        return allowed

    def worth_saying(self, client: str | None, now: float | None = None) -> int | None:
        """After a refusal: how many of `client`'s starts were refused since the last log line
        about it, when one is due now (one per `SAY_EVERY` s), else None: a flood of 200 a
        second must not be 200 log lines a second."""
        now = time.monotonic() if now is None else now
        key = client or "?"
        last, count = self._said.pop(key, (-SAY_EVERY, 0))
        count += 1
        if now - last >= SAY_EVERY:
            self._said[key] = (now, 0)
        else:
            self._said[key] = (last, count)
            count = 0
        while len(self._said) > CLIENTS_KEPT:
            del self._said[next(iter(self._said))]
        return count or None


class LimitedChecks:
    """Blocking checks (scrypt) on worker threads, at most `limit` at once."""

    def __init__(self, limit: int = CHECKS_AT_ONCE) -> None:
        self._slots = asyncio.Semaphore(limit)

    async def run(self, check: Callable[..., T], *args: object) -> T:
        async with self._slots:
            return await asyncio.to_thread(check, *args)
