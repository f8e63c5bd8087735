"""Drive a terminal program in tmux for the benchmarks: start it, read its screen, type, time.

A private tmux server (`-L rocmtui-bench-PID`) so no one else's sessions are touched; `close()`
kills only that server. Timing is from `start()` (or a mark) to the first `capture-pane` that
satisfies a condition, so it includes the program's rendering and tmux's own parsing: what an
operator in tmux sees. A capture costs a few ms, which bounds the resolution.

`Pty` runs a program on a bare pseudo-terminal instead and keeps every byte it writes, for
figures that count bytes or need no tmux in between (bench_console.py).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import shlex
import shutil
import signal
import struct
import subprocess
import tempfile
import termios
import threading
import time
from collections.abc import Callable, Sequence

HELP_MARKER = b"remap any of them"  # the last line of `?`'s help screen


class Tmux:
    """One program in one tmux pane of a fixed size."""

    def __init__(self, argv: Sequence[str], cols: int = 120, rows: int = 40) -> None:
        self.argv = list(argv)
        self.cols, self.rows = cols, rows
        # a fresh server each time (reusing one while the last server exits fails), on a
        # socket in a directory of its own: `-L` names left a socket file in tmux's shared
        # directory after every run
        self.home = tempfile.mkdtemp(prefix="rocmtui-bench-tmux-")
        self.socket = os.path.join(self.home, "tmux")
        self.session = "b"
        self.started = 0.0
        self._pid = 0

    def _tmux(self, *args: str, check: bool = True) -> str:
        done = subprocess.run(
            ["tmux", "-S", self.socket, *args], capture_output=True, text=True, check=check
        )
        return done.stdout

    def start(self, env: dict[str, str] | None = None) -> float:
        """Launch; returns the monotonic start time."""
        cmd = "exec " + " ".join(shlex.quote(a) for a in self.argv)
        extra = []
        for key, value in (env or {}).items():
            extra += ["-e", f"{key}={value}"]
        self.started = time.monotonic()
        out = self._tmux(
            "new-session", "-d", "-P", "-F", "#{pane_pid}", "-s", self.session,
            "-x", str(self.cols), "-y", str(self.rows), *extra, cmd,
        )  # fmt: skip
        self._pid = int(out.strip())
        return self.started

    def pid(self) -> int:
        """The program's pid (the pane runs it directly, through `exec`), known from start:
        asking tmux later fails once the program has exited."""
        return self._pid

    def screen(self) -> str:
        """The pane's text now."""
        return self._tmux("capture-pane", "-p", "-t", self.session, check=False)

    def send(self, *keys: str, literal: bool = False) -> None:
        """Type keys (tmux key names, or text with literal=True)."""
        self._tmux("send-keys", "-t", self.session, *(["-l"] if literal else []), *keys)

    def wait(
        self, cond: Callable[[str], bool], timeout: float, since: float | None = None
    ) -> float | None:
        """Seconds from `since` (default: start) until `cond(screen)` holds; None on timeout."""
        since = self.started if since is None else since
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = self.screen()
            now = time.monotonic()
            if cond(text):
                return now - since
            time.sleep(0.002)
        return None

    def close(self) -> None:
        """Kill the private tmux server (and so the program); remove its socket."""
        self._tmux("kill-server", check=False)
        shutil.rmtree(self.home, ignore_errors=True)


class ControlClient:
    """A tmux control-mode client on a session: pane output as it is produced (no polling),
    and keys sent without forking a tmux client per key."""

    def __init__(self, term: Tmux) -> None:
        self.proc = subprocess.Popen(
            ["tmux", "-S", term.socket, "-C", "attach", "-t", term.session],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0,
        )  # fmt: skip
        self.session = term.session
        self._cond = threading.Condition()
        self._chunks: list[tuple[float, str]] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            if raw.startswith(b"%output "):
                now = time.monotonic()
                text = raw.split(b" ", 2)[2].decode("utf-8", "replace")
                text = re.sub(r"\\(\d{3})", lambda m: chr(int(m.group(1), 8)), text)
                with self._cond:
                    self._chunks.append((now, text))
                    self._cond.notify_all()

    def send(self, key: str) -> float:
        """Send one key; returns when it was written to tmux."""
        assert self.proc.stdin is not None
        t = time.monotonic()
        self.proc.stdin.write(f"send-keys -t {self.session} {key}\n".encode())
        return t

    def wait_output(self, needle: str, since: float, timeout: float) -> float | None:
        """Seconds from `since` to the first pane output after it containing `needle`."""
        deadline = time.monotonic() + timeout
        seen = 0
        with self._cond:
            while True:
                for t, text in self._chunks[seen:]:
                    if t >= since and needle in text:
                        return t - since
                seen = len(self._chunks)
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self._cond.wait(left)

    def wait_screen(
        self, term: Tmux, cond: Callable[[str], bool], since: float, timeout: float
    ) -> float | None:
        """Seconds from `since` to the pane output after which `cond(screen)` holds: the
        screen is captured only when the program has written something, so the wait costs
        no CPU while the program works (a `Tmux.wait` poll forks tmux every few ms, which on
        a 2-core machine takes CPU from the program it times). The time is that of the last
        output seen before the capture that satisfied `cond`: at worst a little late."""
        deadline = time.monotonic() + timeout
        seen = 0
        while True:
            with self._cond:
                while len(self._chunks) == seen:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        return None
                    self._cond.wait(left)
                seen = len(self._chunks)
                last = self._chunks[-1][0]
            if last >= since and cond(term.screen()):
                return last - since

    def output(self) -> list[tuple[float, str]]:
        """Every (time, text) of pane output so far."""
        with self._cond:
            return list(self._chunks)

    def close(self) -> None:
        """Detach."""
        self.proc.kill()
        self.proc.wait()


def proc_status(pid: int, field: str) -> float:
    """A /proc/PID/status memory field (VmHWM, VmRSS) in MB; NaN when gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return float("nan")


def cpu_seconds(pid: int) -> float:
    """User+system CPU seconds of a process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


class Pty:
    """A process on a pseudo-terminal of a fixed size, its output drained by a thread."""

    def __init__(self, argv: Sequence[str], env: dict[str, str], cols: int, rows: int) -> None:
        self.started = time.monotonic()
        pid, fd = pty.fork()
        if pid == 0:  # child: size the terminal, then become the program
            fcntl.ioctl(0, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
            os.execvpe(argv[0], list(argv), env)
        self.pid, self.fd = pid, fd
        self.buffer = bytearray()
        self.lock = threading.Lock()
        self.reader = threading.Thread(target=self._drain, daemon=True)
        self.reader.start()

    def _drain(self) -> None:
        while True:
            try:
                chunk = os.read(self.fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            with self.lock:
                self.buffer += chunk

    @property
    def size(self) -> int:
        with self.lock:
            return len(self.buffer)

    def wait_for(self, marker: bytes, start: int = 0, timeout: float = 60.0) -> float | None:
        """Monotonic time at which `marker` was first seen after byte `start` (None: never)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self.lock:
                found = self.buffer.find(marker, max(0, start - len(marker)))
            if found >= 0:
                return time.monotonic()
            time.sleep(0.001)
        return None

    def type(self, data: bytes) -> None:
        os.write(self.fd, data)

    def key_to_help(self, pause: float) -> float | None:
        """Seconds from typing `?` to the help text's last line on the terminal (None: not
        within 10 s); then Escape and `pause` seconds. The benches' key-to-screen figure."""
        start = self.size
        sent = time.monotonic()
        self.type(b"?")
        seen = self.wait_for(HELP_MARKER, start, timeout=10)
        self.type(b"\x1b")
        time.sleep(pause)
        return None if seen is None else seen - sent

    def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if os.waitpid(self.pid, os.WNOHANG)[0]:
                break
            time.sleep(0.05)
        else:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        with contextlib.suppress(OSError):
            os.close(self.fd)
